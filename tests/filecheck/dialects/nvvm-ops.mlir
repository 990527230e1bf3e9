// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// The nvvm ops Nova supports in their printed forms (special registers, barriers, shfl.sync,
// vote.sync, match.sync any; upstream prints two spaces before a kind), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

func.func @sregs() {
  %0 = nvvm.read.ptx.sreg.tid.x : i32
  %1 = nvvm.read.ptx.sreg.tid.y : i32
  %2 = nvvm.read.ptx.sreg.tid.z : i32
  %3 = nvvm.read.ptx.sreg.ntid.x : i32
  %4 = nvvm.read.ptx.sreg.ctaid.x : i32
  %5 = nvvm.read.ptx.sreg.nctaid.y : i32
  %6 = nvvm.read.ptx.sreg.laneid : i32
  %7 = nvvm.read.ptx.sreg.warpsize : i32
  %8 = nvvm.read.ptx.sreg.clock : i32
  %9 = nvvm.read.ptx.sreg.clock64 : i64
  %10 = nvvm.read.ptx.sreg.globaltimer : i64
  %11 = nvvm.read.ptx.sreg.ntid.z : i32
  "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11) : (i32, i32, i32, i32, i32, i32, i32, i32, i32, i64, i64, i32) -> ()
  return
}

func.func @sync(%mask: i32, %v: i32, %f: f32, %off: i32, %clamp: i32, %p: i1, %w: i64) {
  nvvm.barrier0
  nvvm.bar.warp.sync %mask : i32
  %0 = nvvm.shfl.sync bfly %mask, %v, %off, %clamp : i32 -> i32
  %1 = nvvm.shfl.sync up %mask, %f, %off, %clamp : f32 -> f32
  %2 = nvvm.shfl.sync down %mask, %v, %off, %clamp : i32 -> i32
  %3 = nvvm.shfl.sync idx %mask, %f, %off, %clamp : f32 -> f32
  %5 = nvvm.vote.sync ballot %mask, %p -> i32
  %6 = nvvm.vote.sync any %mask, %p -> i1
  %7 = nvvm.vote.sync all %mask, %p -> i1
  %8 = nvvm.vote.sync uni %mask, %p -> i1
  %9 = nvvm.match.sync any %mask, %v : i32 -> i32
  "use"(%0, %1, %2, %3, %5, %6, %7, %8, %9) : (i32, f32, i32, f32, i32, i1, i1, i1, i32) -> ()
  return
}

// CHECK:      module {
// CHECK-NEXT:   func.func @sregs() {
// CHECK-NEXT:     %0 = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT:     %1 = nvvm.read.ptx.sreg.tid.y : i32
// CHECK-NEXT:     %2 = nvvm.read.ptx.sreg.tid.z : i32
// CHECK-NEXT:     %3 = nvvm.read.ptx.sreg.ntid.x : i32
// CHECK-NEXT:     %4 = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT:     %5 = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK-NEXT:     %6 = nvvm.read.ptx.sreg.laneid : i32
// CHECK-NEXT:     %7 = nvvm.read.ptx.sreg.warpsize : i32
// CHECK-NEXT:     %8 = nvvm.read.ptx.sreg.clock : i32
// CHECK-NEXT:     %9 = nvvm.read.ptx.sreg.clock64 : i64
// CHECK-NEXT:     %10 = nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT:     %11 = nvvm.read.ptx.sreg.ntid.z : i32
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11) : (i32, i32, i32, i32, i32, i32, i32, i32, i32, i64, i64, i32) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @sync(%mask: i32, %v: i32, %f: f32, %off: i32, %clamp: i32, %p: i1, %w: i64) {
// CHECK-NEXT:     nvvm.barrier0
// CHECK-NEXT:     nvvm.bar.warp.sync %mask : i32
// CHECK-NEXT:     %0 = nvvm.shfl.sync  bfly %mask, %v, %off, %clamp : i32 -> i32
// CHECK-NEXT:     %1 = nvvm.shfl.sync  up %mask, %f, %off, %clamp : f32 -> f32
// CHECK-NEXT:     %2 = nvvm.shfl.sync  down %mask, %v, %off, %clamp : i32 -> i32
// CHECK-NEXT:     %3 = nvvm.shfl.sync  idx %mask, %f, %off, %clamp : f32 -> f32
// CHECK-NEXT:     %4 = nvvm.vote.sync  ballot %mask, %p -> i32
// CHECK-NEXT:     %5 = nvvm.vote.sync  any %mask, %p -> i1
// CHECK-NEXT:     %6 = nvvm.vote.sync  all %mask, %p -> i1
// CHECK-NEXT:     %7 = nvvm.vote.sync  uni %mask, %p -> i1
// CHECK-NEXT:     %8 = nvvm.match.sync  any %mask, %v : i32 -> i32
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8) : (i32, f32, i32, f32, i32, i1, i1, i1, i32) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
