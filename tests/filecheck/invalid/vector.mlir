// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s
// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=VERIFY

// The vector lowering handles 1-D fixed-size vectors of integers (up to 64 bits), index and
// floats, and contiguous memory accesses; everything else is a located error at the op. The
// verifier messages are mlir-opt's.

func.func @main(%s: f32, %m: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  // n-D vectors live in registers (flat, row-major); only a few vector ops take them
  // CHECK: vector.mlir:[[# @LINE + 3]]:8: error: op 'vector.load' is not supported by the host LLVM lowering (n-D vector vector<2x4xf32>: only 1-D vectors are supported by vector.load (n-D ones by vector.broadcast, vector.extract, vector.fma, vector.from_elements, vector.insert, vector.shape_cast)); supported dialects:
  // CHECK-NEXT: {{^}}  %v = vector.load %m[%c0, %c0] : memref<8x8xf32>, vector<2x4xf32>
  // CHECK-NEXT: {{^}}       ^
  %v = vector.load %m[%c0, %c0] : memref<8x8xf32>, vector<2x4xf32>
  return
}

// -----

func.func @main(%s: f32) {
  %v = vector.broadcast %s : f32 to vector<2x4xf32>
  // CHECK: vector.mlir:[[# @LINE + 1]]:3: error: op 'vector.print' is not supported by the host LLVM lowering (n-D vector vector<2x4xf32>: only 1-D vectors are supported by vector.print
  vector.print %v : vector<2x4xf32>
  return
}

// -----

func.func @main(%w: vector<4xf32>) {
  // CHECK: vector.mlir:[[# @LINE + 1]]:8: error: op 'vector.broadcast' is not supported by the host LLVM lowering (broadcast of vector<4xf32> to vector<2x4xf32>)
  %v = vector.broadcast %w : vector<4xf32> to vector<2x4xf32>
  return
}

// -----

func.func @main(%s: f32) {
  // CHECK: vector.mlir:[[# @LINE + 1]]:8: error: type 'vector<[4]xf32>' is not supported by the LLVM lowering: scalable vectors are not supported (only 1-D fixed-size vectors)
  %v = vector.broadcast %s : f32 to vector<[4]xf32>
  return
}

// -----

func.func @main(%s: i128) {
  // CHECK: vector.mlir:[[# @LINE + 1]]:8: error: type 'vector<2xi128>' is not supported by the LLVM lowering: vector elements are integers up to 64 bits, index or floats
  %v = vector.broadcast %s : i128 to vector<2xi128>
  return
}

// -----

func.func @main(%m: memref<8xf32, strided<[2]>>, %i: index) {
  // CHECK: vector.mlir:[[# @LINE + 1]]:8: error: op 'vector.load' is not supported by the host LLVM lowering (vector.load needs a unit stride in the innermost dimension of memref<8xf32, strided<[2]>> (known from its type))
  %v = vector.load %m[%i] : memref<8xf32, strided<[2]>>, vector<4xf32>
  return
}

// -----

func.func @main(%m: memref<4x4xf32>, %i: index, %p: f32) {
  // CHECK: vector.mlir:[[# @LINE + 1]]:8: error: op 'vector.transfer_read' is not supported by the host LLVM lowering (permutation map affine_map<(d0, d1) -> (d0)>: only the minor identity map (1-D vectors along the innermost dimension) is supported)
  %v = vector.transfer_read %m[%i, %i], %p {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<4x4xf32>, vector<4xf32>
  return
}

// -----

func.func @main() {
  // VERIFY: vector.mlir:[[# @LINE + 1]]:8: error: 'vector.constant_mask' op array attr of size out of bounds of vector result dimension size
  %m = vector.constant_mask [5] : vector<4xi1>
  return
}

// -----

func.func @main(%v: vector<4xf32>) {
  // VERIFY: vector.mlir:[[# @LINE + 1]]:8: error: 'vector.shape_cast' op has different number of elements at source (4) and result (3)
  %r = vector.shape_cast %v : vector<4xf32> to vector<3xf32>
  return
}

// -----

func.func @main(%s: f32) {
  // VERIFY: vector.mlir:[[# @LINE + 1]]:29: error: custom op 'vector.from_elements' number of operands and types do not match: got 2 operands and 3 types
  %r = vector.from_elements %s, %s : vector<3xf32>
  return
}

// -----

func.func @main(%c: vector<2xi1>, %v: vector<4xf32>) {
  // VERIFY: vector.mlir:[[# @LINE + 1]]:8: error: 'arith.select' op failed to verify that condition is signless i1 or has matching shape
  %r = arith.select %c, %v, %v : vector<2xi1>, vector<4xf32>
  return
}

// -----

func.func @main(%w: vector<4xi32>) {
  // VERIFY: vector.mlir:[[# @LINE + 1]]:8: error: 'arith.extsi' op requires the same shape for all operands and results
  %r = arith.extsi %w : vector<4xi32> to vector<2xi64>
  return
}
