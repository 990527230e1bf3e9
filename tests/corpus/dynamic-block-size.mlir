// RUN: nova-run %s --device cpu | FileCheck %s

// The block size comes from memref.dim of a dynamically shaped memref (7 elements at run
// time); each thread stores the square of its id.
func.func @fill_squares(%buf: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %buf, %c0 : memref<?xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
    %sq = arith.muli %tx, %tx : index
    %v = arith.index_cast %sq : index to i32
    memref.store %v, %buf[%tx] : memref<?xi32>
    gpu.terminator
  }
  return
}

func.func @main() {
  %c7 = arith.constant 7 : index
  %data = memref.alloc(%c7) : memref<?xi32>
  %cast = memref.cast %data : memref<?xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  call @fill_squares(%data) : (memref<?xi32>) -> ()
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  memref.dealloc %data : memref<?xi32>
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [7] strides = [1] data =
// CHECK-NEXT: [0,  1,  4,  9,  16,  25,  36]
