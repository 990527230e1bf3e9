// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | nova-opt | FileCheck %s
// Affine accesses with an attribute dictionary: MLIR puts it before the colon (the parser read it
// after the type, so what Nova printed did not parse back).

func.func @f(%m: memref<64xf32>, %i: index) {
  %v = affine.load %m[%i] {foo = 1 : i64} : memref<64xf32>
  affine.store %v, %m[%i + 1] {bar} : memref<64xf32>
  %w = affine.vector_load %m[%i * 8] {baz} : memref<64xf32>, vector<8xf32>
  affine.vector_store %w, %m[%i * 8] {qux = "q"} : memref<64xf32>, vector<8xf32>
  return
}

// CHECK-LABEL: func.func @f(
// CHECK-NEXT:    %v = affine.load %m[%i] {foo = 1 : i64} : memref<64xf32>
// CHECK-NEXT:    affine.store %v, %m[%i + 1] {bar} : memref<64xf32>
// CHECK-NEXT:    %w = affine.vector_load %m[%i * 8] {baz} : memref<64xf32>, vector<8xf32>
// CHECK-NEXT:    affine.vector_store %w, %m[%i * 8] {qux = "q"} : memref<64xf32>, vector<8xf32>
