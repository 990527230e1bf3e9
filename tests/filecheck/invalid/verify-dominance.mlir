// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: nova-opt %s --split-input-file --verify-diagnostics > /dev/null

// A value used before its definition (xDSL's verifier does not check SSA dominance; Nova's does,
// as mlir-opt), instead of failing deep in the LLVM lowering.

func.func @use_before_def() {
  // CHECK: verify-dominance.mlir:[[# @LINE + 3]]:3: error: 'memref.cast' op operand #0 does not dominate this use
  // CHECK-NEXT: {{^}}  %cast = memref.cast %cell : memref<1xi32> to memref<*xi32>
  // CHECK-NEXT: {{^}}  ^
  %cast = memref.cast %cell : memref<1xi32> to memref<*xi32> // expected-error {{does not dominate}}
  %cell = memref.alloc() : memref<1xi32>
  return
}

// -----

// Across blocks: ^bb1 is reachable from the entry without passing ^bb2.

func.func @not_dominating(%c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  // CHECK: verify-dominance.mlir:[[# @LINE + 1]]:3: error: 'arith.addi' op operand #0 does not dominate this use
  %y = arith.addi %x, %x : i32 // expected-error {{does not dominate}}
  return
^bb2:
  %x = arith.constant 1 : i32
  cf.br ^bb1
}

// -----

// An empty block where a terminator is required.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK: verify-dominance.mlir:[[# @LINE + 2]]:5: error: 'gpu.func' op has an empty block: expect at least a terminator
    // CHECK-NEXT: {{^}}    gpu.func @empty(%arg0: f32) kernel {
    gpu.func @empty(%arg0: f32) kernel { // expected-error {{empty block}}
    }
  }
}
