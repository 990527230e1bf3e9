// RUN: not nova-opt %s -p lower-affine --split-input-file 2>&1 | FileCheck %s
// RUN: nova-opt %s -p lower-affine --split-input-file --verify-diagnostics > /dev/null

// Affine input Nova rejects, each a located error naming the op: ill-formed ops (the verifier),
// malformed syntax (the parser), and what lower-affine cannot lower (as upstream: division and
// modulo by a non-positive constant; reductions arith has no op for).

func.func @mod_negative(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 3]]:8: error: lower-affine: 'affine.apply' op modulo by non-positive value is not supported
  // CHECK-NEXT: {{^}}  %0 = affine.apply
  // CHECK-NEXT: {{^}}       ^
  %0 = affine.apply affine_map<(d0) -> (d0 mod -2)>(%a) // expected-error {{modulo by non-positive value}}
  return %0 : index
}

// -----

func.func @floordiv_zero(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 1]]:8: error: lower-affine: 'affine.min' op division by non-positive value is not supported
  %0 = affine.min affine_map<(d0) -> (d0 floordiv 0, 4)>(%a) // expected-error {{division by non-positive value}}
  return %0 : index
}

// -----

func.func @ceildiv_negative(%a: index, %m: memref<8xf32>) -> f32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:8: error: lower-affine: 'affine.load' op division by non-positive value is not supported
  %0 = affine.load %m[%a ceildiv -3] : memref<8xf32> // expected-error {{division by non-positive value}}
  return %0 : f32
}

// -----

func.func @rank_mismatch(%m: memref<4x4xf32>, %a: index) -> f32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:8: error: 'affine.load' op affine map num results must equal memref rank
  %0 = affine.load %m[%a] : memref<4x4xf32> // expected-error {{num results must equal memref rank}}
  return %0 : f32
}

// -----

func.func @apply_two_results(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 1]]:3: error: operation defines 2 results but was provided 1 to bind
  %0 = affine.apply affine_map<(d0) -> (d0, d0 + 1)>(%a) // expected-error {{operation defines 2 results but was provided 1 to bind}}
  return %0 : index
}

// -----

func.func @dim_count(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 3]]:8: error: custom op 'affine.apply' dimension or symbol index mismatch
  // CHECK-NEXT: {{^}}  %0 = affine.apply affine_map<(d0, d1) -> (d0)>(%a)
  // CHECK-NEXT: {{^}}       ^
  %0 = affine.apply affine_map<(d0, d1) -> (d0)>(%a) // expected-error {{dimension or symbol index mismatch}}
  return %0 : index
}

// -----

func.func @negative_step() {
  // CHECK: affine.mlir:[[# @LINE + 1]]:32: error: custom op 'affine.for' expected step to be representable as a positive signed integer
  affine.for %i = 0 to 10 step -1 { // expected-error {{positive signed integer}}
  }
  return
}

// -----

func.func @zero_step() {
  // CHECK: affine.mlir:[[# @LINE + 1]]:3: error: 'affine.for' op expected step to be representable as a positive signed integer
  affine.for %i = 0 to 10 step 0 { // expected-error {{positive signed integer}}
  }
  return
}

// -----

func.func @if_without_else(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 3]]:8: error: 'affine.if' op along control flow edge from parent to parent: region branch point has 0 operands, but region successor needs 1 inputs
  // CHECK: affine.mlir:[[# @LINE + 2]]:8: note: region branch point
  // expected-note @+1 {{region branch point}}
  %0 = affine.if affine_set<(d0) : (d0 >= 0)>(%a) -> index { // expected-error {{region branch point has 0 operands}}
    affine.yield %a : index
  }
  return %0 : index
}

// -----

func.func @reduction_type(%m: memref<10xi32>) -> i32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:8: error: 'affine.parallel' op result type cannot match reduction attribute
  %0 = affine.parallel (%i) = (0) to (10) reduce ("addf") -> (i32) { // expected-error {{cannot match reduction}}
    %1 = affine.load %m[%i] : memref<10xi32>
    affine.yield %1 : i32
  }
  return %0 : i32
}

// -----

func.func @reduction_signed(%m: memref<10xsi32>) -> si32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:8: error: lower-affine: 'affine.parallel' op has reduction 'maxs' on si32, which lower-affine cannot lower
  %0 = affine.parallel (%i) = (0) to (10) reduce ("maxs") -> (si32) { // expected-error {{cannot lower}}
    %1 = affine.load %m[%i] : memref<10xsi32>
    affine.yield %1 : si32
  }
  return %0 : si32
}

// -----

func.func @non_affine(%a: index, %m: memref<4xf32>) -> f32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:26: error: non-affine expression: right operand of mod has to be either a constant or symbolic
  %0 = affine.load %m[%a mod %a] : memref<4xf32> // expected-error {{right operand of mod has to be either a constant or symbolic}}
  return %0 : f32
}

// -----

// Upstream accepts a modulo by a symbol (a semi-affine map); Nova does not lower those.
func.func @semi_affine(%a: index, %m: memref<4xf32>) -> f32 {
  // CHECK: affine.mlir:[[# @LINE + 1]]:23: error: semi-affine expressions (mul, mod, floordiv or ceildiv by a dim or symbol) are not supported
  %0 = affine.load %m[%a mod symbol(%a)] : memref<4xf32> // expected-error {{semi-affine}}
  return %0 : f32
}

// -----

func.func @unknown_op(%a: index) -> index {
  // CHECK: affine.mlir:[[# @LINE + 1]]:10: error: unsupported operation 'affine.delinearize_index' (the 'affine' dialect has no op 'affine.delinearize_index' that Nova supports)
  %0:2 = affine.delinearize_index %a into (4, 8) : index, index // expected-error {{unsupported operation}}
  return %0#0 : index
}
