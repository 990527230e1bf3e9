"""The host-side `async` dialect: `async.execute` regions, their tokens and values, and groups.

xDSL 0.74 has no `async` dialect. Nova parses and prints the subset that programs such as
upstream's `mlir/test/Integration/GPU/CUDA/async.mlir` write, with MLIR 22's exact custom and
generic syntax, and removes it before outlining with the `async-to-sync` pass
(`nova.passes.async_to_sync`, docs/async.md):

- types `!async.token`, `!async.value<T>`, `!async.group`;
- `%t, %v = async.execute [%deps] (%f as %x: !async.value<T>) -> !async.value<T> {...}` with
  `async.yield %x : T` ending its single block;
- `async.await %t : !async.token` and `%x = async.await %v : !async.value<T>`;
- `%g = async.create_group %n : !async.group`, `%i = async.add_to_group %t, %g : !async.token`,
  `async.await_all %g`.

The coroutine and runtime ops (`async.func`, `async.call`, `async.return`, `async.coro.*`,
`async.runtime.*`) are not defined, so they are rejected where they are written, naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_result_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from nova.errors import VerifyError
from nova.ir.gpu.base import print_arrow_types, print_attr_dict
from nova.ir.locations import location_of, nearest_location


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """`!async.token`: completion of an `async.execute` region (no payload)."""

    name = "async.token"


@irdl_attr_definition
class ValueType(ParametrizedAttribute, TypeAttribute):
    """`!async.value<T>`: a `T` that an `async.execute` region yields."""

    name = "async.value"
    value_type: Attribute


@irdl_attr_definition
class GroupType(ParametrizedAttribute, TypeAttribute):
    """`!async.group`: a set of tokens awaited together by `async.await_all`."""

    name = "async.group"


ASYNC_TYPES = (TokenType, ValueType, GroupType)
"""The types of the dialect (async-to-sync rejects any other op that uses them)."""


# ---- async.execute ------------------------------------------------------------------------


@irdl_op_definition
class ExecuteOp(IRDLOperation):
    """`%token, %values = async.execute [%deps] (%v as %x: !async.value<T>) -> ... {...}`.

    Runs its region once all `dependencies` are ready and every `bodyOperands` value is
    available; the entry block's arguments are the operands' unwrapped values. The first result
    is the region's completion token, the others the values its `async.yield` returns.
    """

    name = "async.execute"
    dependencies = var_operand_def(TokenType)
    bodyOperands = var_operand_def(ValueType)
    token = result_def(TokenType)
    bodyResults = var_result_def(ValueType)
    bodyRegion = region_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, dependencies: Sequence[SSAValue], operands: Sequence[SSAValue],
                 result_types: Sequence[Attribute], body: Region) -> None:
        super().__init__(operands=[list(dependencies), list(operands)],
                         result_types=[TokenType(), list(result_types)], regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        deps: list[SSAValue] = []
        if parser.parse_optional_punctuation("[") is not None and (
                parser.parse_optional_punctuation("]") is None):  # `[]`: no dependencies
            deps = parser.parse_comma_separated_list(
                Parser.Delimiter.NONE, lambda: parser.parse_operand(TokenType()))
            parser.parse_punctuation("]")
        pairs = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: _parse_body_operand(parser)) or []
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->") is not None:
            result_types = _parse_type_list(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword() or None
        body = parser.parse_region([arg for _, arg in pairs])
        operands = [operand for operand, _ in pairs]
        op = cls(deps, operands, result_types, body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        if self.dependencies:
            printer.print_string(" [")
            printer.print_list(self.dependencies, printer.print_operand)
            printer.print_string("]")
        args = self.bodyRegion.blocks[0].args if self.bodyRegion.blocks else ()
        if self.bodyOperands:
            printer.print_string(" (")
            printer.print_list(zip(self.bodyOperands, args, strict=False),
                               lambda pair: _print_body_operand(printer, *pair))
            printer.print_string(")")
        print_arrow_types(printer, [r.type for r in self.bodyResults])
        print_attr_dict(printer, self.attributes, keyword=True)
        printer.print_string(" ")
        printer.print_region(self.bodyRegion, False, True)

    def verify_(self) -> None:
        if len(self.bodyRegion.blocks) != 1:
            raise VerifyException("'async.execute' op expects region #0 to have 1 block")
        block = self.bodyRegion.blocks[0]
        expected = [operand.type.value_type for operand in self.bodyOperands
                    if isinstance(operand.type, ValueType)]
        if [arg.type for arg in block.args] != expected:
            raise VerifyException("'async.execute' op requires the types of unwrapped operands "
                                  "to match the types of the body region arguments")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("'async.execute' op expects its body to end in 'async.yield'")
        _check_yield(self, last)


def _check_yield(execute: ExecuteOp, yield_op: YieldOp) -> None:
    """The yielded values against the execute's value results, with the messages and the
    `region branch point` note of upstream's RegionBranchOpInterface verifier."""
    edge = "'async.execute' op along control flow edge from Operation async.yield to parent: "
    note = (("region branch point", location_of(yield_op)),)
    results = list(execute.bodyResults)
    if len(yield_op.operands) != len(results):
        raise VerifyError(f"{edge}region branch point has {len(yield_op.operands)} operands, "
                          f"but region successor needs {len(results)} inputs",
                          nearest_location(execute), note)
    for index, (value, result) in enumerate(zip(yield_op.operands, results, strict=True)):
        if not isinstance(result.type, ValueType) or result.type.value_type != value.type:
            raise VerifyError(f"{edge}successor operand type #{index} '{value.type}' should "
                              f"match successor input type #{index} '{result.type}'",
                              nearest_location(execute), note)


def _parse_body_operand(parser: Parser) -> tuple[SSAValue, Parser.Argument]:
    """`%value as %arg: !async.value<T>` -> (operand, block argument of type T)."""
    unresolved: UnresolvedOperand = parser.parse_unresolved_operand()
    parser.parse_keyword("as")
    arg = parser.parse_argument(expect_type=False)
    parser.parse_punctuation(":")
    pos = parser.pos
    ty = parser.parse_type()
    if not isinstance(ty, ValueType):
        parser.raise_error(f"'async.execute' operands must be !async.value, not {ty} (Nova "
                           "supports no token operands)", pos, parser.pos)
    return parser.resolve_operand(unresolved, ty), arg.resolve(ty.value_type)


def _print_body_operand(printer: Printer, operand: SSAValue, arg: SSAValue) -> None:
    printer.print_operand(operand)
    printer.print_string(" as ")
    printer.print_operand(arg)
    printer.print_string(": ")
    printer.print_attribute(operand.type)


def _parse_type_list(parser: Parser) -> list[Attribute]:
    """`T` or `(T, ...)`: MLIR's arrow type list."""
    types = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    return list(types) if types is not None else [parser.parse_type()]


@irdl_op_definition
class YieldOp(IRDLOperation):
    """`async.yield %a, %b : T, U`: the values of the enclosing `async.execute`."""

    name = "async.yield"
    operands_ = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, operands: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[list(operands)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands: list[SSAValue] = []
        unresolved = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand)
        if unresolved:
            parser.parse_punctuation(":")
            pos = parser.pos
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            if len(types) != len(unresolved):
                parser.raise_error(f"expected {len(unresolved)} types but got {len(types)}",
                                   pos, parser.pos)
            operands = [parser.resolve_operand(o, t)
                        for o, t in zip(unresolved, types, strict=True)]
        attrs = parser.parse_optional_attr_dict()
        op = cls(operands)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([o.type for o in self.operands], printer.print_attribute)
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), ExecuteOp):
            raise VerifyException("'async.yield' op expects parent op 'async.execute'")


# ---- awaiting and groups ------------------------------------------------------------------


@irdl_op_definition
class AwaitOp(IRDLOperation):
    """`async.await %t : !async.token` / `%x = async.await %v : !async.value<T>`: block until
    the token is ready (and take the value)."""

    name = "async.await"
    operand = operand_def(TokenType | ValueType)
    result = opt_result_def()

    def __init__(self, operand: SSAValue) -> None:
        ty = operand.type
        super().__init__(operands=[operand],
                         result_types=[[ty.value_type] if isinstance(ty, ValueType) else []])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        ty = parser.parse_type()  # a wrong type is the verifier's (upstream's) error
        attrs = parser.parse_optional_attr_dict()
        op = cls(parser.resolve_operand(unresolved, ty))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(" : ")
        printer.print_attribute(self.operand.type)
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        ty = self.operand.type
        want = [ty.value_type] if isinstance(ty, ValueType) else []
        if [r.type for r in self.results] != want:
            raise VerifyException("'async.await' op result type must be the awaited value's "
                                  "type (none for a token)")


@irdl_op_definition
class CreateGroupOp(IRDLOperation):
    """`%g = async.create_group %size : !async.group`: an empty group for `size` tokens."""

    name = "async.create_group"
    size = operand_def(IndexType)
    result = result_def(GroupType)

    def __init__(self, size: SSAValue) -> None:
        super().__init__(operands=[size], result_types=[GroupType()])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        size = parser.parse_operand(IndexType())
        parser.parse_punctuation(":")
        pos = parser.pos
        if not isinstance(parser.parse_type(), GroupType):
            parser.raise_error("'async.create_group' result must be !async.group", pos,
                               parser.pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls(size)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.size)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        print_attr_dict(printer, self.attributes)


@irdl_op_definition
class AddToGroupOp(IRDLOperation):
    """`%i = async.add_to_group %t, %g : !async.token` (or an `!async.value`): add a token or
    value to a group; `%i` is its rank in the group."""

    name = "async.add_to_group"
    operand = operand_def(TokenType | ValueType)
    group = operand_def(GroupType)
    rank = result_def(IndexType)

    def __init__(self, operand: SSAValue, group: SSAValue) -> None:
        super().__init__(operands=[operand, group], result_types=[IndexType()])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        token = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        group = parser.parse_operand(GroupType())
        parser.parse_punctuation(":")
        ty = parser.parse_type()  # a wrong type is the verifier's (upstream's) error
        attrs = parser.parse_optional_attr_dict()
        op = cls(parser.resolve_operand(token, ty), group)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(" : ")
        printer.print_attribute(self.operand.type)
        print_attr_dict(printer, self.attributes)


@irdl_op_definition
class AwaitAllOp(IRDLOperation):
    """`async.await_all %g`: block until every token added to the group is ready."""

    name = "async.await_all"
    operand = operand_def(GroupType)

    def __init__(self, group: SSAValue) -> None:
        super().__init__(operands=[group])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        group = parser.parse_operand(GroupType())
        attrs = parser.parse_optional_attr_dict()
        op = cls(group)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        print_attr_dict(printer, self.attributes)


ASYNC = Dialect("async", [ExecuteOp, YieldOp, AwaitOp, CreateGroupOp, AddToGroupOp, AwaitAllOp],
                [TokenType, ValueType, GroupType])
"""The `async` ops and types Nova supports (see the module docstring)."""

__all__ = ["ASYNC", "ASYNC_TYPES", "AddToGroupOp", "AwaitAllOp", "AwaitOp",
           "CreateGroupOp", "ExecuteOp", "GroupType", "TokenType", "ValueType", "YieldOp"]
