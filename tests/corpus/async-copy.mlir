// RUN: nova-run %s --device cpu | FileCheck %s

// nvgpu asynchronous copies (cp.async) into dynamic shared memory, as upstream programs write
// them. One block of 8 threads: thread t copies in[4t:4t+4] (16 bytes, bypassL1) to the
// mirrored slot 7 - t of a 32-float buffer, and in[4t:4t+4] again with srcElements = t % 5
// (the rest zero-filled) into a second buffer at byte 128; a 4-byte copy of in[t] goes to a
// third buffer at byte 256, in its own group. Each thread waits for its groups (numGroups 1,
// then 0), the block meets at a barrier, and thread t writes slot t of each buffer out.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %in = memref.alloc() : memref<32xf32>
  %out = memref.alloc() : memref<72xf32>
  scf.for %i = %c0 to %c32 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %one = arith.constant 1.0 : f32
    %v = arith.addf %f, %one : f32
    memref.store %v, %in[%i] : memref<32xf32>
  }
  %incast = memref.cast %in : memref<32xf32> to memref<*xf32>
  %outcast = memref.cast %out : memref<72xf32> to memref<*xf32>
  gpu.host_register %incast : memref<*xf32>
  gpu.host_register %outcast : memref<*xf32>
  %bytes = arith.constant 288 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %bytes {
    %shmem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %b128 = arith.constant 128 : index
    %b256 = arith.constant 256 : index
    %mirror = memref.view %shmem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
    %ragged = memref.view %shmem[%b128][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
    %small = memref.view %shmem[%b256][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8xf32, #gpu.address_space<workgroup>>
    %src = arith.muli %tx, %c4 : index
    %slot = arith.subi %c7, %tx : index
    %dst = arith.muli %slot, %c4 : index
    %n = arith.remui %tx, %c5 : index
    %t0 = nvgpu.device_async_copy %in[%src], %mirror[%dst], 4 {bypassL1} : memref<32xf32> to memref<32xf32, #gpu.address_space<workgroup>>
    %t1 = nvgpu.device_async_copy %in[%src], %ragged[%src], 4, %n : memref<32xf32> to memref<32xf32, #gpu.address_space<workgroup>>
    %g0 = nvgpu.device_async_create_group %t0, %t1
    %t2 = nvgpu.device_async_copy %in[%tx], %small[%tx], 1 : memref<32xf32> to memref<8xf32, #gpu.address_space<workgroup>>
    %g1 = nvgpu.device_async_create_group %t2
    nvgpu.device_async_wait %g0 {numGroups = 1 : i32}
    nvgpu.device_async_wait %g1
    gpu.barrier
    scf.for %e = %c0 to %c4 step %c1 {
      %k = arith.addi %src, %e : index
      %a = memref.load %mirror[%k] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %a, %out[%k] : memref<72xf32>
      %b = memref.load %ragged[%k] : memref<32xf32, #gpu.address_space<workgroup>>
      %k2 = arith.addi %k, %c32 : index
      memref.store %b, %out[%k2] : memref<72xf32>
    }
    %c = memref.load %small[%tx] : memref<8xf32, #gpu.address_space<workgroup>>
    %c64 = arith.constant 64 : index
    %k3 = arith.addi %tx, %c64 : index
    memref.store %c, %out[%k3] : memref<72xf32>
    gpu.terminator
  }
  call @printMemrefF32(%outcast) : (memref<*xf32>) -> ()
  memref.dealloc %in : memref<32xf32>
  memref.dealloc %out : memref<72xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} sizes = [72] strides = [1] data =
// CHECK-NEXT: [29,  30,  31,  32,  25,  26,  27,  28,  21,  22,  23,  24,  17,  18,  19,  20,  13,  14,  15,  16,  9,  10,  11,  12,  5,  6,  7,  8,  1,  2,  3,  4,  0,  0,  0,  0,  5,  0,  0,  0,  9,  10,  0,  0,  13,  14,  15,  0,  17,  18,  19,  20,  0,  0,  0,  0,  25,  0,  0,  0,  29,  30,  0,  0,  1,  2,  3,  4,  5,  6,  7,  8]
