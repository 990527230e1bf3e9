// RUN: nova-run %s --device cpu | FileCheck %s

// Column-major tiles: `transpose` loads read A and B stored column-major (with a_transpose /
// b_transpose on the compute, as PTX requires the layouts to match), A from columns 16..31 of
// a 16x32 memref (leadDimension 32), and the transposed store writes D^T into rows 16..31 of a
// 32x16 memref whose rows 0..15 stay zero. Expected: NumPy's (A @ B + C).T.
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
  %at = gpu.alloc host_shared () : memref<16x32xf16>
  %at_u = memref.cast %at : memref<16x32xf16> to memref<*xf16>
  %bt = gpu.alloc host_shared () : memref<16x16xf16>
  %bt_u = memref.cast %bt : memref<16x16xf16> to memref<*xf16>
  %c = gpu.alloc host_shared () : memref<16x16xf32>
  %c_u = memref.cast %c : memref<16x16xf32> to memref<*xf32>
  %out = gpu.alloc host_shared () : memref<32x16xf32>
  %out_u = memref.cast %out : memref<32x16xf32> to memref<*xf32>
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %at_ai = arith.muli %i, %c3 : index
      %at_bj = arith.muli %j, %c1 : index
      %at_s = arith.addi %at_ai, %at_bj : index
      %at_m = arith.remui %at_s, %c7 : index
      %at_x = arith.subi %at_m, %c3 : index
      %at_w = arith.index_cast %at_x : index to i32
      %at_v = arith.sitofp %at_w : i32 to f16
      memref.store %at_v, %at[%i, %j] : memref<16x32xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %bt_ai = arith.muli %i, %c1 : index
      %bt_bj = arith.muli %j, %c3 : index
      %bt_s = arith.addi %bt_ai, %bt_bj : index
      %bt_m = arith.remui %bt_s, %c5 : index
      %bt_x = arith.subi %bt_m, %c2 : index
      %bt_w = arith.index_cast %bt_x : index to i32
      %bt_v = arith.sitofp %bt_w : i32 to f16
      memref.store %bt_v, %bt[%i, %j] : memref<16x16xf16>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %c_ai = arith.muli %i, %c2 : index
      %c_bj = arith.muli %j, %c1 : index
      %c_s = arith.addi %c_ai, %c_bj : index
      %c_m = arith.remui %c_s, %c5 : index
      %c_x = arith.subi %c_m, %c2 : index
      %c_w = arith.index_cast %c_x : index to i32
      %c_v = arith.sitofp %c_w : i32 to f32
      memref.store %c_v, %c[%i, %j] : memref<16x16xf32>
    }
  }
  scf.for %i = %c0 to %c32 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      memref.store %zero, %out[%i, %j] : memref<32x16xf32>
    }
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %A = gpu.subgroup_mma_load_matrix %at[%c0, %c16] {leadDimension = 32 : index, transpose} : memref<16x32xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %bt[%c0, %c0] {leadDimension = 16 : index, transpose} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %C = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %D = gpu.subgroup_mma_compute %A, %B, %C {a_transpose, b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %D, %out[%c16, %c0] {leadDimension = 16 : index, transpose} : !gpu.mma_matrix<16x16xf32, "COp">, memref<32x16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%out_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [32, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0],
// CHECK-NEXT:  [11,   -10,   -17,   -22,   -1,   15,   22,   15,   -11,   -18,   -23,   -2,   19,   21,   14,   -12],
// CHECK-NEXT:  [-17,   -16,   -13,   9,   17,   13,   7,   -18,   -17,   -9,   8,   16,   12,   6,   -14,   -18],
// CHECK-NEXT:  [-25,   -2,   16,   25,   15,   -4,   -23,   -26,   -3,   15,   24,   19,   -5,   -24,   -27,   -4],
// CHECK-NEXT:  [7,   12,   15,   11,   -12,   -16,   -18,   6,   16,   14,   10,   -13,   -17,   -14,   5,   15],
// CHECK-NEXT:  [24,   16,   -1,   -23,   -19,   -8,   12,   23,   15,   -2,   -19,   -20,   -9,   11,   22,   19],
// CHECK-NEXT:  [11,   -10,   -17,   -22,   -1,   15,   22,   15,   -11,   -18,   -23,   -2,   19,   21,   14,   -12],
// CHECK-NEXT:  [-17,   -16,   -13,   9,   17,   13,   7,   -18,   -17,   -9,   8,   16,   12,   6,   -14,   -18],
// CHECK-NEXT:  [-25,   -2,   16,   25,   15,   -4,   -23,   -26,   -3,   15,   24,   19,   -5,   -24,   -27,   -4],
// CHECK-NEXT:  [7,   12,   15,   11,   -12,   -16,   -18,   6,   16,   14,   10,   -13,   -17,   -14,   5,   15],
// CHECK-NEXT:  [24,   16,   -1,   -23,   -19,   -8,   12,   23,   15,   -2,   -19,   -20,   -9,   11,   22,   19],
// CHECK-NEXT:  [11,   -10,   -17,   -22,   -1,   15,   22,   15,   -11,   -18,   -23,   -2,   19,   21,   14,   -12],
// CHECK-NEXT:  [-17,   -16,   -13,   9,   17,   13,   7,   -18,   -17,   -9,   8,   16,   12,   6,   -14,   -18],
// CHECK-NEXT:  [-25,   -2,   16,   25,   15,   -4,   -23,   -26,   -3,   15,   24,   19,   -5,   -24,   -27,   -4],
// CHECK-NEXT:  [7,   12,   15,   11,   -12,   -16,   -18,   6,   16,   14,   10,   -13,   -17,   -14,   5,   15],
// CHECK-NEXT:  [24,   16,   -1,   -23,   -19,   -8,   12,   23,   15,   -2,   -19,   -20,   -9,   11,   22,   19],
// CHECK-NEXT:  [11,   -10,   -17,   -22,   -1,   15,   22,   15,   -11,   -18,   -23,   -2,   19,   21,   14,   -12]]
