// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// The async ops Nova supports, printed exactly as mlir-opt 22 prints them (the unit test
// test_ir_roundtrip also checks this file against mlir-opt).
func.func @async_ops(%a: i32, %b: f32, %n: index, %m: memref<?xf32>) -> f32 {
  // CHECK: %[[T0:[^ ,]+]] = async.execute {
  // CHECK-NEXT: async.yield{{$}}
  // GENERIC: "async.execute"() <{operandSegmentSizes = array<i32: 0, 0>}> ({
  // GENERIC: }) : () -> !async.token
  %t = async.execute {
    async.yield
  }
  // CHECK: %[[T1:[^ ,]+]], %[[V0:[^ ,]+]], %[[V1:[^ ,]+]] = async.execute [%[[T0]]] -> (!async.value<i32>, !async.value<f32>) attributes {foo = 1 : i64} {
  // CHECK-NEXT: async.yield %{{.*}}, %{{.*}} : i32, f32
  // GENERIC: "async.execute"(%{{.*}}) <{operandSegmentSizes = array<i32: 1, 0>}> ({
  // GENERIC: "async.yield"(%{{.*}}, %{{.*}}) : (i32, f32) -> ()
  // GENERIC-NEXT: }) {foo = 1 : i64} : (!async.token) -> (!async.token, !async.value<i32>, !async.value<f32>)
  %t1, %v:2 = async.execute [%t] -> (!async.value<i32>, !async.value<f32>) attributes {foo = 1 : i64} {
    async.yield %a, %b : i32, f32
  }
  // CHECK: %[[T2:[^ ,]+]], %[[W:[^ ,]+]] = async.execute [%[[T0]], %[[T1]]] (%[[V0]] as %[[X:[^ ,]+]]: !async.value<i32>, %[[V1]] as %[[Y:[^ ,]+]]: !async.value<f32>) -> !async.value<memref<?xf32>> {
  // CHECK-NEXT: arith.addi %[[X]], %[[X]] : i32
  // CHECK-NEXT: arith.constant 0 : index
  // CHECK-NEXT: memref.store %[[Y]]
  // CHECK-NEXT: async.yield %{{.*}} : memref<?xf32>
  // GENERIC: "async.execute"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2>}> ({
  // GENERIC-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: f32):
  %t2, %w = async.execute [%t, %t1] (%v#0 as %x: !async.value<i32>, %v#1 as %y: !async.value<f32>) -> !async.value<memref<?xf32>> {
    %s = arith.addi %x, %x : i32
    %c0 = arith.constant 0 : index
    memref.store %y, %m[%c0] : memref<?xf32>
    async.yield %m : memref<?xf32>
  }
  // CHECK: %[[G:[^ ,]+]] = async.create_group %{{.*}} : !async.group
  // CHECK-NEXT: async.add_to_group %[[T2]], %[[G]] : !async.token
  // CHECK-NEXT: async.add_to_group %[[T1]], %[[G]] : !async.token {bar}
  // CHECK-NEXT: async.await_all %[[G]]{{$}}
  // CHECK-NEXT: async.await_all %[[G]] {baz}
  // GENERIC: "async.create_group"(%{{.*}}) : (index) -> !async.group
  // GENERIC: "async.add_to_group"(%{{.*}}, %{{.*}}) : (!async.token, !async.group) -> index
  // GENERIC: "async.await_all"(%{{.*}}) : (!async.group) -> ()
  %g = async.create_group %n : !async.group
  %i = async.add_to_group %t2, %g : !async.token
  %j = async.add_to_group %t1, %g : !async.token {bar}
  async.await_all %g
  async.await_all %g {baz}
  // CHECK-NEXT: async.await %[[T2]] : !async.token
  // CHECK-NEXT: %{{.*}} = async.await %[[V1]] : !async.value<f32>
  // CHECK-NEXT: %{{.*}} = async.await %[[W]] : !async.value<memref<?xf32>> {q}
  // GENERIC: "async.await"(%{{.*}}) : (!async.token) -> ()
  // GENERIC: "async.await"(%{{.*}}) : (!async.value<f32>) -> f32
  // GENERIC: "async.await"(%{{.*}}) {q} : (!async.value<memref<?xf32>>) -> memref<?xf32>
  async.await %t2 : !async.token
  %r = async.await %v#1 : !async.value<f32>
  %r2 = async.await %w : !async.value<memref<?xf32>> {q}
  // Nested execute regions, and one awaiting inside another.
  // CHECK: async.execute [%[[T2]]] {
  // CHECK-NEXT: async.await %[[T1]] : !async.token
  // CHECK-NEXT: async.execute {
  %t3 = async.execute [%t2] {
    async.await %t1 : !async.token
    %inner = async.execute {
      async.yield
    }
    async.yield
  }
  return %r : f32
}
