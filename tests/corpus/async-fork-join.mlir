// RUN: nova-run %s --device cpu | FileCheck %s

// Ordering through tokens and events: two token chains run on two streams (A fills dev_a with
// 3 and doubles it, B copies [1, 2, 3, 4] in and adds 10), `gpu.wait async [%a, %b]` joins them
// on a third stream (events), where a kernel sums both into dev_c; the result is copied back
// through a chain that also frees the scratch buffers, and the host waits once at the end.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %three = arith.constant 3.0 : f32
  %two = arith.constant 2.0 : f32
  %ten = arith.constant 10.0 : f32
  %host = memref.alloc() : memref<4xf32>
  %result = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %ii = arith.index_cast %i1 : index to i32
    %f = arith.sitofp %ii : i32 to f32
    memref.store %f, %host[%i] : memref<4xf32>
  }

  %a0 = gpu.wait async
  %dev_a, %a1 = gpu.alloc async [%a0] () : memref<4xf32>
  %a2 = gpu.memset async [%a1] %dev_a, %three : memref<4xf32>, f32
  %a3 = gpu.launch async [%a2] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev_a[%tx] : memref<4xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %dev_a[%tx] : memref<4xf32>
    gpu.terminator
  }

  %b0 = gpu.wait async
  %dev_b, %b1 = gpu.alloc async [%b0] () : memref<4xf32>
  %b2 = gpu.memcpy async [%b1] %dev_b, %host : memref<4xf32>, memref<4xf32>
  %b3 = gpu.launch async [%b2] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev_b[%tx] : memref<4xf32>
    %y = arith.addf %x, %ten : f32
    memref.store %y, %dev_b[%tx] : memref<4xf32>
    gpu.terminator
  }

  %j0 = gpu.wait async [%a3, %b3]
  %dev_c, %j1 = gpu.alloc async [%j0] () : memref<4xf32>
  %j2 = gpu.launch async [%j1] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev_a[%tx] : memref<4xf32>
    %y = memref.load %dev_b[%tx] : memref<4xf32>
    %z = arith.addf %x, %y : f32
    memref.store %z, %dev_c[%tx] : memref<4xf32>
    gpu.terminator
  }
  %j3 = gpu.memcpy async [%j2] %result, %dev_c : memref<4xf32>, memref<4xf32>
  %j4 = gpu.dealloc async [%j3] %dev_a : memref<4xf32>
  %j5 = gpu.dealloc async [%j4] %dev_b : memref<4xf32>
  %j6 = gpu.dealloc async [%j5] %dev_c : memref<4xf32>
  gpu.wait [%j6]

  %cast = memref.cast %result : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [17,  18,  19,  20]
