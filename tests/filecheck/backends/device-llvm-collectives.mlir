// RUN: nova-translate %s --emit=device-llvm | FileCheck %s

// Warp shuffles use shfl.sync.*.i32p (value + valid predicate) on the mask of the warp's
// existing lanes; all_reduce
// reduces each warp with predicated shfl.down, then the warps' partials through a 33-slot
// shared array between two barriers; subgroup_reduce broadcasts from the cluster leader.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @collectives(%m: memref<?xf32>, %d: memref<?xf64>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<?xf32>
      %w = memref.load %d[%t] : memref<?xf64>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      %s2, %ok2 = gpu.shuffle up %w, %c1, %c32 : f64
      %r = gpu.all_reduce add %s uniform {} : (f32) -> f32
      %g = gpu.subgroup_reduce maxnumf %r cluster(size = 8) : (f32) -> f32
      memref.store %g, %m[%t] : memref<?xf32>
      memref.store %s2, %d[%t] : memref<?xf64>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"collectives"
// CHECK:       [[MASK:%.+]] = lshr i32 -1, {{%.+}}
// CHECK:       [[X:%.+]] = call {i32, i1} @"llvm.nvvm.shfl.sync.bfly.i32p"(i32 [[MASK]], i32 {{%.+}}, i32 1, i32 {{%.+}})
// CHECK:       extractvalue {i32, i1} [[X]], 1
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.up.i32p"
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.up.i32p"
// CHECK-COUNT-5: call {i32, i1} @"llvm.nvvm.shfl.sync.down.i32p"(i32 {{%.+}}, i32 {{%.+}}, i32 {{16|8|4|2|1}}, i32 {{%.+}})
// CHECK:       store float {{%.+}}, ptr addrspace(3)
// CHECK:       call void @"llvm.nvvm.barrier.cta.sync.aligned.all"(i32 0)
// CHECK-COUNT-5: call {i32, i1} @"llvm.nvvm.shfl.sync.down.i32p"
// CHECK:       call void @"llvm.nvvm.barrier.cta.sync.aligned.all"(i32 0)
// CHECK:       load float, ptr addrspace(3)
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.down.i32p"(i32 {{%.+}}, i32 {{%.+}}, i32 4,
// CHECK:       call float @"llvm.maxnum.f32"
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.down.i32p"(i32 {{%.+}}, i32 {{%.+}}, i32 2,
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.down.i32p"(i32 {{%.+}}, i32 {{%.+}}, i32 1,
// CHECK:       call {i32, i1} @"llvm.nvvm.shfl.sync.idx.i32p"(i32 {{%.+}}, i32 {{%.+}}, i32 {{%.+}}, i32 31)
// CHECK:       @"__nova_all_reduce" = internal addrspace(3) global [33 x float] undef
