// RUN: nova-run %s --device cpu | FileCheck %s

// A 16x64 x 64x32 matmul by two warps (64 threads), K in steps of 16: each step the block copies
// the A tile (16x16) and B tile (16x32) into workgroup memory, barrier, warp w multiplies A by
// columns 16w..16w+15 of the B tile into its accumulator (an scf.for iter_arg, starting from a
// constant 0 fragment), barrier. Finally warp w stores its 16x16 result at out[0, 16w]. The
// tiles are 64-byte aligned workgroup globals (wmma.load wants 32-byte aligned tiles).
// Expected: NumPy's A @ B.
memref.global "private" @tile_a : memref<16x16xf16, #gpu.address_space<workgroup>> {alignment = 64 : i64}
memref.global "private" @tile_b : memref<16x32xf16, #gpu.address_space<workgroup>> {alignment = 64 : i64}

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
  %a = gpu.alloc host_shared () : memref<16x64xf16>
  %a_u = memref.cast %a : memref<16x64xf16> to memref<*xf16>
  %b = gpu.alloc host_shared () : memref<64x32xf16>
  %b_u = memref.cast %b : memref<64x32xf16> to memref<*xf16>
  %out = gpu.alloc host_shared () : memref<16x32xf32>
  %out_u = memref.cast %out : memref<16x32xf32> to memref<*xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %a_ai = arith.muli %i, %c3 : index
      %a_bj = arith.muli %j, %c5 : index
      %a_s = arith.addi %a_ai, %a_bj : index
      %a_m = arith.remui %a_s, %c7 : index
      %a_x = arith.subi %a_m, %c3 : index
      %a_w = arith.index_cast %a_x : index to i32
      %a_v = arith.sitofp %a_w : i32 to f16
      memref.store %a_v, %a[%i, %j] : memref<16x64xf16>
    }
  }
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %b_ai = arith.muli %i, %c1 : index
      %b_bj = arith.muli %j, %c2 : index
      %b_s = arith.addi %b_ai, %b_bj : index
      %b_m = arith.remui %b_s, %c5 : index
      %b_x = arith.subi %b_m, %c2 : index
      %b_w = arith.index_cast %b_x : index to i32
      %b_v = arith.sitofp %b_w : i32 to f16
      memref.store %b_v, %b[%i, %j] : memref<64x32xf16>
    }
  }
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %sa = memref.get_global @tile_a : memref<16x16xf16, #gpu.address_space<workgroup>>
    %sb = memref.get_global @tile_b : memref<16x32xf16, #gpu.address_space<workgroup>>
    %c256 = arith.constant 256 : index
    %c512 = arith.constant 512 : index
    %warp = arith.divui %tx, %c32 : index
    %col = arith.muli %warp, %c16 : index
    %acc0 = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
    %acc = scf.for %k = %c0 to %c64 step %c16 iter_args(%cur = %acc0) -> (!gpu.mma_matrix<16x16xf32, "COp">) {
      scf.for %e = %tx to %c256 step %c64 {
        %r = arith.divui %e, %c16 : index
        %q = arith.remui %e, %c16 : index
        %kq = arith.addi %k, %q : index
        %v = memref.load %a[%r, %kq] : memref<16x64xf16>
        memref.store %v, %sa[%r, %q] : memref<16x16xf16, #gpu.address_space<workgroup>>
      }
      scf.for %e = %tx to %c512 step %c64 {
        %r = arith.divui %e, %c32 : index
        %q = arith.remui %e, %c32 : index
        %kr = arith.addi %k, %r : index
        %v = memref.load %b[%kr, %q] : memref<64x32xf16>
        memref.store %v, %sb[%r, %q] : memref<16x32xf16, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %A = gpu.subgroup_mma_load_matrix %sa[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %B = gpu.subgroup_mma_load_matrix %sb[%c0, %col] {leadDimension = 32 : index} : memref<16x32xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %next = gpu.subgroup_mma_compute %A, %B, %cur : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.barrier
      scf.yield %next : !gpu.mma_matrix<16x16xf32, "COp">
    }
    gpu.subgroup_mma_store_matrix %acc, %out[%c0, %col] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x32xf32>
    gpu.terminator
  }
  call @printMemrefF32(%out_u) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [16, 32] strides = [32, 1] data =
// CHECK-NEXT: {{\[}}[-5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1],
// CHECK-NEXT:  [10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5],
// CHECK-NEXT:  [-3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2],
// CHECK-NEXT:  [5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8],
// CHECK-NEXT:  [6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10],
// CHECK-NEXT:  [-7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14],
// CHECK-NEXT:  [-6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4],
// CHECK-NEXT:  [-5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1],
// CHECK-NEXT:  [10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5],
// CHECK-NEXT:  [-3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2,   -1,   -5,   11,   -3,   -2],
// CHECK-NEXT:  [5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8,   -4,   -6,   -3,   5,   8],
// CHECK-NEXT:  [6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10,   14,   -7,   -3,   6,   -10],
// CHECK-NEXT:  [-7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14,   -10,   6,   -3,   -7,   14],
// CHECK-NEXT:  [-6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4,   8,   5,   -3,   -6,   -4],
// CHECK-NEXT:  [-5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1,   -2,   -3,   11,   -5,   -1],
// CHECK-NEXT:  [10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5,   -5,   10,   -10,   10,   -5]]
