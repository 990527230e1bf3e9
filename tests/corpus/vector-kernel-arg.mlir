// RUN: nova-run %s --device cpu | FileCheck %s

// Vectors defined on the host and used inside gpu.launch become kernel arguments after
// outlining (as with upstream's gpu-kernel-outlining: `args(%v : vector<3xi32>)`), passed by
// value: captured constants (vector<3xi32>, vector<2xf32>, vector<8xi8>, vector<4xf64>) and
// vectors computed at run time from values the host loads from memory (a broadcast f32 plus
// lane offsets, a broadcast i8 plus lane numbers, a broadcast f64 times [1, -1]). Thread 0
// prints every vector argument; each of 4 threads stores lane t of the computed f32 vector
// plus the sum of the f32 constant and lane t mod 3 of the i32 constant; a second launch prints
// them (all output comes from kernels, so its order is the same on a GPU).
// Expected values: tests/unit/test_vector_kernel_args.py (NumPy).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %v3 = arith.constant dense<[7, -2, 30000]> : vector<3xi32>
  %v2 = arith.constant dense<[1.5, -0.25]> : vector<2xf32>
  %v8 = arith.constant dense<[1, -1, 2, -2, 3, -3, 127, -128]> : vector<8xi8>
  %v4 = arith.constant dense<[0.5, 1.0e100, -3.0, 7.0]> : vector<4xf64>
  %inf = memref.alloc() : memref<2xf32>
  %ini = memref.alloc() : memref<2xi32>
  %x0 = arith.constant 2.5 : f32
  %i0 = arith.constant 100 : i32
  memref.store %x0, %inf[%c1] : memref<2xf32>
  memref.store %i0, %ini[%c1] : memref<2xi32>
  %x = memref.load %inf[%c1] : memref<2xf32>
  %xb = vector.broadcast %x : f32 to vector<4xf32>
  %lanes4 = arith.constant dense<[0.0, 0.125, 0.25, 0.375]> : vector<4xf32>
  %r4 = arith.addf %xb, %lanes4 : vector<4xf32>
  %i = memref.load %ini[%c1] : memref<2xi32>
  %i8 = arith.trunci %i : i32 to i8
  %ib = vector.broadcast %i8 : i8 to vector<3xi8>
  %lanes3 = arith.constant dense<[0, 1, 2]> : vector<3xi8>
  %r3 = arith.addi %ib, %lanes3 : vector<3xi8>
  %xd = arith.extf %x : f32 to f64
  %db = vector.broadcast %xd : f64 to vector<2xf64>
  %signs = arith.constant dense<[1.0, -1.0]> : vector<2xf64>
  %r2 = arith.mulf %db, %signs : vector<2xf64>
  %out = memref.alloc() : memref<4xf32>
  %oc = memref.cast %out : memref<4xf32> to memref<*xf32>
  gpu.host_register %oc : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      vector.print %v3 : vector<3xi32>
      vector.print %v2 : vector<2xf32>
      vector.print %v8 : vector<8xi8>
      vector.print %v4 : vector<4xf64>
      vector.print %r4 : vector<4xf32>
      vector.print %r3 : vector<3xi8>
      vector.print %r2 : vector<2xf64>
    }
    %e = vector.extract %r4[%tx] : f32 from vector<4xf32>
    %s = vector.reduction <add>, %v2 : vector<2xf32> into f32
    %lane = arith.remui %tx, %c3 : index
    %k = vector.extract %v3[%lane] : i32 from vector<3xi32>
    %kf = arith.sitofp %k : i32 to f32
    %y0 = arith.addf %e, %s : f32
    %y = arith.addf %y0, %kf : f32
    memref.store %y, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %res = vector.load %out[%c0] : memref<4xf32>, vector<4xf32>
    vector.print %res : vector<4xf32>
    gpu.terminator
  }
  return
}

// CHECK: ( 7, -2, 30000 )
// CHECK-NEXT: ( 1.5, -0.25 )
// CHECK-NEXT: ( 1, -1, 2, -2, 3, -3, 127, -128 )
// CHECK-NEXT: ( 0.5, 1e+100, -3, 7 )
// CHECK-NEXT: ( 2.5, 2.625, 2.75, 2.875 )
// CHECK-NEXT: ( 100, 101, 102 )
// CHECK-NEXT: ( 2.5, -2.5 )
// CHECK-NEXT: ( 10.75, 1.875, 30004, 11.125 )
