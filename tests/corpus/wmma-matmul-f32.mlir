// RUN: nova-run %s --device cpu | FileCheck %s

// Tensor-core matmul as upstream's TensorCore/wmma-matmul-f32 test: one warp loads f16 A and B
// and the f32 accumulator from `out`, computes A x B + C and stores it back into `out` (the
// stores wait for every lane's loads: warp-collective). Inputs are small integers
// (A[i][k] = (3i + 5k) mod 7 - 3, B[k][j] = (k + 2j) mod 5 - 2, C[i][j] = (i + 4j) mod 9 - 4),
// so the result is exact; the CHECK lines are NumPy's A @ B + C.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %a = memref.alloc() : memref<16x16xf16>
  %b = memref.alloc() : memref<16x16xf16>
  %out = memref.alloc() : memref<16x16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %a_ai = arith.muli %i, %c3 : index
      %a_bj = arith.muli %j, %c5 : index
      %a_s = arith.addi %a_ai, %a_bj : index
      %a_m = arith.remui %a_s, %c7 : index
      %a_x = arith.subi %a_m, %c3 : index
      %a_w = arith.index_cast %a_x : index to i32
      %a_v = arith.sitofp %a_w : i32 to f16
      memref.store %a_v, %a[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %b_ai = arith.muli %i, %c1 : index
      %b_bj = arith.muli %j, %c2 : index
      %b_s = arith.addi %b_ai, %b_bj : index
      %b_m = arith.remui %b_s, %c5 : index
      %b_x = arith.subi %b_m, %c2 : index
      %b_w = arith.index_cast %b_x : index to i32
      %b_v = arith.sitofp %b_w : i32 to f16
      memref.store %b_v, %b[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %out_ai = arith.muli %i, %c1 : index
      %out_bj = arith.muli %j, %c4 : index
      %out_s = arith.addi %out_ai, %out_bj : index
      %out_m = arith.remui %out_s, %c9 : index
      %out_x = arith.subi %out_m, %c4 : index
      %out_w = arith.index_cast %out_x : index to i32
      %out_v = arith.sitofp %out_w : i32 to f32
      memref.store %out_v, %out[%i, %j] : memref<16x16xf32>
    }
  }
  %a_u = memref.cast %a : memref<16x16xf16> to memref<*xf16>
  gpu.host_register %a_u : memref<*xf16>
  %b_u = memref.cast %b : memref<16x16xf16> to memref<*xf16>
  gpu.host_register %b_u : memref<*xf16>
  %out_u = memref.cast %out : memref<16x16xf32> to memref<*xf32>
  gpu.host_register %out_u : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %C = gpu.subgroup_mma_load_matrix %out[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %D = gpu.subgroup_mma_compute %A, %B, %C : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %D, %out[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%out_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [16, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[-5,   2,   -6,   -3,   14,   -3,   4,   -13,   -1,   7,   -1,   6,   -11,   1,   9,   1],
// CHECK-NEXT:  [11,   -4,   -8,   2,   -3,   13,   -2,   -6,   4,   -10,   15,   -9,   -4,   6,   -8,   17],
// CHECK-NEXT:  [-1,   11,   -1,   -14,   -1,   1,   13,   1,   -12,   1,   3,   6,   3,   -19,   3,   5],
// CHECK-NEXT:  [1,   12,   -1,   5,   -18,   3,   5,   1,   7,   -16,   5,   7,   3,   0,   -14,   -2],
// CHECK-NEXT:  [-4,   -1,   13,   -4,   0,   -2,   -8,   15,   -11,   2,   0,   -6,   17,   -9,   4,   -7],
// CHECK-NEXT:  [-9,   -2,   -1,   15,   -3,   -7,   0,   1,   8,   -1,   -14,   2,   3,   10,   1,   -12],
// CHECK-NEXT:  [0,   -15,   -1,   4,   8,   2,   -13,   1,   6,   10,   -5,   -11,   -6,   8,   12,   -3],
// CHECK-NEXT:  [2,   0,   -8,   -5,   12,   -5,   2,   -6,   -3,   14,   -3,   4,   -13,   -1,   7,   -1],
// CHECK-NEXT:  [18,   -6,   -1,   0,   -5,   11,   -4,   -8,   2,   -3,   13,   -2,   -6,   4,   -10,   15],
// CHECK-NEXT:  [-3,   9,   6,   -16,   6,   -1,   11,   -1,   -14,   -1,   1,   13,   1,   -12,   1,   3],
// CHECK-NEXT:  [-1,   10,   -3,   3,   -11,   1,   12,   -1,   5,   -18,   3,   5,   1,   7,   -16,   5],
// CHECK-NEXT:  [-6,   -3,   11,   -6,   -2,   -4,   -1,   13,   -4,   0,   -2,   -8,   15,   -11,   2,   0],
// CHECK-NEXT:  [-11,   5,   -3,   13,   -5,   -9,   -2,   -1,   15,   -3,   -7,   0,   1,   8,   -1,   -14],
// CHECK-NEXT:  [-2,   -8,   -3,   11,   6,   0,   -15,   -1,   4,   8,   2,   -13,   1,   6,   10,   -5],
// CHECK-NEXT:  [0,   -2,   -10,   2,   10,   2,   0,   -8,   -5,   12,   -5,   2,   -6,   -3,   14,   -3],
// CHECK-NEXT:  [16,   -8,   -3,   -2,   -7,   18,   -6,   -1,   0,   -5,   11,   -4,   -8,   2,   -3,   13]]
