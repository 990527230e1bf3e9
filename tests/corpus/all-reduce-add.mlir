// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.all_reduce add over a 3-D block of 6x5x3 threads (90 threads: two full warps and a
// partial one) in each of two blocks. Each thread contributes its linear id + 1000 * block id;
// thread 0 of each block stores the block's sum.
func.func @main() {
  %out = memref.alloc() : memref<2xi32>
  %cast = memref.cast %out : memref<2xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c1000 = arith.constant 1000 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c5, %sz = %c3) {
    %t1 = arith.muli %sy, %tz : index
    %t2 = arith.addi %ty, %t1 : index
    %t3 = arith.muli %sx, %t2 : index
    %tid = arith.addi %tx, %t3 : index
    %boff = arith.muli %bx, %c1000 : index
    %v = arith.addi %tid, %boff : index
    %vi = arith.index_cast %v : index to i32
    %sum = gpu.all_reduce add %vi uniform {} : (i32) -> i32
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      memref.store %sum, %out[%bx] : memref<2xi32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [4005,  94005]
