// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.all_reduce minsi/maxsi/minui/maxui on i32 and minnumf/maxnumf/minimumf/maximumf on f32,
// over a 3-D block of 6x5x3 threads. Thread t contributes t - 45 and t * 0.5 - 10.
// As unsigned, -45..-1 are the largest values, so minui is 0 and maxui is -1 (0xFFFFFFFF).
func.func @main() {
  %ints = memref.alloc() : memref<4xi32>
  %floats = memref.alloc() : memref<4xf32>
  %icast = memref.cast %ints : memref<4xi32> to memref<*xi32>
  %fcast = memref.cast %floats : memref<4xf32> to memref<*xf32>
  gpu.host_register %icast : memref<*xi32>
  gpu.host_register %fcast : memref<*xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c45 = arith.constant 45 : i32
  %half = arith.constant 0.5 : f32
  %ten = arith.constant 10.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c5, %sz = %c3) {
    %t1 = arith.muli %sy, %tz : index
    %t2 = arith.addi %ty, %t1 : index
    %t3 = arith.muli %sx, %t2 : index
    %tid = arith.addi %tx, %t3 : index
    %ti = arith.index_cast %tid : index to i32
    %v = arith.subi %ti, %c45 : i32
    %tf = arith.sitofp %ti : i32 to f32
    %scaled = arith.mulf %tf, %half : f32
    %f = arith.subf %scaled, %ten : f32
    %minsi = gpu.all_reduce minsi %v {} : (i32) -> i32
    %maxsi = gpu.all_reduce maxsi %v {} : (i32) -> i32
    %minui = gpu.all_reduce minui %v {} : (i32) -> i32
    %maxui = gpu.all_reduce maxui %v {} : (i32) -> i32
    %minnumf = gpu.all_reduce minnumf %f {} : (f32) -> f32
    %maxnumf = gpu.all_reduce maxnumf %f {} : (f32) -> f32
    %minimumf = gpu.all_reduce minimumf %f {} : (f32) -> f32
    %maximumf = gpu.all_reduce maximumf %f {} : (f32) -> f32
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      memref.store %minsi, %ints[%c0] : memref<4xi32>
      memref.store %maxsi, %ints[%c1] : memref<4xi32>
      memref.store %minui, %ints[%c2] : memref<4xi32>
      memref.store %maxui, %ints[%c3] : memref<4xi32>
      memref.store %minnumf, %floats[%c0] : memref<4xf32>
      memref.store %maxnumf, %floats[%c1] : memref<4xf32>
      memref.store %minimumf, %floats[%c2] : memref<4xf32>
      memref.store %maximumf, %floats[%c3] : memref<4xf32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%icast) : (memref<*xi32>) -> ()
  call @printMemrefF32(%fcast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [-45,  44,  0,  -1]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [-10,  34.5,  -10,  34.5]
