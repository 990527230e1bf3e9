// RUN: not nova-opt %s 2>&1 | FileCheck %s

// Something that is not an operation at the top level of the file.

func.func @f() {
  return
}
// CHECK: parse-top-level.mlir:[[# @LINE + 3]]:1: error: expected an operation at top level, found '}'
// CHECK-NEXT: {{^}}}
// CHECK-NEXT: {{^}}^
}
