// RUN: nova-run %s --device cpu | FileCheck %s

// The WMMA ops are warp-collective: a lane's ordinary memref.load of `out` placed after the
// fragment loads but before subgroup_mma_store_matrix sees the old value, and one placed after
// the store sees the stored result, whichever lane the store's writes come from. Lane t reads
// out[t / 16][t mod 16] both times; `before` must equal C's first two rows and `after` D's
// (NumPy's A @ B + C).
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
  %before = memref.alloc() : memref<2x16xf32>
  %after = memref.alloc() : memref<2x16xf32>
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
  %before_u = memref.cast %before : memref<2x16xf32> to memref<*xf32>
  gpu.host_register %before_u : memref<*xf32>
  %after_u = memref.cast %after : memref<2x16xf32> to memref<*xf32>
  gpu.host_register %after_u : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %row = arith.divui %tx, %c16 : index
    %col = arith.remui %tx, %c16 : index
    %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %C = gpu.subgroup_mma_load_matrix %out[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %old = memref.load %out[%row, %col] : memref<16x16xf32>
    %D = gpu.subgroup_mma_compute %A, %B, %C : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %D, %out[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    %new = memref.load %out[%row, %col] : memref<16x16xf32>
    memref.store %old, %before[%row, %col] : memref<2x16xf32>
    memref.store %new, %after[%row, %col] : memref<2x16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%before_u) : (memref<*xf32>) -> ()
  call @printMemrefF32(%after_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [2, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[-4,   0,   4,   -1,   3,   -2,   2,   -3,   1,   -4,   0,   4,   -1,   3,   -2,   2],
// CHECK-NEXT:  [-3,   1,   -4,   0,   4,   -1,   3,   -2,   2,   -3,   1,   -4,   0,   4,   -1,   3]]
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [2, 16] strides = [16, 1] data =
// CHECK-NEXT: {{\[}}[-5,   2,   -6,   -3,   14,   -3,   4,   -13,   -1,   7,   -1,   6,   -11,   1,   9,   1],
// CHECK-NEXT:  [11,   -4,   -8,   2,   -3,   13,   -2,   -6,   4,   -10,   15,   -9,   -4,   6,   -8,   17]]
