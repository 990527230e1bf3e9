// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not nova-translate %s --split-input-file --emit=nova 2>&1 | FileCheck %s --check-prefix=PLACE

// nvvm ops Nova does not support, wrong types, and nvvm ops outside kernels: located errors.

func.func @range(%out: memref<1xi32>) {
  // PARSE: nvvm.mlir:[[# @LINE + 1]]:39: error: 'nvvm.read.ptx.sreg.tid.x' with a `range` annotation is not supported by Nova
  %0 = nvvm.read.ptx.sreg.tid.x range <i32, 0, 1024> : i32
  return
}

// -----

func.func @width(%out: memref<1xi32>) {
  // PARSE: nvvm.mlir:[[# @LINE + 1]]:37: error: 'nvvm.read.ptx.sreg.clock64' with result type i32 is not supported by Nova (the register is read as i64)
  %0 = nvvm.read.ptx.sreg.clock64 : i32
  return
}

// -----

func.func @valid_flag(%m: i32, %v: f32) {
  // PARSE: nvvm.mlir:[[# @LINE + 1]]:71: error: 'nvvm.shfl.sync' with return_value_and_is_valid is not supported by Nova
  %0 = nvvm.shfl.sync down %m, %v, %m, %m {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>
  return
}

// -----

func.func @shfl_f64(%m: i32, %v: f64) {
  // PARSE: nvvm.mlir:[[# @LINE + 1]]:8: error: 'nvvm.shfl.sync' op value must be i32 or f32, but got f64
  %0 = nvvm.shfl.sync idx %m, %v, %m, %m : f64 -> f64
  return
}

// -----

func.func @vote_type(%m: i32, %p: i1) {
  // PARSE: nvvm.mlir:[[# @LINE + 1]]:8: error: 'nvvm.vote.sync' op vote.sync 'ballot' returns an i32
  %0 = nvvm.vote.sync ballot %m, %p -> i1
  return
}

// -----

// In host code an nvvm op is rejected by the host lowering, at the op.
func.func @main() {
  // PLACE: nvvm.mlir:[[# @LINE + 1]]:3: error: op 'nvvm.barrier0' is not supported by the host LLVM lowering
  nvvm.barrier0
  return
}

// -----

// The CPU device has no global timer.
func.func @main() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // PLACE: nvvm.mlir:[[# @LINE + 1]]:10: error: op 'nvvm.read.ptx.sreg.globaltimer' is not supported by the cpu LLVM lowering
    %t = nvvm.read.ptx.sreg.globaltimer : i64
    gpu.terminator
  }
  return
}
