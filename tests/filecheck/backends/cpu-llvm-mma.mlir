// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s

// On the CPU device every lane holds the whole 16x16 tile as a <256 x T> vector. load_matrix
// waits at the warp barrier (kind 2), then reads 16 rows of 16 elements leadDimension apart and
// concatenates them (`transpose`: one transposing shufflevector); constant_matrix is a splat,
// element-wise ops are vector ops; compute widens to f32, adds the 16 rank-1 products
// A[:, k] x B[k, :] in k order and rounds an f16 accumulator once; store_matrix waits at the
// warp barrier, lane 0 writes the 16 rows, and everyone waits again.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wmma(%a: memref<16x16xf16>, %c: memref<16x32xf16>, %f: f16) kernel {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %B = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index, transpose} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %C = gpu.subgroup_mma_constant_matrix %f : !gpu.mma_matrix<16x16xf16, "COp">
      %N = gpu.subgroup_mma_elementwise  negatef %C : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">
      %D = gpu.subgroup_mma_compute %A, %B, %N {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
      gpu.subgroup_mma_store_matrix %D, %c[%c0, %c16] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x32xf16>
      gpu.return
    }
  }
}

// CHECK-LABEL: define internal void @"__nova_cpu_fn.wmma"
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX:%.+]], i32 2)
// CHECK-COUNT-16: load <16 x half>, ptr {{%.+}}, align 2
// CHECK:       [[ROWS:%.+]] = shufflevector <128 x half> {{%.+}}, <128 x half> {{%.+}}, <256 x i32> <i32 0, i32 1, i32 2,
// CHECK-NEXT:  call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK-COUNT-16: load <16 x half>, ptr {{%.+}}, align 2
// CHECK:       [[BROWS:%.+]] = shufflevector <128 x half>
// CHECK-NEXT:  [[BT:%.+]] = shufflevector <256 x half> [[BROWS]], <256 x half> [[BROWS]], <256 x i32> <i32 0, i32 16, i32 32, i32 48,
// CHECK-NEXT:  [[ONE:%.+]] = insertelement <1 x half> <half undef>, half [[F:%.+]], i32 0
// CHECK-NEXT:  [[C:%.+]] = shufflevector <1 x half> [[ONE]], <1 x half> [[ONE]], <256 x i32> <i32 0, i32 0, i32 0,
// CHECK-NEXT:  [[N:%.+]] = fneg <256 x half> [[C]]
// CHECK-NEXT:  [[A32:%.+]] = fpext <256 x half> [[ROWS]] to <256 x float>
// CHECK-NEXT:  [[B32:%.+]] = fpext <256 x half> [[BT]] to <256 x float>
// CHECK-NEXT:  [[ACC:%.+]] = fpext <256 x half> [[N]] to <256 x float>
// CHECK-NEXT:  [[COL0:%.+]] = shufflevector <256 x float> [[A32]], <256 x float> [[A32]], <256 x i32> <i32 0, i32 0,
// CHECK-NEXT:  [[ROW0:%.+]] = shufflevector <256 x float> [[B32]], <256 x float> [[B32]], <256 x i32> <i32 0, i32 1, i32 2,
// CHECK-NEXT:  [[P0:%.+]] = fmul <256 x float> [[COL0]], [[ROW0]]
// CHECK-NEXT:  fadd <256 x float> [[ACC]], [[P0]]
// CHECK-COUNT-15: fadd <256 x float>
// CHECK-NEXT:  [[D:%.+]] = fptrunc <256 x float> {{%.+}} to <256 x half>
// CHECK-NEXT:  call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK:       [[LANE:%.+]] = and i64 {{%.+}}, 31
// CHECK-NEXT:  [[FIRST:%.+]] = icmp eq i64 [[LANE]], 0
// CHECK-NEXT:  br i1 [[FIRST]], label %[[STORE:.+]], label %[[DONE:.+]]
// CHECK:       [[BASE:%.+]] = getelementptr inbounds half, ptr {{%.+}}, i64 16
// CHECK-NEXT:  getelementptr half, ptr [[BASE]], i64 32
// CHECK:       [[R0:%.+]] = shufflevector <256 x half> [[D]], <256 x half> [[D]], <16 x i32> <i32 0, i32 1,
// CHECK-NEXT:  store <16 x half> [[R0]], ptr [[BASE]], align 2
// CHECK-COUNT-15: store <16 x half>
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK-NEXT:  ret void
