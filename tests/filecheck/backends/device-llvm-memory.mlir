// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=device-llvm | FileCheck %s --check-prefix=GLOBAL

// Workgroup attributions and workgroup memref.globals are internal addrspace(3) globals; private
// attributions are allocas; atomic_rmw uses atomicrmw where LLVM has the operation and a
// cmpxchg loop otherwise (mulf); printf packs promoted varargs for vprintf; cf.assert calls
// __assertfail with the message, file, line and function, then traps.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    memref.global "private" @tile : memref<64xf32, 3>
    gpu.func @memory(%m: memref<?xf32>) workgroup(%wg: memref<32xf32, 3>) private(%pv: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<?xf32>
      memref.store %v, %wg[%t] : memref<32xf32, 3>
      memref.store %v, %pv[%c0] : memref<4xf32>
      %g = memref.get_global @tile : memref<64xf32, 3>
      %old = memref.atomic_rmw addf %v, %g[%c0] : (f32, memref<64xf32, 3>) -> f32
      %old2 = memref.atomic_rmw mulf %v, %m[%c0] : (f32, memref<?xf32>) -> f32
      gpu.printf "t=%lld v=%f\n", %t, %v : index, f32
      %z = arith.constant 0.0 : f32
      %pos = arith.cmpf oge, %old2, %z : f32
      cf.assert %pos, "product went negative"
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"memory"
// CHECK:       entry:
// CHECK:       alloca float, i32 4
// CHECK:       alloca {i64, double}, align 8
// CHECK:       bitcast [32 x float] addrspace(3)* @"__wg_memory_0" to ptr addrspace(3)
// CHECK:       store float {{%.+}}, ptr addrspace(3)
// CHECK:       atomicrmw fadd ptr addrspace(3) {{%.+}}, float {{%.+}} acq_rel
// CHECK:       atomic.loop:
// CHECK:       fmul float
// CHECK:       cmpxchg ptr {{%.+}}, i32 {{%.+}}, i32 {{%.+}} acq_rel monotonic
// CHECK:       fpext float {{%.+}} to double
// CHECK:       call i32 @"vprintf"(ptr {{%.+}}, ptr {{%.+}})
// CHECK:       assert.fail:
// CHECK:       call void @"__assertfail"(ptr {{%.+}}, ptr {{%.+}}, i32 {{[0-9]+}}, ptr {{%.+}}, i64 1)
// CHECK-NEXT:  call void @"llvm.trap"()
// CHECK-NEXT:  unreachable

// GLOBAL-DAG:  @"tile" = internal addrspace(3) global [64 x float] undef
// GLOBAL-DAG:  @"__wg_memory_0" = internal addrspace(3) global [32 x float] undef, align 16
// GLOBAL-DAG:  c"product went negative\00"
// GLOBAL-DAG:  c"t=%lld v=%f\0a\00"
