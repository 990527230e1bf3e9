// RUN: not nova-translate %s --emit=cpu-llvm 2>&1 | FileCheck %s

// A fiber kernel whose private memory cannot fit its 64 KiB fiber stack is rejected at compile
// time, at the kernel.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @big(%out: memref<?xf32>) private(%p: memref<16384xf32, 5>) kernel {
      gpu.barrier
      gpu.return
    }
  }
}

// CHECK: cpu-llvm-invalid.mlir:[[# @LINE - 7]]:5: error: kernel @big needs 65536 bytes of private memory per GPU thread
