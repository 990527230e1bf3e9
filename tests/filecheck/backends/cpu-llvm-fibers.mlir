// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s

// A kernel with a barrier and a shuffle runs every GPU thread as a fiber: gpu.barrier waits at
// the block barrier (kind 1), gpu.shuffle exchanges through the slots between two warp barriers
// (kind 2). Workgroup memory (globals first, then attributions) is one per-call buffer reused by
// every block; private attributions are allocas on the fiber stack.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" @tile : memref<16xf64, 3>
    gpu.func @stage(%out: memref<?xf32>, %s: f32) workgroup(%buf: memref<8xf32, 3>)
        private(%p: memref<2xi64>) kernel {
      %t = gpu.thread_id y
      %g = memref.get_global @tile : memref<16xf64, 3>
      %c0 = arith.constant 0 : index
      %v = memref.load %buf[%c0] : memref<8xf32, 3>
      memref.store %v, %out[%t] : memref<?xf32>
      gpu.barrier
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %r, %ok = gpu.shuffle xor %s, %c1, %c32 : f32
      gpu.return
    }
  }
}

// CHECK-LABEL: define internal void @"__nova_cpu_fn.stage"
// CHECK:       alloca [16 x i8], align 16
// The attribution %buf lies after the 128 bytes of @tile.
// CHECK:       getelementptr inbounds i8, ptr %{{.*}}, i64 128
// CHECK:       call void @"__nova_cpu_wait"(ptr %".1", i32 1)
// CHECK:       call void @"__nova_cpu_wait"(ptr %".1", i32 2)
// CHECK:       call void @"__nova_cpu_wait"(ptr %".1", i32 2)
// CHECK:       ret void

// CHECK-LABEL: define internal void @"__nova_fiber_switch"(ptr %".1", ptr %".2") {{.*}} naked noinline nounwind
// CHECK:       pushq %rbp\0Apushq %rbx\0Apushq %r12\0Apushq %r13\0Apushq %r14\0Apushq %r15
// CHECK-SAME:  stmxcsr 8(%rsp)\0Afnstcw (%rsp)\0Amovq %rsp, (%rdi)\0Amovq %rsi, %rsp

// CHECK-LABEL: define i32 @"stage"(ptr %".1", ptr %".2")
// the block's workgroup memory (160 bytes here, plus room to align it to 64: sized at run time)
// CHECK:       call ptr @"malloc"(i64 %{{.*}})
// CHECK:       call i32 @"__nova_cpu_block_alloc"({{.*}} %"bctx", i64 %{{.*}}, i64 65536)
// CHECK:       call i32 @"__nova_cpu_run_block"

// CHECK-LABEL: define internal void @"__nova_cpu_fiber.stage"(ptr %".1") {{.*}}"probe-stack"="inline-asm"{{.*}} noreturn nounwind
// CHECK:       call void @"__nova_cpu_fn.stage"(ptr %".1",
// CHECK-NEXT:  call void @"__nova_cpu_exit"(ptr %".1")
// CHECK-NEXT:  unreachable
