// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// vector ops in their printed forms (broadcast, fma, extract/insert with static and dynamic
// positions, shuffle, reductions with accumulator and fastmath, casts, masks, loads, stores,
// transfers with in_bounds and permutation maps, print forms), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

func.func @elementwise(%v: vector<4xf32>, %w: vector<4xf32>, %s: f32, %i: index, %m: vector<4xi1>) {
  %0 = vector.broadcast %s : f32 to vector<4xf32>
  %1 = vector.broadcast %v : vector<4xf32> to vector<2x4xf32>
  %2 = vector.fma %v, %w, %0 : vector<4xf32>
  %3 = vector.extract %v[2] : f32 from vector<4xf32>
  %4 = vector.extract %v[%i] : f32 from vector<4xf32>
  %5 = vector.extract %1[1] : vector<4xf32> from vector<2x4xf32>
  %6 = vector.insert %s, %v [1] : f32 into vector<4xf32>
  %7 = vector.insert %v, %1 [0] : vector<4xf32> into vector<2x4xf32>
  %8 = vector.shuffle %v, %w [0, 4, 1, 5] : vector<4xf32>, vector<4xf32>
  %9 = vector.reduction <add>, %v : vector<4xf32> into f32
  %10 = vector.reduction <maxnumf>, %v, %s : vector<4xf32> into f32
  %11 = vector.bitcast %v : vector<4xf32> to vector<4xi32>
  %12 = vector.shape_cast %1 : vector<2x4xf32> to vector<8xf32>
  %13 = vector.from_elements %s, %s : vector<2xf32>
  %14 = vector.step : vector<4xindex>
  %15 = vector.constant_mask [2] : vector<4xi1>
  %16 = vector.create_mask %i : vector<4xi1>
  %17 = arith.select %m, %v, %w : vector<4xi1>, vector<4xf32>
  %18 = arith.cmpf olt, %v, %w : vector<4xf32>
  %19 = vector.reduction <mul>, %v fastmath<fast> : vector<4xf32> into f32
  "use"(%2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19) : (vector<4xf32>, f32, f32, vector<4xf32>, vector<4xf32>, vector<2x4xf32>, vector<4xf32>, f32, f32, vector<4xi32>, vector<8xf32>, vector<2xf32>, vector<4xindex>, vector<4xi1>, vector<4xi1>, vector<4xf32>, vector<4xi1>, f32) -> ()
  return
}

func.func @memory(%m: memref<?x8xf32>, %i: index, %mask: vector<4xi1>, %pass: vector<4xf32>) {
  %pad = arith.constant 0.0 : f32
  %0 = vector.load %m[%i, %i] : memref<?x8xf32>, vector<4xf32>
  vector.store %0, %m[%i, %i] : memref<?x8xf32>, vector<4xf32>
  %1 = vector.maskedload %m[%i, %i], %mask, %pass : memref<?x8xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  vector.maskedstore %m[%i, %i], %mask, %1 : memref<?x8xf32>, vector<4xi1>, vector<4xf32>
  %2 = vector.transfer_read %m[%i, %i], %pad : memref<?x8xf32>, vector<4xf32>
  vector.transfer_write %2, %m[%i, %i] : vector<4xf32>, memref<?x8xf32>
  %3 = vector.transfer_read %m[%i, %i], %pad {in_bounds = [true]} : memref<?x8xf32>, vector<4xf32>
  vector.transfer_write %3, %m[%i, %i] {in_bounds = [true]} : vector<4xf32>, memref<?x8xf32>
  %4 = vector.transfer_read %m[%i, %i], %pad, %mask : memref<?x8xf32>, vector<4xf32>
  vector.print %0 : vector<4xf32>
  vector.print %pad : f32
  vector.print str "hello\n"
  vector.print
  vector.print %i : index punctuation <comma>
  vector.print punctuation <open>
  "use"(%4) : (vector<4xf32>) -> ()
  return
}

func.func @edge_forms(%m: memref<?x8xf32>, %i: index, %z: vector<f32>, %v: vector<2x4xf32>, %s: f32) {
  %pad = arith.constant 0.0 : f32
  %0 = vector.transfer_read %m[%i, %i], %pad {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<?x8xf32>, vector<4xf32>
  %1 = vector.extract %z[] : f32 from vector<f32>
  %2 = vector.extract %v[1, 2] : f32 from vector<2x4xf32>
  %3 = vector.broadcast %s : f32 to vector<f32>
  %4 = vector.insert %s, %v [1, %i] : f32 into vector<2x4xf32>
  %5 = vector.transfer_read %m[%i, %i], %pad {permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<?x8xf32>, vector<2x4xf32>
  %6 = vector.shuffle %z, %z [0, 1] : vector<f32>, vector<f32>
  %7 = vector.reduction <minimumf>, %0 : vector<4xf32> into f32
  %8 = vector.load %m[%i, %i] {nontemporal = true} : memref<?x8xf32>, vector<4xf32>
  "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8) : (vector<4xf32>, f32, f32, vector<f32>, vector<2x4xf32>, vector<2x4xf32>, vector<2xf32>, f32, vector<4xf32>) -> ()
  return
}

// CHECK:      #map = affine_map<(d0, d1) -> (d0)>
// CHECK-NEXT: #map1 = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @elementwise(%v: vector<4xf32>, %w: vector<4xf32>, %s: f32, %i: index, %m: vector<4xi1>) {
// CHECK-NEXT:     %0 = vector.broadcast %s : f32 to vector<4xf32>
// CHECK-NEXT:     %1 = vector.broadcast %v : vector<4xf32> to vector<2x4xf32>
// CHECK-NEXT:     %2 = vector.fma %v, %w, %0 : vector<4xf32>
// CHECK-NEXT:     %3 = vector.extract %v[2] : f32 from vector<4xf32>
// CHECK-NEXT:     %4 = vector.extract %v[%i] : f32 from vector<4xf32>
// CHECK-NEXT:     %5 = vector.extract %1[1] : vector<4xf32> from vector<2x4xf32>
// CHECK-NEXT:     %6 = vector.insert %s, %v [1] : f32 into vector<4xf32>
// CHECK-NEXT:     %7 = vector.insert %v, %1 [0] : vector<4xf32> into vector<2x4xf32>
// CHECK-NEXT:     %8 = vector.shuffle %v, %w [0, 4, 1, 5] : vector<4xf32>, vector<4xf32>
// CHECK-NEXT:     %9 = vector.reduction <add>, %v : vector<4xf32> into f32
// CHECK-NEXT:     %10 = vector.reduction <maxnumf>, %v, %s : vector<4xf32> into f32
// CHECK-NEXT:     %11 = vector.bitcast %v : vector<4xf32> to vector<4xi32>
// CHECK-NEXT:     %12 = vector.shape_cast %1 : vector<2x4xf32> to vector<8xf32>
// CHECK-NEXT:     %13 = vector.from_elements %s, %s : vector<2xf32>
// CHECK-NEXT:     %14 = vector.step : vector<4xindex>
// CHECK-NEXT:     %15 = vector.constant_mask [2] : vector<4xi1>
// CHECK-NEXT:     %16 = vector.create_mask %i : vector<4xi1>
// CHECK-NEXT:     %17 = arith.select %m, %v, %w : vector<4xi1>, vector<4xf32>
// CHECK-NEXT:     %18 = arith.cmpf olt, %v, %w : vector<4xf32>
// CHECK-NEXT:     %19 = vector.reduction <mul>, %v fastmath<fast> : vector<4xf32> into f32
// CHECK-NEXT:     "use"(%2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19) : (vector<4xf32>, f32, f32, vector<4xf32>, vector<4xf32>, vector<2x4xf32>, vector<4xf32>, f32, f32, vector<4xi32>, vector<8xf32>, vector<2xf32>, vector<4xindex>, vector<4xi1>, vector<4xi1>, vector<4xf32>, vector<4xi1>, f32) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @memory(%m: memref<?x8xf32>, %i: index, %mask: vector<4xi1>, %pass: vector<4xf32>) {
// CHECK-NEXT:     %pad = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %0 = vector.load %m[%i, %i] : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     vector.store %0, %m[%i, %i] : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     %1 = vector.maskedload %m[%i, %i], %mask, %pass : memref<?x8xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
// CHECK-NEXT:     vector.maskedstore %m[%i, %i], %mask, %1 : memref<?x8xf32>, vector<4xi1>, vector<4xf32>
// CHECK-NEXT:     %2 = vector.transfer_read %m[%i, %i], %pad : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     vector.transfer_write %2, %m[%i, %i] : vector<4xf32>, memref<?x8xf32>
// CHECK-NEXT:     %3 = vector.transfer_read %m[%i, %i], %pad {in_bounds = [true]} : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     vector.transfer_write %3, %m[%i, %i] {in_bounds = [true]} : vector<4xf32>, memref<?x8xf32>
// CHECK-NEXT:     %4 = vector.transfer_read %m[%i, %i], %pad, %mask : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     vector.print %0 : vector<4xf32>
// CHECK-NEXT:     vector.print %pad : f32
// CHECK-NEXT:     vector.print str "hello\0A"
// CHECK-NEXT:     vector.print
// CHECK-NEXT:     vector.print %i : index punctuation <comma>
// CHECK-NEXT:     vector.print punctuation <open>
// CHECK-NEXT:     "use"(%4) : (vector<4xf32>) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @edge_forms(%m: memref<?x8xf32>, %i: index, %z: vector<f32>, %v: vector<2x4xf32>, %s: f32) {
// CHECK-NEXT:     %pad = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %0 = vector.transfer_read %m[%i, %i], %pad {permutation_map = #map} : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     %1 = vector.extract %z[] : f32 from vector<f32>
// CHECK-NEXT:     %2 = vector.extract %v[1, 2] : f32 from vector<2x4xf32>
// CHECK-NEXT:     %3 = vector.broadcast %s : f32 to vector<f32>
// CHECK-NEXT:     %4 = vector.insert %s, %v [1, %i] : f32 into vector<2x4xf32>
// CHECK-NEXT:     %5 = vector.transfer_read %m[%i, %i], %pad {permutation_map = #map1} : memref<?x8xf32>, vector<2x4xf32>
// CHECK-NEXT:     %6 = vector.shuffle %z, %z [0, 1] : vector<f32>, vector<f32>
// CHECK-NEXT:     %7 = vector.reduction <minimumf>, %0 : vector<4xf32> into f32
// CHECK-NEXT:     %8 = vector.load %m[%i, %i] {nontemporal = true} : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8) : (vector<4xf32>, f32, f32, vector<f32>, vector<2x4xf32>, vector<2x4xf32>, vector<2xf32>, f32, vector<4xf32>) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
