// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.dynamic_shared_memory carved by memref.view, as upstream programs use it.
// Launch 1: 3 blocks of 8 threads with 8 * 8 bytes of dynamic shared memory: f32 values at byte
// 0 (written through a 2x4 view with a dynamic row count, read back through a 1-D view of the
// same bytes) and i32 values at byte 32 (a view with a dynamic size). Each block reverses its
// values through shared memory; thread 0 also stores the memref.dim of the whole allocation
// (the launch's byte count). Launch 2: 64 KiB (above the 48 KiB that needs a CUDA opt-in), one
// block of 32 threads; each thread writes its id into the last 32 words and reads a neighbour's.
// Host code uses memref.view too: a 2x3 f32 view and a 6-element view of the same bytes.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %fout = memref.alloc() : memref<24xf32>
  %iout = memref.alloc() : memref<24xi32>
  %sizes = memref.alloc() : memref<3xi64>
  %far = memref.alloc() : memref<32xi32>
  %fcast = memref.cast %fout : memref<24xf32> to memref<*xf32>
  %icast = memref.cast %iout : memref<24xi32> to memref<*xi32>
  %scast = memref.cast %sizes : memref<3xi64> to memref<*xi64>
  %farcast = memref.cast %far : memref<32xi32> to memref<*xi32>
  gpu.host_register %fcast : memref<*xf32>
  gpu.host_register %icast : memref<*xi32>
  gpu.host_register %scast : memref<*xi64>
  gpu.host_register %farcast : memref<*xi32>
  %bytes_index = arith.muli %c8, %c8 : index
  %bytes = arith.index_cast %bytes_index : index to i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %bytes {
    %shmem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %rows = arith.divui %sx, %c4 : index
    %grid = memref.view %shmem[%c0][%rows] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?x4xf32, #gpu.address_space<workgroup>>
    %flat = memref.view %shmem[%c0][%sx] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xf32, #gpu.address_space<workgroup>>
    %ints = memref.view %shmem[%c32][%sx] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi32, #gpu.address_space<workgroup>>
    %base = arith.muli %bx, %sx : index
    %gid = arith.addi %base, %tx : index
    %gid_i = arith.index_cast %gid : index to i32
    %gid_f = arith.sitofp %gid_i : i32 to f32
    %row = arith.divui %tx, %c4 : index
    %col = arith.remui %tx, %c4 : index
    memref.store %gid_f, %grid[%row, %col] : memref<?x4xf32, #gpu.address_space<workgroup>>
    %sq = arith.muli %gid_i, %gid_i : i32
    memref.store %sq, %ints[%tx] : memref<?xi32, #gpu.address_space<workgroup>>
    gpu.barrier
    %mirror = arith.subi %c7, %tx : index
    %f = memref.load %flat[%mirror] : memref<?xf32, #gpu.address_space<workgroup>>
    %i = memref.load %ints[%mirror] : memref<?xi32, #gpu.address_space<workgroup>>
    memref.store %f, %fout[%gid] : memref<24xf32>
    memref.store %i, %iout[%gid] : memref<24xi32>
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      %n = memref.dim %shmem, %c0 : memref<?xi8, #gpu.address_space<workgroup>>
      %n64 = arith.index_cast %n : index to i64
      memref.store %n64, %sizes[%bx] : memref<3xi64>
    }
    gpu.terminator
  }
  %big = arith.constant 65536 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %big {
    %shmem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %tail = arith.constant 65408 : index
    %words = memref.view %shmem[%tail][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xi32, #gpu.address_space<workgroup>>
    %t = arith.index_cast %tx : index to i32
    memref.store %t, %words[%tx] : memref<32xi32, #gpu.address_space<workgroup>>
    gpu.barrier
    %next = arith.addi %tx, %c1 : index
    %wrapped = arith.remui %next, %c32 : index
    %v = memref.load %words[%wrapped] : memref<32xi32, #gpu.address_space<workgroup>>
    memref.store %v, %far[%tx] : memref<32xi32>
    gpu.terminator
  }
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %hbytes = memref.alloc(%c64) : memref<?xi8>
  %hgrid = memref.view %hbytes[%c16][%c2] : memref<?xi8> to memref<?x3xf32>
  %hflat = memref.view %hbytes[%c16][] : memref<?xi8> to memref<6xf32>
  %hval = arith.constant 2.5 : f32
  memref.store %hval, %hgrid[%c1, %c2] : memref<?x3xf32>
  %c5 = arith.constant 5 : index
  %hread = memref.load %hflat[%c5] : memref<6xf32>
  vector.print %hread : f32
  memref.dealloc %hbytes : memref<?xi8>
  call @printMemrefF32(%fcast) : (memref<*xf32>) -> ()
  call @printMemrefI32(%icast) : (memref<*xi32>) -> ()
  call @printMemrefI32(%farcast) : (memref<*xi32>) -> ()
  call @printMemrefI64(%scast) : (memref<*xi64>) -> ()
  memref.dealloc %fout : memref<24xf32>
  memref.dealloc %iout : memref<24xi32>
  memref.dealloc %sizes : memref<3xi64>
  memref.dealloc %far : memref<32xi32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefI64(memref<*xi64>)

// CHECK: 2.5
// CHECK-NEXT: Unranked Memref base@ = {{.*}} sizes = [24] strides = [1] data =
// CHECK-NEXT: [7,  6,  5,  4,  3,  2,  1,  0,  15,  14,  13,  12,  11,  10,  9,  8,  23,  22,  21,  20,  19,  18,  17,  16]
// CHECK: sizes = [24] strides = [1] data =
// CHECK-NEXT: [49,  36,  25,  16,  9,  4,  1,  0,  225,  196,  169,  144,  121,  100,  81,  64,  529,  484,  441,  400,  361,  324,  289,  256]
// CHECK: sizes = [32] strides = [1] data =
// CHECK-NEXT: [1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  0]
// CHECK: sizes = [3] strides = [1] data =
// CHECK-NEXT: [64,  64,  64]
