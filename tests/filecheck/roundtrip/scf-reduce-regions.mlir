// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | nova-opt | FileCheck %s
// scf.reduce with several reductions: MLIR separates the regions with commas (xDSL's own
// format neither parsed nor printed that); test_ir_roundtrip checks it against mlir-opt.

func.func @two(%n: index) -> (f32, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.000000e+00 : f32
  %zi = arith.constant 1 : i32
  %r:2 = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z, %zi) -> (f32, i32) {
    %f = arith.constant 1.000000e+00 : f32
    %two = arith.constant 2 : i32
    scf.reduce(%f, %two : f32, i32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }, {
    ^bb0(%x: i32, %y: i32):
      %p = arith.muli %x, %y : i32
      scf.reduce.return %p : i32
    }
  }
  return %r#0, %r#1 : f32, i32
}

// CHECK-LABEL: func.func @two(
// CHECK:         scf.reduce(%f, %two : f32, i32) {
// CHECK-NEXT:    ^bb0(%a: f32, %b: f32):
// CHECK-NEXT:      %s = arith.addf %a, %b : f32
// CHECK-NEXT:      scf.reduce.return %s : f32
// CHECK-NEXT:    }, {
// CHECK-NEXT:    ^bb0(%x: i32, %y: i32):
// CHECK-NEXT:      %p = arith.muli %x, %y : i32
// CHECK-NEXT:      scf.reduce.return %p : i32
// CHECK-NEXT:    }
