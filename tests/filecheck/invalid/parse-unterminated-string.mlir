// RUN: not nova-opt %s 2>&1 | FileCheck %s

// A stray quote: a located error at once (xDSL's string pattern used to backtrack exponentially
// on such a line and hang the parser).

func.func @f(%m: memref<3x8xi32>, %v: i32, %i: index, %j: index) {
  // CHECK: parse-unterminated-string.mlir:[[# @LINE + 3]]:19: error: unterminated string literal (a string must end with '"' on the same line)
  // CHECK-NEXT: {{^}}  memref.store %v," %m[%i, %j] : memref<3x8xi32>
  // CHECK-NEXT: {{^}}                  ^
  memref.store %v," %m[%i, %j] : memref<3x8xi32>
  return
}
