// RUN: nova-translate %s --emit=host-llvm | FileCheck %s
// RUN: nova-translate %s --emit=host-llvm | FileCheck %s --check-prefix=DECL

// A synchronous launch: module and kernel handles cached in globals (loaded on first use), the
// void** parameter array on the stack (memref expanded), every status checked, then the default
// stream synchronized.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<?xf32>, %s: f32) kernel {
      gpu.return
    }
  }
  func.func @main(%m: memref<?xf32>, %s: f32) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%m : memref<?xf32>, %s : f32)
    return
  }
}

// CHECK-LABEL: define internal void @"main"(ptr %".1", ptr %".2", i64 %".3", i64 %".4", i64 %".5", float %".6")
// CHECK:       %"params" = alloca [6 x ptr]
// CHECK:       %"scale.fn" = call ptr @"__nova_get_kernel.kernels.scale"()
// CHECK:       store ptr %".1", ptr %"param0"
// CHECK:       store float %".6", ptr %"param5"
// CHECK:       [[STATUS:%.*]] = call i32 @"nova_rt_launch"(ptr %"scale.fn", i64 1, i64 1, i64 1, i64 128, i64 1, i64 1, i32 0, ptr null, ptr %"params", i64 6)
// CHECK-NEXT:  [[FAILED:%.*]] = icmp ne i32 [[STATUS]], 0
// CHECK-NEXT:  br i1 [[FAILED]], label %"nova.raise", label %"nova_rt_launch.ok"
// CHECK:       nova_rt_launch.ok:
// CHECK-NEXT:  call i32 @"nova_rt_stream_synchronize"(ptr null)
// CHECK:       nova.raise:
// CHECK-NEXT:  call void @"nova_rt_raise"()
// CHECK-NEXT:  unreachable

// DECL-DAG:    @"__nova_fnhandle_kernels.scale" = private global ptr null
// DECL-DAG:    @"__nova_kernel_name.kernels.scale" = private unnamed_addr constant [6 x i8] c"scale\00"
// DECL-DAG:    @"__nova_devmod_kernels" = external global {i64, ptr, ptr, i64, ptr, i64, ptr, i64}
// DECL-DAG:    @"__nova_modhandle_kernels" = private global ptr null

// CHECK-LABEL: define internal ptr @"__nova_load_module.kernels"()
// CHECK:       %"cached" = load ptr, ptr @"__nova_modhandle_kernels"
// CHECK:       icmp eq ptr %"cached", null
// CHECK:       call i32 @"nova_rt_module_load"(ptr @"__nova_modhandle_kernels", ptr @"__nova_devmod_kernels")
// CHECK:       %"handle" = load ptr, ptr @"__nova_modhandle_kernels"
// CHECK-NEXT:  ret ptr %"handle"

// CHECK-LABEL: define internal ptr @"__nova_get_kernel.kernels.scale"()
// CHECK:       %"module" = call ptr @"__nova_load_module.kernels"()
// CHECK:       call i32 @"nova_rt_module_get_function"(ptr @"__nova_fnhandle_kernels.scale", ptr %"module", ptr @"__nova_kernel_name.kernels.scale")

// DECL-DAG:    declare void @"nova_rt_raise"() noreturn nounwind
// DECL-DAG:    declare i32 @"nova_rt_launch"(ptr %"function", i64 %"grid_x", i64 %"grid_y", i64 %"grid_z", i64 %"block_x", i64 %"block_y", i64 %"block_z", i32 %"shared_bytes", ptr %"stream", ptr %"params", i64 %"num_params")

// CHECK-LABEL: define void @"__nova_entry_main"(ptr %"args", ptr %"results")
// CHECK:       %"arg0" = load {ptr, ptr, i64, [1 x i64], [1 x i64]}, ptr %"arg0.ptr"
// CHECK:       %"arg1" = load float, ptr %"arg1.ptr"
// CHECK:       call void @"main"(
// CHECK-NEXT:  ret void
