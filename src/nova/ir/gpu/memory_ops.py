"""Host-side memory and stream ops of Nova's `gpu` dialect, with MLIR's custom syntax.

`gpu.alloc`, `gpu.dealloc`, `gpu.memcpy`, `gpu.memset`, `gpu.wait`, `gpu.host_register` and
`gpu.host_unregister`. Async variants take `async [%deps]` and return a `!gpu.async.token`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    IndexType,
    MemRefType,
    StridedLayoutAttr,
    UnitAttr,
    UnrankedMemRefType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AsyncTokenType,
    parse_async_dependencies,
    print_async_dependencies,
    print_attr_dict,
)


def _token(is_async: bool) -> list[AsyncTokenType]:
    return [AsyncTokenType()] if is_async else []


@irdl_op_definition
class AllocOp(IRDLOperation):
    """`gpu.alloc async [%t] host_shared (%n) [%sym] : memref<?xf32>`."""

    name = "gpu.alloc"
    asyncDependencies = var_operand_def(AsyncTokenType)
    dynamicSizes = var_operand_def(IndexType)
    symbolOperands = var_operand_def(IndexType)
    hostShared = opt_prop_def(UnitAttr)
    memref = result_def(MemRefType)
    asyncToken = opt_result_def(AsyncTokenType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, type_: MemRefType, dynamic_sizes: Sequence[SSAValue] = (),
                 symbol_operands: Sequence[SSAValue] = (), host_shared: bool = False,
                 async_dependencies: Sequence[SSAValue] = (), is_async: bool = False) -> None:
        super().__init__(
            operands=[list(async_dependencies), list(dynamic_sizes), list(symbol_operands)],
            result_types=[type_, _token(is_async)],
            properties={"hostShared": UnitAttr()} if host_shared else {})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        host_shared = parser.parse_optional_keyword("host_shared") is not None
        index = IndexType()
        sizes = parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                                  lambda: parser.parse_operand(index))
        symbols: list[SSAValue] = []
        if parser.parse_optional_punctuation("[") is not None:
            symbols = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                        lambda: parser.parse_operand(index))
            parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error(f"gpu.alloc result must be a memref type, got {type_}")
        op = cls(type_, sizes, symbols, host_shared, deps, is_async)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_async_dependencies(printer, self.asyncToken is not None, self.asyncDependencies)
        if self.hostShared is not None:
            printer.print_string(" host_shared")
        printer.print_string(" (")
        printer.print_list(self.dynamicSizes, printer.print_operand)
        printer.print_string(")")
        if self.symbolOperands:
            printer.print_string("[")
            printer.print_list(self.symbolOperands, printer.print_operand)
            printer.print_string("]")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)

    def verify_(self) -> None:
        type_ = self.memref.type
        assert isinstance(type_, MemRefType)
        n_dynamic = sum(1 for d in type_.get_shape() if d == DYNAMIC_INDEX)
        if n_dynamic != len(self.dynamicSizes):
            raise VerifyException(
                f"'gpu.alloc' op incorrect number of dynamic sizes, has "
                f"{len(self.dynamicSizes)}, expected {n_dynamic}")
        if len(self.symbolOperands) != layout_symbols(type_):
            raise VerifyException("'gpu.alloc' op symbol operand count does not equal memref "
                                  "symbol count")


def layout_symbols(type_: MemRefType) -> int:
    """The number of symbols of the memref's layout map (MLIR's `getNumSymbols`): an affine
    map's own; a strided layout has one per dynamic offset or stride; the identity none."""
    layout = type_.layout
    if isinstance(layout, AffineMapAttr):
        return layout.data.num_symbols
    if isinstance(layout, StridedLayoutAttr):
        return sum(1 for v in (layout.get_offset(), *layout.get_strides()) if v is None)
    return 0


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """`gpu.dealloc async [%t] %m : memref<?xf32>`."""

    name = "gpu.dealloc"
    asyncDependencies = var_operand_def(AsyncTokenType)
    memref = operand_def(MemRefType)
    asyncToken = opt_result_def(AsyncTokenType)

    def __init__(self, memref: SSAValue, async_dependencies: Sequence[SSAValue] = (),
                 is_async: bool = False) -> None:
        super().__init__(operands=[list(async_dependencies), memref],
                         result_types=[_token(is_async)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(parser.resolve_operand(operand, parser.parse_type()), deps, is_async)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_async_dependencies(printer, self.asyncToken is not None, self.asyncDependencies)
        printer.print_string(" ")
        printer.print_operand(self.memref)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.memref.type)


class _CopyLikeOp(IRDLOperation):
    """`gpu.memcpy`/`gpu.memset`: `async [deps] %dst, %x : dsttype, xtype`.

    Subclasses declare all their operands themselves (IRDL orders a subclass's own fields
    before inherited ones, which would scramble MLIR's operand order).
    """

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        dst = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        other = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        dst_type = parser.parse_type()
        parser.parse_punctuation(",")
        other_type = parser.parse_type()
        op = cls.create(
            operands=[*deps, parser.resolve_operand(dst, dst_type),
                      parser.resolve_operand(other, other_type)],
            result_types=_token(is_async), attributes=attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        deps = self.operands[:-2]
        print_async_dependencies(printer, bool(self.results), deps)
        printer.print_string(" ")
        dst, second = self.operands[-2], self.operands[-1]
        printer.print_list([dst, second], printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_list([dst.type, second.type], printer.print_attribute)


@irdl_op_definition
class MemcpyOp(_CopyLikeOp):
    """`gpu.memcpy async [%t] %dst, %src : memref<..>, memref<..>`."""

    name = "gpu.memcpy"
    asyncDependencies = var_operand_def(AsyncTokenType)
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    asyncToken = opt_result_def(AsyncTokenType)

    def __init__(self, dst: SSAValue, src: SSAValue, async_dependencies: Sequence[SSAValue] = (),
                 is_async: bool = False) -> None:
        super().__init__(operands=[list(async_dependencies), dst, src],
                         result_types=[_token(is_async)])

    def verify_(self) -> None:
        dst, src = self.dst.type, self.src.type
        assert isinstance(dst, MemRefType) and isinstance(src, MemRefType)
        if dst.element_type != src.element_type:
            raise VerifyException("'gpu.memcpy' op arguments have incompatible element type")
        if dst.get_shape() != src.get_shape():
            raise VerifyException("'gpu.memcpy' op arguments have incompatible shape")


@irdl_op_definition
class MemsetOp(_CopyLikeOp):
    """`gpu.memset async [%t] %dst, %value : memref<..>, f32`."""

    name = "gpu.memset"
    asyncDependencies = var_operand_def(AsyncTokenType)
    dst = operand_def(MemRefType)
    value = operand_def()
    asyncToken = opt_result_def(AsyncTokenType)

    def __init__(self, dst: SSAValue, value: SSAValue,
                 async_dependencies: Sequence[SSAValue] = (), is_async: bool = False) -> None:
        super().__init__(operands=[list(async_dependencies), dst, value],
                         result_types=[_token(is_async)])

    def verify_(self) -> None:
        dst = self.dst.type
        assert isinstance(dst, MemRefType)
        if dst.element_type != self.value.type:
            raise VerifyException("'gpu.memset' op failed to verify that all of {dst, value} "
                                  "have same element type")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """`gpu.wait async [%a, %b]`: join tokens (async) or block the host until they complete."""

    name = "gpu.wait"
    asyncDependencies = var_operand_def(AsyncTokenType)
    asyncToken = opt_result_def(AsyncTokenType)

    def __init__(self, async_dependencies: Sequence[SSAValue] = (),
                 is_async: bool = False) -> None:
        super().__init__(operands=[list(async_dependencies)], result_types=[_token(is_async)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        attrs = parser.parse_optional_attr_dict()
        op = cls(deps, is_async)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_async_dependencies(printer, self.asyncToken is not None, self.asyncDependencies)
        print_attr_dict(printer, self.attributes)


class _HostRegisterLike(IRDLOperation):
    """`gpu.host_register %m : memref<*xf32>` and its inverse."""

    value = operand_def(UnrankedMemRefType)

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(parser.resolve_operand(operand, parser.parse_type()))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)


@irdl_op_definition
class HostRegisterOp(_HostRegisterLike):
    name = "gpu.host_register"


@irdl_op_definition
class HostUnregisterOp(_HostRegisterLike):
    name = "gpu.host_unregister"


MEMORY_OPS: tuple[type[IRDLOperation], ...] = (
    AllocOp, DeallocOp, MemcpyOp, MemsetOp, WaitOp, HostRegisterOp, HostUnregisterOp,
)
