// RUN: nova-run %s --device cpu | FileCheck %s

// Vectors on the host: arith/math on vector<4xT>, casts, comparisons and selects, the vector
// value ops (broadcast, extract/insert, from_elements, shuffle, bitcast, shape_cast, fma, step,
// masks) and every reduction kind, printed with vector.print in upstream's `( a, b )` format;
// then math.exp/tanh, cmpf and select on vectors in a kernel. Expected values:
// tests/unit/test_vector_corpus.py (NumPy); mlir-runner prints the same for the host part.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = arith.constant dense<[1.5, -2.0, 3.25, 4.0]> : vector<4xf32>
  %b = arith.constant dense<[7, -20, 33, 40]> : vector<4xi32>
  %d = arith.constant dense<[3, 6, -4, 7]> : vector<4xi32>
  %two = arith.constant 2.0 : f32
  %twos = vector.broadcast %two : f32 to vector<4xf32>
  %sum = arith.addf %a, %twos : vector<4xf32>
  %prod = arith.mulf %a, %a : vector<4xf32>
  %quot = arith.divf %a, %twos : vector<4xf32>
  %neg = arith.negf %a : vector<4xf32>
  vector.print %sum : vector<4xf32>
  vector.print %prod : vector<4xf32>
  vector.print %quot : vector<4xf32>
  vector.print %neg : vector<4xf32>
  %iadd = arith.addi %b, %d : vector<4xi32>
  %imul = arith.muli %b, %d : vector<4xi32>
  %idiv = arith.divsi %b, %d : vector<4xi32>
  %irem = arith.remsi %b, %d : vector<4xi32>
  %ifloor = arith.floordivsi %b, %d : vector<4xi32>
  %imax = arith.maxsi %b, %d : vector<4xi32>
  %c2i = arith.constant dense<2> : vector<4xi32>
  %ishl = arith.shli %d, %c2i : vector<4xi32>
  vector.print %iadd : vector<4xi32>
  vector.print %imul : vector<4xi32>
  vector.print %idiv : vector<4xi32>
  vector.print %irem : vector<4xi32>
  vector.print %ifloor : vector<4xi32>
  vector.print %imax : vector<4xi32>
  vector.print %ishl : vector<4xi32>
  %lt = arith.cmpi slt, %b, %d : vector<4xi32>
  vector.print %lt : vector<4xi1>
  %pick = arith.select %lt, %b, %d : vector<4xi1>, vector<4xi32>
  vector.print %pick : vector<4xi32>
  %fge = arith.cmpf oge, %a, %twos : vector<4xf32>
  %fpick = arith.select %fge, %a, %twos : vector<4xi1>, vector<4xf32>
  vector.print %fpick : vector<4xf32>
  %bf = arith.sitofp %b : vector<4xi32> to vector<4xf32>
  vector.print %bf : vector<4xf32>
  %ai = arith.fptosi %a : vector<4xf32> to vector<4xi32>
  vector.print %ai : vector<4xi32>
  %b64 = arith.extsi %b : vector<4xi32> to vector<4xi64>
  %big = arith.muli %b64, %b64 : vector<4xi64>
  vector.print %big : vector<4xi64>
  %b8 = arith.trunci %imul : vector<4xi32> to vector<4xi8>
  vector.print %b8 : vector<4xi8>
  %a64 = arith.extf %a : vector<4xf32> to vector<4xf64>
  %third = arith.constant dense<3.0> : vector<4xf64>
  %q64 = arith.divf %a64, %third : vector<4xf64>
  vector.print %q64 : vector<4xf64>
  %sq = math.sqrt %prod : vector<4xf32>
  %ab = math.absf %a : vector<4xf32>
  %fl = math.floor %a : vector<4xf32>
  %ia = math.absi %b : vector<4xi32>
  vector.print %sq : vector<4xf32>
  vector.print %ab : vector<4xf32>
  vector.print %fl : vector<4xf32>
  vector.print %ia : vector<4xi32>
  %e2 = vector.extract %a[2] : f32 from vector<4xf32>
  %e1 = vector.extract %b[%c1] : i32 from vector<4xi32>
  vector.print %e2 : f32
  vector.print %e1 : i32
  %ins = vector.insert %two, %a [0] : f32 into vector<4xf32>
  %ins2 = vector.insert %e2, %ins [%c1] : f32 into vector<4xf32>
  vector.print %ins2 : vector<4xf32>
  %fe = vector.from_elements %e2, %two, %e2 : vector<3xf32>
  vector.print %fe : vector<3xf32>
  %shuf = vector.shuffle %a, %twos [3, 4, 0, 5, 2] : vector<4xf32>, vector<4xf32>
  vector.print %shuf : vector<5xf32>
  %bits = vector.bitcast %twos : vector<4xf32> to vector<4xi32>
  vector.print %bits : vector<4xi32>
  %same = vector.shape_cast %a : vector<4xf32> to vector<4xf32>
  %fma = vector.fma %same, %twos, %a : vector<4xf32>
  vector.print %fma : vector<4xf32>
  %step = vector.step : vector<4xindex>
  vector.print %step : vector<4xindex>
  %cm = vector.constant_mask [3] : vector<4xi1>
  vector.print %cm : vector<4xi1>
  %dm = vector.create_mask %c2 : vector<4xi1>
  vector.print %dm : vector<4xi1>
  %racc = arith.constant 100.0 : f32
  %r0 = vector.reduction <add>, %a : vector<4xf32> into f32
  %r1 = vector.reduction <add>, %a, %racc : vector<4xf32> into f32
  %r2 = vector.reduction <mul>, %a : vector<4xf32> into f32
  %r3 = vector.reduction <minnumf>, %a : vector<4xf32> into f32
  %r4 = vector.reduction <maximumf>, %a : vector<4xf32> into f32
  vector.print %r0 : f32
  vector.print %r1 : f32
  vector.print %r2 : f32
  vector.print %r3 : f32
  vector.print %r4 : f32
  %iacc = arith.constant 1000 : i32
  %s0 = vector.reduction <add>, %b : vector<4xi32> into i32
  %s1 = vector.reduction <add>, %b, %iacc : vector<4xi32> into i32
  %s2 = vector.reduction <mul>, %d : vector<4xi32> into i32
  %s3 = vector.reduction <minsi>, %b : vector<4xi32> into i32
  %s4 = vector.reduction <maxui>, %b : vector<4xi32> into i32
  %s5 = vector.reduction <and>, %b : vector<4xi32> into i32
  %s6 = vector.reduction <or>, %b : vector<4xi32> into i32
  %s7 = vector.reduction <xor>, %b : vector<4xi32> into i32
  vector.print %s0 : i32
  vector.print %s1 : i32
  vector.print %s2 : i32
  vector.print %s3 : i32
  vector.print %s4 : i32
  vector.print %s5 : i32
  vector.print %s6 : i32
  vector.print %s7 : i32
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %dev = memref.alloc() : memref<12xf32>
  %devc = memref.cast %dev : memref<12xf32> to memref<*xf32>
  gpu.host_register %devc : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %k = arith.constant dense<[0.0, 1.0, -1.0, 3.25]> : vector<4xf32>
    %ex = math.exp %k : vector<4xf32>
    %th = math.tanh %k : vector<4xf32>
    %pos = arith.cmpf ogt, %k, %th : vector<4xf32>
    %kneg = arith.negf %k : vector<4xf32>
    %kpick = arith.select %pos, %k, %kneg : vector<4xi1>, vector<4xf32>
    vector.store %ex, %dev[%c0] : memref<12xf32>, vector<4xf32>
    vector.store %th, %dev[%c4] : memref<12xf32>, vector<4xf32>
    %c8 = arith.constant 8 : index
    vector.store %kpick, %dev[%c8] : memref<12xf32>, vector<4xf32>
    gpu.terminator
  }
  %kr = vector.load %dev[%c0] : memref<12xf32>, vector<12xf32>
  vector.print %kr : vector<12xf32>
  return
}

// CHECK: ( 3.5, 0, 5.25, 6 )
// CHECK-NEXT: ( 2.25, 4, 10.5625, 16 )
// CHECK-NEXT: ( 0.75, -1, 1.625, 2 )
// CHECK-NEXT: ( -1.5, 2, -3.25, -4 )
// CHECK-NEXT: ( 10, -14, 29, 47 )
// CHECK-NEXT: ( 21, -120, -132, 280 )
// CHECK-NEXT: ( 2, -3, -8, 5 )
// CHECK-NEXT: ( 1, -2, 1, 5 )
// CHECK-NEXT: ( 2, -4, -9, 5 )
// CHECK-NEXT: ( 7, 6, 33, 40 )
// CHECK-NEXT: ( 12, 24, -16, 28 )
// CHECK-NEXT: ( 0, 1, 0, 0 )
// CHECK-NEXT: ( 3, -20, -4, 7 )
// CHECK-NEXT: ( 2, 2, 3.25, 4 )
// CHECK-NEXT: ( 7, -20, 33, 40 )
// CHECK-NEXT: ( 1, -2, 3, 4 )
// CHECK-NEXT: ( 49, 400, 1089, 1600 )
// CHECK-NEXT: ( 21, -120, 124, 24 )
// CHECK-NEXT: ( 0.5, -0.666667, 1.08333, 1.33333 )
// CHECK-NEXT: ( 1.5, 2, 3.25, 4 )
// CHECK-NEXT: ( 1.5, 2, 3.25, 4 )
// CHECK-NEXT: ( 1, -2, 3, 4 )
// CHECK-NEXT: ( 7, 20, 33, 40 )
// CHECK-NEXT: 3.25
// CHECK-NEXT: -20
// CHECK-NEXT: ( 2, 3.25, 3.25, 4 )
// CHECK-NEXT: ( 3.25, 2, 3.25 )
// CHECK-NEXT: ( 4, 2, 1.5, 2, 3.25 )
// CHECK-NEXT: ( 1073741824, 1073741824, 1073741824, 1073741824 )
// CHECK-NEXT: ( 4.5, -6, 9.75, 12 )
// CHECK-NEXT: ( 0, 1, 2, 3 )
// CHECK-NEXT: ( 1, 1, 1, 0 )
// CHECK-NEXT: ( 1, 1, 0, 0 )
// CHECK-NEXT: 6.75
// CHECK-NEXT: 106.75
// CHECK-NEXT: -39
// CHECK-NEXT: -2
// CHECK-NEXT: 4
// CHECK-NEXT: 60
// CHECK-NEXT: 1060
// CHECK-NEXT: -504
// CHECK-NEXT: -20
// CHECK-NEXT: -20
// CHECK-NEXT: 0
// CHECK-NEXT: -17
// CHECK-NEXT: -30
// CHECK-NEXT: ( 1, 2.71828, 0.367879, 25.7903, 0, 0.761594, -0.761594, 0.996998, -0, 1, 1, 3.25 )
