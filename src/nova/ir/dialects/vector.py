"""`vector.print` as MLIR defines it, replacing xDSL 0.74's, plus the vector ops xDSL lacks
(`nova.ir.dialects.vector_ops`). `vector.print` has an optional scalar/vector `source`,
`punctuation` (`#vector.punctuation<newline>` by default) and an optional `stringLiteral`
(`vector.print str "text"`).

Kept apart from `nova.ir.dialects.scf_arith_func` so that only programs using the vector dialect
import
xDSL's (a sizeable part of the compiler's import time); `nova.ir.context` loads it on first use.
"""

from __future__ import annotations

from typing import Self

from xdsl.dialects import vector as xvector
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
    prop_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.str_enum import StrEnum

from nova.ir.dialects.scf_arith_func import _swap
from nova.ir.dialects.vector_ops import OPS as EXTRA_OPS
from nova.ir.gpu.base import print_attr_dict


class Punctuation(StrEnum):
    """MLIR's `vector::PrintPunctuation`."""

    NO_PUNCTUATION = "no_punctuation"
    NEWLINE = "newline"
    COMMA = "comma"
    OPEN = "open"
    CLOSE = "close"


@irdl_attr_definition
class PunctuationAttr(EnumAttribute[Punctuation]):
    """`#vector.punctuation<newline>`."""

    name = "vector.punctuation"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Punctuation:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(Punctuation)


@irdl_op_definition
class PrintOp(IRDLOperation):
    """`vector.print %x : f32`, `vector.print str "text"`, `vector.print punctuation <comma>`."""

    name = "vector.print"
    source = opt_operand_def()
    punctuation = prop_def(PunctuationAttr)
    stringLiteral = opt_prop_def(StringAttr)

    def __init__(self, source: SSAValue | None = None,
                 punctuation: Punctuation = Punctuation.NEWLINE,
                 string: str | None = None) -> None:
        props: dict[str, Attribute | None] = {"punctuation": PunctuationAttr(punctuation)}
        if string is not None:
            props["stringLiteral"] = StringAttr(string)
        super().__init__(operands=[[source] if source is not None else []], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        source = None
        operand = parser.parse_optional_unresolved_operand()
        if operand is not None:
            parser.parse_punctuation(":")
            source = parser.resolve_operand(operand, parser.parse_type())
        punct = Punctuation.NEWLINE
        string = None
        while True:
            if parser.parse_optional_keyword("str") is not None:
                string = parser.parse_str_literal()
            elif parser.parse_optional_keyword("punctuation") is not None:
                with parser.in_angle_brackets():
                    punct = parser.parse_str_enum(Punctuation)
            else:
                break
        attrs = parser.parse_optional_attr_dict()
        op = cls(source, punct, string)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.source is not None:
            printer.print_string(" ")
            printer.print_operand(self.source)
            printer.print_string(" : ")
            printer.print_attribute(self.source.type)
        if self.stringLiteral is not None:
            printer.print_string(" str ")
            printer.print_string_literal(self.stringLiteral.data)
        if self.punctuation.data != Punctuation.NEWLINE:
            printer.print_string(f" punctuation <{self.punctuation.data.value}>")
        print_attr_dict(printer, self.attributes)


VECTOR = _swap(xvector.Vector, (PrintOp, *EXTRA_OPS), (PunctuationAttr,))
