// RUN: nova-run %s --device cpu | FileCheck %s

// cf.assert inside a kernel whose condition always holds: every thread checks that its id is
// below the block size before storing id + 1.
func.func @main() {
  %out = memref.alloc() : memref<4xi32>
  %cast = memref.cast %out : memref<4xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %inside = arith.cmpi ult, %tx, %sx : index
    cf.assert %inside, "thread id out of range"
    %v = arith.addi %tx, %c1 : index
    %vi = arith.index_cast %v : index to i32
    memref.store %vi, %out[%tx] : memref<4xi32>
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [1,  2,  3,  4]
// CHECK-NOT: thread id out of range
