// RUN: nova-run %s --device cpu | FileCheck %s

// vector.print of scalars (i32, f32, index, i64) and of a string (which, unlike scalars, gets
// no newline of its own), on the host, around a kernel whose result is printed the same way.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %i = arith.constant 42 : i32
  %f = arith.constant -2.5 : f32
  %big = arith.constant 10000000000 : i64
  vector.print str "Nova says hi\n"
  vector.print %i : i32
  vector.print %f : f32
  vector.print %c7 : index
  vector.print %big : i64
  %cell = memref.alloc() : memref<1xi32>
  %cast = memref.cast %cell : memref<1xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = arith.muli %i, %i : i32
    memref.store %v, %cell[%c0] : memref<1xi32>
    gpu.terminator
  }
  %r = memref.load %cell[%c0] : memref<1xi32>
  vector.print %r : i32
  return
}

// CHECK: Nova says hi
// CHECK-NEXT: 42
// CHECK-NEXT: -2.5
// CHECK-NEXT: 7
// CHECK-NEXT: 10000000000
// CHECK-NEXT: 1764
