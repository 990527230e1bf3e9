// RUN: nova-translate %s --emit=device-llvm --check-bounds | FileCheck %s --check-prefix=NVPTX
// RUN: nova-translate %s --emit=cpu-llvm --check-bounds | FileCheck %s --check-prefix=CPU
// RUN: nova-translate %s --emit=host-llvm --check-bounds | FileCheck %s --check-prefix=HOST
// RUN: nova-translate %s --emit=device-llvm | FileCheck %s --check-prefix=OFFDEV
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=OFFCPU
// RUN: nova-translate %s --emit=host-llvm | FileCheck %s --check-prefix=OFFHOST
// RUN: not nova-run %s --device cpu --check-bounds -e main 2>&1 | FileCheck %s --check-prefix=RUNERR

// --check-bounds: every memref.load/store/atomic_rmw index is compared (unsigned, so negative
// indices fail too) with its dimension's size before the access; dimensions whose index and
// size are constants in bounds are not checked. The cold failing path reports the first bad
// dimension like cf.assert does: vprintf + __assertfail + trap (NVPTX), snprintf + the fiber
// failure (CPU device; the kernel runs as fibers), snprintf + nova_rt_host_assert_fail +
// nova_rt_raise (host). Without the option nothing of this is emitted.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%m: memref<?x4xf32>, %v: f32) kernel {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %t = gpu.thread_id x
      %a = memref.load %m[%t, %c3] : memref<?x4xf32>
      memref.store %a, %m[%c1, %t] : memref<?x4xf32>
      %old = memref.atomic_rmw addf %v, %m[%t, %t] : (f32, memref<?x4xf32>) -> f32
      gpu.return
    }
  }

  func.func @pick(%i: index) -> f32 {
    %m = memref.alloc() : memref<8xf32>
    %v = memref.load %m[%i] : memref<8xf32>
    memref.dealloc %m : memref<8xf32>
    return %v : f32
  }

  func.func @main() {
    %c9 = arith.constant 9 : index
    %v = func.call @pick(%c9) : (index) -> f32
    return
  }
}

// The load checks dimension 0 only (index 3 < 4 is static); the store checks both; the failing
// path picks the first bad dimension with selects.
// NVPTX-LABEL: define external ptx_kernel void @"k"
// NVPTX:       %[[BUF:.*]] = alloca [9 x i64]
// NVPTX:       %[[TID:.*]] = zext i32 %{{.*}} to i64
// NVPTX-NEXT:  %[[OK:.*]] = icmp ult i64 %[[TID]], %[[SIZE:.*]]
// NVPTX-NEXT:  br i1 %[[OK]], label %"bounds.ok", label %"bounds.fail", !prof ![[W:[0-9]+]]
// NVPTX:       bounds.fail:
// NVPTX:       call i32 @"llvm.nvvm.read.ptx.sreg.ctaid.x"()
// NVPTX:       call i32 @"llvm.nvvm.read.ptx.sreg.tid.z"()
// NVPTX:       store i64 %[[TID]], ptr
// NVPTX:       store i64 0, ptr
// NVPTX:       store i64 %[[SIZE]], ptr
// NVPTX:       call i32 @"vprintf"(ptr %{{.*}}, ptr
// NVPTX:       call void @"__assertfail"(ptr %{{.*}}, ptr %{{.*}}, i32 22, ptr %{{.*}}, i64 1)
// NVPTX-NEXT:  call void @"llvm.trap"()
// NVPTX-NEXT:  unreachable
// NVPTX:       bounds.ok:
// NVPTX:       load float
// NVPTX:       %[[D0:.*]] = icmp ult i64 1, %[[SIZE]]
// NVPTX-NEXT:  %[[D1:.*]] = icmp ult i64 %[[TID]], 4
// NVPTX-NEXT:  %[[BOTH:.*]] = and i1 %[[D0]], %[[D1]]
// NVPTX-NEXT:  br i1 %[[BOTH]], label %"bounds.ok.1", label %"bounds.fail.1"
// NVPTX:       bounds.fail.1:
// NVPTX-NEXT:  select i1 %[[D0]], i64 1, i64 0
// NVPTX-NEXT:  select i1 %[[D0]], i64 %[[TID]], i64 1
// NVPTX-NEXT:  select i1 %[[D0]], i64 4, i64 %[[SIZE]]
// NVPTX:       bounds.ok.1:
// NVPTX:       store float
// NVPTX:       bounds.fail.2:
// NVPTX:       bounds.ok.2:
// NVPTX:       atomicrmw fadd
// NVPTX:       c"index %lld out of bounds for dimension %lld of size %lld (memref.load on %%m at {{.*}}bounds-check.mlir:22:12) in @k, block (%lld,%lld,%lld), thread (%lld,%lld,%lld)\0a\00"
// NVPTX:       c"memref index out of bounds (memref.load on %m at {{.*}}bounds-check.mlir:22:12)\00"
// NVPTX:       (memref.store on %%m at {{.*}}bounds-check.mlir:23:7)
// NVPTX:       (memref.atomic_rmw on %%m at {{.*}}bounds-check.mlir:24:14)
// NVPTX:       ![[W]] = !{ !"branch_weights", i32 1048576, i32 1 }

// The CPU device formats the message into one 512-byte buffer per function and fails the fiber;
// a kernel with checked accesses runs its threads as fibers.
// CPU-LABEL:   define internal void @"__nova_cpu_fn.k"
// CPU:         %[[CBUF:.*]] = alloca [512 x i8], align 16
// CPU:         br i1 %{{.*}}, label %"bounds.ok", label %"bounds.fail", !prof
// CPU:         bounds.fail:
// CPU-NEXT:    %[[TEXT:.*]] = getelementptr inbounds i8, ptr %{{.*}}, i64 0
// CPU-NEXT:    call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %[[TEXT]], i64 512, {{.*}} @"__nova_str{{.*}}", i64 %{{.*}}, i64 0, i64 %{{.*}})
// CPU-NEXT:    call void @"__nova_cpu_fail"(ptr %{{.*}}, ptr %[[TEXT]])
// CPU-NEXT:    unreachable
// CPU:         bounds.fail.2:
// CPU:         c"index %lld out of bounds for dimension %lld of size %lld (memref.load on %%m at {{.*}}bounds-check.mlir:22:12)\00"
// CPU:         define i32 @"k"(ptr %"{{.*}}", ptr %"{{.*}}")
// CPU:         call i32 @"__nova_cpu_block_alloc"

// Host code: a static size folds into the compare; the message goes to the runtime, which raises.
// HOST-LABEL:  define internal float @"pick"(i64 %".1")
// HOST:        alloca [512 x i8], align 16
// HOST:        %[[HOK:.*]] = icmp ult i64 %".1", 8
// HOST-NEXT:   br i1 %[[HOK]], label %"bounds.ok", label %"bounds.fail", !prof
// HOST:        bounds.fail:
// HOST-NEXT:   call i32 (ptr, i64, ptr, ...) @"snprintf"(ptr %[[HTEXT:.*]], i64 512, {{.*}}, i64 %".1", i64 0, i64 8)
// HOST-NEXT:   call i32 @"nova_rt_host_assert_fail"(ptr %[[HTEXT]])
// HOST-NEXT:   call void @"nova_rt_raise"()
// HOST-NEXT:   unreachable
// HOST:        bounds.ok:
// HOST-NEXT:   getelementptr inbounds float
// HOST-NEXT:   load float
// HOST:        (memref.load on %%m at {{.*}}bounds-check.mlir:31:10)

// Without --check-bounds: the same accesses and no check around any of them (each run matches
// the accesses, and its NOT lines sit before, between and after them: together they cover the
// whole output, so an empty or truncated output fails too).
// OFFDEV-NOT:   bounds.
// OFFDEV-NOT:   __assertfail
// OFFDEV-LABEL: define external ptx_kernel void @"k"
// OFFDEV-NOT:   bounds.
// OFFDEV:       load float
// OFFDEV-NOT:   bounds.
// OFFDEV:       store float
// OFFDEV-NOT:   bounds.
// OFFDEV:       atomicrmw fadd
// OFFDEV-NOT:   bounds.
// OFFDEV-NOT:   __assertfail
// OFFDEV-NOT:   vprintf

// OFFCPU-NOT:   bounds.
// OFFCPU-NOT:   snprintf
// OFFCPU-LABEL: define internal void @"__nova_cpu_fn.k"
// OFFCPU-NOT:   bounds.
// OFFCPU:       load float
// OFFCPU-NOT:   bounds.
// OFFCPU:       store float
// OFFCPU-NOT:   bounds.
// OFFCPU:       atomicrmw fadd
// OFFCPU-NOT:   bounds.
// OFFCPU-NOT:   snprintf
// OFFCPU:       define i32 @"k"
// OFFCPU-NOT:   bounds.
// OFFCPU-NOT:   snprintf
// OFFCPU-NOT:   __nova_cpu_fail

// OFFHOST-NOT:   bounds.
// OFFHOST-NOT:   snprintf
// OFFHOST-LABEL: define internal float @"pick"(i64 %".1")
// OFFHOST-NOT:   bounds.
// OFFHOST-NOT:   nova_rt_host_assert_fail
// OFFHOST:       load float
// OFFHOST-NOT:   bounds.
// OFFHOST-NOT:   nova_rt_host_assert_fail
// OFFHOST:       define internal void @"main"()
// OFFHOST-NOT:   bounds.
// OFFHOST-NOT:   snprintf
// OFFHOST-NOT:   nova_rt_host_assert_fail

// RUNERR: nova-run: error: host assertion failed: index 9 out of bounds for dimension 0 of size 8 (memref.load on %m at {{.*}}bounds-check.mlir:31:10)
