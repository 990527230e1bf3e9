// RUN: nova-translate %s --emit=device-llvm | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// nvvm ops in a kernel: on NVPTX each is the NVVM intrinsic MLIR's translation emits (the
// shuffle through the shared .i32p helper, f32 bitcast to i32); on the CPU device register
// reads load the thread/block context fields (truncated to i32), nvvm.barrier0 waits at the
// block barrier (kind 1) and shfl.sync/vote.sync exchange through the slots between two warp
// barriers (kind 2), so the kernel runs as fibers.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%out: memref<?xi32>, %f: f32) kernel {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %nty = nvvm.read.ptx.sreg.ntid.y : i32
      %lane = nvvm.read.ptx.sreg.laneid : i32
      %t64 = nvvm.read.ptx.sreg.clock64 : i64
      %full = arith.constant -1 : i32
      %one = arith.constant 1 : i32
      %c31 = arith.constant 31 : i32
      nvvm.barrier0
      %x = nvvm.shfl.sync bfly %full, %f, %one, %c31 : f32 -> f32
      %p = arith.cmpi eq, %lane, %one : i32
      %b = nvvm.vote.sync ballot %full, %p -> i32
      %a = nvvm.vote.sync any %full, %p -> i1
      %xi = arith.fptosi %x : f32 to i32
      %s0 = arith.addi %tid, %nty : i32
      %s1 = arith.addi %s0, %b : i32
      %s2 = arith.addi %s1, %xi : i32
      %ai = arith.extui %a : i1 to i32
      %s3 = arith.addi %s2, %ai : i32
      %ti = arith.trunci %t64 : i64 to i32
      %s4 = arith.addi %s3, %ti : i32
      %c0 = arith.constant 0 : index
      memref.store %s4, %out[%c0] : memref<?xi32>
      gpu.return
    }
  }
}

// PTX-LABEL: define external ptx_kernel void @"k"(
// PTX: call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
// PTX: call i32 @"llvm.nvvm.read.ptx.sreg.ntid.y"()
// PTX: call i32 @"llvm.nvvm.read.ptx.sreg.laneid"()
// PTX: call i64 @"llvm.nvvm.read.ptx.sreg.clock64"()
// PTX: call void @"llvm.nvvm.barrier.cta.sync.aligned.all"(i32 0)
// PTX: %[[BITS:".+"]] = bitcast float %{{.*}} to i32
// PTX: call {i32, i1} @"llvm.nvvm.shfl.sync.bfly.i32p"(i32 4294967295, i32 %[[BITS]], i32 1, i32 31)
// PTX: call i32 @"llvm.nvvm.vote.ballot.sync"(i32 4294967295, i1 %{{.*}})
// PTX: call i1 @"llvm.nvvm.vote.any.sync"(i32 4294967295, i1 %{{.*}})

// CPU-LABEL: define internal void @"__nova_cpu_fn.k"(
// CPU: trunc i64 %{{.*}} to i32
// CPU: call i64 @"llvm.readcyclecounter"()
// CPU-NEXT: call void @"__nova_cpu_wait"(ptr %{{.*}}, i32 1)
// CPU: call void @"__nova_cpu_wait"(ptr %{{.*}}, i32 2)
// CPU: call void @"__nova_cpu_wait"(ptr %{{.*}}, i32 2)
// CPU: call void @"__nova_cpu_wait"(ptr %{{.*}}, i32 2)
// CPU: ballot.body:
// CPU: call void @"__nova_cpu_wait"(ptr %{{.*}}, i32 2)
