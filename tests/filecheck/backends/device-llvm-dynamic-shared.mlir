// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// gpu.dynamic_shared_memory is, on NVPTX, an external zero-length addrspace(3) array aligned to
// 32 (PTX `.extern .shared .align 32 .b8 name[]`, as WMMA tiles need) whose memref size is %dynamic_smem_size; on the
// CPU device it is the CpuLaunch's `dynamic_shared` scratch of `dynamic_shared_bytes`.
// memref.view advances the aligned pointer by its byte shift (an i8 GEP) and has offset 0 and
// row-major strides over its sizes (the dynamic row count multiplies into the row stride).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @views(%out: memref<?xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c48 = arith.constant 48 : index
      %t = gpu.thread_id x
      %shmem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %bytes = memref.dim %shmem, %c0 : memref<?xi8, #gpu.address_space<workgroup>>
      %tile = memref.view %shmem[%c48][%n] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x?xf32, #gpu.address_space<workgroup>>
      %v = memref.load %tile[%c1, %t] : memref<4x?xf32, #gpu.address_space<workgroup>>
      memref.store %v, %out[%bytes] : memref<?xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"views"
// CHECK:       [[BASE:%.+]] = bitcast [0 x i8] addrspace(3)* @"__nova_dynamic_shared" to ptr addrspace(3)
// CHECK:       [[SIZE32:%.+]] = call i32 @"llvm.nvvm.read.ptx.sreg.dynamic_smem_size"()
// CHECK:       [[SIZE:%.+]] = zext i32 [[SIZE32]] to i64
// CHECK:       [[TILE:%.+]] = getelementptr inbounds i8, ptr addrspace(3) [[BASE]], i64 48
// CHECK:       [[ROW:%.+]] = mul i64 1, [[N:%.+]]
// CHECK:       [[LINEAR:%.+]] = add i64 [[ROW]], {{%.+}}
// CHECK:       [[ELT:%.+]] = getelementptr inbounds float, ptr addrspace(3) [[TILE]], i64 [[LINEAR]]
// CHECK:       load float, ptr addrspace(3) [[ELT]], align 4
// CHECK:       getelementptr inbounds float, ptr {{%.+}}, i64 [[SIZE]]
// CHECK:       @"__nova_dynamic_shared" = external addrspace(3) global [0 x i8], align 32

// PTX:         .extern .shared .align 32 .b8 __nova_dynamic_shared[];
// PTX:         mov.u32 {{%r[0-9]+}}, %dynamic_smem_size;
// PTX:         mov.b64 {{%rd[0-9]+}}, __nova_dynamic_shared;
// PTX:         ld.shared.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}+48];

// CPU-LABEL:   define internal void @"__nova_cpu_fn.views"
// The CpuLaunch struct (the one with the 512-byte error message), fields 5 and 6.
// CPU:         [[FIELD:%.+]] = getelementptr inbounds {{.*}}[512 x i8]{{.*}}, ptr [[LAUNCH:%.+]], i32 0, i32 5
// CPU-NEXT:    [[SCRATCH:%.+]] = load ptr, ptr [[FIELD]]
// CPU-NEXT:    [[BYTESAT:%.+]] = getelementptr inbounds {{.*}}, ptr [[LAUNCH]], i32 0, i32 6
// CPU-NEXT:    [[BYTES:%.+]] = load i64, ptr [[BYTESAT]]
// CPU-NEXT:    [[TILE:%.+]] = getelementptr inbounds i8, ptr [[SCRATCH]], i64 48
// CPU:         getelementptr inbounds float, ptr [[TILE]]
// CPU:         getelementptr inbounds float, ptr {{%.+}}, i64 [[BYTES]]
