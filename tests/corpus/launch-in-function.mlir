// RUN: nova-run %s --device cpu | FileCheck %s

// A launch inside a function that takes a dynamic memref and scalars: @scale multiplies
// %n elements by %factor with one thread per element. @main fills 0..4 on the host with
// scf.for, passes the buffer as memref<?xf32>, and scales by 3.
func.func @scale(%buf: memref<?xf32>, %factor: f32, %n: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
    %x = memref.load %buf[%tx] : memref<?xf32>
    %y = arith.mulf %x, %factor : f32
    memref.store %y, %buf[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %data = memref.alloc() : memref<5xf32>
  scf.for %i = %c0 to %c5 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    memref.store %f, %data[%i] : memref<5xf32>
  }
  %cast = memref.cast %data : memref<5xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  %dyn = memref.cast %data : memref<5xf32> to memref<?xf32>
  %three = arith.constant 3.0 : f32
  call @scale(%dyn, %three, %c5) : (memref<?xf32>, f32, index) -> ()
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [5] strides = [1] data =
// CHECK-NEXT: [0,  3,  6,  9,  12]
