// RUN: nova-translate %s --emit=ptx | FileCheck %s
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// `fastmath<afn>` (or `fast`) allows an approximate function: on NVPTX an f32 math.exp2 becomes
// `ex2.approx.ftz.f32`, one instruction, as LLVM's own NVPTX lowering of an afn exp2 does (the
// fused attention kernel's softmax uses it). Without the flag, and for f64, Nova's accurate
// code stays (no ex2 instruction); the CPU device always uses its accurate llvm.exp2.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%out: memref<4xf32>, %d: memref<1xf64>, %x: f32, %y: f64) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %a = math.exp2 %x fastmath<afn> : f32
      %b = math.exp2 %a fastmath<fast> : f32
      %c = math.exp2 %x : f32
      %e = math.exp2 %y fastmath<afn> : f64
      memref.store %a, %out[%c0] : memref<4xf32>
      memref.store %b, %out[%c1] : memref<4xf32>
      memref.store %c, %out[%c2] : memref<4xf32>
      memref.store %e, %d[%c0] : memref<1xf64>
      gpu.return
    }
  }
}

// CHECK-LABEL: .entry k(
// CHECK-COUNT-2: ex2.approx.ftz.f32
// CHECK-NOT:   ex2.approx
// CHECK:       ret;

// CPU-LABEL: define internal void @"__nova_cpu_fn.k"
// CPU-COUNT-3: call float @"llvm.exp2.f32"(float
// CPU:         call double @"llvm.exp2.f64"(double
