"""MLIR's `index` dialect (absent from xDSL 0.74), with MLIR's custom syntax.

Binary ops (`index.add %a, %b`), `index.cmp slt(%a, %b)`, `index.constant 42`,
`index.bool.constant true`, `index.casts`/`index.castu %x : i32 to index` and `index.sizeof`.
"""

from __future__ import annotations

from typing import ClassVar, Self

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, i1
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from nova.ir.gpu.base import NoOperandOp, print_attr_dict


class _BinaryOp(IRDLOperation):
    """`index.<op> %lhs, %rhs`: both operands and the result are `index`."""

    lhs = operand_def(IndexType)
    rhs = operand_def(IndexType)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[IndexType()])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        lhs = parser.parse_operand(IndexType())
        parser.parse_punctuation(",")
        rhs = parser.parse_operand(IndexType())
        attrs = parser.parse_optional_attr_dict()
        op = cls(lhs, rhs)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.lhs, self.rhs], printer.print_operand)
        print_attr_dict(printer, self.attributes)


_BINARY_NAMES = ("add", "sub", "mul", "divs", "divu", "ceildivs", "ceildivu", "floordivs",
                 "rems", "remu", "maxs", "maxu", "mins", "minu", "shl", "shrs", "shru", "and",
                 "or", "xor")


def _make_binary(short: str) -> type[_BinaryOp]:
    cls = type(f"Index{short.capitalize()}Op", (_BinaryOp,), {"name": f"index.{short}",
                                                               "__module__": __name__})
    return irdl_op_definition(cls)


BINARY_OPS: dict[str, type[_BinaryOp]] = {n: _make_binary(n) for n in _BINARY_NAMES}


class CmpPredicate(StrEnum):
    """MLIR's `index::IndexCmpPredicate`."""

    EQ = "eq"
    NE = "ne"
    SLT = "slt"
    SLE = "sle"
    SGT = "sgt"
    SGE = "sge"
    ULT = "ult"
    ULE = "ule"
    UGT = "ugt"
    UGE = "uge"


@irdl_attr_definition
class CmpPredicateAttr(EnumAttribute[CmpPredicate], SpacedOpaqueSyntaxAttribute):
    """`#index<cmp_predicate slt>`."""

    name = "index.cmp_predicate"


@irdl_op_definition
class CmpOp(IRDLOperation):
    """`index.cmp slt(%a, %b)` -> i1."""

    name = "index.cmp"
    lhs = operand_def(IndexType)
    rhs = operand_def(IndexType)
    pred = prop_def(CmpPredicateAttr)
    result = result_def(i1)
    traits = traits_def(Pure())

    def __init__(self, pred: str | CmpPredicate, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(operands=[lhs, rhs], result_types=[i1],
                         properties={"pred": CmpPredicateAttr(CmpPredicate(pred))})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pred = parser.parse_str_enum(CmpPredicate)
        parser.parse_punctuation("(")
        lhs = parser.parse_operand(IndexType())
        parser.parse_punctuation(",")
        rhs = parser.parse_operand(IndexType())
        parser.parse_punctuation(")")
        attrs = parser.parse_optional_attr_dict()
        op = cls(pred, lhs, rhs)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pred.data.value}(")
        printer.print_list([self.lhs, self.rhs], printer.print_operand)
        printer.print_string(")")
        print_attr_dict(printer, self.attributes)


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """`index.constant 42`."""

    name = "index.constant"
    value = prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, value: int) -> None:
        super().__init__(result_types=[IndexType()],
                         properties={"value": IntegerAttr(value, IndexType())})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = parser.parse_optional_attr_dict()
        op = cls(parser.parse_integer())
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self.attributes)
        printer.print_string(f" {self.value.value.data}")

    def verify_(self) -> None:
        if not isinstance(self.value.type, IndexType):
            raise VerifyException("'index.constant' op attribute 'value' failed to satisfy "
                                  "constraint: index attribute")


@irdl_op_definition
class BoolConstantOp(IRDLOperation):
    """`index.bool.constant true`."""

    name = "index.bool.constant"
    value = prop_def(IntegerAttr)
    result = result_def(i1)
    traits = traits_def(Pure())

    def __init__(self, value: bool) -> None:
        super().__init__(result_types=[i1], properties={"value": IntegerAttr(int(value), i1)})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = parser.parse_optional_attr_dict()
        op = cls(parser.parse_boolean())
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self.attributes)
        printer.print_string(" true" if self.value.value.data else " false")


class _CastOp(IRDLOperation):
    """`index.casts`/`index.castu %x : i32 to index` (one side must be index)."""

    input = operand_def(IntegerType | IndexType)
    output = result_def(IntegerType | IndexType)  # type: ignore[arg-type]  # xDSL accepts unions
    traits = traits_def(Pure())
    SIGNED: ClassVar[bool] = True

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value = parser.resolve_operand(operand, parser.parse_type())
        parser.parse_keyword("to")
        out: Attribute = parser.parse_type()
        return cls.create(operands=[value], result_types=[out], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" to ")
        printer.print_attribute(self.output.type)

    def verify_(self) -> None:
        if isinstance(self.input.type, IndexType) == isinstance(self.output.type, IndexType):
            raise VerifyException(f"'{self.name}' op operand type '{self.input.type}' and "
                                  f"result type '{self.output.type}' are cast incompatible")


@irdl_op_definition
class CastSOp(_CastOp):
    name = "index.casts"


@irdl_op_definition
class CastUOp(_CastOp):
    name = "index.castu"
    SIGNED: ClassVar[bool] = False


@irdl_op_definition
class SizeOfOp(NoOperandOp):
    """`index.sizeof`: the bit width of `index` on the target (64 on Nova's targets)."""

    name = "index.sizeof"
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self) -> None:
        # NoOperandOp.__init__ builds a result-less op; this one has its `index` result.
        IRDLOperation.__init__(self, result_types=[IndexType()])


INDEX = Dialect(
    "index",
    [*BINARY_OPS.values(), CmpOp, ConstantOp, BoolConstantOp, CastSOp, CastUOp, SizeOfOp],
    [CmpPredicateAttr],
)
