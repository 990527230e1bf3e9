// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s

// A kernel without barriers, warp operations or asserts: the CPU device runs the threads of each
// block as plain nested loops (x innermost) around the inlined body; no fiber machinery.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<?xf32>, %s: f32) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id y
      %v = memref.load %a[%t] : memref<?xf32>
      %w = arith.mulf %v, %s : f32
      memref.store %w, %a[%t] : memref<?xf32>
      gpu.return
    }
  }
}

// CHECK-NOT:   __nova_fiber
// The body takes the thread context first, then the expanded parameters.
// CHECK-LABEL: define internal void @"__nova_cpu_fn.scale"(ptr %".1", ptr %".2", ptr %".3", i64 %".4", i64 %".5", i64 %".6", float %".7") {{.*}}"probe-stack"="inline-asm"{{.*}} alwaysinline
// thread_id x: field 1 of the thread context; block_id y: field 3 of the block context
// CHECK:       getelementptr inbounds {ptr, i64, i64, i64, i64, ptr, i64}, ptr %".1", i32 0, i32 1
// CHECK:       getelementptr inbounds {ptr, ptr, i64, i64, i64, i64, ptr, ptr, ptr, ptr, i64, ptr, ptr, i64, i64, i64, ptr, i64, i64, i64, i64, i64, i64, i64, ptr, ptr, ptr}, ptr %{{.*}}, i32 0, i32 3

// The exported entry of nova.abi.CpuLaunch.
// CHECK-LABEL: define i32 @"scale"(ptr %".1", ptr %".2")
// CHECK:       blocks.body:
// CHECK:       blocks.done:
// CHECK-NEXT:  ret i32 0
// CHECK:       tz.body:
// CHECK:       ty.body:
// CHECK:       tx.body:
// CHECK:       call void @"__nova_cpu_fn.scale"(ptr %"tctx", ptr
// CHECK-NOT:   __nova_fiber
