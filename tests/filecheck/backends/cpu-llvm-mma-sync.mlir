// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s

// nvgpu.ldmatrix / nvgpu.mma.sync on the CPU device: warp collectives through the per-thread
// exchange slots (32 bytes each) between two warp barriers (wait kind 2), with PTX's lane
// layouts. ldmatrix: each lane stores its row address, then reads the row of lane 8j + l/4 at
// 32-bit word l%4 (transposed: the halves at column l/4 of rows 2(l%4), 2(l%4)+1). mma.sync:
// each lane stores A (<8 x half>, bytes 0-15) and B (<4 x half>, bytes 16-23), then gathers A
// of lanes 4g..4g+3 and B of lanes 8t..8t+7 and sums its four elements in f32, k in order
// (an ordered llvm.vector.reduce.fadd: no reassoc flag).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma(%out: memref<32x4xf32>)
        workgroup(%sm: memref<16x24xf16, #gpu.address_space<workgroup>>) kernel {
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %a = nvgpu.ldmatrix %sm[%lane, %c0] {numTiles = 4 : i32, transpose = false} : memref<16x24xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
      %b = nvgpu.ldmatrix %sm[%lane, %c16] {numTiles = 2 : i32, transpose = true} : memref<16x24xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
      %c = arith.constant dense<0.0> : vector<2x2xf32>
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %flat = vector.shape_cast %d : vector<2x2xf32> to vector<4xf32>
      vector.store %flat, %out[%lane, %c0] : memref<32x4xf32>, vector<4xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define internal void @"__nova_cpu_fn.mma"
// ldmatrix x4: own address to the slot, barrier, four row words, barrier
// CHECK:       store ptr {{%.+}}, ptr {{%.+}}
// CHECK-NEXT:  call void @"__nova_cpu_wait"(ptr [[CTX:%.+]], i32 2)
// CHECK-COUNT-4: load i32, ptr {{%.+}}, align 2
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// ldmatrix x2.trans: two halves per tile
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK-COUNT-4: load half, ptr {{%.+}}, align 2
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// mma.sync: A and B registers to the slot (B at byte 16), barrier, gathers, barrier, sums
// CHECK:       store <8 x half> {{%.+}}, ptr [[SLOT:%.+]], align 2
// CHECK:       [[BSLOT:%.+]] = getelementptr i8, ptr [[SLOT]], i64 16
// CHECK-NEXT:  store <4 x half> {{%.+}}, ptr [[BSLOT]], align 2
// CHECK-NEXT:  call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK-COUNT-4: load <8 x half>
// CHECK-COUNT-8: load <4 x half>
// CHECK:       call void @"__nova_cpu_wait"(ptr [[CTX]], i32 2)
// CHECK:       fpext <16 x half> {{%.+}} to <16 x float>
// CHECK:       [[P:%.+]] = fmul <16 x float>
// CHECK-NEXT:  call float @"llvm.vector.reduce.fadd.v16f32"(float {{%.+}}, <16 x float> [[P]])
// CHECK-COUNT-3: call float @"llvm.vector.reduce.fadd.v16f32"
// CHECK:       store <4 x float>
