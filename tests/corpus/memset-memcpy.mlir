// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.memset fills device buffers (f32 with 7.0, i32 with 42), a kernel adds the thread id to
// the f32 buffer, and gpu.memcpy copies both back to host buffers for printing.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %seven = arith.constant 7.0 : f32
  %answer = arith.constant 42 : i32
  %dev = gpu.alloc () : memref<6xf32>
  %devi = gpu.alloc () : memref<3xi32>
  gpu.memset %dev, %seven : memref<6xf32>, f32
  gpu.memset %devi, %answer : memref<3xi32>, i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %x = memref.load %dev[%tx] : memref<6xf32>
    %ti = arith.index_cast %tx : index to i32
    %tf = arith.sitofp %ti : i32 to f32
    %y = arith.addf %x, %tf : f32
    memref.store %y, %dev[%tx] : memref<6xf32>
    gpu.terminator
  }
  %host = memref.alloc() : memref<6xf32>
  %hosti = memref.alloc() : memref<3xi32>
  gpu.memcpy %host, %dev : memref<6xf32>, memref<6xf32>
  gpu.memcpy %hosti, %devi : memref<3xi32>, memref<3xi32>
  gpu.dealloc %dev : memref<6xf32>
  gpu.dealloc %devi : memref<3xi32>
  %cast = memref.cast %host : memref<6xf32> to memref<*xf32>
  %casti = memref.cast %hosti : memref<3xi32> to memref<*xi32>
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  call @printMemrefI32(%casti) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [6] strides = [1] data =
// CHECK-NEXT: [7,  8,  9,  10,  11,  12]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [3] strides = [1] data =
// CHECK-NEXT: [42,  42,  42]
