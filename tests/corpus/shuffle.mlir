// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.shuffle xor/up/down/idx with width 13 (< 32) in a block of 13 threads (a partial warp),
// as upstream's shuffle test. Lane l shuffles the value l; a result whose `valid` flag is
// false (source lane outside [0, width)) is replaced by -1. Rows: xor 4, up 3, down 5, idx 7.
func.func @main() {
  %out = memref.alloc() : memref<4x13xf32>
  %cast = memref.cast %out : memref<4x13xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c13 = arith.constant 13 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c13, %sy = %c1, %sz = %c1) {
    %ti = arith.index_cast %tx : index to i32
    %v = arith.sitofp %ti : i32 to f32
    %width = arith.index_cast %sx : index to i32
    %o3 = arith.constant 3 : i32
    %o4 = arith.constant 4 : i32
    %o5 = arith.constant 5 : i32
    %o7 = arith.constant 7 : i32
    %none = arith.constant -1.0 : f32
    %x, %xok = gpu.shuffle xor %v, %o4, %width : f32
    %u, %uok = gpu.shuffle up %v, %o3, %width : f32
    %d, %dok = gpu.shuffle down %v, %o5, %width : f32
    %i, %iok = gpu.shuffle idx %v, %o7, %width : f32
    %xs = arith.select %xok, %x, %none : f32
    %us = arith.select %uok, %u, %none : f32
    %ds = arith.select %dok, %d, %none : f32
    %is = arith.select %iok, %i, %none : f32
    memref.store %xs, %out[%c0, %tx] : memref<4x13xf32>
    memref.store %us, %out[%c1, %tx] : memref<4x13xf32>
    memref.store %ds, %out[%c2, %tx] : memref<4x13xf32>
    memref.store %is, %out[%c3, %tx] : memref<4x13xf32>
    gpu.terminator
  }
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [4, 13] strides = [13, 1] data =
// CHECK-NEXT: {{\[}}[4,   5,   6,   7,   0,   1,   2,   3,   12,   -1,   -1,   -1,   8],
// CHECK-NEXT:  [-1,   -1,   -1,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9],
// CHECK-NEXT:  [5,   6,   7,   8,   9,   10,   11,   12,   -1,   -1,   -1,   -1,   -1],
// CHECK-NEXT:  [7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7,   7]]
