// RUN: nova-opt %s | FileCheck %s
// gpu.launch (1-3-D sizes, async, clusters, dynamic shared memory, attributions) and gpu.launch_func.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%arg0: memref<?xf32>, %arg1: f32) kernel {
      gpu.return
    }
  }
  func.func @launches(%buf: memref<?xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %cst = arith.constant 2.000000e+00 : f32
    %smem = arith.constant 128 : i32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      %i = arith.addi %bx, %tx : index
      memref.store %cst, %buf[%i] : memref<?xf32>
      gpu.terminator
    }
    %t0 = gpu.wait async
    %t1 = gpu.launch async [%t0] clusters(%cx, %cy, %cz) in (%ncx = %c1, %ncy = %c1, %ncz = %c1) blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) dynamic_shared_memory_size %smem workgroup(%wg: memref<16xf32, 3>) private(%pv: memref<2xf32, 5>) {
      gpu.terminator
    } {nova.tag}
    gpu.wait [%t1]
    gpu.launch_func @kernels::@kernel blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1) args(%buf : memref<?xf32>, %cst : f32)
    gpu.launch_func @kernels::@kernel blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1) dynamic_shared_memory_size %smem args(%buf : memref<?xf32>, %cst : f32)
    %t2 = gpu.launch_func async [%t0] @kernels::@kernel clusters in (%c1, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1) args(%buf : memref<?xf32>, %cst : f32)
    %t3 = gpu.wait async [%t1, %t2]
    gpu.wait [%t3]
    return
  }
}

// CHECK:      module attributes {gpu.container_module} {
// CHECK-NEXT:   gpu.module @kernels {
// CHECK-NEXT:     gpu.func @kernel(%arg0: memref<?xf32>, %arg1: f32) kernel {
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @launches(%buf: memref<?xf32>, %n: index) {
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c4 = arith.constant 4 : index
// CHECK-NEXT:     %cst = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %smem = arith.constant 128 : i32
// CHECK-NEXT:     gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
// CHECK-NEXT:       %i = arith.addi %bx, %tx : index
// CHECK-NEXT:       memref.store %cst, %buf[%i] : memref<?xf32>
// CHECK-NEXT:       gpu.terminator
// CHECK-NEXT:     }
// CHECK-NEXT:     %t0 = gpu.wait async
// CHECK-NEXT:     %t1 = gpu.launch async [%t0] clusters(%cx, %cy, %cz) in (%ncx = %c1, %ncy = %c1, %ncz = %c1) blocks(%bx_1, %by_1, %bz_1) in (%gx_1 = %c4, %gy_1 = %c1, %gz_1 = %c1) threads(%tx_1, %ty_1, %tz_1) in (%sx_1 = %c4, %sy_1 = %c4, %sz_1 = %c1) dynamic_shared_memory_size %smem workgroup(%wg : memref<16xf32, 3>) private(%pv : memref<2xf32, 5>) {
// CHECK-NEXT:       gpu.terminator
// CHECK-NEXT:     } {nova.tag}
// CHECK-NEXT:     gpu.wait [%t1]
// CHECK-NEXT:     gpu.launch_func  @kernels::@kernel blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)  args(%buf : memref<?xf32>, %cst : f32)
// CHECK-NEXT:     gpu.launch_func  @kernels::@kernel blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)  dynamic_shared_memory_size %smem args(%buf : memref<?xf32>, %cst : f32)
// CHECK-NEXT:     %t2 = gpu.launch_func async [%t0] @kernels::@kernel clusters in (%c1, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)  args(%buf : memref<?xf32>, %cst : f32)
// CHECK-NEXT:     %t3 = gpu.wait async [%t1, %t2]
// CHECK-NEXT:     gpu.wait [%t3]
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
