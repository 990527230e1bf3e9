// RUN: nova-opt %s -p async-region --split-input-file | FileCheck %s

// A token chain starts with `gpu.wait async`, runs through every GPU op, and ends with a host
// `gpu.wait` before side effects (the call, the loop that launches, the terminator).

// CHECK-LABEL: func.func @chain
// CHECK-SAME: ([[HOST:%[^:]+]]: memref<4xf32>, [[N:%[^:]+]]: index)
// CHECK: [[T0:%.+]] = gpu.wait async
// CHECK-NEXT: [[D:%[^,]+]], [[T1:%.+]] = gpu.alloc async {{\[}}[[T0]]] () : memref<4xf32>
// CHECK-NEXT: [[T2:%.+]] = gpu.memcpy async {{\[}}[[T1]]] [[D]], [[HOST]]
// CHECK-NEXT: [[T3:%.+]] = gpu.launch_func async {{\[}}[[T2]]] @kernels::@k
// CHECK-NEXT: arith.addi
// CHECK-NEXT: gpu.wait {{\[}}[[T3]]]
// CHECK-NEXT: call @side_effect()
// CHECK-NEXT: [[T4:%.+]] = gpu.wait async
// CHECK-NEXT: [[T5:%.+]] = gpu.launch_func async {{\[}}[[T4]]] @kernels::@k
// CHECK-NEXT: gpu.wait {{\[}}[[T5]]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: [[T6:%.+]] = gpu.wait async
// CHECK-NEXT: [[T7:%.+]] = gpu.launch_func async {{\[}}[[T6]]] @kernels::@k
// CHECK-NEXT: gpu.wait {{\[}}[[T7]]]
// CHECK-NEXT: }
// CHECK-NEXT: [[T8:%.+]] = gpu.wait async
// CHECK-NEXT: [[T9:%.+]] = gpu.memcpy async {{\[}}[[T8]]] [[HOST]], [[D]]
// CHECK-NEXT: gpu.wait {{\[}}[[T9]]]
// CHECK-NEXT: [[T10:%.+]] = gpu.wait async
// CHECK-NEXT: [[T11:%.+]] = gpu.dealloc async {{\[}}[[T10]]] [[D]]
// CHECK-NEXT: gpu.wait {{\[}}[[T11]]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func private @side_effect()
  func.func @chain(%host: memref<4xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %d = gpu.alloc () : memref<4xf32>
    gpu.memcpy %d, %host : memref<4xf32>, memref<4xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    %x = arith.addi %n, %c1 : index
    func.call @side_effect() : () -> ()
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    scf.for %i = %c1 to %n step %c1 {
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    }
    gpu.memcpy %host, %d : memref<4xf32>, memref<4xf32>
    gpu.wait
    gpu.dealloc %d : memref<4xf32>
    return
  }
}

// -----

// Ops that are already async keep their token and dependencies (the current token goes first,
// unless already there); a gpu.wait joins the chain; each block has its own chain.

// CHECK-LABEL: func.func @already_async
// CHECK: [[A:%.+]] = gpu.wait async
// CHECK-NEXT: [[B:%.+]] = gpu.wait async {{\[}}[[A]]]
// CHECK-NEXT: [[T:%.+]] = gpu.launch_func async {{\[}}[[B]], [[A]]] @kernels::@k
// CHECK-NEXT: [[U:%.+]] = gpu.launch_func async {{\[}}[[T]]] @kernels::@k
// CHECK-NEXT: [[V:%.+]] = gpu.launch_func async {{\[}}[[U]]] @kernels::@k
// CHECK-NEXT: gpu.wait {{\[}}[[V]]]
// CHECK-NEXT: cf.br ^bb1
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: [[T3:%.+]] = gpu.wait async
// CHECK-NEXT: [[T4:%.+]] = gpu.launch_func async {{\[}}[[T3]]] @kernels::@k
// CHECK-NEXT: gpu.wait {{\[}}[[T4]]]
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel { gpu.return }
  }
  func.func @already_async() {
    %c1 = arith.constant 1 : index
    %a = gpu.wait async
    %b = gpu.wait async
    %t = gpu.launch_func async [%a] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    %u = gpu.launch_func async [%t] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    cf.br ^bb1
  ^bb1:
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// A host_shared allocation becomes async like any other (as upstream's gpu-async-region does).

// CHECK-LABEL: func.func @host_shared
// CHECK: [[T0:%.+]] = gpu.wait async
// CHECK-NEXT: [[D:%[^,]+]], [[T1:%.+]] = gpu.alloc async {{\[}}[[T0]]] () : memref<4xf32>
// CHECK-NEXT: [[H:%[^,]+]], [[T2:%.+]] = gpu.alloc async {{\[}}[[T1]]] host_shared () : memref<4xf32>
// CHECK-NEXT: [[T3:%.+]] = gpu.memcpy async {{\[}}[[T2]]] [[D]], [[H]]
// CHECK-NEXT: gpu.wait {{\[}}[[T3]]]
// CHECK-NEXT: return
func.func @host_shared() {
  %d = gpu.alloc () : memref<4xf32>
  %h = gpu.alloc host_shared () : memref<4xf32>
  gpu.memcpy %d, %h : memref<4xf32>, memref<4xf32>
  return
}
