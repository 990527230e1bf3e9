// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// index ops in their printed forms (binary ops, cmp predicates, constants, casts, sizeof,
// attribute dictionaries), compared with mlir-opt 22 by
// tests/unit/test_dialect_files.py.

func.func @binary(%a: index, %b: index) {
  %0 = index.add %a, %b
  %1 = index.sub %a, %b
  %2 = index.mul %a, %b
  %3 = index.divs %a, %b
  %4 = index.divu %a, %b
  %5 = index.ceildivs %a, %b
  %6 = index.ceildivu %a, %b
  %7 = index.floordivs %a, %b
  %8 = index.rems %a, %b
  %9 = index.remu %a, %b
  %10 = index.maxs %a, %b
  %11 = index.maxu %a, %b
  %12 = index.mins %a, %b
  %13 = index.minu %a, %b
  %14 = index.shl %a, %b
  %15 = index.shrs %a, %b
  %16 = index.shru %a, %b
  %17 = index.and %a, %b
  %18 = index.or %a, %b
  %19 = index.xor %a, %b
  "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19) : (index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  return
}

func.func @misc(%a: index, %b: index, %i: i32, %j: i64) {
  %0 = index.cmp eq(%a, %b)
  %1 = index.cmp slt(%a, %b)
  %2 = index.cmp uge(%a, %b)
  %3 = index.constant 42
  %4 = index.constant -1
  %5 = index.bool.constant true
  %6 = index.bool.constant false
  %7 = index.casts %a : index to i32
  %8 = index.casts %i : i32 to index
  %9 = index.castu %a : index to i64
  %10 = index.castu %j : i64 to index
  %11 = index.sizeof
  %12 = index.add %a, %b {tag = 1 : i32}
  "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12) : (i1, i1, i1, index, index, i1, i1, i32, index, i64, index, index, index) -> ()
  return
}

// CHECK:      module {
// CHECK-NEXT:   func.func @binary(%a: index, %b: index) {
// CHECK-NEXT:     %0 = index.add %a, %b
// CHECK-NEXT:     %1 = index.sub %a, %b
// CHECK-NEXT:     %2 = index.mul %a, %b
// CHECK-NEXT:     %3 = index.divs %a, %b
// CHECK-NEXT:     %4 = index.divu %a, %b
// CHECK-NEXT:     %5 = index.ceildivs %a, %b
// CHECK-NEXT:     %6 = index.ceildivu %a, %b
// CHECK-NEXT:     %7 = index.floordivs %a, %b
// CHECK-NEXT:     %8 = index.rems %a, %b
// CHECK-NEXT:     %9 = index.remu %a, %b
// CHECK-NEXT:     %10 = index.maxs %a, %b
// CHECK-NEXT:     %11 = index.maxu %a, %b
// CHECK-NEXT:     %12 = index.mins %a, %b
// CHECK-NEXT:     %13 = index.minu %a, %b
// CHECK-NEXT:     %14 = index.shl %a, %b
// CHECK-NEXT:     %15 = index.shrs %a, %b
// CHECK-NEXT:     %16 = index.shru %a, %b
// CHECK-NEXT:     %17 = index.and %a, %b
// CHECK-NEXT:     %18 = index.or %a, %b
// CHECK-NEXT:     %19 = index.xor %a, %b
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19) : (index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @misc(%a: index, %b: index, %i: i32, %j: i64) {
// CHECK-NEXT:     %0 = index.cmp eq(%a, %b)
// CHECK-NEXT:     %1 = index.cmp slt(%a, %b)
// CHECK-NEXT:     %2 = index.cmp uge(%a, %b)
// CHECK-NEXT:     %3 = index.constant 42
// CHECK-NEXT:     %4 = index.constant -1
// CHECK-NEXT:     %5 = index.bool.constant true
// CHECK-NEXT:     %6 = index.bool.constant false
// CHECK-NEXT:     %7 = index.casts %a : index to i32
// CHECK-NEXT:     %8 = index.casts %i : i32 to index
// CHECK-NEXT:     %9 = index.castu %a : index to i64
// CHECK-NEXT:     %10 = index.castu %j : i64 to index
// CHECK-NEXT:     %11 = index.sizeof
// CHECK-NEXT:     %12 = index.add %a, %b {tag = 1 : i32}
// CHECK-NEXT:     "use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12) : (i1, i1, i1, index, index, i1, i1, i32, index, i64, index, index, index) -> ()
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
