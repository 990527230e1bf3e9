"""MLIR programs of tests/runtime/test_assert_reports.py."""

from __future__ import annotations

LOCATIONS = [  # (a cf.assert location, the report's "FILE:LINE: FUNCTION"; PROG is the program)
    ("", "PROG:13: (unknown)"),
    ('loc(callsite(callsite("callee_func_name"("callee_file.cc":7:9) at "caller_file.cc":10:8) '
     'at "caller2.cc":1:1))', "callee_file.cc:7: callee_func_name"),
    ('loc("kernel_fn"("named.cc":5:6))', "named.cc:5: kernel_fn"),
    ('loc("only_a_name")', "(unknown):0: only_a_name"),
    ('loc(fused["a.cc":1:2, "b.cc":3:4])', "(unknown):0: (unknown)"),
    ("loc(unknown)", "(unknown):0: (unknown)"),
]


def converged(loc: str) -> str:
    """Both threads of a block print, then fail the same assertion (located `loc`)."""
    return f"""func.func @main() {{
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {{
    %true = arith.constant true
    %false = arith.constant false
    cf.assert %true, "passes"
    gpu.printf "thread %lld: print before the assertion\\n", %tx : index
    %zero = arith.constant 0 : index
    %never = arith.cmpi ult, %tx, %zero : index
    %fail = arith.ori %never, %false : i1
    cf.assert %fail, "both fail" {loc}
    gpu.printf "thread %lld: print after the assertion\\n", %tx : index
    gpu.terminator
  }}
  vector.print str "unreachable"
  return
}}
"""


def diverging() -> str:
    """3 blocks of 4 threads; in block 1 the odd threads fail, the others finish."""
    return """func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %odd = arith.remui %tx, %c2 : index
    %in1 = arith.cmpi eq, %bx, %c1 : index
    %ok = arith.cmpi eq, %odd, %c1 : index
    %bad = arith.andi %in1, %ok : i1
    %true = arith.constant true
    %good = arith.xori %bad, %true : i1
    cf.assert %good, "odd thread"
    gpu.printf "block %lld thread %lld done\\n", %bx, %tx : index, index
    gpu.terminator
  }
  return
}
"""


def with_barrier() -> str:
    """Thread 2 fails before a barrier the others wait at."""
    return """func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %ok = arith.cmpi ne, %tx, %c2 : index
    cf.assert %ok, "thread 2 stops"
    gpu.barrier
    gpu.printf "thread %lld passed the barrier\\n", %tx : index
    gpu.terminator
  }
  return
}
"""
