// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// A chain of synchronous stream ops (copy in, launch, copy out) waits once, after the last one:
// each is ordered after the one before it on the null stream, and nothing in between (scalar
// arithmetic only) could observe memory. A host access, a call or the end of a block's chain
// keeps the wait.

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @inc(%x: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @chain(%x: memref<?xf32>, %h: memref<?xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    %nb = arith.addi %n, %c1 : index
    gpu.launch_func @k::@inc blocks in (%nb, %c1, %c1) threads in (%c1, %c1, %c1) args(%d : memref<?xf32>)
    gpu.memcpy %h, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    %v = memref.load %h[%c0] : memref<?xf32>
    return %v : f32
  }
}

// CHECK-LABEL: define internal float @"chain"
// CHECK:       call i32 @"nova_rt_memcpy"
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_launch"
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_memcpy"
// CHECK:       call i32 @"nova_rt_stream_synchronize"(ptr null)
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_mem_free"
// CHECK:       load float
