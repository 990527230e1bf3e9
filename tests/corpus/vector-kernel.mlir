// RUN: nova-run %s --device cpu | FileCheck %s

// Vectorized memory access in a kernel: each of 8 threads loads vector<4xf32> slices of x and y
// (vector.load), computes x * x + y and fma(x, y, x) on vectors, stores them (vector.store) and
// reduces the first with vector.reduction <add> and <maxnumf>, into one float per thread.
// The host fills x[i] = i / 2, y[i] = 32 - i and prints the results with vector.load +
// vector.print. Expected values: tests/unit/test_vector_corpus.py (NumPy).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %x = memref.alloc() : memref<32xf32>
  %y = memref.alloc() : memref<32xf32>
  %sq = memref.alloc() : memref<32xf32>
  %fm = memref.alloc() : memref<32xf32>
  %sums = memref.alloc() : memref<8xf32>
  %maxs = memref.alloc() : memref<8xf32>
  %half = arith.constant 0.5 : f32
  %f32c = arith.constant 32.0 : f32
  scf.for %i = %c0 to %c32 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %xv = arith.mulf %fi, %half : f32
    %yv = arith.subf %f32c, %fi : f32
    memref.store %xv, %x[%i] : memref<32xf32>
    memref.store %yv, %y[%i] : memref<32xf32>
  }
  %xc = memref.cast %x : memref<32xf32> to memref<*xf32>
  gpu.host_register %xc : memref<*xf32>
  %yc = memref.cast %y : memref<32xf32> to memref<*xf32>
  gpu.host_register %yc : memref<*xf32>
  %sqc = memref.cast %sq : memref<32xf32> to memref<*xf32>
  gpu.host_register %sqc : memref<*xf32>
  %fmc = memref.cast %fm : memref<32xf32> to memref<*xf32>
  gpu.host_register %fmc : memref<*xf32>
  %sc = memref.cast %sums : memref<8xf32> to memref<*xf32>
  gpu.host_register %sc : memref<*xf32>
  %mc = memref.cast %maxs : memref<8xf32> to memref<*xf32>
  gpu.host_register %mc : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %base = arith.muli %tx, %c4 : index
    %vx = vector.load %x[%base] : memref<32xf32>, vector<4xf32>
    %vy = vector.load %y[%base] : memref<32xf32>, vector<4xf32>
    %xx = arith.mulf %vx, %vx : vector<4xf32>
    %s = arith.addf %xx, %vy : vector<4xf32>
    %f = vector.fma %vx, %vy, %vx : vector<4xf32>
    vector.store %s, %sq[%base] : memref<32xf32>, vector<4xf32>
    vector.store %f, %fm[%base] : memref<32xf32>, vector<4xf32>
    %sum = vector.reduction <add>, %s : vector<4xf32> into f32
    %m = vector.reduction <maxnumf>, %s : vector<4xf32> into f32
    memref.store %sum, %sums[%tx] : memref<8xf32>
    memref.store %m, %maxs[%tx] : memref<8xf32>
    gpu.terminator
  }
  scf.for %t = %c0 to %c8 step %c1 {
    %base = arith.muli %t, %c4 : index
    %v = vector.load %sq[%base] : memref<32xf32>, vector<4xf32>
    vector.print %v : vector<4xf32>
  }
  scf.for %t = %c0 to %c8 step %c1 {
    %base = arith.muli %t, %c4 : index
    %v = vector.load %fm[%base] : memref<32xf32>, vector<4xf32>
    vector.print %v : vector<4xf32>
  }
  %s0 = vector.load %sums[%c0] : memref<8xf32>, vector<8xf32>
  vector.print %s0 : vector<8xf32>
  %m0 = vector.load %maxs[%c0] : memref<8xf32>, vector<8xf32>
  vector.print %m0 : vector<8xf32>
  return
}

// CHECK: ( 32, 31.25, 31, 31.25 )
// CHECK-NEXT: ( 32, 33.25, 35, 37.25 )
// CHECK-NEXT: ( 40, 43.25, 47, 51.25 )
// CHECK-NEXT: ( 56, 61.25, 67, 73.25 )
// CHECK-NEXT: ( 80, 87.25, 95, 103.25 )
// CHECK-NEXT: ( 112, 121.25, 131, 141.25 )
// CHECK-NEXT: ( 152, 163.25, 175, 187.25 )
// CHECK-NEXT: ( 200, 213.25, 227, 241.25 )
// CHECK-NEXT: ( 0, 16, 31, 45 )
// CHECK-NEXT: ( 58, 70, 81, 91 )
// CHECK-NEXT: ( 100, 108, 115, 121 )
// CHECK-NEXT: ( 126, 130, 133, 135 )
// CHECK-NEXT: ( 136, 136, 135, 133 )
// CHECK-NEXT: ( 130, 126, 121, 115 )
// CHECK-NEXT: ( 108, 100, 91, 81 )
// CHECK-NEXT: ( 70, 58, 45, 31 )
// CHECK-NEXT: ( 125.5, 137.5, 181.5, 257.5, 365.5, 505.5, 677.5, 881.5 )
// CHECK-NEXT: ( 32, 37.25, 51.25, 73.25, 103.25, 141.25, 187.25, 241.25 )
