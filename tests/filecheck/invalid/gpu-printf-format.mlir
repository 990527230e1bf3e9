// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s

// gpu.printf formats are checked against their arguments at compile time (issue 12,
// info-gpu-printf-format in ../shared/repro/reliability-2026-11-26/): the format reaches CUDA's
// vprintf and, on the CPU device, libc's printf, where "%d %d" with one argument printed stack
// garbage and "%s" / "%n" with an i32 dereferenced it. One conversion per argument, of its kind
// and its size after C's vararg promotion. Upstream does not check formats.

func.func @main() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = arith.constant 12345 : i32
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 3]]:5: error: 'gpu.printf' op format has 6 conversions but 1 argument (each argument needs exactly one)
    // CHECK-NEXT: {{^}}    gpu.printf "%d %d %d %d %d %d\n", %x : i32
    // CHECK-NEXT: {{^}}    ^
    gpu.printf "%d %d %d %d %d %d\n", %x : i32
    gpu.terminator
  }
  return
}

// -----

func.func @main(%x: i32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op conversion '%s' is not supported (gpu.printf arguments are numbers; supported: d i o u x X c for integers (with h/hh or none up to 32 bits, l/ll/j/z/t for 64 bits and index), f F e E g G a A for floats, %%)
    gpu.printf "%s\n", %x : i32
    gpu.terminator
  }
  return
}

// -----

func.func @main(%x: i32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op conversion '%n' is not supported
    gpu.printf "%n", %x : i32
    gpu.terminator
  }
  return
}

// -----

func.func @main(%x: i32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op format has 1 conversion but 2 arguments (each argument needs exactly one)
    gpu.printf "%d\n", %x, %x : i32, i32
    gpu.terminator
  }
  return
}

// -----

func.func @main(%x: i32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op conversion '%f' does not match argument #1 of type i32 (integers print with %d, %i, %u, %o, %x, %X or %c)
    gpu.printf "%f\n", %x : i32
    gpu.terminator
  }
  return
}

// -----

func.func @main(%f: f32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op conversion '%d' does not match argument #2 of type index (a 64-bit integer or index needs a 64-bit conversion: %ld, %lld, %lu, %lx, ...)
    gpu.printf "%f %d\n", %f, %tx : f32, index
    gpu.terminator
  }
  return
}

// -----

func.func @main(%f: f32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // CHECK: gpu-printf-format.mlir:[[# @LINE + 1]]:5: error: 'gpu.printf' op conversion '%*d': '*' widths and precisions are not supported
    gpu.printf "%*d\n", %f : f32
    gpu.terminator
  }
  return
}
