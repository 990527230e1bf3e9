// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX

// nvgpu.ldmatrix / nvgpu.mma.sync lower as upstream's --convert-nvgpu-to-nvvm + mlir-translate:
// ldmatrix -> llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<N>[.trans].b16.p3 at the address of
// memref[i, j] (one i32 register per tile, bitcast to <2 x half>); mma.sync m16n8k16 ->
// llvm.nvvm.mma.m16n8k16.row.col.f32.f32 (A 4 x <2 x half>, B 2 x <2 x half>, C 4 x float) or
// .f16.f16 (C 2 x <2 x half>). n-D vectors are flat row-major LLVM vectors (<8 x half> for
// vector<4x2xf16>), split into the intrinsic's registers by shufflevector.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma(%out: memref<32x4xf32>, %outh: memref<32x4xf16>)
        workgroup(%sm: memref<16x24xf16, #gpu.address_space<workgroup>>) kernel {
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %a = nvgpu.ldmatrix %sm[%lane, %c0] {numTiles = 4 : i32, transpose = false} : memref<16x24xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
      %b = nvgpu.ldmatrix %sm[%lane, %c16] {numTiles = 2 : i32, transpose = true} : memref<16x24xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
      %one = nvgpu.ldmatrix %sm[%lane, %c0] {numTiles = 1 : i32, transpose = false} : memref<16x24xf16, #gpu.address_space<workgroup>> -> vector<1x2xf16>
      %c = arith.constant dense<0.0> : vector<2x2xf32>
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %ch = arith.constant dense<0.0> : vector<2x2xf16>
      %dh = nvgpu.mma.sync(%a, %b, %ch) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
      %flat = vector.shape_cast %d : vector<2x2xf32> to vector<4xf32>
      vector.store %flat, %out[%lane, %c0] : memref<32x4xf32>, vector<4xf32>
      %flath = vector.shape_cast %dh : vector<2x2xf16> to vector<4xf16>
      vector.store %flath, %outh[%lane, %c0] : memref<32x4xf16>, vector<4xf16>
      %e = vector.extract %one[0, 1] : f16 from vector<1x2xf16>
      memref.store %e, %outh[%c0, %c0] : memref<32x4xf16>
      gpu.return
    }
  }
}

// CHECK-LABEL: define external ptx_kernel void @"mma"(
// CHECK:       [[X4:%.+]] = call {i32, i32, i32, i32} @"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3"(ptr addrspace(3) {{%.+}})
// CHECK:       [[W0:%.+]] = extractvalue {i32, i32, i32, i32} [[X4]], 0
// CHECK:       bitcast i32 [[W0]] to <2 x half>
// CHECK:       call {i32, i32} @"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3"(ptr addrspace(3) {{%.+}})
// CHECK:       [[X1:%.+]] = call i32 @"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16.p3"(ptr addrspace(3) {{%.+}})
// CHECK:       bitcast i32 [[X1]] to <2 x half>
// CHECK:       [[A0:%.+]] = shufflevector <8 x half> [[A:%.+]], <8 x half> [[A]], <2 x i32> <i32 0, i32 1>
// CHECK:       shufflevector <8 x half> [[A]], <8 x half> [[A]], <2 x i32> <i32 6, i32 7>
// CHECK:       [[D:%.+]] = call {float, float, float, float} @"llvm.nvvm.mma.m16n8k16.row.col.f32.f32"(<2 x half> [[A0]], <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, float {{%.+}}, float {{%.+}}, float {{%.+}}, float {{%.+}})
// CHECK:       extractvalue {float, float, float, float} [[D]], 3
// CHECK:       call {<2 x half>, <2 x half>} @"llvm.nvvm.mma.m16n8k16.row.col.f16.f16"(<2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}}, <2 x half> {{%.+}})
// CHECK:       store <4 x float>

// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x1.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16
