// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s
// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s

// Ops of dialects Nova does not compile (tensor, complex, linalg, ...) are rejected where they
// are written, naming the dialects Nova supports.

func.func @main() {
  // CHECK: unsupported-dialect.mlir:[[# @LINE + 3]]:8: error: unsupported operation 'tensor.empty' (supported dialects: builtin, func, arith, math, memref, scf, cf, index, vector, gpu, affine, nvvm, nvgpu, async, llvm; --allow-unregistered-dialect parses ops of other dialects)
  // CHECK-NEXT: {{^}}  %t = tensor.empty() : tensor<4xf32>
  // CHECK-NEXT: {{^}}       ^
  %t = tensor.empty() : tensor<4xf32>
  return
}

// -----

func.func @main() {
  // CHECK: unsupported-dialect.mlir:[[# @LINE + 1]]:8: error: unsupported operation 'complex.constant' (supported dialects:
  %c = complex.constant [1.0 : f32, 2.0 : f32] : complex<f32>
  return
}

// -----

// An op of a supported dialect that Nova does not implement.

func.func @main(%m: memref<4xf32>) {
  // CHECK: unsupported-dialect.mlir:[[# @LINE + 1]]:8: error: unsupported operation 'memref.realloc' (the 'memref' dialect has no op 'memref.realloc' that Nova supports)
  %n = memref.realloc %m : memref<4xf32> to memref<8xf32>
  return
}
