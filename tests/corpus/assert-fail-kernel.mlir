// RUN: not nova-run %s --device cpu 2>&1 | FileCheck %s

// cf.assert that fails in thread 3 of a kernel: the run must fail and report the message.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %ok = arith.cmpi ne, %tx, %c3 : index
    cf.assert %ok, "thread 3 hit the assertion"
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}

// CHECK: thread 3 hit the assertion
// CHECK-NOT: unreachable
