"""The asynchronous-copy ops of MLIR's `nvgpu` dialect (Ampere+ `cp.async`).

A thread starts copies of 4, 8 or 16 bytes from global to shared memory that run while it goes
on computing; it groups the copies it started so far into a *group* and later waits until all
but its N most recent groups have landed. Syntax, property names and verifier messages are
upstream MLIR 22's (`mlir-opt` is the oracle):

- `%t = nvgpu.device_async_copy %src[%i], %dst[%j], 8 (, %n)? {bypassL1}? : memref<..> to
  memref<.., 3>`: copy `dstElements` (a constant) elements of `src` at `[%i]` to `dst` at
  `[%j]`; with `%n` (srcElements) only the first `%n` are read and the rest are zero-filled;
  `bypassL1` (16-byte copies only) asks for PTX's `.cg` (cache in L2 only) instead of `.ca`.
  `dst` must be in shared memory (`3` or `#gpu.address_space<workgroup>`);
- `%g = nvgpu.device_async_create_group %t0, %t1, ...`: PTX `cp.async.commit_group`, which
  groups every copy the thread started and has not grouped yet (the token operands only
  document which; none is allowed);
- `nvgpu.device_async_wait %g {numGroups = 1 : i32}`: PTX `cp.async.wait_group N` (N = numGroups,
  default 0): wait until at most N of the thread's most recent groups are pending. The copies
  are then visible to the waiting thread only; a barrier makes them visible to the block.

The tokens carry no data: the backends lower them to nothing (NVPTX: `nova.backends.nvptx.nvgpu`,
CPU device: `nova.backends.cpu.nvgpu`, where copies complete at once and waits are no-ops).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    UnitAttr,
    i32,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AddressSpace,
    UnprefixedVerifyError,
    address_space_of,
    parse_memref_access,
    print_attr_dict,
    print_memref_access,
)

COPY_BYTES = (4, 8, 16)
"""The sizes one `cp.async` copies."""


@irdl_attr_definition
class DeviceAsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """`!nvgpu.device.async.token`: a started copy or a committed group (carries no data)."""

    name = "nvgpu.device.async.token"


def element_bits(ty: Attribute) -> int | None:
    """The bit width of a memref element type (None for types without one)."""
    if isinstance(ty, IntegerType):
        return ty.width.data
    if isinstance(ty, IndexType):
        return 64
    if isinstance(ty, AnyFloat):
        return ty.bitwidth
    return None


def _unit_stride_last(ty: MemRefType) -> bool:
    """MLIR's `isLastDimUnitStride`: the innermost dimension is contiguous."""
    if isinstance(ty.layout, NoneAttr):
        return True
    strides = ty.layout.get_strides()
    return strides is not None and len(strides) > 0 and strides[-1] == 1


def is_shared(ty: MemRefType) -> bool:
    """Whether a memref lives in shared memory (`3` or `#gpu.address_space<workgroup>`)."""
    return address_space_of(ty.memory_space) == AddressSpace.WORKGROUP


def type_text(ty: Attribute) -> str:
    """A type as MLIR prints it (for messages)."""
    import io

    from nova.ir.printer import NovaPrinter

    stream = io.StringIO()
    NovaPrinter(stream=stream).print_attribute(ty)
    return stream.getvalue()


@irdl_op_definition
class DeviceAsyncCopyOp(IRDLOperation):
    """`%t = nvgpu.device_async_copy %src[%i], %dst[%j], 8 (, %srcElements)? {bypassL1}? :
    memref<...> to memref<..., 3>`."""

    name = "nvgpu.device_async_copy"
    dst = operand_def(MemRefType)
    dstIndices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    srcIndices = var_operand_def(IndexType)
    srcElements = opt_operand_def(IndexType)
    dstElements = prop_def(IntegerAttr)
    bypassL1 = opt_prop_def(UnitAttr)
    asyncToken = result_def(DeviceAsyncTokenType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], dst_elements: int,
                 src_elements: SSAValue | None = None, bypass_l1: bool = False) -> None:
        props: dict[str, Attribute] = {"dstElements": IntegerAttr(dst_elements, IndexType())}
        if bypass_l1:
            props["bypassL1"] = UnitAttr()
        super().__init__(operands=[dst, list(dst_indices), src, list(src_indices),
                                   [] if src_elements is None else [src_elements]],
                         result_types=[DeviceAsyncTokenType()], properties=props)

    @property
    def elements(self) -> int:
        """dstElements as an int."""
        return self.dstElements.value.data

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        src, src_idx = parse_memref_access(parser)
        parser.parse_punctuation(",")
        dst, dst_idx = parse_memref_access(parser)
        parser.parse_punctuation(",")
        count = parser.parse_integer(allow_boolean=False, allow_negative=False)
        src_elements = None
        if parser.parse_optional_punctuation(",") is not None:
            src_elements = parser.parse_unresolved_operand()
        attrs = dict(parser.parse_optional_attr_dict())
        bypass = "bypassL1" in attrs
        attrs.pop("bypassL1", None)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        dst_type = parser.parse_type()
        index = IndexType()
        op = cls(parser.resolve_operand(dst, dst_type),
                 [parser.resolve_operand(i, index) for i in dst_idx],
                 parser.resolve_operand(src, src_type),
                 [parser.resolve_operand(i, index) for i in src_idx], count,
                 None if src_elements is None else parser.resolve_operand(src_elements, index),
                 bypass)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_memref_access(printer, self.src, self.srcIndices)
        printer.print_string(", ")
        print_memref_access(printer, self.dst, self.dstIndices)
        printer.print_string(f", {self.elements}")
        if self.srcElements is not None:
            printer.print_string(", ")
            printer.print_operand(self.srcElements)
        extra: dict[str, Attribute] = dict(self.attributes)
        if self.bypassL1 is not None:
            extra["bypassL1"] = self.bypassL1
        print_attr_dict(printer, extra)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dst.type)

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if not _unit_stride_last(src):
            raise UnprefixedVerifyError("source memref most minor dim must have unit stride")
        if not _unit_stride_last(dst):
            raise UnprefixedVerifyError("destination memref most minor dim must have unit "
                                        "stride")
        if not is_shared(dst):
            raise UnprefixedVerifyError("destination memref must have a memory space attribute "
                                        "of IntegerAttr(3) or gpu::AddressSpaceAttr(Workgroup)")
        if src.element_type != dst.element_type:
            raise UnprefixedVerifyError("source and destination must have the same element "
                                        "type")
        for what, ty, indices in (("source", src, self.srcIndices),
                                  ("destination", dst, self.dstIndices)):
            if len(indices) != ty.get_num_dims():
                raise VerifyException(f"'{self.name}' op expected {ty.get_num_dims()} {what} "
                                      f"indices, got {len(indices)}")
        self._verify_size(dst)

    def _verify_size(self, dst: MemRefType) -> None:
        width = element_bits(dst.element_type) or 0
        count = self.elements
        if width * count // 8 not in COPY_BYTES:
            allowed = [str(bits // width) for bits in (32, 64, 128) if width and bits // width]
            raise UnprefixedVerifyError(
                f"Requested copy elements is {count} with width {width}. But copy elements "
                f"could be one of {', '.join(allowed)}.")
        if self.bypassL1 is not None and width * count // 8 != 16:
            raise VerifyException(
                f"'{self.name}' op bypassL1 does not satify alignment for '{type_text(dst)}' with "
                f"destination element {count}. Unset bypassL1, or set destination element to "
                f"{128 // width}")


@irdl_op_definition
class DeviceAsyncCreateGroupOp(IRDLOperation):
    """`%g = nvgpu.device_async_create_group %t0, %t1`: commit the thread's pending copies as
    one group (PTX `cp.async.commit_group`)."""

    name = "nvgpu.device_async_create_group"
    inputTokens = var_operand_def(DeviceAsyncTokenType)
    asyncToken = result_def(DeviceAsyncTokenType)

    def __init__(self, tokens: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[list(tokens)], result_types=[DeviceAsyncTokenType()])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        tokens = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        attrs = parser.parse_optional_attr_dict()
        op = cls([parser.resolve_operand(t, DeviceAsyncTokenType()) for t in tokens])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")  # upstream prints the space without tokens too
        if self.inputTokens:
            printer.print_list(self.inputTokens, printer.print_operand)
        print_attr_dict(printer, self.attributes)


@irdl_op_definition
class DeviceAsyncWaitOp(IRDLOperation):
    """`nvgpu.device_async_wait %g {numGroups = 1 : i32}`: wait until at most numGroups
    (default 0) of the thread's groups are pending (PTX `cp.async.wait_group`)."""

    name = "nvgpu.device_async_wait"
    asyncDependencies = operand_def(DeviceAsyncTokenType)
    numGroups = opt_prop_def(IntegerAttr)

    def __init__(self, token: SSAValue, num_groups: int | None = None) -> None:
        props: dict[str, Attribute] = {}
        if num_groups is not None:
            props["numGroups"] = IntegerAttr(num_groups, i32)
        super().__init__(operands=[token], properties=props)

    @property
    def groups(self) -> int:
        """numGroups, 0 when absent."""
        return 0 if self.numGroups is None else self.numGroups.value.data

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        token = parser.parse_unresolved_operand()
        attrs = dict(parser.parse_optional_attr_dict())
        groups = attrs.pop("numGroups", None)
        op = cls(parser.resolve_operand(token, DeviceAsyncTokenType()))
        if groups is not None:
            op.properties["numGroups"] = groups
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.asyncDependencies)
        extra: dict[str, Attribute] = dict(self.attributes)
        if self.numGroups is not None:
            extra["numGroups"] = self.numGroups
        print_attr_dict(printer, extra)

    def verify_(self) -> None:
        groups = self.numGroups
        if groups is not None and groups.type != i32:
            raise VerifyException(f"'{self.name}' op attribute 'numGroups' failed to satisfy "
                                  "constraint: 32-bit signless integer attribute")


NVGPU = Dialect("nvgpu", [DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp],
                [DeviceAsyncTokenType])
"""The `nvgpu` ops Nova supports (see the module docstring)."""

__all__ = ["COPY_BYTES", "NVGPU", "DeviceAsyncCopyOp", "DeviceAsyncCreateGroupOp",
           "DeviceAsyncTokenType", "DeviceAsyncWaitOp", "element_bits", "is_shared", "type_text"]
