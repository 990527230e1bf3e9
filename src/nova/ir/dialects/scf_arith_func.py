"""Overrides for `scf`, `arith`, `func` (and, in `nova.ir.dialects.vector`, `vector`) where xDSL
0.74 lacks MLIR's syntax or ops.

* `scf.parallel` gets MLIR's custom form (`scf.parallel (%i) = (%a) to (%b) step (%c)
  init (%x) -> f32 { ... }`).
* `scf.while` with no operands parses and prints as MLIR's `scf.while : () -> () {...} do {...}`
  (the `(...)` initialisation list is optional; empty, it is not printed).
* `cf.switch` prints its cases indented one level, as MLIR.
* `func.func` declarations print without a `-> ()` for no results.
* `arith.index_castui` is added (xDSL has only `arith.index_cast`), and `arith.remf` (the
  remainder of a float division with the dividend's sign, C's fmod; LLVM's frem).
* `vector.print` (`nova.ir.dialects.vector`, kept apart so that programs without vector ops do not
  import xDSL's vector dialect) is replaced by MLIR's op.
"""

from __future__ import annotations

from typing import Any, Self

from xdsl.dialects import arith as xarith
from xdsl.dialects import cf as xcf
from xdsl.dialects import func as xfunc
from xdsl.dialects import scf as xscf
from xdsl.dialects.builtin import IndexType, UnitAttr
from xdsl.dialects.utils import print_func_op_like
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from nova.ir.dialects.vector_ops import ARITH_OPS  # select / cmpi / cmpf on vectors
from nova.ir.gpu.base import print_arrow_types, print_attr_dict


class ParallelOp(xscf.ParallelOp):
    """`scf.parallel` with MLIR's custom syntax."""

    name = "scf.parallel"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        index = IndexType()
        ivs = [u.resolve(index) for u in parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))]
        parser.parse_punctuation("=")

        def bounds() -> list[SSAValue]:
            return parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                                     lambda: parser.parse_operand(index))

        lower = bounds()
        parser.parse_keyword("to")
        upper = bounds()
        parser.parse_keyword("step")
        step = bounds()
        inits_u = []
        types: list[Attribute] = []
        if parser.parse_optional_keyword("init") is not None:
            inits_u = parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                                        parser.parse_unresolved_operand)
        if parser.parse_optional_punctuation("->") is not None:
            parsed = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN,
                                                                parser.parse_type)
            types = list(parsed) if parsed is not None else [parser.parse_type()]
        pos = parser.pos
        inits = parser.resolve_operands(inits_u, types, pos)
        body = parser.parse_region(ivs)
        if body.blocks and (body.block.last_op is None
                            or not isinstance(body.block.last_op, xscf.ReduceOp)):
            body.block.add_op(xscf.ReduceOp())
        attrs = parser.parse_optional_attr_dict()
        op = cls(lower, upper, step, body, inits)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        def group(values: tuple[SSAValue, ...] | list[SSAValue]) -> None:
            printer.print_string("(")
            printer.print_list(values, printer.print_operand)
            printer.print_string(")")

        printer.print_string(" ")
        group(list(self.body.block.args))
        printer.print_string(" = ")
        group(list(self.lowerBound))
        printer.print_string(" to ")
        group(list(self.upperBound))
        printer.print_string(" step ")
        group(list(self.step))
        if self.initVals:
            printer.print_string(" init ")
            group(list(self.initVals))
        print_arrow_types(printer, [r.type for r in self.res])
        printer.print_string(" ")
        printer.print_region(self.body, False, True)
        print_attr_dict(printer, self.attributes)


class ReduceOp(xscf.ReduceOp):
    """`scf.reduce(%a, %b : f32, i32) {...}, {...}`: MLIR separates the reduction regions with
    commas (xDSL's declarative format neither prints nor parses them)."""

    name = "scf.reduce"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        args: list[SSAValue] = []
        if parser.parse_optional_punctuation("(") is not None:
            operands = parser.parse_comma_separated_list(
                Parser.Delimiter.NONE, parser.parse_unresolved_operand)
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            if len(types) != len(operands):
                parser.raise_error(f"scf.reduce: {len(operands)} operands but {len(types)} "
                                   "types")
            args = list(parser.resolve_operands(operands, types, parser.pos))
        regions = []
        region = parser.parse_optional_region()
        if region is not None:
            regions.append(region)
            while parser.parse_optional_punctuation(",") is not None:
                regions.append(parser.parse_region())
        op = cls(args, regions)
        attrs = parser.parse_optional_attr_dict()
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        if len(self.args) != len(self.reductions):
            raise VerifyException(
                f"expects number of reduction regions: {len(self.reductions)} to be the same as "
                f"number of reduction operands: {len(self.args)}")
        super().verify_()

    def print(self, printer: Printer) -> None:
        if not self.args:
            printer.print_string(" ")  # as mlir-opt: `scf.reduce ` (its empty region list)
        if self.args:
            printer.print_string("(")
            printer.print_list(self.args, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)
            printer.print_string(")")
        for i, region in enumerate(self.reductions):
            printer.print_string(", " if i else " ")
            printer.print_region(region)
        print_attr_dict(printer, self.attributes)


class ExecuteRegionOp(xscf.ExecuteRegionOp):
    """`scf.execute_region -> T no_inline {...} {attrs}` as MLIR parses and prints it: one
    result type without parentheses, the `no_inline` unit attribute, the trailing attribute
    dictionary kept (xDSL's parser drops it)."""

    name = "scf.execute_region"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        types: list[Attribute] = []
        if parser.parse_optional_punctuation("->") is not None:
            types = parser.parse_optional_comma_separated_list(
                Parser.Delimiter.PAREN, parser.parse_type) or [parser.parse_type()]
        no_inline = parser.parse_optional_keyword("no_inline") is not None
        op = cls(types, parser.parse_region())
        op.attributes.update(parser.parse_optional_attr_dict())
        if no_inline:
            op.attributes["no_inline"] = UnitAttr()
        return op

    def print(self, printer: Printer) -> None:
        types = self.outs.types
        if types:
            printer.print_string(" -> ")
            if len(types) == 1:
                printer.print_attribute(types[0])
            else:
                printer.print_string("(")
                printer.print_list(types, printer.print_attribute)
                printer.print_string(")")
        if "no_inline" in self.attributes:
            printer.print_string(" no_inline")
        printer.print_string(" ")
        printer.print_region(self.region, print_entry_block_args=False,
                             print_block_terminators=True)
        print_attr_dict(printer, {k: v for k, v in self.attributes.items()
                                  if k != "no_inline"})


class IfOp(xscf.IfOp):
    """`scf.if` whose parser adds the implicit `scf.yield` after an unregistered last op, as
    MLIR's does (xDSL takes an unregistered op for a terminator)."""

    name = "scf.if"

    @staticmethod
    def parse_region_with_yield(parser: Parser) -> Region:
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        block = region.blocks[-1]
        last = block.last_op
        if last is None or not last.has_trait(IsTerminator, value_if_unregistered=False):
            block.add_op(xscf.YieldOp())
        return region


class WhileOp(xscf.WhileOp):
    """`scf.while` whose initialisation list is optional, as in MLIR's parser and printer."""

    name = "scf.while"

    def print(self, printer: Printer) -> None:
        if self.arguments:
            printer.print_string(" (")
            printer.print_list(zip(self.before_region.block.args, self.arguments, strict=True),
                               lambda pair: self._print_pair(printer, pair))
            printer.print_string(")")
        printer.print_string(" : ")
        printer.print_operation_type(self)
        printer.print_string(" ")
        printer.print_region(self.before_region, print_entry_block_args=False)
        printer.print_string(" do ")
        printer.print_region(self.after_region)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        def assignment() -> tuple[Any, Any]:
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return arg, parser.parse_unresolved_operand()

        pairs = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN,
                                                           assignment) or []
        colon = parser.pos
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = function_type.inputs.data
        if len(pairs) != len(inputs):
            parser.raise_error("custom op 'scf.while' expected as many input types as operands "
                               f"(expected {len(pairs)} got {len(inputs)})", colon, colon + 1)
        block_args = tuple(arg.resolve(t) for (arg, _), t in zip(pairs, inputs, strict=True))
        operands = tuple(parser.resolve_operand(operand, t)
                         for (_, operand), t in zip(pairs, inputs, strict=True))
        before = parser.parse_region(block_args)
        parser.parse_characters("do")
        after = parser.parse_region()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(operands, function_type.outputs.data, before, after)
        if attrs is not None:
            op.attributes |= attrs.data
        return op


class FuncOp(xfunc.FuncOp):
    """`func.func`; a declaration without results prints `(T)`, not `(T) -> ()`, as MLIR."""

    name = "func.func"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        op = super().parse(parser)
        # xDSL's parser builds its own FuncOp class; this subclass adds no state, so retyping
        # the fresh op is safe and keeps our printer.
        op.__class__ = cls
        return op  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(f" {self.sym_visibility.data}")
        print_func_op_like(
            printer, self.sym_name, self.function_type, self.body, self.attributes,
            arg_attrs=self.arg_attrs, res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs"),
            print_empty_outputs=False)


class IndexCastUIOp(xarith.IndexCastOp):
    """`arith.index_castui %i : index to i64`: like index_cast but zero-extending."""

    name = "arith.index_castui"

    def verify_(self) -> None:
        if not isinstance(self.input.type, IndexType) ^ isinstance(self.result.type, IndexType):
            raise VerifyException(
                f"'arith.index_castui' op operand type '{self.input.type}' and result type "
                f"'{self.result.type}' are cast incompatible")


@irdl_op_definition
class RemFOp(xarith.FloatingPointLikeBinaryOperation):
    """`%r = arith.remf %a, %b : f32`: a - trunc(a / b) * b, computed exactly (C's fmod)."""

    name = "arith.remf"

    traits = traits_def(Pure())


_XDSL_SWITCH_CASES_PRINT = xcf.SwitchOpCases.print


def _print_switch_cases(self: xcf.SwitchOpCases, printer: Printer, state: Any,
                        op: IRDLOperation) -> None:
    """`cf.switch`'s cases one level deeper than the op, as MLIR prints them (xDSL prints the
    first case at the op's own indentation: its newline comes before the indented list)."""
    printer.print_string(" " * printer.indent_num_spaces)
    _XDSL_SWITCH_CASES_PRINT(self, printer, state, op)


xcf.SwitchOpCases.print = _print_switch_cases  # type: ignore[method-assign]


def _swap(dialect: Dialect, replacements: tuple[type[IRDLOperation], ...],
          extra_attrs: tuple[type[Attribute], ...] = ()) -> Dialect:
    by_name = {op.name: op for op in replacements}
    ops = [by_name.pop(op.name, op) for op in dialect.operations]
    return Dialect(dialect.name, [*ops, *by_name.values()],
                   [*dialect.attributes, *extra_attrs])


SCF = _swap(xscf.Scf, (ParallelOp, ReduceOp, WhileOp, IfOp, ExecuteRegionOp))
ARITH = _swap(xarith.Arith, (IndexCastUIOp, RemFOp, *ARITH_OPS))
FUNC = _swap(xfunc.Func, (FuncOp,))


def __getattr__(name: str) -> object:
    """`vector.print` lives in `nova.ir.dialects.vector` (so parsing a program without vector ops
    never imports xDSL's vector dialect); its names stay importable from here."""
    if name in ("VECTOR", "PrintOp", "Punctuation", "PunctuationAttr"):
        from nova.ir.dialects import vector as vector_ext
        return getattr(vector_ext, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
