// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file -o %t.nova 2>&1 | FileCheck %s

// IR that xDSL's verifiers accept but MLIR rejects (nova.ir.rules; issue 12, reproducers in
// ../shared/repro/reliability-2026-11-26/): the messages are mlir-opt 22's, except the constant
// loop step (older upstream's). Before, these were internal errors or silently wrong programs.

// d4: cf.br passing 2 operands to a block with 1 argument (was "internal error: ValueError: zip()").
func.func @f(%x: i32) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 3]]:3: error: branch has 2 operands for successor #0, but target block has 1
  // CHECK-NEXT: {{^}}  cf.br ^bb1(%x, %x : i32, i32)
  // CHECK-NEXT: {{^}}  ^
  cf.br ^bb1(%x, %x : i32, i32)
^bb1(%a: i32):
  return %a : i32
}

// -----

// Every successor of every branch op is checked: cf.cond_br's second one.
func.func @f(%x: i32, %b: i1) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:3: error: branch has 0 operands for successor #1, but target block has 1
  cf.cond_br %b, ^bb1(%x : i32), ^bb1
^bb1(%a: i32):
  return %a : i32
}

// -----

// cf.switch: a case successor.
func.func @f(%x: i32, %b: i32) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:3: error: branch has 0 operands for successor #1, but target block has 1
  cf.switch %b : i32, [
    default: ^bb1(%x : i32),
    42: ^bb1
  ]
^bb1(%a: i32):
  return %a : i32
}

// -----

// Operand types too.
func.func @f(%x: i32) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:3: error: type mismatch for bb argument #0 of successor #0
  cf.br ^bb1(%x : i32)
^bb1(%a: i64):
  return %x : i32
}

// -----

// d2: scf.if with a result whose else block has no scf.yield (was "internal error: IndexError").
func.func @f(%b: i1) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:10: error: 'scf.if' op along control flow edge from Operation scf.yield to parent: region branch point has 0 operands, but region successor needs 1 inputs
    %r = scf.if %b -> (i32) {
      %one = arith.constant 1 : i32
      scf.yield %one : i32
    } else {
      %z = arith.constant 0 : i32
    }
    return %r : i32
}

// -----

func.func @f(%b: i1) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'scf.if' op along control flow edge from Operation scf.yield to parent: successor operand type #0 'i64' should match successor input type #0 'i32'
  %r = scf.if %b -> (i32) {
    %one = arith.constant 1 : i64
    scf.yield %one : i64
  } else {
    %z = arith.constant 0 : i32
    scf.yield %z : i32
  }
  return %r : i32
}

// -----

func.func @f(%b: i1) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'scf.if' op must have an else block if defining values
  %r = scf.if %b -> (i32) {
    %one = arith.constant 1 : i32
    scf.yield %one : i32
  }
  return %r : i32
}

// -----

func.func @f(%x: i32) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'scf.while' op along control flow edge from Operation scf.condition to parent: region branch point has 2 operands, but region successor needs 1 inputs
  %r = scf.while (%a = %x) : (i32) -> i32 {
    %b = arith.constant true
    scf.condition(%b) %a, %a : i32, i32
  } do {
  ^bb0(%c: i32):
    scf.yield %c : i32
  }
  return %r : i32
}

// -----

// d2b: affine.if with a result whose else block has no affine.yield (was "internal error").
func.func @f(%i: index) -> i32 {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:10: error: 'affine.yield' op parent of yield must have same number of results as the yield operands
    %r = affine.if affine_set<(d0) : (d0 >= 0)>(%i) -> i32 {
      %one = arith.constant 1 : i32
      affine.yield %one : i32
    } else {
      %z = arith.constant 0 : i32
    }
    return %r : i32
}

// -----

func.func @f(%i: index) -> i32 {
  %r = affine.if affine_set<(d0) : (d0 >= 0)>(%i) -> i32 {
    %one = arith.constant 1 : i64
    // CHECK: verify-rules.mlir:[[# @LINE + 1]]:5: error: 'affine.yield' op types mismatch between yield op and its parent
    affine.yield %one : i64
  } else {
    %z = arith.constant 0 : i32
    affine.yield %z : i32
  }
  return %r : i32
}

// -----

// f1: scf.for with constant step 0 (ran forever on the CPU device) or negative (~2^64 times).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // CHECK: verify-rules.mlir:[[# @LINE + 3]]:3: error: 'scf.for' op constant step operand must be positive
  // CHECK-NEXT: {{^}}  scf.for %i = %c0 to %c4 step %c0 {
  // CHECK-NEXT: {{^}}  ^
  scf.for %i = %c0 to %c4 step %c0 {
    vector.print %i : index
  }
  return
}

// -----

func.func @main() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %m1 = arith.constant -1 : index
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:3: error: 'scf.for' op constant step operand must be positive
  scf.for %i = %c4 to %c0 step %m1 {
  }
  return
}

// -----

func.func @main() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:3: error: 'scf.parallel' op constant step operand must be positive
  scf.parallel (%i) = (%c0) to (%c4) step (%c0) {
  }
  return
}

// -----

// s1: static positions outside the vector (printed garbage on the CPU device).
func.func @main() {
  %v = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'vector.extract' op expected position attribute #1 to be a non-negative integer smaller than the corresponding vector dimension or poison (-1)
  %e = vector.extract %v[7] : f32 from vector<4xf32>
  vector.print %e : f32
  return
}

// -----

func.func @main(%v: vector<4xf32>, %x: f32) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'vector.insert' op expected position attribute #1 to be a non-negative integer smaller than the corresponding dest vector dimension
  %w = vector.insert %x, %v[9] : f32 into vector<4xf32>
  return
}

// -----

// s2: get_global whose type differs from the global's (read 4 MiB past a 16-byte global).
memref.global "private" constant @g : memref<4xf32> = dense<1.0>
func.func @main() {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.get_global' op result type 'memref<1048576xi32>' does not match type 'memref<4xf32>' of the global memref @g
  %g = memref.get_global @g : memref<1048576xi32>
  return
}

// -----

func.func @main() {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.get_global' op 'nope' does not reference a valid global memref
  %g = memref.get_global @nope : memref<4xf32>
  return
}

// -----

// s3: collapse_shape of 6 elements into 7; every group of collapse_shape and expand_shape.
func.func @f(%a: memref<2x3xf32>) -> memref<7xf32> {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.collapse_shape' op collapsed dim size (7) must equal reassociation group size (6)
  %r = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<7xf32>
  return %r : memref<7xf32>
}

// -----

func.func @f(%a: memref<2x3x4xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.collapse_shape' op collapsed dim size (5) must equal reassociation group size (4)
  %r = memref.collapse_shape %a [[0, 1], [2]] : memref<2x3x4xf32> into memref<6x5xf32>
  return
}

// -----

func.func @f(%a: memref<6xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.expand_shape' op collapsed dim size (6) must equal reassociation group size (8)
  %r = memref.expand_shape %a [[0, 1]] output_shape [2, 4] : memref<6xf32> into memref<2x4xf32>
  return
}

// -----

func.func @f(%a: memref<?x3xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.collapse_shape' op collapsed dim (0) must be dynamic if and only if reassociation group is dynamic
  %r = memref.collapse_shape %a [[0, 1]] : memref<?x3xf32> into memref<6xf32>
  return
}

// -----

func.func @f(%a: memref<2x3xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.collapse_shape' op invalid number of reassociation groups: found 2, expected 1
  %r = memref.collapse_shape %a [[0], [1]] : memref<2x3xf32> into memref<6xf32>
  return
}

// -----

func.func @f(%a: memref<2x3x4xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.collapse_shape' op expanded rank (3) inconsistent with number of reassociation indices (2)
  %r = memref.collapse_shape %a [[0], [1]] : memref<2x3x4xf32> into memref<2x3xf32>
  return
}

// -----

func.func @f(%a: memref<6xf32>) {
  // CHECK: verify-rules.mlir:[[# @LINE + 1]]:8: error: 'memref.expand_shape' op invalid output shape provided at pos 0
  %r = memref.expand_shape %a [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<2x3xf32>
  return
}
