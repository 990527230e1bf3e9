// RUN: not nova-translate %s --emit=host-llvm 2>&1 | FileCheck %s

// Input that ends inside a region: the error points just after the last token (as mlir-opt
// does), on a line that exists, so the source line and caret are shown.

// CHECK: parse-end-of-input.mlir:[[# @LINE + 4]]:9: error: unexpected end of input
// CHECK-NEXT: {{^}}  return
// CHECK-NEXT: {{^}}        ^
func.func @f() {
  return
