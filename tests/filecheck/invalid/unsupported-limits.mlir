// RUN: not nova-translate %s --split-input-file -o %t.nova 2>&1 | FileCheck %s

// Resource limits and what the LLVM lowering cannot compile meaningfully, refused with a located
// error (issue 12, reproducers d1*, d3, d5 in ../shared/repro/reliability-2026-11-26/). Before:
// internal errors (IndexError, NotImplementedError) and a > 16 GiB memory blow-up.

// d1: memref.dim with a constant index >= rank (upstream accepts it: undefined behaviour).
func.func @f(%a: memref<?xf32>) -> index {
  %c1 = arith.constant 1 : index
  // CHECK: unsupported-limits.mlir:[[# @LINE + 3]]:8: error: memref.dim index 1 is out of range for memref<?xf32> of rank 1 (a constant index must be in [0, 1))
  // CHECK-NEXT: {{^}}  %n = memref.dim %a, %c1 : memref<?xf32>
  // CHECK-NEXT: {{^}}       ^
  %n = memref.dim %a, %c1 : memref<?xf32>
  return %n : index
}

// -----

// d1b: the same inside a gpu.launch body (the kernel lowerings share the handler).
module attributes {gpu.container_module} {
  func.func @main() {
    %c1 = arith.constant 1 : index
    %a = gpu.alloc(%c1) : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %c3 = arith.constant 3 : index
      // CHECK: unsupported-limits.mlir:[[# @LINE + 1]]:12: error: memref.dim index 3 is out of range for memref<?xf32> of rank 1 (a constant index must be in [0, 1))
      %n = memref.dim %a, %c3 : memref<?xf32>
      gpu.terminator
    }
    return
  }
}

// -----

// d1c: a negative constant index.
func.func @f(%a: memref<?x?xf32>) -> index {
  %c = arith.constant -1 : index
  // CHECK: unsupported-limits.mlir:[[# @LINE + 1]]:8: error: memref.dim index -1 is out of range for memref<?x?xf32> of rank 2 (a constant index must be in [0, 2))
  %n = memref.dim %a, %c : memref<?x?xf32>
  return %n : index
}

// -----

// d3: integer widths are checked when the type's token is read (MLIR's messages), before xDSL
// computes anything of that many bits (i32147483647 took > 16 GiB).
func.func @f() -> i32 {
  // CHECK: unsupported-limits.mlir:[[# @LINE + 3]]:27: error: invalid integer width
  // CHECK-NEXT: {{^}}  %x = arith.constant 0 : i32147483647
  // CHECK-NEXT: {{^}}                          ^
  %x = arith.constant 0 : i32147483647
  %y = arith.constant 0 : i32
  return %y : i32
}

// -----

func.func @f() -> i32 {
  // CHECK: unsupported-limits.mlir:[[# @LINE + 1]]:27: error: integer bitwidth is limited to 16777215 bits
  %x = arith.constant 0 : i2147483647
  %y = arith.constant 0 : i32
  return %y : i32
}

// -----

// Within MLIR's limit but past what the LLVM lowering takes (LLVM itself stops at 2^23 bits).
func.func @f(%a: i32) -> i32 {
  // CHECK: unsupported-limits.mlir:[[# @LINE + 1]]:8: error: type 'i1000000' is not supported by the LLVM lowering: integers are limited to 65536 bits
  %e = arith.extui %a : i32 to i1000000
  %y = arith.trunci %e : i1000000 to i32
  return %y : i32
}

// -----

// d5: a dense literal of integers wider than 64 bits (xDSL cannot pack them).
func.func @main() {
  // CHECK: unsupported-limits.mlir:[[# @LINE + 1]]:45: error: dense literal of type vector<4xi128> is not supported: Nova's dense literals hold integers of at most 64 bits (use a scalar arith.constant for a wider integer)
  %v = arith.constant dense<[1, 2, 3, 0]> : vector<4xi128>
  %e = vector.extract %v[1] : i128 from vector<4xi128>
  return
}

// -----

memref.global "private" constant @wide : memref<2xi100> = dense<[1, 2]>
// CHECK: unsupported-limits.mlir:[[# @LINE - 1]]:1: error: dense literal of type tensor<2xi100> is not supported: Nova's dense literals hold integers of at most 64 bits
