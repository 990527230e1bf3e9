// RUN: not nova-translate %s --split-input-file --emit=device-llvm 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=cpu-llvm 2>&1 | FileCheck %s

// Programs upstream accepts but Nova's LLVM lowering does not (yet): fragments other than
// 16x16 (m16n16k16), A/B other than f16, C other than f16/f32, a memref element type other than
// the fragment's, integer element-wise kinds and element-wise ops on A/B fragments. Both device
// targets reject them at the op with the same message.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shape(%m: memref<32x32xf16>) kernel {
      %i = arith.constant 0 : index
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_load_matrix: !gpu.mma_matrix of shape 16x8 is not supported (only 16x16 fragments, the m16n16k16 WMMA shape, for now)
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf16> -> !gpu.mma_matrix<16x8xf16, "AOp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @f32_a(%m: memref<32x32xf32>) kernel {
      %i = arith.constant 0 : index
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_load_matrix: AOp fragments of f32 are not supported (only f16 A/B operands)
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf32> -> !gpu.mma_matrix<16x16xf32, "AOp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @f64_c(%m: memref<32x32xf64>) kernel {
      %i = arith.constant 0 : index
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_load_matrix: COp fragments of f64 are not supported (only f16 or f32 accumulators)
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf64> -> !gpu.mma_matrix<16x16xf64, "COp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mismatch(%m: memref<32x32xf32>) kernel {
      %i = arith.constant 0 : index
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_load_matrix: memref element type f32 differs from the fragment's f16
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf32> -> !gpu.mma_matrix<16x16xf16, "AOp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @int_kind(%m: memref<32x32xf32>) kernel {
      %i = arith.constant 0 : index
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_elementwise: element-wise 'addi' is not supported (only float kinds)
      %s = gpu.subgroup_mma_elementwise  addi %a, %a : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @aop_elementwise(%m: memref<32x32xf16>) kernel {
      %i = arith.constant 0 : index
      %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      // CHECK: unsupported-mma.mlir:[[# @LINE + 1]]:12: error: gpu.subgroup_mma_elementwise: element-wise 'addf' needs COp operands of the result type !gpu.mma_matrix<16x16xf16, "AOp">
      %s = gpu.subgroup_mma_elementwise  addf %a, %a : (!gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "AOp">) -> !gpu.mma_matrix<16x16xf16, "AOp">
      gpu.return
    }
  }
}
