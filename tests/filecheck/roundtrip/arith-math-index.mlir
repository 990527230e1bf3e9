// RUN: nova-opt %s | FileCheck %s
// arith, math and index ops, func declarations and calls, vector.print.
func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @helper(f32) -> f32
func.func @scalars(%f: f32, %i: i32, %x: index, %y: index, %b: i1) -> index {
  %0 = arith.addi %i, %i overflow<nsw> : i32
  %1 = arith.addf %f, %f fastmath<fast> : f32
  %2 = arith.cmpf olt, %f, %f : f32
  %3 = arith.select %b, %f, %f : f32
  %4 = arith.index_cast %x : index to i32
  %5 = arith.index_castui %x : index to i64
  %6 = arith.sitofp %i : i32 to f32
  %7 = arith.constant -1.500000e-10 : f32
  %8 = arith.constant 0x7FC00000 : f32
  %9 = arith.constant 3.40282347E+38 : f32
  %10 = arith.constant dense<1.000000e+00> : vector<4xf32>
  %11 = arith.remsi %i, %i : i32
  %12 = math.sqrt %f : f32
  %13 = math.exp %f fastmath<fast> : f32
  %14 = math.powf %f, %f : f32
  %15 = math.fma %f, %f, %f : f32
  %16 = math.absi %i : i32
  %17 = math.tanh %f : f32
  %18 = math.fpowi %f, %i : f32, i32
  %19 = index.add %x, %y
  %20 = index.cmp slt(%x, %y)
  %21 = index.constant 42
  %22 = index.casts %i : i32 to index
  %23 = index.castu %x : index to i32
  %24 = index.bool.constant true
  %25 = index.maxs %x, %y
  %26 = call @helper(%f) : (f32) -> f32
  vector.print %f : f32
  vector.print %x : index
  vector.print str "hello\n"
  vector.print %i : i32 punctuation <comma>
  vector.print punctuation <newline>
  return %19 : index
}

// CHECK:      module {
// CHECK-NEXT:   func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
// CHECK-NEXT:   func.func private @helper(f32) -> f32
// CHECK-NEXT:   func.func @scalars(%f: f32, %i: i32, %x: index, %y: index, %b: i1) -> index {
// CHECK-NEXT:     %0 = arith.addi %i, %i overflow<nsw> : i32
// CHECK-NEXT:     %1 = arith.addf %f, %f fastmath<fast> : f32
// CHECK-NEXT:     %2 = arith.cmpf olt, %f, %f : f32
// CHECK-NEXT:     %3 = arith.select %b, %f, %f : f32
// CHECK-NEXT:     %4 = arith.index_cast %x : index to i32
// CHECK-NEXT:     %5 = arith.index_castui %x : index to i64
// CHECK-NEXT:     %6 = arith.sitofp %i : i32 to f32
// CHECK-NEXT:     %7 = arith.constant -1.500000e-10 : f32
// CHECK-NEXT:     %8 = arith.constant 0x7FC00000 : f32
// CHECK-NEXT:     %9 = arith.constant 3.40282347E+38 : f32
// CHECK-NEXT:     %10 = arith.constant dense<1.000000e+00> : vector<4xf32>
// CHECK-NEXT:     %11 = arith.remsi %i, %i : i32
// CHECK-NEXT:     %12 = math.sqrt %f : f32
// CHECK-NEXT:     %13 = math.exp %f fastmath<fast> : f32
// CHECK-NEXT:     %14 = math.powf %f, %f : f32
// CHECK-NEXT:     %15 = math.fma %f, %f, %f : f32
// CHECK-NEXT:     %16 = math.absi %i : i32
// CHECK-NEXT:     %17 = math.tanh %f : f32
// CHECK-NEXT:     %18 = math.fpowi %f, %i : f32, i32
// CHECK-NEXT:     %19 = index.add %x, %y
// CHECK-NEXT:     %20 = index.cmp slt(%x, %y)
// CHECK-NEXT:     %21 = index.constant 42
// CHECK-NEXT:     %22 = index.casts %i : i32 to index
// CHECK-NEXT:     %23 = index.castu %x : index to i32
// CHECK-NEXT:     %24 = index.bool.constant true
// CHECK-NEXT:     %25 = index.maxs %x, %y
// CHECK-NEXT:     %26 = call @helper(%f) : (f32) -> f32
// CHECK-NEXT:     vector.print %f : f32
// CHECK-NEXT:     vector.print %x : index
// CHECK-NEXT:     vector.print str "hello\0A"
// CHECK-NEXT:     vector.print %i : i32 punctuation <comma>
// CHECK-NEXT:     vector.print
// CHECK-NEXT:     return %19 : index
// CHECK-NEXT:   }
// CHECK-NEXT: }
