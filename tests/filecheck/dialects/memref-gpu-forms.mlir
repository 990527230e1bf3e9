// RUN: nova-opt %s | nova-opt | FileCheck %s

// Printed forms of gpu async/token ops without dependencies, launches with optional groups
// (clusters, attributions, dynamic shared memory, attributes) and memref view/reshape ops, as
// mlir-opt 22 prints them (tests/unit/test_dialect_files.py compares).

// CHECK: gpu.wait async
// CHECK: gpu.alloc async () : memref<4xf32>
// CHECK: memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 2]
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] :

module attributes {gpu.container_module} {
  func.func @f(%n: index, %a: memref<?xf32>, %b: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async []
    %m, %t1 = gpu.alloc async () : memref<4xf32>
    %t2 = gpu.memcpy async %a, %b : memref<?xf32>, memref<?xf32>
    %t3 = gpu.dealloc async %m : memref<4xf32>
    gpu.wait [%t0, %t1, %t2, %t3]
    %t4 = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) workgroup(%w : memref<4xf32, #gpu.address_space<workgroup>>) private(%p : memref<1xf32, #gpu.address_space<private>>) {
      gpu.terminator
    } {tag = 1}
    %t5 = gpu.launch_func async @k::@e blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @k::@e clusters in (%c1, %c1, %c1) blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {tag = 2}
    %i = arith.constant 0 : i32
    gpu.launch_func @k::@e blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %i
    gpu.wait [%t4, %t5]
    %s = memref.subview %a[0] [2] [1] : memref<?xf32> to memref<2xf32, strided<[1]>>
    %bytes = memref.alloc() : memref<16xi8>
    %v = memref.view %bytes[%c1][] : memref<16xi8> to memref<2xf32>
    memref.copy %a, %b : memref<?xf32> to memref<?xf32>
    %d = memref.dim %a, %c1 : memref<?xf32>
    %g = memref.get_global @glob : memref<2xf32>
    %r = memref.reinterpret_cast %a to offset: [0], sizes: [2], strides: [1] : memref<?xf32> to memref<2xf32>
    memref.assume_alignment %a, 16 : memref<?xf32>
    %x = memref.expand_shape %g [[0, 1]] output_shape [1, 2] : memref<2xf32> into memref<1x2xf32>
    %y = memref.collapse_shape %x [[0, 1]] : memref<1x2xf32> into memref<2xf32>
    return
  }
  memref.global "private" constant @glob : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global @uninit : memref<2xf32> = uninitialized
  gpu.module @k {
    gpu.func @e() kernel {
      gpu.return
    }
  }
}
