// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.all_reduce and/or/xor over a 2-D block of 7x3 threads (21 threads, a partial warp).
// Thread t contributes 0xF0 | t.
func.func @main() {
  %out = memref.alloc() : memref<3xi32>
  %cast = memref.cast %out : memref<3xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %mask = arith.constant 240 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c7, %sy = %c3, %sz = %c1) {
    %row = arith.muli %ty, %sx : index
    %tid = arith.addi %row, %tx : index
    %ti = arith.index_cast %tid : index to i32
    %v = arith.ori %ti, %mask : i32
    %and = gpu.all_reduce and %v {} : (i32) -> i32
    %or = gpu.all_reduce or %v {} : (i32) -> i32
    %xor = gpu.all_reduce xor %v {} : (i32) -> i32
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      memref.store %and, %out[%c0] : memref<3xi32>
      memref.store %or, %out[%c1] : memref<3xi32>
      memref.store %xor, %out[%c2] : memref<3xi32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [3] strides = [1] data =
// CHECK-NEXT: [240,  255,  244]
