// nova-translate end to end: each --emit stage, the bundle (read back by nova-objdump), a
// CPU-only bundle, per-stage timings and a located error. Each tool writes only to %t files.
// The timed run bypasses the compile cache (a hit times only the cache look-up).

// RUN: nova-translate %s --emit=outlined | FileCheck %s --check-prefix=OUTLINED
// RUN: nova-translate %s --emit=ptx --arch sm_80 | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU
// RUN: nova-translate %s --emit=host-llvm | FileCheck %s --check-prefix=HOST
// RUN: env NOVA_CACHE=0 nova-translate %s -o %t.nova --timings 2>&1 | FileCheck %s --check-prefix=TIMES
// RUN: nova-objdump %t.nova | FileCheck %s --check-prefix=BUNDLE
// RUN: nova-translate %s --no-ptx -o %t.cpu.nova
// RUN: nova-objdump %t.cpu.nova | FileCheck %s --check-prefix=CPUONLY
// RUN: echo 'func.func @f() {' | not nova-translate - 2>&1 | FileCheck %s --check-prefix=ERR

// OUTLINED: module attributes {gpu.container_module}
// OUTLINED: gpu.launch_func  @scale_kernel::@scale_kernel blocks in
// OUTLINED: gpu.module @scale_kernel {
// OUTLINED-NEXT: gpu.func @scale_kernel(

// PTX: .target sm_80
// PTX: .entry scale_kernel(

// CPU: target triple = "x86_64

// HOST: target triple = "x86_64
// HOST: nova_rt_launch

// TIMES: stage
// TIMES: parse
// TIMES: outline
// TIMES: nova
// TIMES: total

// BUNDLE: source: translate.mlir
// BUNDLE: entry points (1):
// BUNDLE-NEXT: scale(memref<16xf32>, f32)
// BUNDLE: device modules (1):
// BUNDLE-NEXT: scale_kernel:
// BUNDLE: ptx {{.*}}.nova.ptx.scale_kernel
// BUNDLE: cpuobj {{.*}}.nova.cpuobj.scale_kernel

// CPUONLY: scale_kernel:
// CPUONLY-NOT: .nova.ptx.
// CPUONLY: cpuobj {{.*}}.nova.cpuobj.scale_kernel

// ERR: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error:
// ERR-NOT: Traceback

func.func @scale(%buf: memref<16xf32>, %factor: f32) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %v = memref.load %buf[%tx] : memref<16xf32>
    %s = arith.mulf %v, %factor : f32
    memref.store %s, %buf[%tx] : memref<16xf32>
    gpu.terminator
  }
  return
}
