// RUN: nova-opt %s | FileCheck %s
// Tensor-core (WMMA) fragment ops: load/store with leadDimension and transpose, compute with the
// transpose flags, constant and element-wise ops, on global and workgroup (3) memrefs. Upstream
// accepts any 2-D shape and si8/ui8/i32/f16/f32/f64 elements (the lowering does not).
gpu.module @kernels {
  gpu.func @wmma(%a: memref<16x16xf16>, %c: memref<16x16xf32>, %s: memref<32x32xf16, 3>,
                 %h: memref<16x16xf16>, %f: f32) kernel {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %A = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %B = gpu.subgroup_mma_load_matrix %s[%c16, %c0] {leadDimension = 32 : index, transpose} : memref<32x32xf16, 3> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %C = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %K = gpu.subgroup_mma_constant_matrix %f : !gpu.mma_matrix<16x16xf32, "COp">
    %E = gpu.subgroup_mma_elementwise  addf %C, %K : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %N = gpu.subgroup_mma_elementwise  negatef %E : (!gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %D = gpu.subgroup_mma_compute %A, %B, %N {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %D, %c[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    %H = gpu.subgroup_mma_load_matrix %h[%c0, %c0] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "COp">
    %X = gpu.subgroup_mma_elementwise  extf %H : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    %D2 = gpu.subgroup_mma_compute %A, %B, %H {a_transpose, b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
    gpu.subgroup_mma_store_matrix %D2, %h[%c0, %c0] {leadDimension = 16 : index, transpose} : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
    gpu.return
  }
  gpu.func @other_shapes(%m: memref<32x32xf64>, %i: memref<8x8xi32>) {
    %c0 = arith.constant 0 : index
    %a = gpu.subgroup_mma_load_matrix %m[%c0, %c0] {leadDimension = 32 : index} : memref<32x32xf64> -> !gpu.mma_matrix<8x4xf64, "AOp">
    %b = gpu.subgroup_mma_load_matrix %i[%c0, %c0] {leadDimension = 8 : index} : memref<8x8xi32> -> !gpu.mma_matrix<8x8xi32, "COp">
    %s = gpu.subgroup_mma_elementwise  addi %b, %b : (!gpu.mma_matrix<8x8xi32, "COp">, !gpu.mma_matrix<8x8xi32, "COp">) -> !gpu.mma_matrix<8x8xi32, "COp">
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @wmma(
// CHECK:       %[[A:.+]] = gpu.subgroup_mma_load_matrix %{{.+}}[%[[Z:.+]], %[[Z]]] {leadDimension = 16 : index} : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK-NEXT:  %[[B:.+]] = gpu.subgroup_mma_load_matrix %{{.+}}[%{{.+}}, %[[Z]]] {leadDimension = 32 : index, transpose} : memref<32x32xf16, 3> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK-NEXT:  %[[C:.+]] = gpu.subgroup_mma_load_matrix
// CHECK-NEXT:  %[[K:.+]] = gpu.subgroup_mma_constant_matrix %{{.+}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-NEXT:  %[[E:.+]] = gpu.subgroup_mma_elementwise  addf %[[C]], %[[K]] : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-NEXT:  %[[N:.+]] = gpu.subgroup_mma_elementwise  negatef %[[E]] : (!gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-NEXT:  %[[D:.+]] = gpu.subgroup_mma_compute %[[A]], %[[B]], %[[N]] {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-NEXT:  gpu.subgroup_mma_store_matrix %[[D]], %{{.+}}[%[[Z]], %[[Z]]] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
// CHECK:       gpu.subgroup_mma_elementwise  extf
// CHECK:       gpu.subgroup_mma_compute %[[A]], %[[B]], %{{.+}} {a_transpose, b_transpose} : {{.+}} -> !gpu.mma_matrix<16x16xf16, "COp">
// CHECK-NEXT:  gpu.subgroup_mma_store_matrix {{.+}} {leadDimension = 16 : index, transpose} : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
// CHECK-LABEL: gpu.func @other_shapes(
// CHECK:       !gpu.mma_matrix<8x4xf64, "AOp">
// CHECK:       gpu.subgroup_mma_elementwise  addi
