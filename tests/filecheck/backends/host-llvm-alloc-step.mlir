// RUN: nova-translate %s --emit=host-llvm | FileCheck %s --check-prefix=DEFAULT
// RUN: nova-opt %s -p outline-kernels,async-region | nova-translate - --emit=host-llvm | FileCheck %s --check-prefix=REGION

// bench/memory_flat.py's `alloc_step` (allocate, copy in, kernel, copy out, free, all
// synchronous) through the default pipeline waits once, after the free, on the default stream:
// the host lowering defers each synchronous op's wait to the next one (gpu_ops._wait_site). That
// is the one wait upstream's `gpu-async-region` leaves (`mlir-opt --gpu-kernel-outlining
// --gpu-async-region`: one `gpu.wait` before the return; passes/async-region-upstream.mlir), so
// the pipeline does not run Nova's `async-region` pass: on top of the same single wait, its
// token chain lowers to a stream created (forked from the default stream by an event) and
// destroyed per call (docs/async.md, "Why the pipeline does not run async-region").

module attributes {gpu.container_module} {
  func.func @alloc_step(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %d[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %d[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return
  }
}

// DEFAULT-LABEL: define internal void @"alloc_step"
// DEFAULT-NOT:   nova_rt_stream_create
// DEFAULT:       call i32 @"nova_rt_mem_alloc"({{.*}}, ptr null, i32 0)
// DEFAULT-NOT:   nova_rt_stream_synchronize
// DEFAULT:       call i32 @"nova_rt_memcpy"({{.*}}, ptr null)
// DEFAULT-NOT:   nova_rt_stream_synchronize
// DEFAULT:       call i32 @"nova_rt_launch"({{.*}}, ptr null, ptr %"params", i64 7)
// DEFAULT-NOT:   nova_rt_stream_synchronize
// DEFAULT:       call i32 @"nova_rt_memcpy"({{.*}}, ptr null)
// DEFAULT-NOT:   nova_rt_stream_synchronize
// DEFAULT:       call i32 @"nova_rt_mem_free"({{.*}}, ptr null)
// DEFAULT-NEXT:  icmp
// DEFAULT-NEXT:  br
// DEFAULT-NEXT:  nova_rt_mem_free.ok:
// DEFAULT-NEXT:  call i32 @"nova_rt_stream_synchronize"(ptr null)
// DEFAULT-NOT:   call i32 @"nova_rt_stream
// DEFAULT:       ret void

// async-region: the same single wait, on a stream of its own that costs a create and a destroy.
// REGION-LABEL: define internal void @"alloc_step"
// REGION:       call i32 @"nova_rt_stream_create"(ptr %"[[OUT:[^"]+]]")
// REGION:       %"[[S:[^"]+]]" = load ptr, ptr %"[[OUT]]"
// REGION-NOT:   nova_rt_stream_synchronize
// REGION:       call i32 @"nova_rt_mem_alloc"({{.*}}, ptr %"[[S]]", i32 0)
// REGION-NOT:   nova_rt_stream_synchronize
// REGION:       call i32 @"nova_rt_memcpy"({{.*}}, ptr %"[[S]]")
// REGION-NOT:   nova_rt_stream_synchronize
// REGION:       call i32 @"nova_rt_launch"({{.*}}, ptr %"[[S]]", ptr %"params", i64 7)
// REGION-NOT:   nova_rt_stream_synchronize
// REGION:       call i32 @"nova_rt_memcpy"({{.*}}, ptr %"[[S]]")
// REGION-NOT:   nova_rt_stream_synchronize
// REGION:       call i32 @"nova_rt_mem_free"({{.*}}, ptr %"[[S]]")
// REGION:       call i32 @"nova_rt_stream_synchronize"(ptr %"[[S]]")
// REGION:       call i32 @"nova_rt_stream_destroy"(ptr %"[[S]]")
// REGION-NOT:   call i32 @"nova_rt_stream
// REGION:       ret void
