// RUN: nova-opt %s | FileCheck %s
// Host-side gpu memory and stream ops.
func.func @memory(%host: memref<?xf32>, %n: index, %v: f32) {
  %d = gpu.alloc (%n) : memref<?xf32>
  %s = gpu.alloc host_shared (%n) : memref<?xf32>
  %f = gpu.alloc () : memref<4x4xi32>
  %t0 = gpu.wait async
  %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
  gpu.memcpy %d, %host : memref<?xf32>, memref<?xf32>
  %t2 = gpu.memcpy async [%t1] %a, %host : memref<?xf32>, memref<?xf32>
  gpu.memset %d, %v : memref<?xf32>, f32
  %t3 = gpu.memset async [%t2] %a, %v : memref<?xf32>, f32
  %t4 = gpu.dealloc async [%t3] %a : memref<?xf32>
  gpu.wait [%t4]
  gpu.wait
  gpu.dealloc %d : memref<?xf32>
  gpu.dealloc %s : memref<?xf32>
  gpu.dealloc %f : memref<4x4xi32>
  %u = memref.cast %host : memref<?xf32> to memref<*xf32>
  gpu.host_register %u : memref<*xf32>
  gpu.host_unregister %u : memref<*xf32>
  return
}

// CHECK:      module {
// CHECK-NEXT:   func.func @memory(%host: memref<?xf32>, %n: index, %v: f32) {
// CHECK-NEXT:     %d = gpu.alloc  (%n) : memref<?xf32>
// CHECK-NEXT:     %s = gpu.alloc  host_shared (%n) : memref<?xf32>
// CHECK-NEXT:     %f = gpu.alloc  () : memref<4x4xi32>
// CHECK-NEXT:     %t0 = gpu.wait async
// CHECK-NEXT:     %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
// CHECK-NEXT:     gpu.memcpy  %d, %host : memref<?xf32>, memref<?xf32>
// CHECK-NEXT:     %t2 = gpu.memcpy async [%t1] %a, %host : memref<?xf32>, memref<?xf32>
// CHECK-NEXT:     gpu.memset  %d, %v : memref<?xf32>, f32
// CHECK-NEXT:     %t3 = gpu.memset async [%t2] %a, %v : memref<?xf32>, f32
// CHECK-NEXT:     %t4 = gpu.dealloc async [%t3] %a : memref<?xf32>
// CHECK-NEXT:     gpu.wait [%t4]
// CHECK-NEXT:     gpu.wait
// CHECK-NEXT:     gpu.dealloc  %d : memref<?xf32>
// CHECK-NEXT:     gpu.dealloc  %s : memref<?xf32>
// CHECK-NEXT:     gpu.dealloc  %f : memref<4x4xi32>
// CHECK-NEXT:     %u = memref.cast %host : memref<?xf32> to memref<*xf32>
// CHECK-NEXT:     gpu.host_register %u : memref<*xf32>
// CHECK-NEXT:     gpu.host_unregister %u : memref<*xf32>
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
