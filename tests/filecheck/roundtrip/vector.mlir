// RUN: nova-opt %s | FileCheck %s
// The vector ops Nova lowers (1-D vectors), printed as mlir-opt prints them; test_ir_roundtrip
// also checks them against mlir-opt in custom and generic form.
func.func @vectors(%m: memref<?xf32>, %i: index, %s: f32, %v: vector<4xf32>, %w: vector<4xi32>, %b: vector<4xi1>) -> vector<4xf32> {
  %0 = vector.broadcast %s : f32 to vector<4xf32>
  %1 = vector.extract %v[2] : f32 from vector<4xf32>
  %2 = vector.extract %v[%i] : f32 from vector<4xf32>
  %3 = vector.insert %s, %v [1] : f32 into vector<4xf32>
  %4 = vector.insert %s, %v [%i] : f32 into vector<4xf32>
  %5 = vector.load %m[%i] : memref<?xf32>, vector<4xf32>
  vector.store %v, %m[%i] : memref<?xf32>, vector<4xf32>
  %6 = vector.maskedload %m[%i], %b, %v : memref<?xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  vector.maskedstore %m[%i], %b, %v : memref<?xf32>, vector<4xi1>, vector<4xf32>
  %7 = vector.transfer_read %m[%i], %s : memref<?xf32>, vector<4xf32>
  %8 = vector.transfer_read %m[%i], %s {in_bounds = [true]} : memref<?xf32>, vector<4xf32>
  %9 = vector.transfer_read %m[%i], %s, %b : memref<?xf32>, vector<4xf32>
  vector.transfer_write %v, %m[%i] : vector<4xf32>, memref<?xf32>
  vector.transfer_write %v, %m[%i] {in_bounds = [true]} : vector<4xf32>, memref<?xf32>
  %10 = vector.reduction <add>, %v : vector<4xf32> into f32
  %11 = vector.reduction <maxnumf>, %v, %s : vector<4xf32> into f32
  %12 = vector.reduction <minsi>, %w : vector<4xi32> into i32
  %13 = vector.fma %v, %v, %v : vector<4xf32>
  %14 = vector.bitcast %v : vector<4xf32> to vector<4xi32>
  %15 = vector.create_mask %i : vector<4xi1>
  %16 = vector.constant_mask [2] : vector<4xi1>
  %17 = vector.shuffle %v, %v [0, 4, 1, 5] : vector<4xf32>, vector<4xf32>
  %18 = vector.shape_cast %v : vector<4xf32> to vector<4xf32>
  %19 = vector.from_elements %s, %s : vector<2xf32>
  %20 = vector.step : vector<4xindex>
  %21 = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : vector<4xf32>
  %22 = arith.addf %v, %21 : vector<4xf32>
  %23 = arith.cmpf olt, %v, %21 : vector<4xf32>
  %24 = arith.select %23, %v, %21 : vector<4xi1>, vector<4xf32>
  %25 = math.exp %v : vector<4xf32>
  vector.print %v : vector<4xf32>
  return %0 : vector<4xf32>
}

// CHECK:      func.func @vectors(%m: memref<?xf32>, %i: index, %s: f32, %v: vector<4xf32>, %w: vector<4xi32>, %b: vector<4xi1>) -> vector<4xf32> {
// CHECK-NEXT:   %0 = vector.broadcast %s : f32 to vector<4xf32>
// CHECK-NEXT:   %1 = vector.extract %v[2] : f32 from vector<4xf32>
// CHECK-NEXT:   %2 = vector.extract %v[%i] : f32 from vector<4xf32>
// CHECK-NEXT:   %3 = vector.insert %s, %v [1] : f32 into vector<4xf32>
// CHECK-NEXT:   %4 = vector.insert %s, %v [%i] : f32 into vector<4xf32>
// CHECK-NEXT:   %5 = vector.load %m[%i] : memref<?xf32>, vector<4xf32>
// CHECK-NEXT:   vector.store %v, %m[%i] : memref<?xf32>, vector<4xf32>
// CHECK-NEXT:   %6 = vector.maskedload %m[%i], %b, %v : memref<?xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
// CHECK-NEXT:   vector.maskedstore %m[%i], %b, %v : memref<?xf32>, vector<4xi1>, vector<4xf32>
// CHECK-NEXT:   %7 = vector.transfer_read %m[%i], %s : memref<?xf32>, vector<4xf32>
// CHECK-NEXT:   %8 = vector.transfer_read %m[%i], %s {in_bounds = [true]} : memref<?xf32>, vector<4xf32>
// CHECK-NEXT:   %9 = vector.transfer_read %m[%i], %s, %b : memref<?xf32>, vector<4xf32>
// CHECK-NEXT:   vector.transfer_write %v, %m[%i] : vector<4xf32>, memref<?xf32>
// CHECK-NEXT:   vector.transfer_write %v, %m[%i] {in_bounds = [true]} : vector<4xf32>, memref<?xf32>
// CHECK-NEXT:   %10 = vector.reduction <add>, %v : vector<4xf32> into f32
// CHECK-NEXT:   %11 = vector.reduction <maxnumf>, %v, %s : vector<4xf32> into f32
// CHECK-NEXT:   %12 = vector.reduction <minsi>, %w : vector<4xi32> into i32
// CHECK-NEXT:   %13 = vector.fma %v, %v, %v : vector<4xf32>
// CHECK-NEXT:   %14 = vector.bitcast %v : vector<4xf32> to vector<4xi32>
// CHECK-NEXT:   %15 = vector.create_mask %i : vector<4xi1>
// CHECK-NEXT:   %16 = vector.constant_mask [2] : vector<4xi1>
// CHECK-NEXT:   %17 = vector.shuffle %v, %v [0, 4, 1, 5] : vector<4xf32>, vector<4xf32>
// CHECK-NEXT:   %18 = vector.shape_cast %v : vector<4xf32> to vector<4xf32>
// CHECK-NEXT:   %19 = vector.from_elements %s, %s : vector<2xf32>
// CHECK-NEXT:   %20 = vector.step : vector<4xindex>
// CHECK-NEXT:   %21 = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : vector<4xf32>
// CHECK-NEXT:   %22 = arith.addf %v, %21 : vector<4xf32>
// CHECK-NEXT:   %23 = arith.cmpf olt, %v, %21 : vector<4xf32>
// CHECK-NEXT:   %24 = arith.select %23, %v, %21 : vector<4xi1>, vector<4xf32>
// CHECK-NEXT:   %25 = math.exp %v : vector<4xf32>
// CHECK-NEXT:   vector.print %v : vector<4xf32>
// CHECK-NEXT:   return %0 : vector<4xf32>
