// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid nvgpu.mma.sync / nvgpu.ldmatrix IR in upstream MLIR's test style, with mlir-opt 22's
// messages on mlir-opt 22's lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @mma_a_elements(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{'nvgpu.mma.sync' op expected 128 warp-wide matrix A elements}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @mma_a_count(%a: vector<2x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{'nvgpu.mma.sync' op expected 256 warp-wide matrix A elements}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<2x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @mma_c_count(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<4x2xf32>) -> vector<4x2xf32> {
  // expected-error @+1 {{'nvgpu.mma.sync' op expected 128 warp-wide matrix C elements}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<4x2xf32>) -> vector<4x2xf32>
  return %d : vector<4x2xf32>
}

// -----

func.func @mma_b_shape(%a: vector<4x2xf16>, %b: vector<4x1xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{'nvgpu.mma.sync' op expected matrix B to be shaped (2 x 2)}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<4x1xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @mma_tf32_f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{'nvgpu.mma.sync' op expected tf32 tensor cores only for F32 operands}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16], tf32Enabled} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @mma_type(%a: vector<4x2xi32>, %b: vector<2x2xi32>, %c: vector<2x2xi32>) -> vector<2x2xi32> {
  // expected-error @+1 {{expected input data type (i4,i8,f16,bf16,tf32,f64) supported by nvgpu.mma.sync}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xi32>, vector<2x2xi32>, vector<2x2xi32>) -> vector<2x2xi32>
  return %d : vector<2x2xi32>
}

// -----

func.func @mma_rank(%a: vector<8xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{matrixA must be 2 dimensional vector}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<8xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @ldmatrix_tiles(%sm: memref<64x64xf16, #gpu.address_space<workgroup>>, %i: index) -> vector<4x2xf16> {
  // expected-error @+1 {{expected vector register shape[0] and numTiles to match}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 3 : i32, transpose = false} : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  return %a : vector<4x2xf16>
}

// -----

func.func @ldmatrix_global(%sm: memref<64x64xf16>, %i: index) -> vector<4x2xf16> {
  // expected-error @+1 {{expected nvgpu.ldmatrix srcMemref must have a memory space attribute of IntegerAttr(3) or gpu::AddressSpaceAttr(Workgroup)}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<64x64xf16> -> vector<4x2xf16>
  return %a : vector<4x2xf16>
}

// -----

func.func @ldmatrix_trans_f32(%sm: memref<64x64xf32, #gpu.address_space<workgroup>>, %i: index) -> vector<4x1xf32> {
  // expected-error @+1 {{nvgpu.ldmatrix transpose works only at 16b granularity}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4 : i32, transpose = true} : memref<64x64xf32, #gpu.address_space<workgroup>> -> vector<4x1xf32>
  return %a : vector<4x1xf32>
}

// -----

func.func @ldmatrix_row(%sm: memref<64x64xf16, #gpu.address_space<workgroup>>, %i: index) -> vector<4x4xf16> {
  // expected-error @+1 {{expected vector register shape[1] = 2}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<4x4xf16>
  return %a : vector<4x4xf16>
}

// -----

func.func @ldmatrix_wide(%sm: memref<64x64xf64, #gpu.address_space<workgroup>>, %i: index) -> vector<4x1xf64> {
  // expected-error @+1 {{nvgpu.ldmatrix works for 32b or lower}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<64x64xf64, #gpu.address_space<workgroup>> -> vector<4x1xf64>
  return %a : vector<4x1xf64>
}

// -----

func.func @ldmatrix_elem(%sm: memref<64x64xi16, #gpu.address_space<workgroup>>, %i: index) -> vector<4x2xf16> {
  // expected-error @+1 {{'nvgpu.ldmatrix' op failed to verify that srcMemref and res have same element type}}
  %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<64x64xi16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  return %a : vector<4x2xf16>
}
