// RUN: not nova-opt %s -p async-region 2>&1 | FileCheck %s

// Token threading works on gpu.launch_func: an inline gpu.launch must be outlined first.

// CHECK: async-region.mlir:[[# @LINE + 4]]:3: error: async-region: 'gpu.launch' op replace with gpu.launch_func first (run outline-kernels)
// CHECK-NEXT: {{^}}  gpu.launch blocks
func.func @not_outlined() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
