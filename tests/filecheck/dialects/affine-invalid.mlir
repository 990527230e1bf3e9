// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid affine IR in upstream MLIR's test style, with mlir-opt 22's messages on mlir-opt 22's
// lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @lower_bound_results(%n: index) {
  // expected-error @+1 {{custom op 'affine.for' lower loop bound affine map with multiple results requires 'max' prefix}}
  affine.for %j = affine_map<(d0) -> (d0, 1)>(%n) to 8 {
  }
  return
}

// -----

func.func @upper_bound_results(%n: index) {
  // expected-error @+1 {{custom op 'affine.for' upper loop bound affine map with multiple results requires 'min' prefix}}
  affine.for %j = 0 to affine_map<(d0) -> (d0, 1)>(%n) {
  }
  return
}

// -----

func.func @bound_dims(%n: index) {
  // expected-error @+1 {{custom op 'affine.for' dim operand count and affine map dim count must match}}
  affine.for %j = 0 to affine_map<(d0, d1) -> (d0)>(%n) {
  }
  return
}

// -----

func.func @bound_symbols(%n: index) {
  // expected-error @+1 {{custom op 'affine.for' symbol operand count and affine map symbol count must match}}
  affine.for %j = 0 to affine_map<(d0)[s0] -> (d0)>(%n) {
  }
  return
}

// -----

func.func @negative_step() {
  // expected-error @+1 {{custom op 'affine.for' expected step to be representable as a positive signed integer}}
  affine.for %i = 0 to 8 step -1 {
  }
  return
}

// -----

func.func @apply_operands(%n: index) {
  // expected-error @+1 {{custom op 'affine.apply' dimension or symbol index mismatch}}
  %0 = affine.apply affine_map<(d0, d1) -> (d0)>(%n)
  return
}

// -----

func.func @apply_results(%n: index) {
  // expected-error @+1 {{operation defines 2 results but was provided 1 to bind}}
  %0 = affine.apply affine_map<(d0) -> (d0, d0)>(%n)
  return
}

// -----

func.func @apply_bound_results(%n: index) {
  // expected-error @+1 {{'affine.apply' op requires one result}}
  %0:2 = affine.apply affine_map<(d0) -> (d0, d0)>(%n)
  return
}

// -----

func.func @min_operands(%n: index) {
  // expected-error @+1 {{'affine.min' op operand count and affine map dimension and symbol count must match}}
  %0 = affine.min affine_map<(d0)[s0] -> (d0)>(%n)
  return
}

// -----

func.func @min_empty(%a: index) {
  // expected-error @+1 {{'affine.min' op affine map expect at least one result}}
  %0 = affine.min affine_map<(d0) -> ()>(%a)
  return
}

// -----

func.func @load_rank(%m: memref<4x4xf32>, %i: index) {
  // expected-error @+1 {{'affine.load' op affine map num results must equal memref rank}}
  %0 = affine.load %m[%i] : memref<4x4xf32>
  return
}

// -----

func.func @yield_count(%m: memref<4xf32>) {
  %s = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 4 iter_args(%acc = %s) -> (f32) {
    // expected-error @+1 {{'affine.yield' op parent of yield must have same number of results as the yield operands}}
    affine.yield
  }
  return
}

// -----

func.func @if_results(%a: index) {
  // expected-error @+2 {{'affine.if' op along control flow edge from parent to parent: region branch point has 0 operands, but region successor needs 1 inputs}}
  // expected-note @+1 {{region branch point}}
  %0 = affine.if affine_set<(d0) : (d0 >= 0)>(%a) -> index {
    affine.yield %a : index
  }
  return
}

// -----

func.func @if_dims(%a: index) {
  // expected-error @+1 {{custom op 'affine.if' dim operand count and integer set dim count must match}}
  affine.if affine_set<(d0, d1) : (d0 - d1 >= 0)>(%a) {
  }
  return
}

// -----

func.func @if_symbols(%n: index) {
  // expected-error @+1 {{custom op 'affine.if' symbol operand count and integer set symbol count must match}}
  affine.if affine_set<(d0)[s0] : (d0 >= 0)>(%n) {
  }
  return
}

// -----

func.func @parallel_reductions(%m: memref<8xf32>) {
  // expected-error @+1 {{'affine.parallel' op a reduction must be specified for each output}}
  %r = affine.parallel (%i) = (0) to (8) reduce ("addf", "mulf") -> (f32) {
    %x = affine.load %m[%i] : memref<8xf32>
    affine.yield %x : f32
  }
  return
}

// -----

func.func @non_affine_map(%a: index) {
  // expected-error @+1 {{non-affine expression: at least one of the multiply operands has to be either a constant or symbolic}}
  %0 = affine.apply affine_map<(d0) -> (d0 * d0)>(%a)
  return
}

// -----

func.func @non_affine_subscript(%n: index, %m: memref<4xf32>) {
  // expected-error @+1 {{non-affine expression: at least one of the multiply operands has to be either a constant or symbolic}}
  %0 = affine.load %m[%n + %n * %n] : memref<4xf32>
  return
}

// -----

func.func @non_affine_mod(%a: index, %m: memref<4xf32>) {
  // expected-error @+1 {{non-affine expression: right operand of mod has to be either a constant or symbolic}}
  %0 = affine.load %m[%a mod %a] : memref<4xf32>
  return
}

// -----

func.func @non_affine_floordiv(%a: index) {
  // expected-error @+1 {{non-affine expression: right operand of floordiv has to be either a constant or symbolic}}
  %0 = affine.apply affine_map<(d0) -> (d0 floordiv (d0 + 1))>(%a)
  return
}
