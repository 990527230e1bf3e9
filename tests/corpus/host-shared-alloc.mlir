// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.alloc host_shared: memory both the host and the device access directly. The kernel
// writes 10 + i; the host then sums the elements with scf.for and prints the buffer and sum.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %buf = gpu.alloc host_shared (%c6) : memref<?xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %ten = arith.constant 10 : index
    %v = arith.addi %tx, %ten : index
    %vi = arith.index_cast %v : index to i32
    memref.store %vi, %buf[%tx] : memref<?xi32>
    gpu.terminator
  }
  %zero = arith.constant 0 : i32
  %sum = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %zero) -> (i32) {
    %x = memref.load %buf[%i] : memref<?xi32>
    %next = arith.addi %acc, %x : i32
    scf.yield %next : i32
  }
  %cast = memref.cast %buf : memref<?xi32> to memref<*xi32>
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  vector.print %sum : i32
  gpu.dealloc %buf : memref<?xi32>
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [6] strides = [1] data =
// CHECK-NEXT: [10,  11,  12,  13,  14,  15]
// CHECK-NEXT: 75
