// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.all_reduce with a custom reduction region (signed max, written with a compare and a
// select) over 35 threads: one full warp and a partial one. Thread t contributes (13 * t) % 35,
// a permutation of 0..34. Every thread stores the result.
func.func @main() {
  %out = memref.alloc() : memref<35xi32>
  %cast = memref.cast %out : memref<35xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %c35 = arith.constant 35 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c35, %sy = %c1, %sz = %c1) {
    %m = arith.muli %tx, %c13 : index
    %r = arith.remui %m, %c35 : index
    %v = arith.index_cast %r : index to i32
    %max = gpu.all_reduce %v {
    ^bb0(%lhs: i32, %rhs: i32):
      %gt = arith.cmpi sgt, %lhs, %rhs : i32
      %larger = arith.select %gt, %lhs, %rhs : i32
      gpu.yield %larger : i32
    } : (i32) -> i32
    memref.store %max, %out[%tx] : memref<35xi32>
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [35] strides = [1] data =
// CHECK-NEXT: [34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34,  34]
