// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// nvgpu asynchronous copies. NVPTX: each copy is the cp.async intrinsic upstream's
// convert-nvgpu-to-nvvm + NVVM translation emits: `.cg` under bypassL1, else `.ca`, the size in
// bytes (16, 8, 4), the `.s` variant with srcElements as a byte count (elements * bits / 8, i32),
// the shared destination as an addrspace(3) pointer and the generic source cast to global;
// create_group commits, wait waits for numGroups (default 0). CPU device: the copy is a vector
// load and store at once (element by element under srcElements, the rest zeros), and groups and
// waits emit nothing.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copies(%src: memref<?xf16>, %g: memref<8x16xf32>, %out: memref<?xf16>, %n: index) workgroup(%buf: memref<64xf16, #gpu.address_space<workgroup>>, %b2: memref<4x32xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %t0 = nvgpu.device_async_copy %src[%c0], %buf[%c0], 8 {bypassL1} : memref<?xf16> to memref<64xf16, #gpu.address_space<workgroup>>
      %t1 = nvgpu.device_async_copy %src[%c8], %buf[%c8], 8, %n : memref<?xf16> to memref<64xf16, #gpu.address_space<workgroup>>
      %t2 = nvgpu.device_async_copy %g[%c1, %c8], %b2[%c1, %c0], 2 : memref<8x16xf32> to memref<4x32xf32, 3>
      %t3 = nvgpu.device_async_copy %src[%c0], %buf[%c0], 2 : memref<?xf16> to memref<64xf16, #gpu.address_space<workgroup>>
      %g0 = nvgpu.device_async_create_group %t0, %t1, %t2, %t3
      nvgpu.device_async_wait %g0 {numGroups = 1 : i32}
      nvgpu.device_async_wait %g0
      %v = memref.load %buf[%c8] : memref<64xf16, #gpu.address_space<workgroup>>
      memref.store %v, %out[%c0] : memref<?xf16>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"copies"
// CHECK:       [[D0:%.+]] = getelementptr inbounds half, ptr addrspace(3) [[BUF:%.+]], i64 0
// CHECK:       [[S0:%.+]] = getelementptr inbounds half, ptr [[SRC:%.+]], i64 0
// CHECK:       [[G0:%.+]] = addrspacecast ptr [[S0]] to ptr addrspace(1)
// CHECK:       call void @"llvm.nvvm.cp.async.cg.shared.global.16"(ptr addrspace(3) [[D0]], ptr addrspace(1) [[G0]])
// CHECK:       [[D1:%.+]] = getelementptr inbounds half, ptr addrspace(3) [[BUF]], i64 8
// CHECK:       [[G1:%.+]] = addrspacecast ptr {{%.+}} to ptr addrspace(1)
// CHECK:       [[N32:%.+]] = trunc i64 {{%.+}} to i32
// CHECK:       [[BITS:%.+]] = mul i32 [[N32]], 16
// CHECK:       [[BYTES:%.+]] = lshr i32 [[BITS]], 3
// CHECK:       call void @"llvm.nvvm.cp.async.ca.shared.global.16.s"(ptr addrspace(3) [[D1]], ptr addrspace(1) [[G1]], i32 [[BYTES]])
// CHECK:       call void @"llvm.nvvm.cp.async.ca.shared.global.8"(ptr addrspace(3) {{%.+}}, ptr addrspace(1) {{%.+}})
// CHECK:       call void @"llvm.nvvm.cp.async.ca.shared.global.4"(ptr addrspace(3) {{%.+}}, ptr addrspace(1) {{%.+}})
// CHECK-NEXT:  call void @"llvm.nvvm.cp.async.commit.group"()
// CHECK-NEXT:  call void @"llvm.nvvm.cp.async.wait.group"(i32 1)
// CHECK-NEXT:  call void @"llvm.nvvm.cp.async.wait.group"(i32 0)

// PTX-LABEL: .entry copies(
// PTX:       cp.async.cg.shared.global [{{.+}}], [{{.+}}], 16;
// PTX:       cp.async.ca.shared.global [{{.+}}], [{{.+}}], 16, %r{{[0-9]+}};
// PTX:       cp.async.ca.shared.global [{{.+}}], [{{.+}}], 8;
// PTX:       cp.async.ca.shared.global [{{.+}}], [{{.+}}], 4;
// PTX-NEXT:  cp.async.commit_group;
// PTX-NEXT:  cp.async.wait_group {{.*}}1;
// PTX-NEXT:  cp.async.wait_group {{.*}}0;
// PTX-NEXT:  ld.shared.b16

// CPU-LABEL: define internal void @"__nova_cpu_fn.copies"
// CPU:       [[V0:%.+]] = load <8 x half>, ptr {{%.+}}, align 2
// CPU-NEXT:  store <8 x half> [[V0]], ptr {{%.+}}, align 2
// CPU:       store <8 x half> <half 0.0{{(, half 0.0)+}}>, ptr [[SLOT:%"[.0-9]+"]]
// CPU:       [[IN:%.+]] = icmp slt i64 0, {{%.+}}
// CPU-NEXT:  br i1 [[IN]]
// CPU:       insertelement <8 x half> {{%.+}}, half {{%.+}}, i32 7
// CPU:       [[Z:%.+]] = load <8 x half>, ptr [[SLOT]]
// CPU-NEXT:  store <8 x half> [[Z]], ptr {{%.+}}, align 2
// CPU:       [[V2:%.+]] = load <2 x float>, ptr {{%.+}}, align 4
// CPU-NEXT:  store <2 x float> [[V2]], ptr {{%.+}}, align 4
// CPU:       [[V3:%.+]] = load <2 x half>, ptr {{%.+}}, align 2
// CPU-NEXT:  store <2 x half> [[V3]], ptr {{%.+}}, align 2
// CPU-NOT:   cp.async
// CPU:       ret void
