// RUN: nova-opt %s | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// The basic nvvm ops Nova supports, printed exactly as mlir-opt 22 prints them (the unit test
// test_ir_roundtrip also checks this file against mlir-opt).
gpu.module @kernels {
  gpu.func @nvvm_ops(%v: i32, %f: f32, %m: i32, %c: i32, %p: i1) kernel {
    // CHECK: nvvm.read.ptx.sreg.tid.x : i32
    %0 = nvvm.read.ptx.sreg.tid.x : i32
    // CHECK: nvvm.read.ptx.sreg.tid.y : i32
    %1 = nvvm.read.ptx.sreg.tid.y : i32
    // CHECK: nvvm.read.ptx.sreg.tid.z : i32
    %2 = nvvm.read.ptx.sreg.tid.z : i32
    // CHECK: nvvm.read.ptx.sreg.ntid.x : i32
    %3 = nvvm.read.ptx.sreg.ntid.x : i32
    // CHECK: nvvm.read.ptx.sreg.ctaid.y : i32
    %4 = nvvm.read.ptx.sreg.ctaid.y : i32
    // CHECK: nvvm.read.ptx.sreg.nctaid.z : i32
    %5 = nvvm.read.ptx.sreg.nctaid.z : i32
    // CHECK: nvvm.read.ptx.sreg.laneid : i32
    %6 = nvvm.read.ptx.sreg.laneid : i32
    // CHECK: nvvm.read.ptx.sreg.warpsize : i32
    %7 = nvvm.read.ptx.sreg.warpsize : i32
    // CHECK: nvvm.read.ptx.sreg.clock : i32
    %8 = nvvm.read.ptx.sreg.clock : i32
    // CHECK: nvvm.read.ptx.sreg.clock64 : i64
    %9 = nvvm.read.ptx.sreg.clock64 : i64
    // CHECK: nvvm.read.ptx.sreg.globaltimer : i64
    %10 = nvvm.read.ptx.sreg.globaltimer : i64
    // CHECK: nvvm.barrier0
    // GENERIC: "nvvm.barrier0"() : () -> ()
    nvvm.barrier0
    // CHECK: nvvm.bar.warp.sync %{{.*}} : i32
    // GENERIC: "nvvm.bar.warp.sync"(%{{.*}}) : (i32) -> ()
    nvvm.bar.warp.sync %m : i32
    // CHECK: nvvm.match.sync  any %{{.*}}, %{{.*}} : i32 -> i32
    // GENERIC: "nvvm.match.sync"(%{{.*}}, %{{.*}}) <{kind = #nvvm<match_sync_kind any>}> : (i32, i32) -> i32
    %mt = nvvm.match.sync any %m, %v : i32 -> i32
    // CHECK: nvvm.shfl.sync  bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32 -> i32
    // GENERIC: "nvvm.shfl.sync"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{kind = #nvvm<shfl_kind bfly>}> : (i32, i32, i32, i32) -> i32
    %11 = nvvm.shfl.sync bfly %m, %v, %c, %c : i32 -> i32
    // CHECK: nvvm.shfl.sync  up %{{.*}} : f32 -> f32
    %12 = nvvm.shfl.sync up %m, %f, %c, %c : f32 -> f32
    // CHECK: nvvm.shfl.sync  down %{{.*}} : f32 -> f32
    %13 = nvvm.shfl.sync down %m, %f, %c, %c : f32 -> f32
    // CHECK: nvvm.shfl.sync  idx %{{.*}} : i32 -> i32
    %14 = nvvm.shfl.sync idx %m, %v, %c, %c : i32 -> i32
    // CHECK: nvvm.vote.sync  ballot %{{.*}}, %{{.*}} -> i32
    // GENERIC: "nvvm.vote.sync"(%{{.*}}, %{{.*}}) <{kind = #nvvm<vote_sync_kind ballot>}> : (i32, i1) -> i32
    %15 = nvvm.vote.sync ballot %m, %p -> i32
    // CHECK: nvvm.vote.sync  any %{{.*}}, %{{.*}} -> i1
    %16 = nvvm.vote.sync any %m, %p -> i1
    // CHECK: nvvm.vote.sync  all %{{.*}}, %{{.*}} -> i1
    %17 = nvvm.vote.sync all %m, %p -> i1
    // CHECK: nvvm.vote.sync  uni %{{.*}}, %{{.*}} -> i1
    %18 = nvvm.vote.sync uni %m, %p -> i1
    gpu.return
  }
}
