// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX

// A kernel's parameters follow the runtime ABI (each memref expands to allocated, aligned,
// offset, sizes, strides; index is i64); known_block_size becomes .reqntid; indexing uses the
// aligned pointer, and strides the type knows are constants. Device functions are internal.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %i = gpu.global_id x
      %ok = arith.cmpi slt, %i, %n : index
      scf.if %ok {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %p = arith.mulf %a, %xv : f32
        %s = arith.addf %p, %yv : f32
        memref.store %s, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
    func.func @helper(%m: memref<4x8xf32>, %i: index, %j: index) -> f32 {
      %v = memref.load %m[%i, %j] : memref<4x8xf32>
      return %v : f32
    }
  }
}

// CHECK:       target triple = "nvptx64-nvidia-cuda"
// CHECK:       define external ptx_kernel void @"saxpy"(ptr [[XA:%[^,]+]], ptr [[X:%[^,]+]], i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 {{%[^,]+}}, ptr [[YA:%[^,]+]], ptr [[Y:%[^,]+]], i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 {{%[^,]+}}, float [[A:%[^,]+]], i64 [[N:%[^)]+]]) "nvvm.reqntid"="128,1,1"
// CHECK:       call i32 @"llvm.nvvm.read.ptx.sreg.ctaid.x"()
// CHECK:       call i32 @"llvm.nvvm.read.ptx.sreg.ntid.x"()
// CHECK:       call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
// CHECK:       [[I:%.+]] = add i64
// CHECK:       icmp slt i64 [[I]], [[N]]
// CHECK:       if.then:
// CHECK-NEXT:  [[PX:%.+]] = getelementptr inbounds float, ptr [[X]], i64 [[I]]
// CHECK-NEXT:  load float, ptr [[PX]], align 4
// CHECK:       fmul float [[A]]
// CHECK:       store float {{%.+}}, ptr {{%.+}}, align 4
// CHECK:       ret void

// CHECK:       define internal float @"helper"(ptr {{%[^,]+}}, ptr [[M:%[^,]+]], i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 {{%[^,]+}}, i64 [[II:%[^,]+]], i64 [[JJ:%[^)]+]])
// CHECK:       [[ROW:%.+]] = mul i64 [[II]], 8
// CHECK-NEXT:  [[LIN:%.+]] = add i64 [[ROW]], [[JJ]]
// CHECK-NEXT:  getelementptr inbounds float, ptr [[M]], i64 [[LIN]]

// PTX:       .target sm_90
// PTX:       .visible .entry saxpy(
// PTX:       .reqntid 128, 1, 1
// PTX:       mul.rn.f32
// PTX:       add.rn.f32
// PTX-NOT:   helper
