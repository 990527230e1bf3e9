"""Types, enum attributes and shared syntax helpers of Nova's `gpu` dialect.

The enum attributes print as MLIR does (`#gpu<dim x>`, `#gpu<all_reduce_op add>`,
`#gpu<shuffle_mode xor>`), so generic-form text from `mlir-opt` parses unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Self

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import IRDLOperation, irdl_attr_definition
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


@irdl_attr_definition
class AsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """`!gpu.async.token`: orders asynchronous GPU work (a stream/event on CUDA)."""

    name = "gpu.async.token"


class Dimension(StrEnum):
    """The `x`/`y`/`z` dimension of an index op."""

    X = "x"
    Y = "y"
    Z = "z"


class AllReduceOperation(StrEnum):
    """MLIR's `gpu::AllReduceOperation` keywords."""

    ADD = "add"
    MUL = "mul"
    MINUI = "minui"
    MINSI = "minsi"
    MINNUMF = "minnumf"
    MAXUI = "maxui"
    MAXSI = "maxsi"
    MAXNUMF = "maxnumf"
    AND = "and"
    OR = "or"
    XOR = "xor"
    MINIMUMF = "minimumf"
    MAXIMUMF = "maximumf"


class ShuffleMode(StrEnum):
    """MLIR's `gpu::ShuffleMode` keywords."""

    XOR = "xor"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


@irdl_attr_definition
class DimensionAttr(EnumAttribute[Dimension], SpacedOpaqueSyntaxAttribute):
    """`#gpu<dim x>`."""

    name = "gpu.dim"


@irdl_attr_definition
class AllReduceOperationAttr(EnumAttribute[AllReduceOperation], SpacedOpaqueSyntaxAttribute):
    """`#gpu<all_reduce_op add>`."""

    name = "gpu.all_reduce_op"


@irdl_attr_definition
class ShuffleModeAttr(EnumAttribute[ShuffleMode], SpacedOpaqueSyntaxAttribute):
    """`#gpu<shuffle_mode xor>`."""

    name = "gpu.shuffle_mode"


class AddressSpace(StrEnum):
    """MLIR's `gpu::AddressSpace`: where a memref lives (numeric spaces 1, 3, 5 on NVPTX)."""

    GLOBAL = "global"
    WORKGROUP = "workgroup"
    PRIVATE = "private"


@irdl_attr_definition
class AddressSpaceAttr(EnumAttribute[AddressSpace]):
    """`#gpu.address_space<workgroup>` (a memref memory space)."""

    name = "gpu.address_space"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> AddressSpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(AddressSpace)


NUMERIC_ADDRESS_SPACES = {AddressSpace.GLOBAL: 1, AddressSpace.WORKGROUP: 3,
                          AddressSpace.PRIVATE: 5}
"""The NVPTX numbering MLIR uses for the symbolic spaces (and for plain integer spaces)."""


def address_space_of(memory_space: Attribute) -> AddressSpace | None:
    """The gpu address space a memref memory space denotes (`3` or `#gpu.address_space<...>`),
    or None for the default (host/global) space or an unknown one."""
    if isinstance(memory_space, AddressSpaceAttr):
        return memory_space.data
    if isinstance(memory_space, IntegerAttr):
        for space, number in NUMERIC_ADDRESS_SPACES.items():
            if memory_space.value.data == number:
                return space
    return None


def verify_attributions(op_name: str, args: Iterable[SSAValue], space: AddressSpace) -> None:
    """MLIR's rule: attributions are memrefs, and a symbolic memory space must match `space`
    (numeric spaces are taken as already lowered and not checked)."""
    from xdsl.dialects.builtin import MemRefType

    for arg in args:
        if not isinstance(arg.type, MemRefType):
            raise VerifyException(f"'{op_name}' op expected memref type in attribution, got "
                                  f"{arg.type}")
        declared = arg.type.memory_space
        if isinstance(declared, AddressSpaceAttr) and declared.data != space:
            raise VerifyException(f"'{op_name}' op expected memory space {space.value} in "
                                  "attribution")


INTEGER_ONLY_REDUCTIONS = frozenset({
    AllReduceOperation.MINUI, AllReduceOperation.MINSI, AllReduceOperation.MAXUI,
    AllReduceOperation.MAXSI, AllReduceOperation.AND, AllReduceOperation.OR,
    AllReduceOperation.XOR,
})
FLOAT_ONLY_REDUCTIONS = frozenset({
    AllReduceOperation.MINNUMF, AllReduceOperation.MAXNUMF, AllReduceOperation.MINIMUMF,
    AllReduceOperation.MAXIMUMF,
})


class UnprefixedVerifyError(VerifyException):
    """A verifier message upstream emits with `emitError` (no `'op.name' op` prefix); the
    verifier (nova.ir.verify) reports it as it is."""

    unprefixed = True


def verify_reduction_type(op: AllReduceOperation, type_: Attribute, what: str,
                          shown: Attribute | None = None) -> None:
    """MLIR's rule: integer-only reductions need an integer type, float-only a float type.
    `shown`: the type the message names (the op's own, e.g. a vector), default `type_`."""
    from xdsl.dialects.builtin import AnyFloat

    is_int = isinstance(type_, IntegerType | IndexType)
    is_float = isinstance(type_, AnyFloat)
    if (op in INTEGER_ONLY_REDUCTIONS and not is_int) or (
            op in FLOAT_ONLY_REDUCTIONS and not is_float):
        raise UnprefixedVerifyError(f"`{op.value}` reduction operation is not compatible with "
                                    f"type '{shown or type_}'")


# ---- syntax helpers shared by the ops ------------------------------------------------------

def parse_async_dependencies(parser: Parser) -> tuple[bool, list[SSAValue]]:
    """Parse MLIR's `custom<AsyncDependencies>`: `(async)? ([%t, ...])?`."""
    is_async = parser.parse_optional_keyword("async") is not None
    deps: list[SSAValue] = []
    if (parser.parse_optional_punctuation("[") is not None
            and parser.parse_optional_punctuation("]") is None):
        deps = parser.parse_comma_separated_list(
            Parser.Delimiter.NONE, lambda: parser.parse_operand(AsyncTokenType()))
        parser.parse_punctuation("]")
    return is_async, deps


def print_async_dependencies(printer: Printer, is_async: bool,
                             deps: Sequence[SSAValue]) -> None:
    """Print `custom<AsyncDependencies>` exactly as MLIR (`async`, then ` [deps]`)."""
    if is_async:
        printer.print_string("async")
    if not deps:
        return
    if is_async:
        printer.print_string(" ")
    printer.print_string("[")
    printer.print_list(deps, printer.print_operand)
    printer.print_string("]")


def resolve_typed(parser: Parser, operands: Sequence[UnresolvedOperand],
                  types: Iterable[Attribute]) -> list[SSAValue]:
    """Resolve parsed operand names against their types."""
    types = list(types)
    if len(types) != len(operands):
        parser.raise_error(f"expected {len(operands)} types but got {len(types)}")
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types, strict=True)]


def print_attr_dict(printer: Printer, attributes: Mapping[str, Attribute],
                    elided: Iterable[str] = (), keyword: bool = False) -> None:
    """Print ` {a = 1, b}` (or ` attributes {...}`) sorted by name, as MLIR's DictionaryAttr."""
    skip = set(elided)
    items = {k: v for k, v in sorted(attributes.items()) if k not in skip}
    if items:
        printer.print_op_attributes(items, print_keyword=keyword)


def print_arrow_types(printer: Printer, types: Sequence[Attribute]) -> None:
    """Print MLIR's optional result list: nothing, ` -> T`, or ` -> (T, U)`."""
    if not types:
        return
    printer.print_string(" -> ")
    if len(types) > 1:
        printer.print_string("(")
    printer.print_list(types, printer.print_attribute)
    if len(types) > 1:
        printer.print_string(")")


def split_properties(attrs: dict[str, Attribute], names: Sequence[str]
                     ) -> dict[str, Attribute]:
    """Move the op's inherent attributes (printed inside `attr-dict`) out of `attrs`."""
    return {name: attrs.pop(name) for name in names if name in attrs}


def parse_memref_access(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    """`%m[%i, %j]` as unresolved operands."""
    ref = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE,
                                                parser.parse_unresolved_operand)
    return ref, indices


def print_memref_access(printer: Printer, ref: SSAValue, indices: Sequence[SSAValue]) -> None:
    """`%m[%i, %j]`."""
    printer.print_operand(ref)
    printer.print_string("[")
    printer.print_list(indices, printer.print_operand)
    printer.print_string("]")


def parse_memref_read(parser: Parser, properties: Sequence[str]) -> tuple[
        list[SSAValue], Attribute, dict[str, Attribute], dict[str, Attribute]]:
    """`%m[%i, %j] {attr-dict} : memref-type -> result-type`, an op reading through a memref:
    its operands (the memref, then the indices), result type, `properties` (moved out of the
    attribute dict) and other attributes."""
    ref, indices = parse_memref_access(parser)
    attrs = dict(parser.parse_optional_attr_dict())
    props = split_properties(attrs, properties)
    parser.parse_punctuation(":")
    src_type = parser.parse_type()
    parser.parse_punctuation("->")
    res_type: Attribute = parser.parse_type()
    operands: list[SSAValue] = [parser.resolve_operand(ref, src_type),
                                *(parser.resolve_operand(i, IndexType()) for i in indices)]
    return operands, res_type, props, attrs


def print_memref_read(printer: Printer, memref: SSAValue, indices: Sequence[SSAValue],
                      attributes: Mapping[str, Attribute], result: Attribute) -> None:
    """The syntax `parse_memref_read` reads."""
    printer.print_string(" ")
    print_memref_access(printer, memref, indices)
    print_attr_dict(printer, attributes)
    printer.print_string(" : ")
    printer.print_attribute(memref.type)
    printer.print_string(" -> ")
    printer.print_attribute(result)


def index_attr(value: int) -> IntegerAttr:
    """An `index`-typed integer attribute."""
    return IntegerAttr(value, IndexType())


class NoOperandOp(IRDLOperation):
    """An op whose custom form is just its name and an optional attribute dictionary
    (`gpu.barrier`, `gpu.terminator`, `index.sizeof`); `cls()` must build the op."""

    def __init__(self) -> None:
        super().__init__()

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = parser.parse_optional_attr_dict()
        op = cls()
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self.attributes)
