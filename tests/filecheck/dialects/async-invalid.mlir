// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid async IR in upstream MLIR's test style, with mlir-opt 22's messages on mlir-opt 22's
// lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @await_group(%g: !async.group) {
  // expected-error @+1 {{'async.await' op operand #0 must be async value type or async token type, but got '!async.group'}}
  async.await %g : !async.group
  return
}

// -----

func.func @yield_count(%x: f32) {
  // expected-error @+1 {{'async.execute' op along control flow edge from Operation async.yield to parent: region branch point has 0 operands, but region successor needs 1 inputs}}
  %t, %v = async.execute -> !async.value<f32> {
    // expected-note @+1 {{region branch point}}
    async.yield
  }
  return
}

// -----

func.func @yield_type(%x: i32) {
  // expected-error @+1 {{'async.execute' op along control flow edge from Operation async.yield to parent: successor operand type #0 'i32' should match successor input type #0 '!async.value<f32>'}}
  %t, %v = async.execute -> !async.value<f32> {
    // expected-note @+1 {{region branch point}}
    async.yield %x : i32
  }
  return
}

// -----

func.func @yield_parent() {
  // expected-error @+1 {{'async.yield' op expects parent op 'async.execute'}}
  async.yield
}

// -----

// expected-note @+1 {{prior use here}}
func.func @body_args(%v: !async.value<f32>) {
  // expected-error @+1 {{use of value '%v' expects different type than prior uses: '!async.value<i32>' vs '!async.value<f32>'}}
  %t2 = async.execute (%v as %a: !async.value<i32>) {
    async.yield
  }
  return
}

// -----

func.func @add_to_group(%n: index) {
  %g = async.create_group %n : !async.group
  // expected-error @+1 {{'async.add_to_group' op operand #0 must be async value type or async token type, but got 'index'}}
  %i = async.add_to_group %n, %g : index
  return
}

// -----

func.func @create_group_size(%n: i32) {
  // expected-error @+1 {{'async.create_group' op operand #0 must be index, but got 'i32'}}
  %g = "async.create_group"(%n) : (i32) -> !async.group
  return
}
