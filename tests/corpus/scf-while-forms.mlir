// RUN: nova-run %s --device cpu | FileCheck %s

// scf.while in each printed form (as mlir-opt 22 prints them), on the host and in a kernel:
// no operands and no results (`scf.while : () -> ()`, the state lives in a memref), operands and
// results of one type, and results that differ from the operands (the `before` region forwards
// other values to `after`). The host part prints what mlir-runner prints for it (checked with
// mlir-opt 22 --convert-scf-to-cf --convert-to-llvm | mlir-runner).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %count = memref.alloca() : memref<index>
  memref.store %c0, %count[] : memref<index>
  scf.while : () -> () {
    %i = memref.load %count[] : memref<index>
    %go = arith.cmpi slt, %i, %c3 : index
    scf.condition(%go)
  } do {
    %i = memref.load %count[] : memref<index>
    vector.print %i : index
    %n = arith.addi %i, %c1 : index
    memref.store %n, %count[] : memref<index>
    scf.yield
  }
  %r = scf.while (%a = %c0) : (index) -> index {
    %go = arith.cmpi slt, %a, %c3 : index
    scf.condition(%go) %a : index
  } do {
  ^bb0(%b: index):
    %n = arith.addi %b, %c1 : index
    scf.yield %n : index
  }
  vector.print %r : index
  %f0 = arith.constant 1.5 : f32
  %last, %twice = scf.while (%x = %c0, %acc = %f0) : (index, f32) -> (f32, index) {
    %go = arith.cmpi slt, %x, %c3 : index
    %d = arith.addi %x, %x : index
    scf.condition(%go) %acc, %d : f32, index
  } do {
  ^bb0(%v: f32, %d: index):
    %x2 = arith.addi %d, %c1 : index
    %x3 = arith.shrui %x2, %c1 : index
    %w = arith.addf %v, %v : f32
    %x4 = arith.addi %x3, %c1 : index
    scf.yield %x4, %w : index, f32
  }
  vector.print %last : f32
  vector.print %twice : index

  // The same forms in every thread of a 2-thread block; thread t counts to t + 2.
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %limit = arith.addi %tx, %c2 : index
    %mine = memref.alloca() : memref<index>
    memref.store %c0, %mine[] : memref<index>
    scf.while : () -> () {
      %i = memref.load %mine[] : memref<index>
      %go = arith.cmpi slt, %i, %limit : index
      scf.condition(%go)
    } do {
      %i = memref.load %mine[] : memref<index>
      %n = arith.addi %i, %c1 : index
      memref.store %n, %mine[] : memref<index>
      scf.yield
    }
    %n0 = memref.load %mine[] : memref<index>
    %k, %s = scf.while (%a = %c0, %sum = %c0) : (index, index) -> (index, index) {
      %go = arith.cmpi slt, %a, %limit : index
      scf.condition(%go) %a, %sum : index, index
    } do {
    ^bb0(%b: index, %acc: index):
      %n = arith.addi %b, %c1 : index
      %t = arith.addi %acc, %n : index
      scf.yield %n, %t : index, index
    }
    gpu.printf "thread %lld: no-operand loop ran %lld times; counted to %lld, sum %lld\n", %tx, %n0, %k, %s : index, index, index, index
    gpu.terminator
  }
  return
}

// CHECK:      0
// CHECK-NEXT: 1
// CHECK-NEXT: 2
// CHECK-NEXT: 3
// CHECK-NEXT: 12
// CHECK-NEXT: 6
// CHECK-DAG:  thread 0: no-operand loop ran 2 times; counted to 2, sum 3
// CHECK-DAG:  thread 1: no-operand loop ran 3 times; counted to 3, sum 6
