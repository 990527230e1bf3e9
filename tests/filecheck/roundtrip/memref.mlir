// RUN: nova-opt %s | FileCheck %s
// memref ops whose custom syntax xDSL lacks (global, cast, copy, rank, atomic_rmw) and others.
memref.global "private" constant @table : memref<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> {alignment = 64 : i64}
memref.global @counter : memref<1xi32> = uninitialized
memref.global "private" @external : memref<2xi32>
func.func @ops(%m: memref<?xf32>, %mi: memref<?xi32>, %n: index, %i: index, %v: f32, %k: i32, %mat: memref<4x4xf32>) {
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloca() : memref<4xf32>
  %sh = memref.alloca() : memref<8xf32, 3>
  %u = memref.cast %a : memref<?xf32> to memref<*xf32>
  %s = memref.cast %b : memref<4xf32> to memref<?xf32>
  %dim = memref.dim %a, %i : memref<?xf32>
  %x = memref.load %a[%i] : memref<?xf32>
  memref.store %x, %a[%i] : memref<?xf32>
  %view = memref.subview %mat[1, 1] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
  %g = memref.get_global @table : memref<4xf32>
  memref.copy %g, %b : memref<4xf32> to memref<4xf32>
  %r = memref.rank %a : memref<?xf32>
  %0 = memref.atomic_rmw addf %v, %m[%i] : (f32, memref<?xf32>) -> f32
  %1 = memref.atomic_rmw addi %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %2 = memref.atomic_rmw assign %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %3 = memref.atomic_rmw maxs %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %4 = memref.atomic_rmw minu %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %5 = memref.atomic_rmw maximumf %v, %m[%i] : (f32, memref<?xf32>) -> f32
  %6 = memref.atomic_rmw ori %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %7 = memref.atomic_rmw andi %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  %8 = memref.atomic_rmw xori %k, %mi[%i] : (i32, memref<?xi32>) -> i32
  memref.dealloc %a : memref<?xf32>
  return
}

// CHECK:      module {
// CHECK-NEXT:   memref.global "private" constant @table : memref<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> {alignment = 64 : i64}
// CHECK-NEXT:   memref.global @counter : memref<1xi32> = uninitialized
// CHECK-NEXT:   memref.global "private" @external : memref<2xi32>
// CHECK-NEXT:   func.func @ops(%m: memref<?xf32>, %mi: memref<?xi32>, %n: index, %i: index, %v: f32, %k: i32, %mat: memref<4x4xf32>) {
// CHECK-NEXT:     %a = memref.alloc(%n) : memref<?xf32>
// CHECK-NEXT:     %b = memref.alloca() : memref<4xf32>
// CHECK-NEXT:     %sh = memref.alloca() : memref<8xf32, 3>
// CHECK-NEXT:     %u = memref.cast %a : memref<?xf32> to memref<*xf32>
// CHECK-NEXT:     %s = memref.cast %b : memref<4xf32> to memref<?xf32>
// CHECK-NEXT:     %dim = memref.dim %a, %i : memref<?xf32>
// CHECK-NEXT:     %x = memref.load %a[%i] : memref<?xf32>
// CHECK-NEXT:     memref.store %x, %a[%i] : memref<?xf32>
// CHECK-NEXT:     %view = memref.subview %mat[1, 1] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 5>>
// CHECK-NEXT:     %g = memref.get_global @table : memref<4xf32>
// CHECK-NEXT:     memref.copy %g, %b : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:     %r = memref.rank %a : memref<?xf32>
// CHECK-NEXT:     %0 = memref.atomic_rmw addf %v, %m[%i] : (f32, memref<?xf32>) -> f32
// CHECK-NEXT:     %1 = memref.atomic_rmw addi %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %2 = memref.atomic_rmw assign %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %3 = memref.atomic_rmw maxs %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %4 = memref.atomic_rmw minu %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %5 = memref.atomic_rmw maximumf %v, %m[%i] : (f32, memref<?xf32>) -> f32
// CHECK-NEXT:     %6 = memref.atomic_rmw ori %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %7 = memref.atomic_rmw andi %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     %8 = memref.atomic_rmw xori %k, %mi[%i] : (i32, memref<?xi32>) -> i32
// CHECK-NEXT:     memref.dealloc %a : memref<?xf32>
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
