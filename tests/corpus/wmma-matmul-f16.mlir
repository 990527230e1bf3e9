// RUN: nova-run %s --device cpu | FileCheck %s

// f16 x f16 + f16 -> f16 (upstream's wmma-matmul-f16): the accumulator and result are f16
// fragments; the host widens the result to f32 for printing. Small integer inputs keep every
// sum exact in f16 (the CHECK lines are NumPy's, rounded to float16).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %a = gpu.alloc host_shared () : memref<16x16xf16>
  %a_u = memref.cast %a : memref<16x16xf16> to memref<*xf16>
  %b = gpu.alloc host_shared () : memref<16x16xf16>
  %b_u = memref.cast %b : memref<16x16xf16> to memref<*xf16>
  %c = gpu.alloc host_shared () : memref<16x16xf16>
  %c_u = memref.cast %c : memref<16x16xf16> to memref<*xf16>
  %d = gpu.alloc host_shared () : memref<16x16xf16>
  %d_u = memref.cast %d : memref<16x16xf16> to memref<*xf16>
  %out = memref.alloc() : memref<16x16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %a_ai = arith.muli %i, %c2 : index
      %a_bj = arith.muli %j, %c3 : index
      %a_s = arith.addi %a_ai, %a_bj : index
      %a_m = arith.remui %a_s, %c5 : index
      %a_x = arith.subi %a_m, %c2 : index
      %a_w = arith.index_cast %a_x : index to i32
      %a_v = arith.sitofp %a_w : i32 to f16
      memref.store %a_v, %a[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %b_ai = arith.muli %i, %c3 : index
      %b_bj = arith.muli %j, %c1 : index
      %b_s = arith.addi %b_ai, %b_bj : index
      %b_m = arith.remui %b_s, %c7 : index
      %b_x = arith.subi %b_m, %c3 : index
      %b_w = arith.index_cast %b_x : index to i32
      %b_v = arith.sitofp %b_w : i32 to f16
      memref.store %b_v, %b[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %c_ai = arith.muli %i, %c5 : index
      %c_bj = arith.muli %j, %c1 : index
      %c_s = arith.addi %c_ai, %c_bj : index
      %c_m = arith.remui %c_s, %c11 : index
      %c_x = arith.subi %c_m, %c5 : index
      %c_w = arith.index_cast %c_x : index to i32
      %c_v = arith.sitofp %c_w : i32 to f16
      memref.store %c_v, %c[%i, %j] : memref<16x16xf16>
    }
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %C = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "COp">
    %D = gpu.subgroup_mma_compute %A, %B, %C : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
    gpu.subgroup_mma_store_matrix %D, %d[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
    gpu.terminator
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %h = memref.load %d[%i, %j] : memref<16x16xf16>
      %f = arith.extf %h : f16 to f32
      memref.store %f, %out[%i, %j] : memref<16x16xf32>
    }
  }
  %out_u = memref.cast %out : memref<16x16xf32> to memref<*xf32>
  call @printMemrefF32(%out_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [16, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[12,   18,   10,   -12,   -20,   -21,   -1,   19,   25,   17,   -5,   -24,   -25,   -5,   15,   21],
// CHECK-NEXT:  [-4,   -24,   -23,   -1,   21,   29,   12,   -8,   -28,   -27,   -5,   17,   25,   19,   -1,   -21],
// CHECK-NEXT:  [-5,   8,   18,   14,   -4,   -22,   -19,   -9,   15,   25,   21,   3,   -26,   -23,   -13,   11],
// CHECK-NEXT:  [13,   6,   -15,   -15,   -8,   13,   20,   9,   2,   -19,   -19,   -12,   9,   16,   16,   9],
// CHECK-NEXT:  [-13,   -11,   1,   10,   12,   7,   -12,   -17,   -15,   8,   17,   19,   14,   -16,   -21,   -19],
// CHECK-NEXT:  [15,   21,   13,   -9,   -17,   -18,   2,   22,   17,   9,   -13,   -21,   -22,   -2,   18,   24],
// CHECK-NEXT:  [-1,   -21,   -20,   -9,   13,   21,   15,   -5,   -25,   -24,   -2,   20,   28,   22,   -9,   -29],
// CHECK-NEXT:  [-13,   11,   21,   17,   -1,   -19,   -16,   -6,   18,   17,   13,   -5,   -23,   -20,   -10,   14],
// CHECK-NEXT:  [16,   9,   -12,   -12,   -16,   5,   12,   12,   5,   -16,   -16,   -9,   12,   19,   19,   1],
// CHECK-NEXT:  [-21,   -19,   4,   13,   15,   10,   -9,   -14,   -12,   11,   9,   11,   6,   -13,   -18,   -16],
// CHECK-NEXT:  [18,   24,   16,   -6,   -14,   -26,   -6,   14,   20,   12,   -10,   -18,   -19,   1,   21,   27],
// CHECK-NEXT:  [-9,   -29,   -28,   -6,   16,   24,   18,   -2,   -22,   -21,   1,   12,   20,   14,   -6,   -26],
// CHECK-NEXT:  [-10,   14,   24,   20,   2,   -16,   -24,   -14,   10,   20,   16,   -2,   -20,   -17,   -7,   17],
// CHECK-NEXT:  [19,   1,   -20,   -20,   -13,   8,   15,   15,   8,   -13,   -13,   -6,   4,   11,   11,   4],
// CHECK-NEXT:  [-18,   -16,   7,   16,   18,   13,   -6,   -22,   -20,   3,   12,   14,   9,   -10,   -15,   -13],
// CHECK-NEXT:  [21,   27,   8,   -14,   -22,   -23,   -3,   17,   23,   15,   -7,   -15,   -16,   -7,   13,   19]]
