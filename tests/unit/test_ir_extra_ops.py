"""Ops Nova's IR adds to xDSL's dialects (nova.ir.dialects.memref, nova.ir.dialects.math,
nova.ir.dialects.scf_arith_func): memref.generic_atomic_rmw / memref.atomic_yield, math.erfc and
arith.remf
parse, verify as MLIR does (mlir-opt's messages; the subscript count is checked where upstream
does not check it), and lower and run on the cpu device. Round-trips against mlir-opt are in
test_ir_roundtrip.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import nova
from nova.errors import ParseError, VerifyError
from nova.ir.parser import parse_mlir, print_mlir


def _rmw(body: str, indices: str = "%i", ty: str = "memref<?xi32>", arg: str = "i32") -> str:
    return f"""
func.func @f(%m: {ty}, %i: index, %v: f32) -> i32 {{
  %old = memref.generic_atomic_rmw %m[{indices}] : {ty} {{
  ^bb0(%cur: {arg}):
{body}
  }}
  return %old : i32
}}
"""


@pytest.mark.parametrize(("text", "message"), [
    (_rmw("    memref.atomic_yield %v : f32"),
     "'memref.atomic_yield' op types mismatch between yield op: 'f32' and its parent: 'i32'"),
    (_rmw("    memref.atomic_yield %cur : i32", indices="%i, %i"),
     "expects the number of subscripts to be equal to memref rank"),
    (_rmw("    %z = arith.constant 0 : i32\n    memref.atomic_yield %z : i32", arg="i64"),
     "expected block argument of the same type result type"),
    (_rmw("    %c = arith.constant 7 : i32\n    memref.store %c, %m[%i] : memref<?xi32>\n"
          "    memref.atomic_yield %c : i32"),
     "should contain only operations with no side effects"),
])
def test_generic_atomic_rmw_verifier(text: str, message: str) -> None:
    with pytest.raises(VerifyError, match=re.escape(message)):
        parse_mlir(text, "rmw.mlir")


def test_atomic_yield_outside_its_op_is_rejected() -> None:
    with pytest.raises(VerifyError, match=r"memref\.generic_atomic_rmw"):
        parse_mlir("func.func @f(%x: i32) {\n  memref.atomic_yield %x : i32\n}\n", "y.mlir")


def test_generic_atomic_rmw_needs_a_memref_type() -> None:
    text = "func.func @f(%m: i32, %i: index) {\n  %o = memref.generic_atomic_rmw %m[%i] : i32 {\n" \
           "  ^bb0(%c: i32):\n    memref.atomic_yield %c : i32\n  }\n  return\n}\n"
    with pytest.raises(ParseError, match="expects a memref type, got i32"):
        parse_mlir(text, "t.mlir")


def test_erfc_requires_a_float() -> None:
    with pytest.raises((VerifyError, ParseError)):
        parse_mlir("func.func @f(%x: i32) -> i32 {\n  %y = math.erfc %x : i32\n"
                   "  return %y : i32\n}\n", "e.mlir")


PROGRAM = """
func.func @run(%a: memref<?xf32>, %b: memref<?xf32>, %r: memref<?xf32>, %e: memref<?xf32>,
               %cnt: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%bx] : memref<?xf32>
    %y = memref.load %b[%bx] : memref<?xf32>
    %m = arith.remf %x, %y : f32
    memref.store %m, %r[%bx] : memref<?xf32>
    %f = math.erfc %x : f32
    memref.store %f, %e[%bx] : memref<?xf32>
    %old = memref.generic_atomic_rmw %cnt[%c0] : memref<?xi32> {
    ^bb0(%cur: i32):
      %two = arith.constant 2 : i32
      %next = arith.addi %cur, %two : i32
      memref.atomic_yield %next : i32
    }
    gpu.terminator
  }
  return
}
"""


def test_parse_print_lower_and_run_on_cpu() -> None:
    module = parse_mlir(PROGRAM, "ops.mlir")
    printed = print_mlir(module)
    assert "arith.remf %" in printed and "math.erfc %" in printed
    assert print_mlir(parse_mlir(printed, "again.mlir")) == printed
    mod = nova.compile(PROGRAM, device="cpu")
    a = np.array([5.5, -5.5, 7.0, -0.0, 3.25, 1e30], np.float32)
    b = np.array([2.0, 2.0, -3.0, 1.0, 0.5, 3.0], np.float32)
    r, e = np.full_like(a, np.nan), np.full_like(a, np.nan)
    cnt = np.array([10], np.int32)
    mod.run(a, b, r, e, cnt)
    np.testing.assert_array_equal(r, np.fmod(a, b))  # C's fmod: the dividend's sign
    assert math.copysign(1.0, float(r[3])) == -1.0
    np.testing.assert_allclose(e, [math.erfc(float(v)) for v in a], rtol=2e-6, atol=1e-37)
    assert cnt[0] == 10 + 2 * len(a)


def test_invalid_memref_global_initial_value_prints() -> None:
    """An initial value the verifier rejects (not dense, not `uninitialized`) is printed as it is;
    the printer used to crash on it (AttributeError: StringAttr has no 'type'), so an invalid
    module built in Python could neither be dumped nor shown in a diagnostic."""
    from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, f32
    from xdsl.utils.exceptions import VerifyException

    from nova.ir.dialects.memref import GlobalOp

    op = GlobalOp.create(properties={"sym_name": StringAttr("g"), "type": MemRefType(f32, [2]),
                                     "initial_value": StringAttr("oops")})
    module = ModuleOp([op])
    with pytest.raises(VerifyException, match="initial value must be a dense elements attribute"):
        module.verify()
    assert 'memref.global @g : memref<2xf32> = "oops"' in print_mlir(module)
