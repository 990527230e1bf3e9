// RUN: not nova-opt %s 2>&1 | FileCheck %s

// A splat dense literal of a huge type is refused at the type (xDSL would expand it to one Python
// object per element and exhaust memory).

func.func @main() {
  // CHECK: parse-huge-dense.mlir:[[# @LINE + 3]]:36: error: dense literal of type vector<1000000000xf32> has 1000000000 elements; Nova accepts at most 16777216
  // CHECK-NEXT: {{^}}  %c = arith.constant dense<1.0> : vector<1000000000xf32>
  // CHECK-NEXT: {{^}}                                   ^
  %c = arith.constant dense<1.0> : vector<1000000000xf32>
  return
}
