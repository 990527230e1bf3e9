// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s

// Upstream's verifier rules for the gpu.subgroup_mma_* ops and !gpu.mma_matrix, located at the
// failing op (or type).

func.func @bad_operand_kind(%m: memref<32x32xf16>) {
  %i = arith.constant 0 : index
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:127: error: operand expected to be one of AOp, BOp or COp
  %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf16> -> !gpu.mma_matrix<16x16xf16, "XOp">
  return
}

// -----

func.func @bad_element(%m: memref<32x32xi8>) {
  %i = arith.constant 0 : index
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:104: error: MMAMatrixType elements must be SI8, UI8, I32, F16, F32, or F64
  %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xi8> -> !gpu.mma_matrix<16x16xi8, "AOp">
  return
}

// -----

func.func @operand_order(%a: !gpu.mma_matrix<16x16xf16, "AOp">, %c: !gpu.mma_matrix<16x16xf16, "COp">) {
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:8: error: operands must be in the order AOp, BOp, COp
  %d = gpu.subgroup_mma_compute %a, %a, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "AOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
  return
}

// -----

func.func @matmul_shapes(%a: !gpu.mma_matrix<16x16xf16, "AOp">, %b: !gpu.mma_matrix<8x16xf16, "BOp">, %c: !gpu.mma_matrix<16x16xf16, "COp">) {
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:8: error: operand shapes do not satisfy matmul constraints
  %d = gpu.subgroup_mma_compute %a, %b, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<8x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
  return
}

// -----

func.func @store_not_cop(%m: memref<32x32xf16>, %a: !gpu.mma_matrix<16x16xf16, "AOp">) {
  %i = arith.constant 0 : index
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:3: error: expected the operand matrix being stored to have 'COp' operand type
  gpu.subgroup_mma_store_matrix %a, %m[%i, %i] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf16, "AOp">, memref<32x32xf16>
  return
}

// -----

func.func @strided_minor(%m: memref<32x32xf16, strided<[1, 32]>>) {
  %i = arith.constant 0 : index
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:8: error: expected source memref most minor dim must have unit stride
  %a = gpu.subgroup_mma_load_matrix %m[%i, %i] {leadDimension = 32 : index} : memref<32x32xf16, strided<[1, 32]>> -> !gpu.mma_matrix<16x16xf16, "AOp">
  return
}

// -----

func.func @constant_type(%f: f16) {
  // CHECK: verify-mma.mlir:[[# @LINE + 1]]:41: error: use of value '%f' expects different type than prior uses: 'f32' vs 'f16'
  %c = gpu.subgroup_mma_constant_matrix %f : !gpu.mma_matrix<16x16xf32, "COp">
  return
}
