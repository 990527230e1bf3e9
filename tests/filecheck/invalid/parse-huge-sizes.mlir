// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s

// A splat dense literal of a huge type is refused at the type (xDSL would expand it to one Python
// object per element and exhaust memory).

func.func @main() {
  // CHECK: parse-huge-sizes.mlir:[[# @LINE + 3]]:36: error: dense literal of type vector<1000000000xf32> has 1000000000 elements; Nova accepts at most 16777216
  // CHECK-NEXT: {{^}}  %c = arith.constant dense<1.0> : vector<1000000000xf32>
  // CHECK-NEXT: {{^}}                                   ^
  %c = arith.constant dense<1.0> : vector<1000000000xf32>
  return
}

// -----

// A static dimension must fit int64 (it would wrap in the lowering).

func.func @too_big() {
  // CHECK: parse-huge-sizes.mlir:[[# @LINE + 3]]:33: error: invalid dimension: a static size must be less than 2^63
  // CHECK-NEXT: {{^}}  %m = memref.alloca() : memref<99999999999999999999xf32>
  // CHECK-NEXT: {{^}}                                ^
  %m = memref.alloca() : memref<99999999999999999999xf32>
  return
}
