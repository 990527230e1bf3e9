// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// scf, cf, func, arith and memref ops in their printed forms (empty operand and result lists,
// optional groups, attribute dictionaries), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

// CHECK-LABEL: func.func @whiles
func.func @whiles(%c: i1, %n: index) -> index {
  // CHECK: scf.while : () -> () {
  scf.while : () -> () {
    scf.condition(%c)
  } do {
    scf.yield
  }
  // CHECK: scf.while (%{{.*}} = %{{.*}}) : (index) -> index {
  %r = scf.while (%a = %n) : (index) -> index {
    scf.condition(%c) %a : index
  } do {
  ^bb0(%b: index):
    scf.yield %b : index
  }
  // CHECK: scf.while : () -> index {
  %s = scf.while : () -> index {
    scf.condition(%c) %n : index
  } do {
  ^bb0(%b: index):
    scf.yield
  }
  // CHECK: scf.while (%{{.*}} = %{{.*}}) : (index) -> () {
  scf.while (%a = %n) : (index) -> () {
    scf.condition(%c)
  } do {
    scf.yield %n : index
  } attributes {tag = 1 : i32}
  %t = arith.addi %r, %s : index
  return %t : index
}

// CHECK-LABEL: func.func @loops
func.func @loops(%lb: index, %ub: index, %st: index, %m: memref<?xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  scf.for %i = %lb to %ub step %st {
    "test.use"(%i) : (index) -> ()
  }
  %sum = scf.for %i = %lb to %ub step %st iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %m[%i] : memref<?xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  %c = arith.cmpf olt, %sum, %zero : f32
  scf.if %c {
    "test.use"(%sum) : (f32) -> ()
  }
  %x = scf.if %c -> (f32) {
    scf.yield %sum : f32
  } else {
    scf.yield %zero : f32
  }
  scf.parallel (%i) = (%lb) to (%ub) step (%st) {
    memref.store %x, %m[%i] : memref<?xf32>
    scf.reduce
  }
  %p = scf.parallel (%i) = (%lb) to (%ub) step (%st) init (%zero) -> f32 {
    %v = memref.load %m[%i] : memref<?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%l: f32, %r: f32):
      %q = arith.addf %l, %r : f32
      scf.reduce.return %q : f32
    }
  }
  %e = scf.execute_region -> f32 {
    scf.yield %p : f32
  }
  return %e : f32
}

// CHECK-LABEL: func.func @branches
func.func @branches(%c: i1, %v: i32) -> i32 {
  cf.cond_br %c, ^bb1(%v : i32), ^bb2
^bb1(%x: i32):
  cf.br ^bb3(%x : i32)
^bb2:
  %k = arith.constant 7 : i32
  cf.br ^bb3(%k : i32)
^bb3(%y: i32):
  cf.assert %c, "message"
  cf.switch %y : i32, [
    default: ^bb4,
    1: ^bb4
  ]
^bb4:
  return %y : i32
}

// CHECK-LABEL: func.func private @declared(i32) -> (i32, f32)
func.func private @declared(i32) -> (i32, f32)
func.func @calls(%v: i32) attributes {note = "x"} {
  %a, %b = call @declared(%v) : (i32) -> (i32, f32)
  %m = memref.alloca() : memref<2xi32>
  %n = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
  memref.dealloc %n : memref<4x4xf32>
  %sq = math.sqrt %b : f32
  %sc, %cs = "test.two"() : () -> (f32, f32)
  return
}
