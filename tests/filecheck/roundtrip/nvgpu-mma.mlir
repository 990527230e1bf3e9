// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// nvgpu.ldmatrix and nvgpu.mma.sync, printed exactly as mlir-opt 22 prints them (the unit test
// test_ir_roundtrip also checks this file against mlir-opt).
gpu.module @kernels {
  gpu.func @mma(%s: memref<64x72xf16, #gpu.address_space<workgroup>>, %t: memref<32x32xf16, 3>,
                %i: index, %j: index, %c: vector<2x2xf32>, %h: vector<2x2xf16>) kernel {
    // CHECK: %a = nvgpu.ldmatrix %s[%i, %j] {numTiles = 4 : i32, transpose = false} : memref<64x72xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    // GENERIC: "nvgpu.ldmatrix"(%s, %i, %j) <{numTiles = 4 : i32, transpose = false}> : (memref<64x72xf16, #gpu.address_space<workgroup>>, index, index) -> vector<4x2xf16>
    %a = nvgpu.ldmatrix %s[%i, %j] {numTiles = 4 : i32, transpose = false} : memref<64x72xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    // CHECK: %b = nvgpu.ldmatrix %s[%i, %j] {numTiles = 2 : i32, transpose = true} : memref<64x72xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    %b = nvgpu.ldmatrix %s[%i, %j] {numTiles = 2 : i32, transpose = true} : memref<64x72xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    // CHECK: %one = nvgpu.ldmatrix %t[%i, %j] {numTiles = 1 : i32, transpose = false} : memref<32x32xf16, 3> -> vector<1x2xf16>
    %one = nvgpu.ldmatrix %t[%i, %j] {numTiles = 1 : i32, transpose = false} : memref<32x32xf16, 3> -> vector<1x2xf16>
    // CHECK: %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    // GENERIC: "nvgpu.mma.sync"(%a, %b, %c) <{mmaShape = [16, 8, 16]}> : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    // CHECK: %dh = nvgpu.mma.sync(%a, %b, %h) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
    %dh = nvgpu.mma.sync(%a, %b, %h) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
    gpu.return
  }
  gpu.func @tf32(%a: vector<2x1xf32>, %b: vector<1x1xf32>, %c: vector<2x2xf32>) kernel {
    // CHECK: nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 4], tf32Enabled} : (vector<2x1xf32>, vector<1x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 4], tf32Enabled} : (vector<2x1xf32>, vector<1x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.return
  }
}
