// RUN: nova-opt %s | nova-opt | FileCheck %s

// The nvgpu asynchronous-copy ops Nova supports in their printed forms (copies of 4, 8 and 16
// bytes, the zero-filling srcElements operand, bypassL1, integer and symbolic shared spaces,
// multi-dimensional memrefs, groups with and without tokens, waits with and without
// numGroups), compared with mlir-opt 22 by tests/unit/test_dialect_files.py.

func.func @copies(%src: memref<128xf16>, %a: memref<64xf16, #gpu.address_space<workgroup>>, %b: memref<4x32xf32, 3>, %g: memref<8x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = nvgpu.device_async_copy %src[%c0], %a[%c0], 8 : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
  %1 = nvgpu.device_async_copy %src[%c1], %a[%c1], 8, %n {bypassL1} : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
  %2 = nvgpu.device_async_copy %src[%c0], %a[%c0], 2 : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
  %3 = nvgpu.device_async_copy %g[%c1, %c0], %b[%c0, %c1], 2, %n : memref<8x16xf32> to memref<4x32xf32, 3>
  %4 = nvgpu.device_async_copy %g[%c0, %c0], %b[%c0, %c0], 1 : memref<8x16xf32> to memref<4x32xf32, 3>
  %5 = nvgpu.device_async_create_group %0, %1, %2, %3, %4
  nvgpu.device_async_wait %5 {numGroups = 1 : i32}
  %6 = nvgpu.device_async_create_group
  nvgpu.device_async_wait %6
  return
}

// CHECK:      module {
// CHECK-NEXT:   func.func @copies(%src: memref<128xf16>, %a: memref<64xf16, #gpu.address_space<workgroup>>, %b: memref<4x32xf32, 3>, %g: memref<8x16xf32>, %n: index) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %0 = nvgpu.device_async_copy %src[%c0], %a[%c0], 8 : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
// CHECK-NEXT:     %1 = nvgpu.device_async_copy %src[%c1], %a[%c1], 8, %n {bypassL1} : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
// CHECK-NEXT:     %2 = nvgpu.device_async_copy %src[%c0], %a[%c0], 2 : memref<128xf16> to memref<64xf16, #gpu.address_space<workgroup>>
// CHECK-NEXT:     %3 = nvgpu.device_async_copy %g[%c1, %c0], %b[%c0, %c1], 2, %n : memref<8x16xf32> to memref<4x32xf32, 3>
// CHECK-NEXT:     %4 = nvgpu.device_async_copy %g[%c0, %c0], %b[%c0, %c0], 1 : memref<8x16xf32> to memref<4x32xf32, 3>
// CHECK-NEXT:     %5 = nvgpu.device_async_create_group %0, %1, %2, %3, %4
// CHECK-NEXT:     nvgpu.device_async_wait %5 {numGroups = 1 : i32}
// CHECK-NEXT:     %6 = nvgpu.device_async_create_group
// CHECK-NEXT:     nvgpu.device_async_wait %6
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
