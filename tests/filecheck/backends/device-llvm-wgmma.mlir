// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// Hopper warpgroup MMA on NVPTX: fence / commit_group / wait_group are LLVM's
// llvm.nvvm.wgmma.* intrinsics, mma_async is inline PTX (LLVM has no intrinsic for it) with the
// N / 2 accumulator registers as "=f" outputs tied to the inputs and the descriptors as "l"
// operands; the shared address of a workgroup memref is ptrtoint of its addrspace(3) pointer; the
// module is emitted for sm_90a (ptxas accepts wgmma only there) and its workgroup memory is
// 1024-byte aligned (the swizzle patterns' period). On the CPU device the MMA is a call of the
// emulation helper and the fences are no-ops.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wg(%out: memref<128x8xf32>)
        workgroup(%sa: memref<64x16xf16, #gpu.address_space<workgroup>>, %sb: memref<8x16xf16, #gpu.address_space<workgroup>>) kernel {
      %pa = memref.extract_aligned_pointer_as_index %sa : memref<64x16xf16, #gpu.address_space<workgroup>> -> index
      %pb = memref.extract_aligned_pointer_as_index %sb : memref<8x16xf16, #gpu.address_space<workgroup>> -> index
      %ia = arith.index_cast %pa : index to i64
      %ib = arith.index_cast %pb : index to i64
      %c4 = arith.constant 4 : i64
      %da = arith.shrui %ia, %c4 : i64
      %db = arith.shrui %ib, %c4 : i64
      %z = llvm.mlir.zero : !llvm.struct<(f32, f32, f32, f32)>
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      nvvm.wgmma.fence.aligned
      %r = nvvm.wgmma.mma_async %da, %db, %z, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      %s = nvvm.wgmma.mma_async %da, %db, %r, <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<bf16>, <neg>, <col>], B[<bf16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      %e = llvm.extractvalue %s[3] : !llvm.struct<(f32, f32, f32, f32)>
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      memref.store %e, %out[%t, %c0] : memref<128x8xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"wg"(
// CHECK:       ptrtoint ptr addrspace(3) {{%.+}} to i64
// CHECK:       call void @"llvm.nvvm.fence.proxy.async.shared_cta"()
// CHECK:       call void @"llvm.nvvm.wgmma.fence.sync.aligned"()
// CHECK:       [[R:%.+]] = call {float, float, float, float} asm sideeffect "{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, p, 1, 1, 0, 0; }", "=f,=f,=f,=f,0,1,2,3,l,l"(float {{.+}}, float {{.+}}, float {{.+}}, float {{.+}}, i64 {{%.+}}, i64 {{%.+}})
// CHECK:       call {float, float, float, float} asm sideeffect "{ .reg .pred p; setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $8, $9, p, -1, 1, 1, 1; }"
// CHECK:       call void @"llvm.nvvm.wgmma.commit_group.sync.aligned"()
// CHECK:       call void @"llvm.nvvm.wgmma.wait_group.sync.aligned"(i64 0)
// CHECK:       @"__wg_wg_0" = internal addrspace(3) global [1024 x half] undef, align 1024

// PTX: .target sm_90a
// PTX: .shared .align 1024 .b8 __wg_wg_0[2048];
// PTX: fence.proxy.async.shared::cta;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
// PTX: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {{.*}}, p, -1, 1, 1, 1;
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned {{[[:space:]]*}}0;

// CPU:       call void @"__nova_wgmma_f32"(ptr {{%.+}}, i64 {{%.+}}, i64 {{%.+}}, i64 8, i32 32,
// CPU:       call void @"__nova_wgmma_f32"(ptr {{%.+}}, i64 {{%.+}}, i64 {{%.+}}, i64 8, i32 15,
// CPU:       define internal void @"__nova_wgmma_f32"(ptr
