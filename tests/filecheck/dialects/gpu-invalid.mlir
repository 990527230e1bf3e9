// RUN: nova-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// Invalid gpu dialect IR in upstream MLIR's test style: each chunk (split at the dashed lines) is
// verified on its own and must produce exactly the annotated diagnostics, with upstream's text
// and on upstream's line (tests/unit/test_dialect_files.py runs this file through mlir-opt 22
// too and compares every diagnostic's line and text).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{expected '{' to begin a region}}
    gpu.func @no_body() kernel
  }
}

// -----

func.func @alloc_symbols(%n: index) {
  // expected-error @+1 {{'gpu.alloc' op symbol operand count does not equal memref symbol count}}
  %m = gpu.alloc(%n) [%n] : memref<2x?xf32, affine_map<(d0, d1) -> (d0 + d1)>>
  return
}

// -----

func.func @alloc_missing_symbol(%n: index) {
  // expected-error @+1 {{'gpu.alloc' op symbol operand count does not equal memref symbol count}}
  %m = gpu.alloc(%n) : memref<?xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @alloc_sizes(%n: index) {
  // expected-error @+1 {{'gpu.alloc' op incorrect number of dynamic sizes, has 1, expected 0}}
  %m = gpu.alloc(%n) : memref<2x2xf32>
  return
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{'gpu.func' op attribute 'known_block_size' failed to satisfy constraint: i32 dense array attribute with 3 elements (if present)}}
    gpu.func @two_sizes() kernel attributes {known_block_size = array<i32: 1, 2>} {
      gpu.return
    }
  }
}

// -----

// expected-error @+1 {{'gpu.module' op attribute 'targets' failed to satisfy constraint: array of GPU target attributes with at least 1 elements}}
gpu.module @no_targets [] {
}

// -----

func.func @mma_load_2d_vectors(%src: memref<32x32xvector<2x2xf16>>) {
  %i = arith.constant 16 : index
  // expected-error @+1 {{'gpu.subgroup_mma_load_matrix' op operand #0 must be memref of 8-bit signless integer or 32-bit signless integer or 16-bit float or 32-bit float or 64-bit float or vector of 8-bit signless integer or 32-bit signless integer or 16-bit float or 32-bit float or 64-bit float values of ranks 1 values, but got 'memref<32x32xvector<2x2xf16>>'}}
  %0 = gpu.subgroup_mma_load_matrix %src[%i, %i] {leadDimension = 32 : index} : memref<32x32xvector<2x2xf16>> -> !gpu.mma_matrix<16x16xf16, "AOp">
  return
}

// -----

func.func @mma_store_f64_vectors(%m: !gpu.mma_matrix<16x16xf16, "COp">, %dst: memref<32x32xvector<2xi16>>) {
  %i = arith.constant 16 : index
  // expected-error @+1 {{'gpu.subgroup_mma_store_matrix' op operand #1 must be memref of}}
  gpu.subgroup_mma_store_matrix %m, %dst[%i, %i] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf16, "COp">, memref<32x32xvector<2xi16>>
  return
}

// -----

func.func @return_in_launch() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'gpu.return' op expects parent op 'gpu.func'}}
    gpu.return
  }
  return
}

// -----

func.func @func_return_in_launch() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'func.return' op expects parent op 'func.func'}}
    func.return
  }
  return
}

// -----

// Two functions, each with an error: both are reported (functions verify independently), and
// an unregistered op verifies whatever it holds.
func.func @first(%x: i32) {
  // expected-error @+1 {{'gpu.alloc' op incorrect number of dynamic sizes, has 0, expected 1}}
  %m = gpu.alloc() : memref<?xf32>
  "test.use"(%x) : (i32) -> ()
  return
}

func.func @second(%n: index) {
  %r = "test.produce"() {note = "unregistered"} : () -> i32
  // expected-error @+1 {{'gpu.alloc' op symbol operand count does not equal memref symbol count}}
  %m = gpu.alloc() [%n] : memref<4xf32>
  return
}

// -----

func.func @launch_func_without_module(%n: index) {
  // expected-error @+1 {{'gpu.launch_func' op expected the closest surrounding module to have the 'gpu.container_module' attribute}}
  gpu.launch_func @kernels::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
  return
}

// -----

// expected-error @+1 {{'gpu.binary' op attribute 'objects' failed to satisfy constraint: an array of GPU object attributes with at least 1 elements}}
gpu.binary @no_objects []

// -----

func.func @sincos_of_integer(%i: i32) {
  // expected-error @+1 {{'math.sincos' op operand #0 must be floating-point-like, but got 'i32'}}
  %s, %c = math.sincos %i : i32
  return
}
