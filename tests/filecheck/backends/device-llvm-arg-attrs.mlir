// RUN: nova-translate %s --emit=device-llvm | FileCheck %s
// RUN: nova-translate %s --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: nova-translate %s --emit=cpu-llvm | FileCheck %s --check-prefix=CPU

// Argument attributes on memref arguments reach the LLVM parameters of the memref's pointers
// (upstream's convention): llvm.noalias and llvm.readonly on the allocated and aligned pointers,
// llvm.align on the aligned pointer only; scalars and the index fields are untouched. With
// noalias + 16-byte alignment, NVPTX merges four neighbouring f32 accesses into one 16-byte
// vector access, and loads from a noalias array the kernel never writes become ld.global.nc.

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @scale4(%out: memref<?xf32> {llvm.noalias, llvm.align = 16 : i64},
                     %x: memref<?xf32> {llvm.noalias, llvm.readonly, llvm.align = 16 : i64},
                     %a: f32) kernel {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %g = gpu.global_id x
      %i = arith.muli %g, %c4 : index
      %i1 = arith.addi %i, %c1 : index
      %i2 = arith.addi %i, %c2 : index
      %i3 = arith.addi %i, %c3 : index
      %v0 = memref.load %x[%i] : memref<?xf32>
      %r0 = arith.mulf %a, %v0 : f32
      memref.store %r0, %out[%i] : memref<?xf32>
      %v1 = memref.load %x[%i1] : memref<?xf32>
      %r1 = arith.mulf %a, %v1 : f32
      memref.store %r1, %out[%i1] : memref<?xf32>
      %v2 = memref.load %x[%i2] : memref<?xf32>
      %r2 = arith.mulf %a, %v2 : f32
      memref.store %r2, %out[%i2] : memref<?xf32>
      %v3 = memref.load %x[%i3] : memref<?xf32>
      %r3 = arith.mulf %a, %v3 : f32
      memref.store %r3, %out[%i3] : memref<?xf32>
      gpu.return
    }

    // The same body without the facts: scalar accesses, ordinary loads.
    gpu.func @plain(%out: memref<?xf32>, %x: memref<?xf32>, %a: f32) kernel {
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %g = gpu.global_id x
      %i = arith.muli %g, %c4 : index
      %i1 = arith.addi %i, %c1 : index
      %v0 = memref.load %x[%i] : memref<?xf32>
      %r0 = arith.mulf %a, %v0 : f32
      memref.store %r0, %out[%i] : memref<?xf32>
      %v1 = memref.load %x[%i1] : memref<?xf32>
      %r1 = arith.mulf %a, %v1 : f32
      memref.store %r1, %out[%i1] : memref<?xf32>
      gpu.return
    }
  }
}

// CHECK-LABEL: define {{.*}}void @"scale4"(ptr noalias %".1", ptr noalias align 16 %".2", i64 %".3", i64 %".4", i64 %".5", ptr noalias readonly %".6", ptr noalias readonly align 16 %".7", i64 %".8", i64 %".9", i64 %".10", float %".11")
// CHECK-LABEL: define {{.*}}void @"plain"(ptr %".1", ptr %".2", i64 %".3", i64 %".4", i64 %".5", ptr %".6", ptr %".7", i64 %".8", i64 %".9", i64 %".10", float %".11")

// PTX-LABEL: .entry scale4(
// PTX:       .param .u64 .ptr .align 16 scale4_param_1,
// PTX:       ld.global.nc.v4.b32
// PTX:       st.global.v4.b32
// PTX-LABEL: .entry plain(
// PTX-NOT:   .nc
// PTX-NOT:   .v4
// PTX-NOT:   .v2
// PTX:       ret;

// The CPU device's kernel body takes the thread context first; the facts follow the expansion.
// CPU-LABEL: define internal void @"__nova_cpu_fn.scale4"(ptr %".1", ptr noalias %".2", ptr noalias align 16 %".3", i64 %".4", i64 %".5", i64 %".6", ptr noalias readonly %".7", ptr noalias readonly align 16 %".8"
