"""The dominance error's note says where the operand is defined, in upstream's words
(Verifier.cpp's diagnoseInvalidOperandDominance): the parsed cases are pinned with mlir-opt 22
in tests/filecheck/invalid/verify-dominance.mlir; the ones only a pass can produce (a value of
a child region, or of a sibling region, used outside it) are built here by rewiring a parsed
program."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from nova.errors import VerifyError
from nova.ir.parser import parse_mlir
from nova.ir.verify import verify_all

SOURCE = """func.func @f(%c: i1, %a: i32) {
  scf.if %c {
    %inner = arith.addi %a, %a : i32
  }
  scf.if %c {
    %other = arith.addi %a, %a : i32
  }
  %outer = arith.addi %a, %a : i32
  return
}
"""


def _ops(module: ModuleOp, name: str) -> list[Operation]:
    return [op for op in module.walk() if op.name == name]


def _only_error(module: ModuleOp) -> VerifyError:
    errors = verify_all(module)
    assert len(errors) == 1, [e.render() for e in errors]
    return errors[0]


def test_value_of_a_child_region_used_outside() -> None:
    module = parse_mlir(SOURCE, "dom.mlir")
    inner, _, outer = _ops(module, "arith.addi")
    outer.operands = [inner.results[0], outer.operands[1]]
    error = _only_error(module)
    assert error.message == "operand #0 does not dominate this use"
    assert error.location is not None and (error.location.line, error.location.column) == (8, 12)
    (note, where), = error.notes
    assert note == "operand defined here (op in a child region)"
    assert where is not None and (where.line, where.column) == (3, 14)


def test_value_of_a_sibling_region() -> None:
    module = parse_mlir(SOURCE, "dom.mlir")
    inner, other, _ = _ops(module, "arith.addi")
    other.operands = [inner.results[0], other.operands[1]]
    error = _only_error(module)
    assert error.notes[0][0] == ("operand defined here (op is neither in a parent nor in a "
                                 "child region)")
    assert error.location is not None and error.location.line == 6
