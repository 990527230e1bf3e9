// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX

// gpu.subgroup_mma_* lower as upstream's --convert-gpu-to-nvvm does: llvm.nvvm.wmma.m16n16k16
// load.{a,b,c} / mma / store.d intrinsics with `row` layout (`col` under transpose /
// a_transpose / b_transpose), the leadDimension as the i32 stride, the address of
// memref[i, j] from the memref's strides, and the pointer's address space in the name (p0
// generic, p1 global, p3 shared). Fragments are one lane's registers: f16 A/B 8 x <2 x half>,
// f32 C 8 x float, f16 C 4 x <2 x half>; constant and element-wise ops work per register.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wmma(%a: memref<16x16xf16>, %c: memref<16x16xf32>, %s: memref<32x32xf16, 3>,
                   %h: memref<16x16xf16>, %g: memref<16x16xf16, 1>, %f: f32) kernel {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %B = gpu.subgroup_mma_load_matrix %s[%c16, %c0] {leadDimension = 32 : index, transpose} : memref<32x32xf16, 3> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %C = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
      %K = gpu.subgroup_mma_constant_matrix %f : !gpu.mma_matrix<16x16xf32, "COp">
      %E = gpu.subgroup_mma_elementwise  maxf %C, %K : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
      %D = gpu.subgroup_mma_compute %A, %B, %E {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %D, %c[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
      %H = gpu.subgroup_mma_load_matrix %g[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16, 1> -> !gpu.mma_matrix<16x16xf16, "COp">
      %X = gpu.subgroup_mma_elementwise  extf %H : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
      %D2 = gpu.subgroup_mma_compute %A, %B, %H {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
      %D3 = gpu.subgroup_mma_elementwise  addf %D2, %D2 : (!gpu.mma_matrix<16x16xf16, "COp">, !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">
      gpu.subgroup_mma_store_matrix %D3, %h[%c0, %c0] {leadDimension = 16 : index, transpose} : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
      gpu.subgroup_mma_store_matrix %X, %c[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"wmma"
// CHECK:       [[PA:%.+]] = getelementptr inbounds half, ptr {{%.+}}, i64 0
// CHECK-NEXT:  call {<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>} @"llvm.nvvm.wmma.m16n16k16.load.a.row.stride.f16.p0"(ptr [[PA]], i32 16)
// CHECK-NEXT:  [[PB:%.+]] = getelementptr inbounds half, ptr addrspace(3) {{%.+}}, i64 512
// CHECK-NEXT:  call {{.+}} @"llvm.nvvm.wmma.m16n16k16.load.b.col.stride.f16.p3"(ptr addrspace(3) [[PB]], i32 32)
// CHECK:       call {float, float, float, float, float, float, float, float} @"llvm.nvvm.wmma.m16n16k16.load.c.row.stride.f32.p0"(ptr {{%.+}}, i32 16)
// CHECK-NEXT:  [[K0:%.+]] = insertvalue {float, float, float, float, float, float, float, float} undef, float [[F:%.+]], 0
// CHECK-NEXT:  insertvalue {float, float, float, float, float, float, float, float} [[K0]], float [[F]], 1
// CHECK:       [[GT:%.+]] = fcmp ogt float [[X:%.+]], [[Y:%.+]]
// CHECK-NEXT:  [[MAX:%.+]] = select  i1 [[GT]], float [[X]], float [[Y]]
// CHECK-NEXT:  [[UNO:%.+]] = fcmp uno float [[X]], [[Y]]
// CHECK-NEXT:  select  i1 [[UNO]], float 0x7ff8000000000000, float [[MAX]]
// CHECK:       call {float, float, float, float, float, float, float, float} @"llvm.nvvm.wmma.m16n16k16.mma.row.col.f32.f32"(<2 x half> {{.+}}, float {{%.+}})
// CHECK:       call void @"llvm.nvvm.wmma.m16n16k16.store.d.row.stride.f32.p0"(ptr {{%.+}}, float {{.+}}, i32 16)
// CHECK:       call {<2 x half>, <2 x half>, <2 x half>, <2 x half>} @"llvm.nvvm.wmma.m16n16k16.load.c.row.stride.f16.p1"(ptr addrspace(1) {{%.+}}, i32 16)
// CHECK:       [[H0:%.+]] = extractelement <2 x half> {{%.+}}, i32 0
// CHECK-NEXT:  fpext half [[H0]] to float
// CHECK-NEXT:  [[H1:%.+]] = extractelement <2 x half> {{%.+}}, i32 1
// CHECK-NEXT:  fpext half [[H1]] to float
// CHECK:       call {<2 x half>, <2 x half>, <2 x half>, <2 x half>} @"llvm.nvvm.wmma.m16n16k16.mma.row.col.f16.f16"(
// CHECK-COUNT-4: fadd <2 x half>
// CHECK:       call void @"llvm.nvvm.wmma.m16n16k16.store.d.col.stride.f16.p0"(ptr {{%.+}}, <2 x half> {{.+}}, i32 16)
// CHECK:       call void @"llvm.nvvm.wmma.m16n16k16.store.d.row.stride.f32.p0"(

// PTX-DAG: wmma.load.a.sync.aligned.row.m16n16k16.f16
// PTX-DAG: wmma.load.b.sync.aligned.col.m16n16k16.shared.f16
// PTX-DAG: wmma.load.c.sync.aligned.row.m16n16k16.f32
// PTX-DAG: wmma.load.c.sync.aligned.row.m16n16k16.global.f16
// PTX-DAG: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
// PTX-DAG: wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16
// PTX-DAG: wmma.store.d.sync.aligned.row.m16n16k16.f32
// PTX-DAG: wmma.store.d.sync.aligned.col.m16n16k16.f16
