// RUN: not nova-translate %s --split-input-file --emit=device-llvm 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=cpu-llvm 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=device-llvm --arch sm_80 2>&1 | FileCheck %s --check-prefix=ARCH

// Warpgroup MMA programs upstream accepts but Nova's LLVM lowering does not (yet): integer
// inputs, proxy fences other than the async ones. Both device targets reject them at the op with
// one message. wgmma exists on compute capability 9.0 only: another target is refused at the op.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @int8(%a: i64, %b: i64) kernel {
      %z = llvm.mlir.zero : !llvm.struct<(i32, i32, i32, i32)>
      // CHECK: unsupported-wgmma.mlir:[[# @LINE + 2]]:12: error: nvvm.wgmma.mma_async: s32 += s8 * s8 is not supported (only f32 += f16 * f16 or bf16 * bf16)
      // ARCH: unsupported-wgmma.mlir:[[# @LINE + 1]]:12: error: nvvm.wgmma.mma_async: s32 += s8 * s8 is not supported
      %d = nvvm.wgmma.mma_async %a, %b, %z, <m = 64, n = 8, k = 32>, D[<s32>, <one>], A[<s8>, <one>, <row>], B[<s8>, <one>, <col>] : !llvm.struct<(i32, i32, i32, i32)> -> !llvm.struct<(i32, i32, i32, i32)>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @alias() kernel {
      // CHECK: unsupported-wgmma.mlir:[[# @LINE + 1]]:7: error: nvvm.fence.proxy: proxy kind alias is not supported (only async, async.global, async.shared)
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<alias>}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @arch() kernel {
      // ARCH: unsupported-wgmma.mlir:[[# @LINE + 1]]:7: error: nvvm.wgmma.fence.aligned needs a compute capability 9.0 (Hopper, sm_90a) GPU; the target is sm_80
      nvvm.wgmma.fence.aligned
      gpu.return
    }
  }
}
