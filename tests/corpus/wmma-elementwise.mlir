// RUN: nova-run %s --device cpu | FileCheck %s

// subgroup_mma_constant_matrix and every float subgroup_mma_elementwise kind on accumulator
// fragments: with C from memory and K = constant 2.0,
//   E1 = C + K, E2 = E1 * K, E3 = E2 - C, N = -C, E4 = max(E3, N), E5 = min(E4, E1), E6 = E5 / K,
//   X = extf(H + constant 0.5) (H an f16 COp fragment), R = E6 + X,
// then D = A x B + R. The first output is R, the second D (NumPy's values).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %a = gpu.alloc host_shared () : memref<16x16xf16>
  %a_u = memref.cast %a : memref<16x16xf16> to memref<*xf16>
  %b = gpu.alloc host_shared () : memref<16x16xf16>
  %b_u = memref.cast %b : memref<16x16xf16> to memref<*xf16>
  %c = gpu.alloc host_shared () : memref<16x16xf32>
  %c_u = memref.cast %c : memref<16x16xf32> to memref<*xf32>
  %h = gpu.alloc host_shared () : memref<16x16xf16>
  %h_u = memref.cast %h : memref<16x16xf16> to memref<*xf16>
  %r = gpu.alloc host_shared () : memref<16x16xf32>
  %r_u = memref.cast %r : memref<16x16xf32> to memref<*xf32>
  %out = gpu.alloc host_shared () : memref<16x16xf32>
  %out_u = memref.cast %out : memref<16x16xf32> to memref<*xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %a_ai = arith.muli %i, %c1 : index
      %a_bj = arith.muli %j, %c1 : index
      %a_s = arith.addi %a_ai, %a_bj : index
      %a_m = arith.remui %a_s, %c3 : index
      %a_x = arith.subi %a_m, %c1 : index
      %a_w = arith.index_cast %a_x : index to i32
      %a_v = arith.sitofp %a_w : i32 to f16
      memref.store %a_v, %a[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %b_ai = arith.muli %i, %c2 : index
      %b_bj = arith.muli %j, %c5 : index
      %b_s = arith.addi %b_ai, %b_bj : index
      %b_m = arith.remui %b_s, %c3 : index
      %b_x = arith.subi %b_m, %c1 : index
      %b_w = arith.index_cast %b_x : index to i32
      %b_v = arith.sitofp %b_w : i32 to f16
      memref.store %b_v, %b[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %c_ai = arith.muli %i, %c1 : index
      %c_bj = arith.muli %j, %c3 : index
      %c_s = arith.addi %c_ai, %c_bj : index
      %c_m = arith.remui %c_s, %c7 : index
      %c_x = arith.subi %c_m, %c3 : index
      %c_w = arith.index_cast %c_x : index to i32
      %c_v = arith.sitofp %c_w : i32 to f32
      memref.store %c_v, %c[%i, %j] : memref<16x16xf32>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %h_ai = arith.muli %i, %c2 : index
      %h_bj = arith.muli %j, %c1 : index
      %h_s = arith.addi %h_ai, %h_bj : index
      %h_m = arith.remui %h_s, %c5 : index
      %h_x = arith.subi %h_m, %c2 : index
      %h_w = arith.index_cast %h_x : index to i32
      %h_v = arith.sitofp %h_w : i32 to f16
      memref.store %h_v, %h[%i, %j] : memref<16x16xf16>
    }
  }
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f16
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %C = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %K = gpu.subgroup_mma_constant_matrix %two : !gpu.mma_matrix<16x16xf32, "COp">
    %E1 = gpu.subgroup_mma_elementwise  addf %C, %K : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %E2 = gpu.subgroup_mma_elementwise  mulf %E1, %K : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %E3 = gpu.subgroup_mma_elementwise  subf %E2, %C : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %N = gpu.subgroup_mma_elementwise  negatef %C : (!gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %E4 = gpu.subgroup_mma_elementwise  maxf %E3, %N : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %E5 = gpu.subgroup_mma_elementwise  minf %E4, %E1 : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %E6 = gpu.subgroup_mma_elementwise  divf %E5, %K : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %H = gpu.subgroup_mma_load_matrix %h[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "COp">
    %Kh = gpu.subgroup_mma_constant_matrix %half : !gpu.mma_matrix<16x16xf16, "COp">
    %Hh = gpu.subgroup_mma_elementwise  addf %H, %Kh : (!gpu.mma_matrix<16x16xf16, "COp">, !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">
    %X = gpu.subgroup_mma_elementwise  extf %Hh : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %R = gpu.subgroup_mma_elementwise  addf %E6, %X : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %R, %r[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %D = gpu.subgroup_mma_compute %A, %B, %R : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %D, %out[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%r_u) : (memref<*xf32>) -> ()
  call @printMemrefF32(%out_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [16, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[-2,   0.5,   3,   2,   4.5,   -1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5],
// CHECK-NEXT:  [0.5,   3,   2,   -0.5,   2,   1,   3.5,   2.5,   0,   -1,   1.5,   4,   3,   0.5,   -0.5,   2],
// CHECK-NEXT:  [3,   0.5,   -0.5,   2,   1,   3.5,   1,   0,   2.5,   1.5,   4,   -2,   0.5,   3,   2,   4.5],
// CHECK-NEXT:  [0.5,   3,   2,   4.5,   -1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5,   2],
// CHECK-NEXT:  [3,   2,   -0.5,   2,   1,   3.5,   2.5,   0,   -1,   1.5,   4,   3,   0.5,   -0.5,   2,   1],
// CHECK-NEXT:  [0.5,   -0.5,   2,   1,   3.5,   1,   0,   2.5,   1.5,   4,   -2,   0.5,   3,   2,   4.5,   -1.5],
// CHECK-NEXT:  [3,   2,   4.5,   -1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5,   2,   1],
// CHECK-NEXT:  [2,   -0.5,   2,   1,   3.5,   2.5,   0,   -1,   1.5,   4,   3,   0.5,   -0.5,   2,   1,   3.5],
// CHECK-NEXT:  [-0.5,   2,   1,   3.5,   1,   0,   2.5,   1.5,   4,   -2,   0.5,   3,   2,   4.5,   -1.5,   1],
// CHECK-NEXT:  [2,   4.5,   -1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5,   2,   1,   3.5],
// CHECK-NEXT:  [-0.5,   2,   1,   3.5,   2.5,   0,   -1,   1.5,   4,   3,   0.5,   -0.5,   2,   1,   3.5,   1],
// CHECK-NEXT:  [2,   1,   3.5,   1,   0,   2.5,   1.5,   4,   -2,   0.5,   3,   2,   4.5,   -1.5,   1,   0],
// CHECK-NEXT:  [4.5,   -1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5,   2,   1,   3.5,   2.5],
// CHECK-NEXT:  [2,   1,   3.5,   2.5,   0,   -1,   1.5,   4,   3,   0.5,   -0.5,   2,   1,   3.5,   1,   0],
// CHECK-NEXT:  [1,   3.5,   1,   0,   2.5,   1.5,   4,   -2,   0.5,   3,   2,   4.5,   -1.5,   1,   0,   2.5],
// CHECK-NEXT:  [-1.5,   1,   0,   2.5,   5,   -1,   1.5,   0.5,   3,   2,   -0.5,   2,   1,   3.5,   2.5,   0]]
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [16, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[4,   -10.5,   8,   8,   -6.5,   3.5,   7,   -11,   7.5,   11,   -12,   6.5,   6.5,   -8,   7,   5.5],
// CHECK-NEXT:  [5.5,   8,   -8,   4.5,   7,   -9,   8.5,   7.5,   -10,   4,   6.5,   -6,   8,   5.5,   -10.5,   7],
// CHECK-NEXT:  [-8,   6.5,   4.5,   -9,   7,   8.5,   -10,   6,   7.5,   -9.5,   10,   3,   -10.5,   9,   7,   -6.5],
// CHECK-NEXT:  [6.5,   -8,   7,   10.5,   -12.5,   6,   6,   -8.5,   10,   5,   -9.5,   5.5,   9,   -9,   4.5,   8],
// CHECK-NEXT:  [8,   7,   -10.5,   7,   6,   -6.5,   7.5,   5,   -11,   6.5,   9,   -7,   5.5,   4.5,   -8,   6],
// CHECK-NEXT:  [-10.5,   5.5,   7,   -10,   9.5,   6,   -11,   8.5,   6.5,   -7,   4,   5.5,   -8,   8,   9.5,   -12.5],
// CHECK-NEXT:  [9,   -9,   9.5,   4.5,   -10,   5,   8.5,   -6,   4,   7.5,   -10.5,   8,   8,   -11.5,   7,   7],
// CHECK-NEXT:  [7,   4.5,   -8,   6,   8.5,   -7.5,   5,   4,   -8.5,   9,   8,   -9.5,   4.5,   7,   -9,   8.5],
// CHECK-NEXT:  [-11.5,   8,   6,   -7.5,   7,   5,   -8.5,   7.5,   9,   -13,   6.5,   8,   -9,   10.5,   3.5,   -10],
// CHECK-NEXT:  [8,   -6.5,   3.5,   7,   -11,   7.5,   11,   -12,   6.5,   6.5,   -8,   7,   5.5,   -9,   6,   9.5],
// CHECK-NEXT:  [4.5,   7,   -9,   8.5,   7.5,   -10,   4,   6.5,   -6,   8,   5.5,   -10.5,   7,   6,   -6.5,   6],
// CHECK-NEXT:  [-9,   7,   8.5,   -10,   6,   7.5,   -9.5,   10,   3,   -10.5,   9,   7,   -6.5,   4.5,   6,   -11],
// CHECK-NEXT:  [10.5,   -12.5,   6,   6,   -8.5,   10,   5,   -9.5,   5.5,   9,   -9,   4.5,   8,   -10,   8.5,   8.5],
// CHECK-NEXT:  [7,   6,   -6.5,   7.5,   5,   -11,   6.5,   9,   -7,   5.5,   4.5,   -8,   6,   8.5,   -9,   5],
// CHECK-NEXT:  [-10,   9.5,   6,   -11,   8.5,   6.5,   -7,   4,   5.5,   -8,   8,   9.5,   -12.5,   7,   5,   -8.5],
// CHECK-NEXT:  [4.5,   -10,   5,   8.5,   -6,   4,   7.5,   -10.5,   8,   8,   -11.5,   7,   7,   -7.5,   7.5,   6]]
