// RUN: not nova-opt %s -p async-to-sync --split-input-file 2>&1 | FileCheck %s
// RUN: nova-opt %s -p async-to-sync --split-input-file --verify-diagnostics > /dev/null
// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s

// async input Nova rejects, each a located error naming the op: the coroutine and runtime ops
// (the parser), ill-formed execute regions (the verifier), and what async-to-sync cannot map
// (async values, tokens and groups escaping into other ops, block arguments or signatures; a
// used add_to_group rank; async ops in kernels).

// CHECK: async.mlir:[[# @LINE + 1]]:1: error: unsupported operation 'async.func' (the 'async' dialect has no op 'async.func' that Nova supports)
async.func @coroutine() -> !async.token { // expected-error {{unsupported operation 'async.func'}}
  async.return
}

// -----

func.func @runtime() {
  // CHECK: async.mlir:[[# @LINE + 1]]:8: error: unsupported operation 'async.runtime.create'
  %t = async.runtime.create : !async.token // expected-error {{unsupported operation 'async.runtime.create'}}
  return
}

// -----

func.func @token_operand() {
  %t = async.execute {
    async.yield
  }
  // CHECK: async.mlir:[[# @LINE + 1]]:33: error: 'async.execute' operands must be !async.value, not !async.token (Nova supports no token operands)
  %u = async.execute (%t as %x: !async.token) { // expected-error {{operands must be !async.value}}
    async.yield
  }
  return
}

// -----

func.func @yield_types(%a: i32) {
  // CHECK: async.mlir:[[# @LINE + 2]]:12: error: 'async.execute' op along control flow edge from Operation async.yield to parent: successor operand type #0 'i32' should match successor input type #0 '!async.value<f32>'
  // CHECK: async.mlir:[[# @LINE + 2]]:5: note: region branch point
  %t, %v = async.execute -> !async.value<f32> { // expected-error {{successor operand type #0 'i32' should match}}
    async.yield %a : i32 // expected-note {{region branch point}}
  }
  return
}

// -----

// CHECK: async.mlir:[[# @LINE + 1]]:1: error: async-to-sync: 'func.func' op has async types in its signature () -> !async.value<i32>, which async-to-sync cannot map
func.func @returned() -> !async.value<i32> { // expected-error {{has async types in its signature}}
  %c = arith.constant 1 : i32
  %t, %v = async.execute -> !async.value<i32> {
    async.yield %c : i32
  }
  return %v : !async.value<i32>
}

// -----

// The call comes before the declaration, so the checks (in program order) reach it first.
func.func @passed_to_call() {
  %t = async.execute {
    async.yield
  }
  // CHECK: async.mlir:[[# @LINE + 3]]:3: error: async-to-sync: 'func.call' op uses a !async.token value: async-to-sync maps async values, tokens and groups only through async ops, not through other ops
  // CHECK-NEXT: {{^}}  func.call @consume(%t) : (!async.token) -> ()
  // CHECK-NEXT: {{^}}  ^
  func.call @consume(%t) : (!async.token) -> () // expected-error {{'func.call' op uses a !async.token value}}
  return
}

func.func private @consume(!async.token)

// -----

// CHECK: async.mlir:[[# @LINE + 1]]:1: error: async-to-sync: 'func.func' op has a region argument of type !async.token, which async-to-sync cannot map
func.func @token_argument(%t: !async.token) { // expected-error {{region argument of type !async.token}}
  async.await %t : !async.token
  return
}

// -----

func.func @yielded_by_if(%c: i1) {
  // CHECK: async.mlir:[[# @LINE + 1]]:8: error: async-to-sync: 'scf.if' op produces a !async.token value, which async-to-sync cannot map
  %t = scf.if %c -> (!async.token) { // expected-error {{'scf.if' op produces a !async.token value}}
    %a = async.execute {
      async.yield
    }
    scf.yield %a : !async.token
  } else {
    %b = async.execute {
      async.yield
    }
    scf.yield %b : !async.token
  }
  async.await %t : !async.token
  return
}

// -----

func.func @rank_used(%n: index, %out: memref<1xindex>) {
  %g = async.create_group %n : !async.group
  %t = async.execute {
    async.yield
  }
  // CHECK: async.mlir:[[# @LINE + 1]]:8: error: async-to-sync: 'async.add_to_group' op result (the token's rank in the group) is used; async-to-sync does not compute it
  %i = async.add_to_group %t, %g : !async.token // expected-error {{rank in the group) is used}}
  %c0 = arith.constant 0 : index
  memref.store %i, %out[%c0] : memref<1xindex>
  async.await_all %g
  return
}

// -----

func.func @in_kernel(%c1: index) {
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: async.mlir:[[# @LINE + 1]]:10: error: async-to-sync: 'async.execute' op inside 'gpu.launch' is not supported: the async dialect is host code
    %t = async.execute { // expected-error {{inside 'gpu.launch' is not supported}}
      async.yield
    }
    gpu.terminator
  }
  return
}
