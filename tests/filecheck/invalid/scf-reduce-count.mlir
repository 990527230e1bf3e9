// RUN: not nova-opt %s 2>&1 | FileCheck %s

// scf.reduce needs one reduction region per reduced operand (mlir-opt's message, located).

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.parallel (%i) = (%c0) to (%c1) step (%c1) init (%z) -> f32 {
    // CHECK: scf-reduce-count.mlir:[[# @LINE + 1]]:5: error: 'scf.reduce' op expects number of reduction regions: 1 to be the same as number of reduction operands: 2
    scf.reduce(%z, %z : f32, f32) {
    ^bb0(%a: f32, %b: f32):
      scf.reduce.return %a : f32
    }
  }
  return
}
