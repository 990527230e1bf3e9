// RUN: nova-run %s --device cpu | FileCheck %s

// vector.print inside a kernel: each of 3 threads prints a vector<3xi32> of tid * 10 + lane,
// a vector<2xf32> of tid / 4 and tid / 2, the scalar index tid + 1 and a string; every print is
// one printf (CPU device) / vprintf (NVPTX), so lines of threads never interleave (their order
// does vary on a GPU, hence CHECK-DAG).
// Expected values: tests/unit/test_vector_corpus.py (NumPy).
func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
    %t = arith.index_cast %tx : index to i32
    %ten = arith.constant 10 : i32
    %t10 = arith.muli %t, %ten : i32
    %base = vector.broadcast %t10 : i32 to vector<3xi32>
    %lanes = arith.constant dense<[0, 1, 2]> : vector<3xi32>
    %v = arith.addi %base, %lanes : vector<3xi32>
    vector.print %v : vector<3xi32>
    %tf = arith.sitofp %t : i32 to f32
    %q = arith.constant 0.25 : f32
    %h = arith.constant 0.5 : f32
    %a = arith.mulf %tf, %q : f32
    %b = arith.mulf %tf, %h : f32
    %w = vector.from_elements %a, %b : vector<2xf32>
    vector.print %w : vector<2xf32>
    %big = arith.addi %tx, %c1 : index
    vector.print %big : index
    vector.print str "thread done\n"
    gpu.terminator
  }
  return
}

// CHECK-DAG: ( 0, 1, 2 )
// CHECK-DAG: ( 0, 0 )
// CHECK-DAG: {{^}}1{{$}}
// CHECK-DAG: thread done
// CHECK-DAG: ( 10, 11, 12 )
// CHECK-DAG: ( 0.25, 0.5 )
// CHECK-DAG: {{^}}2{{$}}
// CHECK-DAG: thread done
// CHECK-DAG: ( 20, 21, 22 )
// CHECK-DAG: ( 0.5, 1 )
// CHECK-DAG: {{^}}3{{$}}
// CHECK-DAG: thread done
