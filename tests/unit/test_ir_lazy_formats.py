"""nova.ir.lazy_formats: op assembly formats are parsed on first use, with identical results."""

from __future__ import annotations

import pytest
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import PyRDLOpDefinitionError

from nova.ir import lazy_formats
from nova.ir.parser import parse_mlir, print_mlir


def test_installed_by_importing_nova_ir() -> None:
    assert lazy_formats.installed()


def test_format_parsed_only_when_used_and_then_kept() -> None:
    @irdl_op_definition
    class LazyProbeOp(IRDLOperation):
        name = "test.lazy_probe"
        x = operand_def()
        y = result_def()
        assembly_format = "$x attr-dict `:` type($x) `->` type($y)"

    program = LazyProbeOp.print.__closure__[0].cell_contents  # the op's FormatProgram
    assert isinstance(program, lazy_formats.LazyFormatProgram)
    assert program._program is None  # nothing parsed at class definition
    first = program.program()
    assert program.program() is first


def test_bad_format_raises_the_same_error_at_first_use() -> None:
    @irdl_op_definition
    class BadFormatOp(IRDLOperation):
        name = "test.bad_format"
        x = operand_def()
        assembly_format = "$nope attr-dict"

    program = BadFormatOp.print.__closure__[0].cell_contents
    with pytest.raises(PyRDLOpDefinitionError, match="assembly format"):
        program.program()


def test_xdsl_formatted_ops_roundtrip() -> None:
    # arith/math/cf ops print through their declarative formats
    text = """func.func @f(%a: f32, %b: i32) -> f32 {
  %0 = arith.addf %a, %a : f32
  %1 = math.sqrt %0 : f32
  %2 = arith.index_cast %b : i32 to index
  cf.br ^bb1(%1 : f32)
^bb1(%3: f32):
  return %3 : f32
}
"""
    printed = print_mlir(parse_mlir(text, "lazy.mlir"))
    for needle in ("arith.addf %", "math.sqrt %", "arith.index_cast %", ": i32 to index",
                   "cf.br ^bb1("):
        assert needle in printed
    assert print_mlir(parse_mlir(printed, "again.mlir")) == printed
