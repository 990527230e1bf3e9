// RUN: nova-translate %s --emit=host-llvm | FileCheck %s --check-prefix=HOST
// RUN: nova-translate %s --emit=device-llvm | FileCheck %s --check-prefix=DEV
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU
// RUN: nova-translate %s -o %t.nova && nova-objdump %t.nova --json | FileCheck %s --check-prefix=MANIFEST

// Vectors captured by a gpu.launch become kernel arguments (outlining, as upstream's
// gpu-kernel-outlining: `args(%v : vector<3xi32>, ...)`) and pass by value as LLVM <N x T>
// parameters. Host: each gets a stack slot of its LLVM type (alloca: LLVM's size and alignment)
// whose address goes into the void** array. NVPTX: a `.param .align A .b8 p[S]` byte array of
// LLVM's size S and alignment A, which the CUDA driver copies from that slot. CPU device: the
// kernel entry loads the vector from params[i], aligned to its element only (the runtime's
// parameter block aligns to at most 16). The manifest records the same sizes and alignments.

func.func @main(%m: memref<2xf32>, %k: i8) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant dense<[1, 2, 3]> : vector<3xi32>
  %x = memref.load %m[%c0] : memref<2xf32>
  %w = vector.broadcast %x : f32 to vector<8xf32>
  %b = vector.broadcast %k : i8 to vector<3xi8>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %e = vector.extract %v[1] : i32 from vector<3xi32>
    %f = vector.extract %w[7] : f32 from vector<8xf32>
    %g = vector.extract %b[2] : i8 from vector<3xi8>
    gpu.printf "%d %f %d\n", %e, %f, %g : i32, f32, i8
    gpu.terminator
  }
  return
}

// HOST-LABEL: define internal void @"main"(
// HOST-DAG: %[[SLOT0:"param[0-9]+"]] = alloca <3 x i32>
// HOST-DAG: %[[SLOT1:"param[0-9]+"]] = alloca <8 x float>
// HOST-DAG: %[[SLOT2:"param[0-9]+"]] = alloca <3 x i8>
// HOST-DAG: %"params" = alloca [3 x ptr]
// HOST: store <3 x i32> <i32 1, i32 2, i32 3>, ptr %[[SLOT0]]
// HOST: store ptr %[[SLOT0]], ptr
// HOST: store <8 x float> %{{.*}}, ptr %[[SLOT1]]
// HOST: store ptr %[[SLOT1]], ptr
// HOST: store <3 x i8> %{{.*}}, ptr %[[SLOT2]]
// HOST: store ptr %[[SLOT2]], ptr
// HOST: call i32 @"nova_rt_launch"({{.*}}, ptr %"params", i64 3)

// DEV: define external ptx_kernel void @"main_kernel"(<3 x i32> %{{[^,]+}}, <8 x float> %{{[^,]+}}, <3 x i8> %{{[^)]+}})

// PTX: .visible .entry main_kernel(
// PTX-NEXT: .param .align 16 .b8 main_kernel_param_0[16],
// PTX-NEXT: .param .align 32 .b8 main_kernel_param_1[32],
// PTX-NEXT: .param .align 4 .b8 main_kernel_param_2[4]
// PTX-NEXT: )

// CPU-LABEL: define i32 @"main_kernel"(ptr %".1", ptr %".2")
// CPU: load <3 x i32>, ptr %{{.*}}, align 4
// CPU: load <8 x float>, ptr %{{.*}}, align 4
// CPU: load <3 x i8>, ptr %{{.*}}, align 1

// MANIFEST: "kernels": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "args": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "dtype": "i32",
// MANIFEST-NEXT: "kind": "vector",
// MANIFEST-NEXT: "mlir": "vector<3xi32>",
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: 3
// MANIFEST: "params": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "align": 16,
// MANIFEST-NEXT: "arg_index": 0,
// MANIFEST-NEXT: "llvm_type": "<3 x i32>",
// MANIFEST-NEXT: "size": 16
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "align": 32,
// MANIFEST-NEXT: "arg_index": 1,
// MANIFEST-NEXT: "llvm_type": "<8 x float>",
// MANIFEST-NEXT: "size": 32
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "align": 4,
// MANIFEST-NEXT: "arg_index": 2,
// MANIFEST-NEXT: "llvm_type": "<3 x i8>",
// MANIFEST-NEXT: "size": 4
