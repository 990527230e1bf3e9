// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// Hopper warpgroup MMA (nvvm.wgmma.*, nvvm.fence.proxy) and the llvm struct ops its accumulators
// need, printed exactly as mlir-opt 22 prints them (test_ir_roundtrip also checks this file
// against mlir-opt).
gpu.module @kernels {
  gpu.func @wgmma(%da: i64, %db: i64, %x: f32) kernel {
    // CHECK: %z = llvm.mlir.zero : !llvm.struct<(f32, f32, f32, f32)>
    %z = llvm.mlir.zero : !llvm.struct<(f32, f32, f32, f32)>
    // CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    // GENERIC: "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}> : () -> ()
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    // CHECK: nvvm.wgmma.fence.aligned
    nvvm.wgmma.fence.aligned
    // CHECK: %d = nvvm.wgmma.mma_async %da, %db, %z, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    // GENERIC: "nvvm.wgmma.mma_async"(%z, %da, %db) <{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, scaleA = #nvvm.wgmma_scale_in<one>, scaleB = #nvvm.wgmma_scale_in<one>, scaleD = #nvvm.wgmma_scale_out<one>, shape = #nvvm.shape<m = 64, n = 8, k = 16>, typeA = #nvvm.wgmma_type<f16>, typeB = #nvvm.wgmma_type<f16>, typeD = #nvvm.wgmma_type<f32>}> : (!llvm.struct<(f32, f32, f32, f32)>, i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>
    %d = nvvm.wgmma.mma_async %da, %db, %z, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    // CHECK: %e = nvvm.wgmma.mma_async %da, %db, %d, <m = 64, n = 8, k = 16>, D[<f32>, <zero>, <wrapped>], A[<bf16>, <neg>, <col>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    %e = nvvm.wgmma.mma_async %da, %db, %d, <m = 64, n = 8, k = 16>, D[<f32>, <zero>, <wrapped>], A[<bf16>, <neg>, <col>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    // CHECK: nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.commit.group.sync.aligned
    // CHECK: nvvm.wgmma.wait.group.sync.aligned 1
    // GENERIC: "nvvm.wgmma.wait.group.sync.aligned"() <{group = 1 : i64}> : () -> ()
    nvvm.wgmma.wait.group.sync.aligned 1
    // CHECK: %v = llvm.extractvalue %e[2] : !llvm.struct<(f32, f32, f32, f32)>
    %v = llvm.extractvalue %e[2] : !llvm.struct<(f32, f32, f32, f32)>
    // CHECK: %w = llvm.insertvalue %x, %e[0] : !llvm.struct<(f32, f32, f32, f32)>
    %w = llvm.insertvalue %x, %e[0] : !llvm.struct<(f32, f32, f32, f32)>
    // CHECK: %u = llvm.mlir.undef : !llvm.struct<(f32, f32)>
    %u = llvm.mlir.undef : !llvm.struct<(f32, f32)>
    gpu.return
  }
}
