// RUN: nova-run %s --device cpu | FileCheck %s

// math.sincos on the host and in a kernel, on scalars and vectors: each result equals what
// math.sin and math.cos give for the same value (upstream lowers the op to llvm.intr.sincos).
func.func @main() {
  %x = arith.constant 0.5 : f32
  %s, %c = math.sincos %x : f32
  vector.print %s : f32
  vector.print %c : f32
  %v = arith.constant dense<[0.0, 1.0]> : vector<2xf64>
  %vs, %vc = math.sincos %v fastmath<fast> : vector<2xf64>
  vector.print %vs : vector<2xf64>
  vector.print %vc : vector<2xf64>

  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %i = arith.index_cast %tx : index to i32
    %f = arith.sitofp %i : i32 to f32
    %ks, %kc = math.sincos %f : f32
    %rs = math.sin %f : f32
    %rc = math.cos %f : f32
    %same_s = arith.cmpf oeq, %ks, %rs : f32
    %same_c = arith.cmpf oeq, %kc, %rc : f32
    %same = arith.andi %same_s, %same_c : i1
    %flag = arith.extui %same : i1 to i32
    gpu.printf "thread %lld: sin %.6f cos %.6f same as sin/cos %d\n", %tx, %ks, %kc, %flag : index, f32, f32, i32
    gpu.terminator
  }
  return
}

// CHECK:      0.479426
// CHECK-NEXT: 0.877583
// CHECK-NEXT: ( 0, 0.841471 )
// CHECK-NEXT: ( 1, 0.540302 )
// CHECK-DAG:  thread 0: sin 0.000000 cos 1.000000 same as sin/cos 1
// CHECK-DAG:  thread 1: sin 0.841471 cos 0.540302 same as sin/cos 1
