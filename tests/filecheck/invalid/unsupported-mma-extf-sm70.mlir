// RUN: not nova-translate %s --emit=device-llvm --arch sm_70 2>&1 | FileCheck %s

// extf between accumulator fragments assumes sm_80+'s register layouts (f16 register i, half j
// = f32 register 2i + j); on older architectures it is refused at the op, not miscompiled.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @widen(%m: memref<16x16xf16>, %o: memref<16x16xf32>) kernel {
      %i = arith.constant 0 : index
      %c = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "COp">
      // CHECK: unsupported-mma-extf-sm70.mlir:[[# @LINE + 1]]:12: error: {{.*}}extf on sm_70: its f16/f32 accumulator layouts are not modelled (sm_80 and newer are)
      %w = gpu.subgroup_mma_elementwise  extf %c : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %w, %o[%i, %i] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
      gpu.return
    }
  }
}
