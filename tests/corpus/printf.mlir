// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.printf from every thread of a 4-thread block (index, i32 and f32 arguments) and from
// thread 0 without arguments. Lines of different threads may come in any order.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %ti = arith.index_cast %tx : index to i32
    %two = arith.constant 2 : i32
    %twice = arith.muli %ti, %two : i32
    %tf = arith.sitofp %ti : i32 to f32
    %half = arith.constant 0.5 : f32
    %hf = arith.mulf %tf, %half : f32
    gpu.printf "Hello from %lld, %d, %f\n", %tx, %twice, %hf : index, i32, f32
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      gpu.printf "only thread 0\n"
    }
    gpu.terminator
  }
  return
}

// CHECK-DAG: Hello from 0, 0, 0.000000
// CHECK-DAG: Hello from 1, 2, 0.500000
// CHECK-DAG: Hello from 2, 4, 1.000000
// CHECK-DAG: Hello from 3, 6, 1.500000
// CHECK-DAG: only thread 0
