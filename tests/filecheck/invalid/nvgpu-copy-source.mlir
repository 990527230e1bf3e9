// RUN: not nova-translate %s --split-input-file --emit=device-llvm 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=cpu-llvm 2>&1 | FileCheck %s

// cp.async reads global memory: upstream's verifier accepts a source in any memory space and
// its lowering casts the pointer to global, which is undefined for shared or private memory.
// Both device lowerings reject such a source at the op, with the same message.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @from_shared() workgroup(%a: memref<64xf16, 3>, %b: memref<64xf16, 3>) kernel {
      %c0 = arith.constant 0 : index
      // CHECK: nvgpu-copy-source.mlir:[[# @LINE + 3]]:12: error: 'nvgpu.device_async_copy' reads global memory: its source must be a memref in the default or global memory space, got memref<64xf16, 3>{{$}}
      // CHECK-NEXT: {{^}}      %t = nvgpu.device_async_copy %a[%c0], %b[%c0], 8 : memref<64xf16, 3> to memref<64xf16, 3>
      // CHECK-NEXT: {{^}}           ^
      %t = nvgpu.device_async_copy %a[%c0], %b[%c0], 8 : memref<64xf16, 3> to memref<64xf16, 3>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @from_private() workgroup(%b: memref<64xf32, #gpu.address_space<workgroup>>) private(%p: memref<4xf32, #gpu.address_space<private>>) kernel {
      %c0 = arith.constant 0 : index
      // CHECK: nvgpu-copy-source.mlir:[[# @LINE + 1]]:12: error: 'nvgpu.device_async_copy' reads global memory: its source must be a memref in the default or global memory space, got memref<4xf32, #gpu.address_space<private>>{{$}}
      %t = nvgpu.device_async_copy %p[%c0], %b[%c0], 4 : memref<4xf32, #gpu.address_space<private>> to memref<64xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}
