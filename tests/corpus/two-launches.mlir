// RUN: nova-run %s --device cpu | FileCheck %s

// Two gpu.launch ops in one function: the first writes 2 * i with one block of 8 threads, the
// second adds 1 with two blocks of 4 threads.
func.func @main() {
  %data = memref.alloc() : memref<8xf32>
  %cast = memref.cast %data : memref<8xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %ti = arith.index_cast %tx : index to i32
    %tf = arith.sitofp %ti : i32 to f32
    %v = arith.mulf %tf, %two : f32
    memref.store %v, %data[%tx] : memref<8xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %old = memref.load %data[%i] : memref<8xf32>
    %new = arith.addf %old, %one : f32
    memref.store %new, %data[%i] : memref<8xf32>
    gpu.terminator
  }
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [8] strides = [1] data =
// CHECK-NEXT: [1,  3,  5,  7,  9,  11,  13,  15]
