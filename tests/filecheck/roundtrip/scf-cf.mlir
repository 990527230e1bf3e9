// RUN: nova-opt %s | FileCheck %s
// scf (for/while/if/parallel/reduce) and cf (br/cond_br/assert) in their custom forms.
func.func @loops(%m: memref<?xf32>, %n: index, %v: f32, %flag: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (f32) {
    %x = memref.load %m[%i] : memref<?xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  %w:2 = scf.while (%a = %c0, %b = %v) : (index, f32) -> (index, f32) {
    %lt = arith.cmpi slt, %a, %n : index
    scf.condition(%lt) %a, %b : index, f32
  } do {
  ^bb0(%a2: index, %b2: f32):
    %next = arith.addi %a2, %c1 : index
    scf.yield %next, %b2 : index, f32
  }
  scf.if %flag {
    memref.store %v, %m[%c0] : memref<?xf32>
  }
  %sel = scf.if %flag -> (f32) {
    scf.yield %sum : f32
  } else {
    scf.yield %v : f32
  }
  scf.parallel (%p, %q) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %v, %m[%p] : memref<?xf32>
  }
  %red = scf.parallel (%p) = (%c0) to (%n) step (%c1) init (%v) -> f32 {
    %e = memref.load %m[%p] : memref<?xf32>
    scf.reduce(%e : f32) {
    ^bb0(%l: f32, %r: f32):
      %t = arith.addf %l, %r : f32
      scf.reduce.return %t : f32
    }
  }
  cf.assert %flag, "flag must be set"
  cf.cond_br %flag, ^bb1(%red : f32), ^bb2
^bb1(%z: f32):
  cf.br ^bb2
^bb2:
  return %sel : f32
}

// CHECK:      module {
// CHECK-NEXT:   func.func @loops(%m: memref<?xf32>, %n: index, %v: f32, %flag: i1) -> f32 {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (f32) {
// CHECK-NEXT:       %x = memref.load %m[%i] : memref<?xf32>
// CHECK-NEXT:       %y = arith.addf %acc, %x : f32
// CHECK-NEXT:       scf.yield %y : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     %w:2 = scf.while (%a = %c0, %b = %v) : (index, f32) -> (index, f32) {
// CHECK-NEXT:       %lt = arith.cmpi slt, %a, %n : index
// CHECK-NEXT:       scf.condition(%lt) %a, %b : index, f32
// CHECK-NEXT:     } do {
// CHECK-NEXT:     ^bb0(%a2: index, %b2: f32):
// CHECK-NEXT:       %next = arith.addi %a2, %c1 : index
// CHECK-NEXT:       scf.yield %next, %b2 : index, f32
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.if %flag {
// CHECK-NEXT:       memref.store %v, %m[%c0] : memref<?xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     %sel = scf.if %flag -> (f32) {
// CHECK-NEXT:       scf.yield %sum : f32
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.yield %v : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.parallel (%p, %q) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
// CHECK-NEXT:       memref.store %v, %m[%p] : memref<?xf32>
// CHECK-NEXT:       scf.reduce
// CHECK-NEXT:     }
// CHECK-NEXT:     %red = scf.parallel (%p_1) = (%c0) to (%n) step (%c1) init (%v) -> f32 {
// CHECK-NEXT:       %e = memref.load %m[%p_1] : memref<?xf32>
// CHECK-NEXT:       scf.reduce(%e : f32) {
// CHECK-NEXT:       ^bb0(%l: f32, %r: f32):
// CHECK-NEXT:         %t = arith.addf %l, %r : f32
// CHECK-NEXT:         scf.reduce.return %t : f32
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     cf.assert %flag, "flag must be set"
// CHECK-NEXT:     cf.cond_br %flag, ^bb1(%red : f32), ^bb2
// CHECK-NEXT:   ^bb1(%z: f32):  // pred: ^bb0
// CHECK-NEXT:     cf.br ^bb2
// CHECK-NEXT:   ^bb2:  // 2 preds: ^bb0, ^bb1
// CHECK-NEXT:     return %sel : f32
// CHECK-NEXT:   }
// CHECK-NEXT: }
