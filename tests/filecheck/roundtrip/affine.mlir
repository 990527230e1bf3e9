// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | nova-opt | FileCheck %s
// Every affine op in MLIR's custom syntax (maps and sets written inline; mlir-opt and Nova print
// them as #map/#set aliases defined before the module): test_ir_roundtrip checks it against
// mlir-opt, the CHECK lines against nova-opt (names kept).
func.func @ops(%m: memref<10x20xf32>, %v: memref<64xf32>, %a: index, %b: index, %x: f32) -> index {
  %0 = affine.apply affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 mod 3 + d0 ceildiv 5 - s0 * 7)>(%a)[%b]
  %1 = affine.apply affine_map<()[s0] -> (s0 * 2 - 1)>()[%b]
  %2 = affine.apply affine_map<(d0, d1) -> (-d0 + d1)>(%a, %b)
  %3 = affine.min affine_map<(d0)[s0] -> (d0, s0 + 2, 10)>(%a)[%b]
  %4 = affine.max affine_map<(d0) -> (d0 - 3, 0)>(%a)
  affine.for %i = 0 to 10 {
    affine.for %j = max affine_map<(d0)[s0] -> (d0, s0)>(%i)[%b] to min affine_map<(d0) -> (d0 + 10, 20)>(%i) step 3 {
      %5 = affine.load %m[%i + 1, %j floordiv 2] : memref<10x20xf32>
      affine.store %5, %m[%i, symbol(%b)] : memref<10x20xf32>
    }
  }
  %6:2 = affine.for %k = %a to affine_map<(d0) -> (d0 * 2)>(%b) iter_args(%s = %a, %t = %x) -> (index, f32) {
    %7 = arith.addi %s, %k : index
    affine.yield %7, %t : index, f32
  }
  affine.if affine_set<(d0)[s0] : (d0 - 1 >= 0, -d0 + s0 == 0, d0 * 2 - 5 >= 0)>(%a)[%b] {
    affine.store %x, %m[0, 0] : memref<10x20xf32>
  }
  affine.if affine_set<(d0) : (d0 >= 0)>(%a) {
    affine.store %x, %m[1, 1] : memref<10x20xf32>
  } else {
    affine.store %x, %m[2, 2] : memref<10x20xf32>
  }
  %8 = affine.if affine_set<() : (0 == 0)>() -> index {
    affine.yield %a : index
  } else {
    affine.yield %b : index
  }
  %9:2 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%a) -> (index, f32) {
    affine.yield %a, %x : index, f32
  } else {
    affine.yield %b, %x : index, f32
  }
  %10 = affine.vector_load %v[%a * 8] : memref<64xf32>, vector<8xf32>
  affine.vector_store %10, %v[%a * 8 + 8] : memref<64xf32>, vector<8xf32>
  return %0 : index
}
func.func @par(%m: memref<10x20xf32>, %n: index) -> (f32, f32) {
  %0:2 = affine.parallel (%pi, %pj) = (0, 0) to (10, min(20, %n)) step (2, 3) reduce ("addf", "maximumf") -> (f32, f32) {
    %1 = affine.load %m[%pi, %pj] : memref<10x20xf32>
    affine.yield %1, %1 : f32, f32
  }
  affine.parallel (%p) = (max(0, %n - 1)) to (10) {
    %cst = arith.constant 1.000000e+00 : f32
    affine.store %cst, %m[%p, symbol(%n)] : memref<10x20xf32>
  }
  return %0#0, %0#1 : f32, f32
}

// CHECK:      #map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 mod 3 + d0 ceildiv 5 - s0 * 7)>
// CHECK-NEXT: #map1 = affine_map<()[s0] -> (s0 * 2 - 1)>
// CHECK-NEXT: #map2 = affine_map<(d0, d1) -> (-d0 + d1)>
// CHECK-NEXT: #map3 = affine_map<(d0)[s0] -> (d0, s0 + 2, 10)>
// CHECK-NEXT: #map4 = affine_map<(d0) -> (d0 - 3, 0)>
// CHECK-NEXT: #map5 = affine_map<(d0)[s0] -> (d0, s0)>
// CHECK-NEXT: #map6 = affine_map<(d0) -> (d0 + 10, 20)>
// CHECK-NEXT: #map7 = affine_map<(d0) -> (d0 * 2)>
// CHECK-NEXT: #set = affine_set<(d0)[s0] : (d0 - 1 >= 0, -d0 + s0 == 0, d0 * 2 - 5 >= 0)>
// CHECK-NEXT: #set1 = affine_set<(d0) : (d0 >= 0)>
// CHECK-NEXT: #set2 = affine_set<() : (0 == 0)>
// CHECK-NEXT: #set3 = affine_set<(d0) : (-d0 + 9 >= 0)>
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @ops(%m: memref<10x20xf32>, %v: memref<64xf32>, %a: index, %b: index, %x: f32) -> index {
// CHECK-NEXT:     %0 = affine.apply #map(%a)[%b]
// CHECK-NEXT:     %1 = affine.apply #map1()[%b]
// CHECK-NEXT:     %2 = affine.apply #map2(%a, %b)
// CHECK-NEXT:     %3 = affine.min #map3(%a)[%b]
// CHECK-NEXT:     %4 = affine.max #map4(%a)
// CHECK-NEXT:     affine.for %i = 0 to 10 {
// CHECK-NEXT:       affine.for %j = max #map5(%i)[%b] to min #map6(%i) step 3 {
// CHECK-NEXT:         %5 = affine.load %m[%i + 1, %j floordiv 2] : memref<10x20xf32>
// CHECK-NEXT:         affine.store %5, %m[%i, symbol(%b)] : memref<10x20xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     %6:2 = affine.for %k = %a to #map7(%b) iter_args(%s = %a, %t = %x) -> (index, f32) {
// CHECK-NEXT:       %7 = arith.addi %s, %k : index
// CHECK-NEXT:       affine.yield %7, %t : index, f32
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.if #set(%a)[%b] {
// CHECK-NEXT:       affine.store %x, %m[0, 0] : memref<10x20xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.if #set1(%a) {
// CHECK-NEXT:       affine.store %x, %m[1, 1] : memref<10x20xf32>
// CHECK-NEXT:     } else {
// CHECK-NEXT:       affine.store %x, %m[2, 2] : memref<10x20xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     %8 = affine.if #set2() -> index {
// CHECK-NEXT:       affine.yield %a : index
// CHECK-NEXT:     } else {
// CHECK-NEXT:       affine.yield %b : index
// CHECK-NEXT:     }
// CHECK-NEXT:     %9:2 = affine.if #set3(%a) -> (index, f32) {
// CHECK-NEXT:       affine.yield %a, %x : index, f32
// CHECK-NEXT:     } else {
// CHECK-NEXT:       affine.yield %b, %x : index, f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %10 = affine.vector_load %v[%a * 8] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT:     affine.vector_store %10, %v[%a * 8 + 8] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT:     return %0 : index
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @par(%m: memref<10x20xf32>, %n: index) -> (f32, f32) {
// CHECK-NEXT:     %0:2 = affine.parallel (%pi, %pj) = (0, 0) to (10, min(20, %n)) step (2, 3) reduce ("addf", "maximumf") -> (f32, f32) {
// CHECK-NEXT:       %1 = affine.load %m[%pi, %pj] : memref<10x20xf32>
// CHECK-NEXT:       affine.yield %1, %1 : f32, f32
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.parallel (%p) = (max(0, %n - 1)) to (10) {
// CHECK-NEXT:       %cst = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       affine.store %cst, %m[%p, symbol(%n)] : memref<10x20xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     return %0#0, %0#1 : f32, f32
// CHECK-NEXT:   }
// CHECK-NEXT: }
