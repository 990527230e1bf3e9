// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// affine ops in their printed forms (bounds as constants, values, maps with max/min; iter_args;
// if with and without else and results; parallel with steps and reductions; maps and sets
// printed as #map/#set aliases), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

#map = affine_map<(d0)[s0] -> (d0 + s0, d0 * 2)>
#set = affine_set<(d0)[s0] : (d0 - s0 >= 0, d0 == 0)>

func.func @loops(%n: index, %m: memref<?x8xf32>, %v: vector<4xf32>) {
  affine.for %i = 0 to 10 {
  }
  affine.for %i = 0 to %n step 2 {
    affine.for %j = affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%n] to 8 {
      %x = affine.load %m[%i, %j] : memref<?x8xf32>
      affine.store %x, %m[%i + 1, %j * 2 - 1] : memref<?x8xf32>
    }
  }
  %s = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 4 iter_args(%acc = %s) -> (f32) {
    %x = affine.load %m[%i, 0] : memref<?x8xf32>
    %y = arith.addf %acc, %x : f32
    affine.yield %y : f32
  }
  affine.for %i = max affine_map<(d0) -> (d0, 0)>(%n) to min affine_map<(d0) -> (d0, 16)>(%n) {
    %w = affine.vector_load %m[%i, 0] : memref<?x8xf32>, vector<4xf32>
    affine.vector_store %w, %m[%i, 4] : memref<?x8xf32>, vector<4xf32>
  }
  "use"(%r) : (f32) -> ()
  return
}

func.func @maps(%a: index, %b: index) -> index {
  %0 = affine.apply affine_map<(d0) -> (d0 + 1)>(%a)
  %1 = affine.apply affine_map<(d0)[s0] -> (d0 - s0)>(%a)[%b]
  %2 = affine.min affine_map<(d0)[s0] -> (d0, s0, 7)>(%a)[%b]
  %3 = affine.max affine_map<(d0, d1) -> (d0 floordiv 2, d1 mod 3, d0 ceildiv 4)>(%a, %b)
  %4 = affine.apply affine_map<()[s0] -> (s0 * 3)>()[%b]
  %5 = affine.apply affine_map<() -> (5)>()
  "use"(%0, %1, %2, %3, %4, %5) : (index, index, index, index, index, index) -> ()
  return %0 : index
}

func.func @conditionals(%a: index, %b: index) -> index {
  affine.if #set(%a)[%b] {
  }
  affine.if affine_set<(d0) : (d0 >= 0)>(%a) {
    "use"(%a) : (index) -> ()
  } else {
    "use"(%b) : (index) -> ()
  }
  %0 = affine.if affine_set<()[s0] : (s0 - 1 >= 0)>()[%b] -> index {
    affine.yield %a : index
  } else {
    affine.yield %b : index
  }
  return %0 : index
}

func.func @parallel(%n: index, %m: memref<?x8xf32>) {
  affine.parallel (%i, %j) = (0, 0) to (%n, 8) {
    %x = affine.load %m[%i, %j] : memref<?x8xf32>
    affine.store %x, %m[%i, %j] : memref<?x8xf32>
  }
  affine.parallel (%i) = (0) to (16) step (4) {
  }
  %r = affine.parallel (%i) = (0) to (8) reduce ("addf") -> (f32) {
    %x = affine.load %m[0, %i] : memref<?x8xf32>
    affine.yield %x : f32
  }
  "use"(%r) : (f32) -> ()
  return
}

func.func @empty_else(%a: index) {
  affine.if affine_set<(d0) : (d0 >= 0)>(%a) {
  } else {
  }
  return
}

// CHECK:      #map = affine_map<(d0)[s0] -> (d0 + s0)>
// CHECK-NEXT: #map1 = affine_map<(d0) -> (d0, 0)>
// CHECK-NEXT: #map2 = affine_map<(d0) -> (d0, 16)>
// CHECK-NEXT: #map3 = affine_map<(d0) -> (d0 + 1)>
// CHECK-NEXT: #map4 = affine_map<(d0)[s0] -> (d0 - s0)>
// CHECK-NEXT: #map5 = affine_map<(d0)[s0] -> (d0, s0, 7)>
// CHECK-NEXT: #map6 = affine_map<(d0, d1) -> (d0 floordiv 2, d1 mod 3, d0 ceildiv 4)>
// CHECK-NEXT: #map7 = affine_map<()[s0] -> (s0 * 3)>
// CHECK-NEXT: #map8 = affine_map<() -> (5)>
// CHECK-NEXT: #set = affine_set<(d0)[s0] : (d0 - s0 >= 0, d0 == 0)>
// CHECK-NEXT: #set1 = affine_set<(d0) : (d0 >= 0)>
// CHECK-NEXT: #set2 = affine_set<()[s0] : (s0 - 1 >= 0)>
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @loops(%n: index, %m: memref<?x8xf32>, %v: vector<4xf32>) {
// CHECK-NEXT:     affine.for %i = 0 to 10 {
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.for %i_1 = 0 to %n step 2 {
// CHECK-NEXT:       affine.for %j = #map(%i_1)[%n] to 8 {
// CHECK-NEXT:         %x = affine.load %m[%i_1, %j] : memref<?x8xf32>
// CHECK-NEXT:         affine.store %x, %m[%i_1 + 1, %j * 2 - 1] : memref<?x8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     %s = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %r = affine.for %i_2 = 0 to 4 iter_args(%acc = %s) -> (f32) {
// CHECK-NEXT:       %x_1 = affine.load %m[%i_2, 0] : memref<?x8xf32>
// CHECK-NEXT:       %y = arith.addf %acc, %x_1 : f32
// CHECK-NEXT:       affine.yield %y : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.for %i_3 = max #map1(%n) to min #map2(%n) {
// CHECK-NEXT:       %w = affine.vector_load %m[%i_3, 0] : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:       affine.vector_store %w, %m[%i_3, 4] : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     "use"(%r) : (f32) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @maps(%a: index, %b: index) -> index {
// CHECK-NEXT:     %0 = affine.apply #map3(%a)
// CHECK-NEXT:     %1 = affine.apply #map4(%a)[%b]
// CHECK-NEXT:     %2 = affine.min #map5(%a)[%b]
// CHECK-NEXT:     %3 = affine.max #map6(%a, %b)
// CHECK-NEXT:     %4 = affine.apply #map7()[%b]
// CHECK-NEXT:     %5 = affine.apply #map8()
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5) : (index, index, index, index, index, index) -> ()
// CHECK-NEXT:     return %0 : index
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @conditionals(%a: index, %b: index) -> index {
// CHECK-NEXT:     affine.if #set(%a)[%b] {
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.if #set1(%a) {
// CHECK-NEXT:       "use"(%a) : (index) -> ()
// CHECK-NEXT:     } else {
// CHECK-NEXT:       "use"(%b) : (index) -> ()
// CHECK-NEXT:     }
// CHECK-NEXT:     %0 = affine.if #set2()[%b] -> index {
// CHECK-NEXT:       affine.yield %a : index
// CHECK-NEXT:     } else {
// CHECK-NEXT:       affine.yield %b : index
// CHECK-NEXT:     }
// CHECK-NEXT:     return %0 : index
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @parallel(%n: index, %m: memref<?x8xf32>) {
// CHECK-NEXT:     affine.parallel (%i, %j) = (0, 0) to (%n, 8) {
// CHECK-NEXT:       %x = affine.load %m[%i, %j] : memref<?x8xf32>
// CHECK-NEXT:       affine.store %x, %m[%i, %j] : memref<?x8xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.parallel (%i_1) = (0) to (16) step (4) {
// CHECK-NEXT:     }
// CHECK-NEXT:     %r = affine.parallel (%i_2) = (0) to (8) reduce ("addf") -> (f32) {
// CHECK-NEXT:       %x_1 = affine.load %m[0, %i_2] : memref<?x8xf32>
// CHECK-NEXT:       affine.yield %x_1 : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     "use"(%r) : (f32) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @empty_else(%a: index) {
// CHECK-NEXT:     affine.if #set1(%a) {
// CHECK-NEXT:     } else {
// CHECK-NEXT:     }
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
