// RUN: not nova-translate %s --emit=device-llvm 2>&1 | FileCheck %s

// llvm.align / llvm.noalias / llvm.readonly describe pointers: on a scalar argument (or an
// unranked memref, whose parameter is a descriptor pointer) they are refused, not dropped.

module attributes {gpu.container_module} {
  gpu.module @m {
    // CHECK: arg-attrs-non-pointer.mlir:[[# @LINE + 1]]:5: error: llvm.align on an argument of type i32 (they apply to pointers and ranked memrefs)
    gpu.func @k(%n: i32 {llvm.align = 16 : i64}) kernel {
      gpu.return
    }
  }
}
