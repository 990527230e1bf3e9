// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid nvgpu asynchronous copies in upstream MLIR's test style, with mlir-opt 22's messages
// on mlir-opt 22's lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @dst_not_shared(%src: memref<128xf16>, %dst: memref<64xf16>, %i: index) {
  // expected-error @+1 {{destination memref must have a memory space attribute of IntegerAttr(3) or gpu::AddressSpaceAttr(Workgroup)}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 8 : memref<128xf16> to memref<64xf16>
  return
}

// -----

func.func @dst_private(%src: memref<128xf16>, %dst: memref<64xf16, #gpu.address_space<private>>, %i: index) {
  // expected-error @+1 {{destination memref must have a memory space attribute of IntegerAttr(3) or gpu::AddressSpaceAttr(Workgroup)}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 8 : memref<128xf16> to memref<64xf16, #gpu.address_space<private>>
  return
}

// -----

func.func @bad_count(%src: memref<128xf16>, %dst: memref<64xf16, 3>, %i: index) {
  // expected-error @+1 {{Requested copy elements is 3 with width 16. But copy elements could be one of 2, 4, 8.}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 3 : memref<128xf16> to memref<64xf16, 3>
  return
}

// -----

func.func @too_many_bytes(%src: memref<128xf32>, %dst: memref<64xf32, 3>, %i: index) {
  // expected-error @+1 {{Requested copy elements is 8 with width 32. But copy elements could be one of 1, 2, 4.}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 8 : memref<128xf32> to memref<64xf32, 3>
  return
}

// -----

func.func @bypass_small(%src: memref<128xf16>, %dst: memref<64xf16, 3>, %i: index) {
  // expected-error @+1 {{'nvgpu.device_async_copy' op bypassL1 does not satify alignment for 'memref<64xf16, 3>' with destination element 4. Unset bypassL1, or set destination element to 8}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 4 {bypassL1} : memref<128xf16> to memref<64xf16, 3>
  return
}

// -----

func.func @element_types(%src: memref<128xf16>, %dst: memref<64xf32, 3>, %i: index) {
  // expected-error @+1 {{source and destination must have the same element type}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 4 : memref<128xf16> to memref<64xf32, 3>
  return
}

// -----

func.func @src_indices(%src: memref<8x16xf16>, %dst: memref<64xf16, 3>, %i: index) {
  // expected-error @+1 {{'nvgpu.device_async_copy' op expected 2 source indices, got 1}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i], 8 : memref<8x16xf16> to memref<64xf16, 3>
  return
}

// -----

func.func @dst_indices(%src: memref<128xf16>, %dst: memref<64xf16, 3>, %i: index) {
  // expected-error @+1 {{'nvgpu.device_async_copy' op expected 1 destination indices, got 2}}
  %0 = nvgpu.device_async_copy %src[%i], %dst[%i, %i], 8 : memref<128xf16> to memref<64xf16, 3>
  return
}

// -----

func.func @src_stride(%src: memref<8x16xf16, strided<[32, 2]>>, %dst: memref<64xf16, 3>, %i: index) {
  // expected-error @+1 {{source memref most minor dim must have unit stride}}
  %0 = nvgpu.device_async_copy %src[%i, %i], %dst[%i], 8 : memref<8x16xf16, strided<[32, 2]>> to memref<64xf16, 3>
  return
}
