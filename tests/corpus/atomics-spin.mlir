// RUN: nova-run %s --device cpu | FileCheck %s

// memref.atomic_rmw from 64 threads (2 blocks of 32). Each thread spins in an scf.while loop,
// atomically incrementing counter[0] until an increment returns at least 100, and counts its
// increments that returned less than 100 (exactly 100 such increments exist in total, and each
// thread makes one more, so counter[0] ends at 164). counter[1] sums the per-thread counts,
// counter[2] is an atomic maxs of the global thread id, counter[3] (initially -1, i.e.
// 0xFFFFFFFF) an atomic minu of id + 5, and total[0] an atomic addf of 0.5 per thread.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %minus1 = arith.constant -1 : i32
  %fzero = arith.constant 0.0 : f32
  %counter = memref.alloc() : memref<4xi32>
  %total = memref.alloc() : memref<1xf32>
  memref.store %zero, %counter[%c0] : memref<4xi32>
  memref.store %zero, %counter[%c1] : memref<4xi32>
  memref.store %zero, %counter[%c2] : memref<4xi32>
  memref.store %minus1, %counter[%c3] : memref<4xi32>
  memref.store %fzero, %total[%c0] : memref<1xf32>
  %icast = memref.cast %counter : memref<4xi32> to memref<*xi32>
  %fcast = memref.cast %total : memref<1xf32> to memref<*xf32>
  gpu.host_register %icast : memref<*xi32>
  gpu.host_register %fcast : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %one = arith.constant 1 : i32
    %five = arith.constant 5 : i32
    %limit = arith.constant 100 : i32
    %half = arith.constant 0.5 : f32
    %base = arith.muli %bx, %sx : index
    %gid = arith.addi %base, %tx : index
    %gidi = arith.index_cast %gid : index to i32
    %mine = scf.while (%count = %zero) : (i32) -> i32 {
      %old = memref.atomic_rmw addi %one, %counter[%c0] : (i32, memref<4xi32>) -> i32
      %below = arith.cmpi slt, %old, %limit : i32
      %more = arith.addi %count, %one : i32
      %next = arith.select %below, %more, %count : i32
      scf.condition(%below) %next : i32
    } do {
    ^bb0(%count: i32):
      scf.yield %count : i32
    }
    %r1 = memref.atomic_rmw addi %mine, %counter[%c1] : (i32, memref<4xi32>) -> i32
    %r2 = memref.atomic_rmw maxs %gidi, %counter[%c2] : (i32, memref<4xi32>) -> i32
    %id5 = arith.addi %gidi, %five : i32
    %r3 = memref.atomic_rmw minu %id5, %counter[%c3] : (i32, memref<4xi32>) -> i32
    %r4 = memref.atomic_rmw addf %half, %total[%c0] : (f32, memref<1xf32>) -> f32
    gpu.terminator
  }
  call @printMemrefI32(%icast) : (memref<*xi32>) -> ()
  call @printMemrefF32(%fcast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [164,  100,  63,  5]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [1] strides = [1] data =
// CHECK-NEXT: [32]
