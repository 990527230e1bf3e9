// RUN: not nova-translate %s --split-input-file -o %t.nova 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=host-llvm 2>&1 | FileCheck %s --check-prefix=HOST

// A value that cannot be a kernel parameter, captured by a gpu.launch (outlining makes it a
// kernel argument, as upstream's gpu-kernel-outlining does) or passed by a gpu.launch_func, is a
// located error: the device lowering points at the kernel (an outlined kernel carries its
// gpu.launch's location), the host lowering at the gpu.launch_func. Supported: scalars, ranked
// memrefs and 1-D vectors (tests/corpus/vector-kernel-arg.mlir).

func.func @main() {
  %c1 = arith.constant 1 : index
  %a = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %m = arith.cmpi sgt, %a, %a : vector<4xi32>
  // CHECK: kernel-argument-type.mlir:[[# @LINE + 6]]:3: error: kernel @main_kernel argument #0: type 'vector<4xi1>' cannot be a kernel argument: vectors of i1 are bit-packed in memory; pass a vector of i8 (arith.extui on the host, arith.trunci in the kernel)
  // CHECK-NEXT: {{^}}  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
  // CHECK-NEXT: {{^}}  ^
  // HOST: kernel-argument-type.mlir:[[# @LINE + 3]]:3: error: kernel operand #0: type 'vector<4xi1>' cannot be a kernel argument: vectors of i1
  // HOST-NEXT: {{^}}  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
  // HOST-NEXT: {{^}}  ^
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    vector.print %m : vector<4xi1>
    gpu.terminator
  }
  return
}

// -----

func.func @main(%s: f32) {
  %c1 = arith.constant 1 : index
  %v = vector.broadcast %s : f32 to vector<2x4xf32>
  // CHECK: kernel-argument-type.mlir:[[# @LINE + 3]]:3: error: kernel @main_kernel argument #0: type 'vector<2x4xf32>' cannot be a kernel argument: type 'vector<2x4xf32>' is not supported by the LLVM lowering: only 1-D vectors are supported, this one has rank 2
  // CHECK-NEXT: {{^}}  gpu.launch blocks
  // HOST: kernel-argument-type.mlir:[[# @LINE + 1]]:3: error: kernel operand #0: type 'vector<2x4xf32>' cannot be a kernel argument: type 'vector<2x4xf32>' is not supported by the LLVM lowering: only 1-D vectors are supported, this one has rank 2
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = vector.extract %v[0, 1] : f32 from vector<2x4xf32>
    gpu.printf "%f %f\n", %s, %x : f32, f32
    gpu.terminator
  }
  return
}

// -----

func.func @main() {
  %c1 = arith.constant 1 : index
  %m = memref.alloc() : memref<4xvector<4xf32>>
  // CHECK: kernel-argument-type.mlir:[[# @LINE + 2]]:3: error: kernel @main_kernel argument #0: type 'memref<4xvector<4xf32>>' cannot be a kernel argument (supported: index, iN, f16, bf16, f32, f64, ranked memrefs of those, 1-D vectors of those (except i1))
  // HOST: kernel-argument-type.mlir:[[# @LINE - 2]]:8: error: type 'vector<4xf32>' is not supported here: vectors are supported as SSA values
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%c1] : memref<4xvector<4xf32>>
    gpu.terminator
  }
  return
}

// -----

// A hand-written kernel: the device lowering points at the gpu.func that declares the argument,
// the host lowering at the launch.
module attributes {gpu.container_module} {
  func.func @main() {
    %c1 = arith.constant 1 : index
    %a = arith.constant dense<[1, 2]> : vector<2xi32>
    %m = arith.cmpi eq, %a, %a : vector<2xi32>
    // HOST: kernel-argument-type.mlir:[[# @LINE + 1]]:5: error: kernel operand #1: type 'vector<2xi1>' cannot be a kernel argument
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c1 : index, %m : vector<2xi1>)
    return
  }
  gpu.module @k {
    // CHECK: kernel-argument-type.mlir:[[# @LINE + 1]]:5: error: kernel @k argument #1: type 'vector<2xi1>' cannot be a kernel argument
    gpu.func @k(%n: index, %m: vector<2xi1>) kernel {
      gpu.return
    }
  }
}
