// RUN: nova-run %s --device cpu | FileCheck %s

// Asynchronous work on two independent token chains (two streams): each allocates device
// memory, copies its host input in, runs a kernel and copies the result back; the host then
// waits for both chains with gpu.wait [%a, %b]. Stream A doubles [1, 2, 3, 4]; stream B adds
// 5 to [10, 20, 30, 40].
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %host_a = memref.alloc() : memref<4xf32>
  %host_b = memref.alloc() : memref<4xf32>
  %ten = arith.constant 10.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %ii = arith.index_cast %i1 : index to i32
    %f = arith.sitofp %ii : i32 to f32
    memref.store %f, %host_a[%i] : memref<4xf32>
    %g = arith.mulf %f, %ten : f32
    memref.store %g, %host_b[%i] : memref<4xf32>
  }
  %two = arith.constant 2.0 : f32
  %five = arith.constant 5.0 : f32

  %a0 = gpu.wait async
  %dev_a, %a1 = gpu.alloc async [%a0] () : memref<4xf32>
  %a2 = gpu.memcpy async [%a1] %dev_a, %host_a : memref<4xf32>, memref<4xf32>
  %a3 = gpu.launch async [%a2] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev_a[%tx] : memref<4xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %dev_a[%tx] : memref<4xf32>
    gpu.terminator
  }
  %a4 = gpu.memcpy async [%a3] %host_a, %dev_a : memref<4xf32>, memref<4xf32>

  %b0 = gpu.wait async
  %dev_b, %b1 = gpu.alloc async [%b0] () : memref<4xf32>
  %b2 = gpu.memcpy async [%b1] %dev_b, %host_b : memref<4xf32>, memref<4xf32>
  %b3 = gpu.launch async [%b2] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev_b[%tx] : memref<4xf32>
    %y = arith.addf %x, %five : f32
    memref.store %y, %dev_b[%tx] : memref<4xf32>
    gpu.terminator
  }
  %b4 = gpu.memcpy async [%b3] %host_b, %dev_b : memref<4xf32>, memref<4xf32>

  gpu.wait [%a4, %b4]
  gpu.dealloc %dev_a : memref<4xf32>
  gpu.dealloc %dev_b : memref<4xf32>
  %cast_a = memref.cast %host_a : memref<4xf32> to memref<*xf32>
  %cast_b = memref.cast %host_b : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%cast_a) : (memref<*xf32>) -> ()
  call @printMemrefF32(%cast_b) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [2,  4,  6,  8]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [15,  25,  35,  45]
