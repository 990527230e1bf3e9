// RUN: nova-run %s --device cpu | FileCheck %s

// vector.transfer_read/transfer_write at the edge of an array: 3 threads each move a
// vector<4xf32> of a 10-element memref<?xf32> (a dynamic size). Lanes past the end read the
// padding value (-1) and writes past the end are dropped: the transfer_write goes through a
// 10-element subview of a 12-element buffer whose last two elements (-5) must survive. Also a
// maskedload with a create_mask of the lanes in bounds (masked-off lanes: the pass-through 7),
// and a maskedstore of the same lanes. Expected values: tests/unit/test_vector_corpus.py.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %n = arith.constant 10 : index
  %one = arith.constant 1.0 : f32
  %guard_value = arith.constant -5.0 : f32
  %data = memref.alloc(%n) : memref<?xf32>
  %padded = memref.alloc() : memref<12xf32>
  %guard = memref.alloc() : memref<12xf32>
  %masked = memref.alloc() : memref<12xf32>
  %stored = memref.alloc() : memref<12xf32>
  scf.for %i = %c0 to %c12 step %c1 {
    memref.store %guard_value, %guard[%i] : memref<12xf32>
    memref.store %guard_value, %stored[%i] : memref<12xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %v = arith.addf %fi, %one : f32
    memref.store %v, %data[%i] : memref<?xf32>
  }
  %dc = memref.cast %data : memref<?xf32> to memref<*xf32>
  gpu.host_register %dc : memref<*xf32>
  %pc = memref.cast %padded : memref<12xf32> to memref<*xf32>
  gpu.host_register %pc : memref<*xf32>
  %gc = memref.cast %guard : memref<12xf32> to memref<*xf32>
  gpu.host_register %gc : memref<*xf32>
  %mc = memref.cast %masked : memref<12xf32> to memref<*xf32>
  gpu.host_register %mc : memref<*xf32>
  %sc = memref.cast %stored : memref<12xf32> to memref<*xf32>
  gpu.host_register %sc : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
    %base = arith.muli %tx, %c4 : index
    %pad = arith.constant -1.0 : f32
    %v = vector.transfer_read %data[%base], %pad : memref<?xf32>, vector<4xf32>
    vector.store %v, %padded[%base] : memref<12xf32>, vector<4xf32>
    %ten = arith.constant dense<10.0> : vector<4xf32>
    %w = arith.mulf %v, %ten : vector<4xf32>
    %view = memref.subview %guard[0] [10] [1] : memref<12xf32> to memref<10xf32, strided<[1]>>
    vector.transfer_write %w, %view[%base] : vector<4xf32>, memref<10xf32, strided<[1]>>
    %left = arith.subi %n, %base : index
    %mask = vector.create_mask %left : vector<4xi1>
    %seven = arith.constant dense<7.0> : vector<4xf32>
    %m = vector.maskedload %data[%base], %mask, %seven : memref<?xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
    vector.store %m, %masked[%base] : memref<12xf32>, vector<4xf32>
    vector.maskedstore %stored[%base], %mask, %w : memref<12xf32>, vector<4xi1>, vector<4xf32>
    gpu.terminator
  }
  %zero = arith.constant 0.0 : f32
  scf.for %b = %c0 to %c12 step %c4 {
    %p = vector.load %padded[%b] : memref<12xf32>, vector<4xf32>
    %g = vector.load %guard[%b] : memref<12xf32>, vector<4xf32>
    %m = vector.load %masked[%b] : memref<12xf32>, vector<4xf32>
    %s = vector.load %stored[%b] : memref<12xf32>, vector<4xf32>
    %h = vector.transfer_read %data[%b], %zero : memref<?xf32>, vector<4xf32>
    vector.print %p : vector<4xf32> punctuation <comma>
    vector.print str " "
    vector.print %g : vector<4xf32> punctuation <comma>
    vector.print str " "
    vector.print %m : vector<4xf32> punctuation <comma>
    vector.print str " "
    vector.print %s : vector<4xf32> punctuation <comma>
    vector.print str " "
    vector.print %h : vector<4xf32>
  }
  return
}

// CHECK: ( 1, 2, 3, 4 ),  ( 10, 20, 30, 40 ),  ( 1, 2, 3, 4 ),  ( 10, 20, 30, 40 ),  ( 1, 2, 3, 4 )
// CHECK-NEXT: ( 5, 6, 7, 8 ),  ( 50, 60, 70, 80 ),  ( 5, 6, 7, 8 ),  ( 50, 60, 70, 80 ),  ( 5, 6, 7, 8 )
// CHECK-NEXT: ( 9, 10, -1, -1 ),  ( 90, 100, -5, -5 ),  ( 9, 10, 7, 7 ),  ( 90, 100, -5, -5 ),  ( 9, 10, 0, 0 )
