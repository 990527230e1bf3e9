// RUN: not nova-translate %s --emit=host-llvm 2>&1 | FileCheck %s

// Compiled host code may call only the runtime ABI and libc: an external function that is not a
// runner utility is rejected where it is called.

func.func private @launch_missiles(i32)

func.func @main(%x: i32) {
  // CHECK: host-llvm-invalid-external.mlir:[[# @LINE + 1]]:3: error: external function @launch_missiles is not provided by the Nova runtime; available: @printMemrefF32, {{.*}}, @printNewline
  call @launch_missiles(%x) : (i32) -> ()
  return
}
