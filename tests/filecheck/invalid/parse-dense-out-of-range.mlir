// RUN: not nova-opt %s 2>&1 | FileCheck %s

// A dense literal element that does not fit its element type is a located error (xDSL's packing
// raised a bare struct.error: "nova-run: internal error: argument out of range").

func.func @main() {
  // CHECK: parse-dense-out-of-range.mlir:[[# @LINE + 2]]:3: error: a constant does not fit its element type (argument out of range)
  // CHECK-NEXT: {{^}}  %v = arith.constant dense<[18446744073709551615, 2]> : vector<2xindex>
  %v = arith.constant dense<[18446744073709551615, 2]> : vector<2xindex>
  return
}
