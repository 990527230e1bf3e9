// REQUIRES: mlir-opt
// RUN: nova-opt %s -p outline-kernels,async-region | FileCheck %s
// RUN: %mlir-opt %s --gpu-kernel-outlining --gpu-async-region | FileCheck %s

// Nova's async-region makes the same token chain as upstream's gpu-async-region on
// bench/memory_flat.py's `alloc_step`: every GPU op async on one chain started by
// `gpu.wait async`, one host `gpu.wait` before the return (the one wait the default pipeline's
// host lowering also leaves: backends/host-llvm-alloc-step.mlir).

// CHECK-LABEL: func.func @alloc_step
// CHECK-SAME:  ([[X:%[^:]+]]: memref<?xf32>)
// CHECK:       [[N:%[^ ]+]] = memref.dim [[X]]
// CHECK:       [[T0:%[^ ]+]] = gpu.wait async
// CHECK-NEXT:  [[D:%[^,]+]], [[T1:%[^ ]+]] = gpu.alloc async {{\[}}[[T0]]] ([[N]]) : memref<?xf32>
// CHECK-NEXT:  [[T2:%[^ ]+]] = gpu.memcpy async {{\[}}[[T1]]] [[D]], [[X]]
// CHECK-NEXT:  [[T3:%[^ ]+]] = gpu.launch_func async {{\[}}[[T2]]] @alloc_step_kernel::@alloc_step_kernel
// CHECK-NEXT:  [[T4:%[^ ]+]] = gpu.memcpy async {{\[}}[[T3]]] [[X]], [[D]]
// CHECK-NEXT:  [[T5:%[^ ]+]] = gpu.dealloc async {{\[}}[[T4]]] [[D]]
// CHECK-NEXT:  gpu.wait {{\[}}[[T5]]]
// CHECK-NEXT:  return

module attributes {gpu.container_module} {
  func.func @alloc_step(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c256 : index
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nb, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %ok = arith.cmpi ult, %i, %n : index
      scf.if %ok {
        %v = memref.load %d[%i] : memref<?xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %d[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return
  }
}
