// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// async ops in their printed forms (execute with and without dependencies, operands, results
// and attributes; await of tokens and values; groups), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

func.func @execute(%x: f32, %m: memref<4xf32>) -> f32 {
  %t0 = async.execute {
    async.yield
  }
  %t1, %v1 = async.execute -> !async.value<f32> {
    async.yield %x : f32
  }
  %t2, %v2 = async.execute [%t0, %t1] (%v1 as %a: !async.value<f32>) -> !async.value<f32> {
    %s = arith.addf %a, %a : f32
    async.yield %s : f32
  }
  %t3 = async.execute [%t2] {
    "use"(%m) : (memref<4xf32>) -> ()
    async.yield
  }
  %t4:3 = async.execute -> (!async.value<f32>, !async.value<i32>) {
    %c = arith.constant 1 : i32
    async.yield %x, %c : f32, i32
  }
  %t5 = async.execute [%t3] attributes {tag} {
    async.yield
  }
  async.await %t3 : !async.token
  async.await %t5 : !async.token
  async.await %t4#0 : !async.token
  %r = async.await %v2 : !async.value<f32>
  %i = async.await %t4#2 : !async.value<i32>
  return %r : f32
}

func.func @groups() {
  %n = arith.constant 2 : index
  %g = async.create_group %n : !async.group
  %t = async.execute {
    async.yield
  }
  %i = async.add_to_group %t, %g : !async.token
  %u = async.execute {
    async.yield
  }
  %j = async.add_to_group %u, %g : !async.token
  async.await_all %g
  return
}

func.func @empty_lists() {
  %t = async.execute [] () {
    async.yield
  }
  async.await %t : !async.token
  return
}

// CHECK:      module {
// CHECK-NEXT:   func.func @execute(%x: f32, %m: memref<4xf32>) -> f32 {
// CHECK-NEXT:     %t0 = async.execute {
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     %t1, %v1 = async.execute -> !async.value<f32> {
// CHECK-NEXT:       async.yield %x : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %t2, %v2 = async.execute [%t0, %t1] (%v1 as %a: !async.value<f32>) -> !async.value<f32> {
// CHECK-NEXT:       %s = arith.addf %a, %a : f32
// CHECK-NEXT:       async.yield %s : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %t3 = async.execute [%t2] {
// CHECK-NEXT:       "use"(%m) : (memref<4xf32>) -> ()
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     %t4:3 = async.execute -> (!async.value<f32>, !async.value<i32>) {
// CHECK-NEXT:       %c = arith.constant 1 : i32
// CHECK-NEXT:       async.yield %x, %c : f32, i32
// CHECK-NEXT:     }
// CHECK-NEXT:     %t5 = async.execute [%t3] attributes {tag} {
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     async.await %t3 : !async.token
// CHECK-NEXT:     async.await %t5 : !async.token
// CHECK-NEXT:     async.await %t4#0 : !async.token
// CHECK-NEXT:     %r = async.await %v2 : !async.value<f32>
// CHECK-NEXT:     %i = async.await %t4#2 : !async.value<i32>
// CHECK-NEXT:     return %r : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @groups() {
// CHECK-NEXT:     %n = arith.constant 2 : index
// CHECK-NEXT:     %g = async.create_group %n : !async.group
// CHECK-NEXT:     %t = async.execute {
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     %i = async.add_to_group %t, %g : !async.token
// CHECK-NEXT:     %u = async.execute {
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     %j = async.add_to_group %u, %g : !async.token
// CHECK-NEXT:     async.await_all %g
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @empty_lists() {
// CHECK-NEXT:     %t = async.execute {
// CHECK-NEXT:       async.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     async.await %t : !async.token
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
