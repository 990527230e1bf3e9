// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// A chain of synchronous stream ops (copy in, launch, copy out) waits once, after the last one:
// each is ordered after the one before it on the null stream, and nothing in between (scalar
// arithmetic only) could observe memory. A host access, a call or the end of a block's chain
// keeps the wait, placed after the synchronous frees (and allocations) in between: they are
// queued on the same stream, so the host enqueues them while the device still works.

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
  func.func private @__nova_library_0(memref<?xf32>, memref<?xf32>)
  func.func @forward(%x: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %t = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32>)
    func.call @__nova_library_0(%x, %t) : (memref<?xf32>, memref<?xf32>) -> ()
    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<?xf32>)
    gpu.dealloc %t : memref<?xf32>
    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32>)
    call @opaque() : () -> ()
    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32>)
    return
  }
  func.func @opaque() {
    return
  }
}

// CHECK-LABEL: define internal float @"chain"
// CHECK:       call i32 @"nova_rt_memcpy"
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_launch"
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_memcpy"
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_mem_free"
// CHECK:       call i32 @"nova_rt_stream_synchronize"(ptr null)
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       load float

// A model's forward: allocations, frees and library calls between launches are queued on the
// same stream without a host wait, so only the launch before another call waits, and the last.
// CHECK-LABEL: define internal void @"forward"
// CHECK:       call i32 @"nova_rt_launch"
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_library_call"
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_launch"
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_mem_free"
// CHECK-NOT:   call i32 @"nova_rt_stream_synchronize"
// CHECK:       call i32 @"nova_rt_launch"
// CHECK-NEXT:  icmp
// CHECK-NEXT:  br
// CHECK-NEXT:  nova_rt_launch.ok
// CHECK-NEXT:  call i32 @"nova_rt_stream_synchronize"
// CHECK:       call void @"opaque"()
// CHECK:       call i32 @"nova_rt_launch"
// CHECK:       call i32 @"nova_rt_stream_synchronize"
