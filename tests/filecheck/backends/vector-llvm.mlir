// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// 1-D vectors in a kernel lower to LLVM <N x T> values: vector.load is one aligned <4 x float>
// load at the element address; transfer_read without in_bounds is a masked load whose mask is
// (dim - index) > lane and whose pass-through is the splat padding; transfer_write and
// maskedstore use llvm.masked.store in the memref's address space (LLVM 22 form: the alignment
// is the pointer's `align` attribute); reductions are sequential chains from 0.0; math ops on
// vectors run lane by lane; vector.print is one vprintf of the whole vector on NVPTX and one
// libc printf on the CPU device.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vec(%x: memref<?xf32>, %y: memref<?xf32, 1>, %n: index, %pad: f32) kernel {
      %i = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %base = arith.muli %i, %c4 : index
      %v = vector.load %x[%base] : memref<?xf32>, vector<4xf32>
      %t = vector.transfer_read %x[%base], %pad : memref<?xf32>, vector<4xf32>
      %s = arith.addf %v, %t : vector<4xf32>
      %q = math.sqrt %s : vector<4xf32>
      %r = vector.reduction <add>, %q : vector<4xf32> into f32
      vector.transfer_write %s, %y[%base] : vector<4xf32>, memref<?xf32, 1>
      %m = vector.create_mask %n : vector<4xi1>
      vector.maskedstore %y[%base], %m, %v : memref<?xf32, 1>, vector<4xi1>, vector<4xf32>
      vector.print %s : vector<4xf32>
      memref.store %r, %x[%i] : memref<?xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"vec"
// CHECK:         %[[BASE:".*"]] = mul i64 %{{".*"}}, 4
// CHECK:         %[[P:".*"]] = getelementptr inbounds float, ptr %{{".*"}}, i64 %[[BASE]]
// CHECK-NEXT:    %[[V:".*"]] = load <4 x float>, ptr %[[P]], align 4
// CHECK:         %[[ROOM:".*"]] = sub i64 %{{".*"}}, %[[BASE]]
// CHECK-NEXT:    %[[R1:".*"]] = insertelement <4 x i64> <i64 undef, i64 undef, i64 undef, i64 undef>, i64 %[[ROOM]], i32 0
// CHECK-NEXT:    %[[RS:".*"]] = shufflevector <4 x i64> %[[R1]], <4 x i64> {{.*}}, <4 x i32> <i32 0, i32 0, i32 0, i32 0>
// CHECK-NEXT:    %[[MASK:".*"]] = icmp sgt <4 x i64> %[[RS]], <i64 0, i64 1, i64 2, i64 3>
// CHECK:         %[[PADV:".*"]] = shufflevector <4 x float>
// CHECK-NEXT:    %[[T:".*"]] = call <4 x float> @"llvm.masked.load.v4f32.p0"(ptr align 4 %{{".*"}}, <4 x i1> %[[MASK]], <4 x float> %[[PADV]])
// CHECK-NEXT:    %[[S:".*"]] = fadd <4 x float> %[[V]], %[[T]]
// CHECK:         call float @"llvm.sqrt.f32"
// CHECK:         call float @"llvm.sqrt.f32"
// CHECK:         call float @"llvm.sqrt.f32"
// CHECK:         call float @"llvm.sqrt.f32"
// CHECK:         %[[SUM0:".*"]] = fadd float {{ *}}0x0, %{{".*"}}
// CHECK-NEXT:    %[[SUM1:".*"]] = fadd float %[[SUM0]], %{{".*"}}
// CHECK-NEXT:    %[[SUM2:".*"]] = fadd float %[[SUM1]], %{{".*"}}
// CHECK-NEXT:    %[[SUM3:".*"]] = fadd float %[[SUM2]], %{{".*"}}
// CHECK:         getelementptr inbounds float, ptr addrspace(1)
// CHECK:         call void @"llvm.masked.store.v4f32.p1"(<4 x float> %[[S]], ptr addrspace(1) align 4 %{{".*"}}, <4 x i1> %{{".*"}})
// CHECK:         icmp slt <4 x i64> <i64 0, i64 1, i64 2, i64 3>, %{{".*"}}
// CHECK:         call void @"llvm.masked.store.v4f32.p1"(<4 x float> %[[V]], ptr addrspace(1) align 4
// CHECK:         call i32 @"vprintf"
// CHECK:         store float %[[SUM3]]
// CHECK:       c"( %g, %g, %g, %g )\0a\00"

// PTX-LABEL: .entry vec(
// PTX:         ld.global.b32
// PTX:         sqrt.rn.f32
// PTX:         call.uni (retval0), vprintf,

// CPU-LABEL: define internal void @"__nova_cpu_fn.vec"
// CPU:         load <4 x float>, ptr %{{".*"}}, align 4
// CPU:         call <4 x float> @"llvm.masked.load.v4f32.p0"(ptr align 4
// CPU:         call void @"llvm.masked.store.v4f32.p0"(<4 x float>
// CPU:         call i32 (ptr, ...) @"printf"({{.*}}, double %{{".*"}}, double %{{".*"}}, double %{{".*"}}, double %{{".*"}})
// CPU-NEXT:    call i32 @"fflush"(ptr null)
