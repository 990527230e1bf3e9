// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s --check-prefix=HOST
// RUN: not nova-translate %s --split-input-file --emit=device-llvm 2>&1 | FileCheck %s --check-prefix=DEVICE

// Ops in the wrong place: GPU thread ops in host code, host-side GPU ops in a kernel. Each is
// rejected by the lowering at the op, naming what that lowering supports.

func.func @host() {
  // HOST: unsupported-placement.mlir:[[# @LINE + 3]]:8: error: op 'gpu.thread_id' is not supported by the host LLVM lowering; supported dialects: arith, cf, func, gpu, index, math, memref, scf, vector{{$}}
  // HOST-NEXT: {{^}}  %t = gpu.thread_id x
  // HOST-NEXT: {{^}}  ^
  %t = gpu.thread_id x
  return
}

// -----

func.func @kernel_alloc() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // DEVICE: unsupported-placement.mlir:[[# @LINE + 3]]:10: error: op 'gpu.alloc' is not supported by the nvptx LLVM lowering; supported dialects: arith, cf, func, gpu, index, math, memref, nvgpu, nvvm, scf, vector{{$}}
    // DEVICE-NEXT: {{^}}    %m = gpu.alloc () : memref<4xf32>
    // DEVICE-NEXT: {{^}}    ^
    %m = gpu.alloc () : memref<4xf32>
    gpu.terminator
  }
  return
}
