// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: nova-opt %s --split-input-file --verify-diagnostics > /dev/null

// A value used before its definition (xDSL's verifier does not check SSA dominance; Nova's does,
// as mlir-opt), instead of failing deep in the LLVM lowering.

func.func @use_before_def() {
  // CHECK: verify-dominance.mlir:[[# @LINE + 5]]:11: error: operand #0 does not dominate this use
  // CHECK-NEXT: {{^}}  %cast = memref.cast %cell : memref<1xi32> to memref<*xi32>
  // CHECK-NEXT: {{^}}          ^
  // CHECK-NEXT: verify-dominance.mlir:[[# @LINE + 3]]:11: note: operand defined here (op in the same block)
  // CHECK-NEXT: {{^}}  %cell = memref.alloc() : memref<1xi32>
  %cast = memref.cast %cell : memref<1xi32> to memref<*xi32> // expected-error {{operand #0 does not dominate this use}}
  %cell = memref.alloc() : memref<1xi32> // expected-note {{operand defined here (op in the same block)}}
  return
}

// -----

// Across blocks: ^bb1 is reachable from the entry without passing ^bb2.

func.func @not_dominating(%c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  // CHECK: verify-dominance.mlir:[[# @LINE + 2]]:8: error: operand #0 does not dominate this use
  // CHECK: verify-dominance.mlir:[[# @LINE + 4]]:8: note: operand defined here (op in the same region)
  %y = arith.addi %x, %x : i32 // expected-error {{operand #0 does not dominate this use}}
  return
^bb2:
  %x = arith.constant 1 : i32 // expected-note {{operand defined here (op in the same region)}}
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

// -----

// A value of a parent region used in a nested region before its definition; a block argument
// of a block that does not dominate the use.

func.func @parent_region(%c: i1) {
  scf.if %c {
    // CHECK: verify-dominance.mlir:[[# @LINE + 2]]:10: error: operand #0 does not dominate this use
    // CHECK: verify-dominance.mlir:[[# @LINE + 3]]:8: note: operand defined here (op in a parent region)
    %y = arith.addi %x, %x : i32 // expected-error {{operand #0 does not dominate this use}}
  }
  %x = arith.constant 1 : i32 // expected-note {{operand defined here (op in a parent region)}}
  return
}

// -----

func.func @block_argument(%c: i1, %a: i32) { // expected-note {{operand defined as a block argument (block #1 in the same region)}}
  cf.cond_br %c, ^bb1(%a : i32), ^bb2
^bb1(%x: i32):
  cf.br ^bb2
^bb2:
  // CHECK: verify-dominance.mlir:[[# @LINE + 2]]:8: error: operand #0 does not dominate this use
  // CHECK: verify-dominance.mlir:[[# @LINE - 6]]:1: note: operand defined as a block argument (block #1 in the same region)
  %y = arith.addi %x, %a : i32 // expected-error {{operand #0 does not dominate this use}}
  return
}
