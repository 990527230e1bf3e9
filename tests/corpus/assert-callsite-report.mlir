// RUN: not nova-run %s --device cpu 2>&1 | FileCheck %s

// A cf.assert that fails in both threads of a block, with a call-site location: each failing
// thread reports as CUDA's __assertfail does, with the file, line and function of the innermost
// callee (as upstream MLIR's GPU-to-NVVM lowering resolves them), after both threads printed
// past the assertion that holds; nothing runs past the failing one, and the run fails.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %true = arith.constant true
    %false = arith.constant false
    cf.assert %true, "passing assertion"
    gpu.printf "thread %lld: print after passing assertion\n", %tx : index
    cf.assert %false, "failing assertion" loc(callsite(callsite("callee_func_name"("callee_file.cc":7:9) at "caller_file.cc":10:8) at "caller2.cc":11:12))
    gpu.printf "thread %lld: print after failing assertion\n", %tx : index
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}

// CHECK-DAG: thread 0: print after passing assertion
// CHECK-DAG: thread 1: print after passing assertion
// CHECK-DAG: callee_file.cc:7: callee_func_name: block: [0,0,0], thread: [0,0,0] Assertion `failing assertion` failed.
// CHECK-DAG: callee_file.cc:7: callee_func_name: block: [0,0,0], thread: [1,0,0] Assertion `failing assertion` failed.
// CHECK-NOT: print after failing assertion
// CHECK-NOT: unreachable
