// RUN: nova-opt --allow-unregistered-dialect %s | FileCheck %s
// RUN: nova-opt --allow-unregistered-dialect %s | nova-opt --allow-unregistered-dialect | FileCheck %s
// RUN: not nova-opt %s 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not nova-translate --allow-unregistered-dialect %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=COMPILE
// Ops of dialects Nova does not know (upstream's test files use "use"(...) and test.*) parse,
// verify and print in generic form with --allow-unregistered-dialect, as with mlir-opt; without
// it they are refused at the op, and compiling one is a located error naming the op.

// CHECK-LABEL: func.func @f(%x: i32) -> i32 {
// CHECK-NEXT:    %y = "test.foo"(%x) {attr = 1 : i32} : (i32) -> i32
// CHECK-NEXT:    "use"(%y) : (i32) -> ()
// CHECK-NEXT:    %z = "test.region"() ({
// CHECK-NEXT:      "test.yield"() : () -> ()
// CHECK-NEXT:    }) : () -> i64
// CHECK-NEXT:    return %y : i32
func.func @f(%x: i32) -> i32 {
  %y = "test.foo"(%x) {attr = 1 : i32} : (i32) -> i32
  "use"(%y) : (i32) -> ()
  %z = "test.region"() ({
    "test.yield"() : () -> ()
  }) : () -> i64
  return %y : i32
}

// REFUSED: unregistered-dialect.mlir:17:8: error: unsupported operation 'test.foo' ({{.*}}--allow-unregistered-dialect parses ops of other dialects)
// COMPILE: unregistered-dialect.mlir:17:8: error: op 'test.foo' is not supported by the host LLVM lowering
