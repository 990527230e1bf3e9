// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// Async tokens are streams: `gpu.wait async` creates one, an async op runs on the stream of its
// first dependency after waiting for an event recorded on each other dependency's stream, and
// `gpu.wait [...]` synchronizes and destroys each distinct stream once.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    %t2 = gpu.wait async
    %t3 = gpu.memcpy async [%t1, %t2] %m, %m : memref<4xf32>, memref<4xf32>
    gpu.wait [%t3, %t2]
    return
  }
}

// CHECK-LABEL: define internal void @"main"
// CHECK:       call i32 @"nova_rt_stream_create"(ptr %"stream.out")
// CHECK:       %[[S0:"stream(\.[0-9]+)?"]] = load ptr, ptr %"stream.out"
// CHECK:       call i32 @"nova_rt_launch"({{.*}}, ptr %[[S0]], ptr %"params", i64 5)
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_stream_create"
// CHECK:       %[[S2:"stream\.[0-9]+"]] = load ptr
// CHECK:       call i32 @"nova_rt_event_create"(ptr %"event.out")
// CHECK:       %[[E:"event(\.[0-9]+)?"]] = load ptr, ptr %"event.out"
// CHECK:       call i32 @"nova_rt_event_record"(ptr %[[E]], ptr %[[S2]])
// CHECK:       call i32 @"nova_rt_stream_wait_event"(ptr %[[S0]], ptr %[[E]])
// CHECK:       call i32 @"nova_rt_event_destroy"(ptr %[[E]])
// CHECK:       call i32 @"nova_rt_memcpy"({{.*}}, i64 16, ptr %[[S0]])
// CHECK:       call i32 @"nova_rt_stream_synchronize"(ptr %[[S0]])
// CHECK:       call i32 @"nova_rt_stream_destroy"(ptr %[[S0]])
// CHECK:       [[SAME:%.*]] = icmp eq ptr %[[S2]], %[[S0]]
// CHECK:       call i32 @"nova_rt_stream_synchronize"(ptr %[[S2]])
// CHECK:       call i32 @"nova_rt_stream_destroy"(ptr %[[S2]])
// CHECK:       ret void
