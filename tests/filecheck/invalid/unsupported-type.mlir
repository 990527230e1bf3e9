// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s

// Types the LLVM lowering does not handle are rejected at the op that produces them, naming the
// supported ones.

func.func @main() {
  // CHECK: unsupported-type.mlir:[[# @LINE + 3]]:8: error: type 'vector<[4]xf32>' is not supported by the LLVM lowering: scalable vectors are not supported (only 1-D fixed-size vectors)
  // CHECK-NEXT: {{^}}  %v = arith.constant dense<1.0> : vector<[4]xf32>
  // CHECK-NEXT: {{^}}       ^
  %v = arith.constant dense<1.0> : vector<[4]xf32>
  %w = arith.addf %v, %v : vector<[4]xf32>
  return
}

// -----

func.func @main() {
  // CHECK: unsupported-type.mlir:[[# @LINE + 1]]:8: error: type 'f8E4M3FN' is not supported by the LLVM lowering (supported:
  %v = arith.constant 1.0 : f8E4M3FN
  %w = arith.addf %v, %v : f8E4M3FN
  return
}

// -----

func.func @main() {
  // CHECK: unsupported-type.mlir:[[# @LINE + 1]]:8: error: type 'vector<4xf32>' is not supported here: vectors are supported as SSA values (function arguments and results, block arguments), not as memref elements
  %m = memref.alloc() : memref<4xvector<4xf32>>
  return
}

// -----

func.func @main() {
  %v = arith.constant 1 : i128
  // CHECK: unsupported-type.mlir:[[# @LINE + 3]]:3: error: vector.print of type i128 is not supported on the host (supported: integers up to 64 bits, index, f16, bf16, f32, f64)
  // CHECK-NEXT: {{^}}  vector.print %v : i128
  // CHECK-NEXT: {{^}}  ^
  vector.print %v : i128
  return
}
