// RUN: not nova-opt %s -p outline-kernels --split-input-file 2>&1 | FileCheck %s
// RUN: not nova-opt %s -p no-such-pass 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: nova-opt %s -p outline-kernels --split-input-file --verify-diagnostics > /dev/null

// PIPELINE: error: unknown pass 'no-such-pass' (known passes: {{.*}}outline-kernels

// Upstream outlining would leave a gpu.launch_func inside the outer kernel; Nova rejects it,
// pointing at the inner launch.

// CHECK: outline-kernels.mlir:[[# @LINE + 7]]:5: error: outline-kernels: a gpu.launch nested in another gpu.launch cannot be outlined
// CHECK-NEXT: {{^}}    gpu.launch blocks(%bx2, %by2, %bz2)
// CHECK-NEXT: {{^}}    ^
func.func @nested() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.launch blocks(%bx2, %by2, %bz2) in (%gx2 = %c1, %gy2 = %c1, %gz2 = %c1) // expected-error {{nested in another gpu.launch}}
               threads(%tx2, %ty2, %tz2) in (%sx2 = %c1, %sy2 = %c1, %sz2 = %c1) {
      gpu.terminator
    }
    gpu.terminator
  }
  return
}

// -----

// A symbol the kernel uses must exist at module scope, to be cloned into the kernel's module
// (reported by the verifier or, failing that, by the pass).

// CHECK: outline-kernels.mlir:[[# @LINE + 5]]:{{[0-9]+}}: error: {{.*}}missing
func.func @undefined(%x: f32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = func.call @missing(%x) : (f32) -> f32 // expected-error {{missing}}
    gpu.terminator
  }
  return
}

// -----

// The remaining parts of a split file are still processed after an error.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @still_processed_kernel
func.func @still_processed() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
