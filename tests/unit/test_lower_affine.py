"""lower-affine's semantics, run on the CPU: floordiv / mod / ceildiv of negative values, min / max
maps with several results, affine.for with max/min bounds, a step and iter_args, affine.if on
integer sets. Each program is compiled once and called over a grid of inputs; the expectations
are Python's floor arithmetic (`//`, `%`), the definition of affine floordiv and mod.
"""

from __future__ import annotations

from typing import Any

import pytest

from nova.ir.dialects.affine_syntax import format_expr
from nova.ir.parser import parse_mlir, print_mlir
from nova.passes.registry import run_pipeline

_EXPRS = """
func.func @exprs(%x: index, %n: index) -> (index, index, index, index, index, index) {
  %0 = affine.apply affine_map<(d0) -> (d0 floordiv 3)>(%x)
  %1 = affine.apply affine_map<(d0) -> (d0 mod 4)>(%x)
  %2 = affine.apply affine_map<(d0) -> (d0 ceildiv 5)>(%x)
  %3 = affine.min affine_map<(d0)[s0] -> (d0 * 2 - 3, s0, 7)>(%x)[%n]
  %4 = affine.max affine_map<(d0)[s0] -> (d0 * 2 - 3, s0, -7)>(%x)[%n]
  %5 = affine.apply affine_map<(d0)[s0] -> ((d0 - s0 * 2) mod 6 + (d0 + 1) floordiv 2)>(%x)[%n]
  return %0, %1, %2, %3, %4, %5 : index, index, index, index, index, index
}
"""

_LOOPS = """
#lb = affine_map<(d0)[s0] -> (d0, s0 - 4)>
#ub = affine_map<(d0)[s0] -> (d0 + 12, s0 * 2, 30)>
#set = affine_set<(d0)[s0] : (d0 - s0 >= 0, -d0 + 10 >= 0, (d0 + s0) mod 2 == 0)>
func.func @loops(%x: index, %n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %sum = affine.for %i = max #lb(%x)[%n] to min #ub(%x)[%n] step 3
      iter_args(%acc = %c0) -> (index) {
    %next = arith.addi %acc, %i : index
    affine.yield %next : index
  }
  %flag = affine.if #set(%x)[%n] -> index {
    %one = arith.constant 1 : index
    affine.yield %one : index
  } else {
    affine.yield %c0 : index
  }
  return %sum, %flag : index, index
}
"""

VALUES = range(-31, 32)
SYMBOLS = (-6, 0, 5, 13)


@pytest.fixture(scope="module")
def programs() -> Any:
    import nova

    return nova.compile(_LOOPS + _EXPRS, device="cpu")


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def test_expression_semantics(programs: Any) -> None:
    for x in VALUES:
        for n in SYMBOLS:
            expected = (x // 3, x % 4, _ceildiv(x, 5), min(2 * x - 3, n, 7),
                        max(2 * x - 3, n, -7), (x - 2 * n) % 6 + (x + 1) // 2)
            assert tuple(programs.exprs(x, n)) == expected, (x, n)


def test_loop_bounds_and_integer_sets(programs: Any) -> None:
    for x in range(-8, 20, 3):
        for n in SYMBOLS:
            lower, upper = max(x, n - 4), min(x + 12, 2 * n, 30)
            flag = int(x - n >= 0 and 10 - x >= 0 and (x + n) % 2 == 0)
            assert tuple(programs.loops(x, n)) == (sum(range(lower, upper, 3)), flag), (x, n)


def test_lowers_already_outlined_kernels() -> None:
    module = parse_mlir("""
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%buf: memref<64xf32>) kernel {
      %b = gpu.block_id  x
      %t = gpu.thread_id  x
      %v = affine.load %buf[%b * 8 + %t] : memref<64xf32>
      affine.store %v, %buf[%t * 8 + %b] : memref<64xf32>
      gpu.return
    }
  }
}
""")
    run_pipeline(module, "lower-affine")
    names = {op.name for op in module.walk()}
    assert not any(name.startswith("affine.") for name in names)
    assert {"memref.load", "memref.store", "arith.muli"} <= names
    assert "affine" not in print_mlir(module)


def test_module_without_affine_ops_is_unchanged() -> None:
    text = "func.func @f(%a: index) -> index {\n  return %a : index\n}\n"
    module = parse_mlir(text)
    before = print_mlir(module)
    run_pipeline(module, "lower-affine")
    assert print_mlir(module) == before


def _expr(kind: str, lhs: Any, rhs: Any) -> Any:
    from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind

    return AffineBinaryOpExpr(AffineBinaryOpKind[kind], lhs, rhs)


def test_expressions_print_as_mlir() -> None:
    """MLIR's printer sugar (`printAffineExprInternal`), on expressions built without xDSL's
    simplification: subtraction for `* -1` and `* -c` on the right, `- c` for negative
    constants, `-x` for `x * -1`, parentheses only around tighter-binding operands."""
    from xdsl.ir.affine import AffineExpr

    d0, d1, s0 = AffineExpr.dimension(0), AffineExpr.dimension(1), AffineExpr.symbol(0)
    c = AffineExpr.constant
    cases = {
        "-d0": _expr("Mul", d0, c(-1)),
        "d0 - d1": _expr("Add", d0, _expr("Mul", d1, c(-1))),
        "d0 - d1 * 3": _expr("Add", d0, _expr("Mul", d1, c(-3))),
        "s0 - (d0 + d1)": _expr("Add", s0, _expr("Mul", _expr("Add", d0, d1), c(-1))),
        "d0 - 5": _expr("Add", d0, c(-5)),
        "(d0 + 1) floordiv 2": _expr("FloorDiv", _expr("Add", d0, c(1)), c(2)),
        "d0 mod 3 + s0 ceildiv 4": _expr("Add", _expr("Mod", d0, c(3)),
                                         _expr("CeilDiv", s0, c(4))),
        "(d0 * 2) mod 3": _expr("Mod", _expr("Mul", d0, c(2)), c(3)),
        "-(d0 + s0)": _expr("Mul", _expr("Add", d0, s0), c(-1)),
    }
    for text, expr in cases.items():
        assert format_expr(expr) == text
