"""`memref` ops whose MLIR custom syntax xDSL 0.74 lacks, as subclasses of xDSL's classes.

`memref.global` (xDSL also requires `sym_visibility`/`initial_value`, which MLIR leaves optional),
`memref.cast`, `memref.copy`, `memref.rank` and `memref.atomic_rmw` get MLIR's exact syntax;
`MEMREF` is xDSL's memref dialect with these classes swapped in. Subclassing keeps
`isinstance(op, xdsl.dialects.memref.CastOp)` true for code written against xDSL.

`memref.generic_atomic_rmw` and its terminator `memref.atomic_yield`, which xDSL lacks, are
defined here with MLIR's syntax and verifier (the kernel frontend's `nova.atomic_cas` builds them;
the LLVM emitter lowers them to a compare-and-swap loop):

    %old = memref.generic_atomic_rmw %m[%i] : memref<?xi32> {
    ^bb0(%current: i32):
      %new = arith.addi %current, %c1 : i32
      memref.atomic_yield %new : i32
    }
"""

from __future__ import annotations

import io
from typing import Self

from xdsl.dialects import memref as xmemref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrankedMemRefType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoMemoryEffect, get_effects
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import print_attr_dict

ATOMIC_RMW_KINDS: tuple[str, ...] = (
    "addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu", "minimumf",
    "minnumf", "mins", "minu", "mulf", "muli", "ori", "xori",
)
"""MLIR's `arith::AtomicRMWKind` keywords; the index is the `kind` property's i64 value."""


def atomic_rmw_kind_name(op: xmemref.AtomicRMWOp) -> str:
    """The keyword (`addf`, `maxs`, ...) of an atomic_rmw op's `kind` property."""
    return ATOMIC_RMW_KINDS[op.kind.value.data]


class GlobalOp(xmemref.GlobalOp):
    """`memref.global "private" constant @g : memref<4xf32> = dense<...> {alignment = 64}`.

    Unlike xDSL's class, `sym_visibility` and `initial_value` are optional (as in MLIR): absent
    visibility means public, absent initial value means an external declaration.
    """

    name = "memref.global"

    @property
    def sym_visibility(self) -> StringAttr | None:  # type: ignore[override]
        attr = self.properties.get("sym_visibility")
        return attr if isinstance(attr, StringAttr) else None

    @property
    def initial_value(self) -> Attribute | None:  # type: ignore[override]
        return self.properties.get("initial_value")

    def verify_(self) -> None:
        for key in ("sym_name", "type"):
            if key not in self.properties:
                raise VerifyException(f"'memref.global' op requires property '{key}'")
        if not isinstance(self.properties["sym_name"], StringAttr):
            raise VerifyException("'memref.global' op sym_name must be a string")
        type_ = self.properties["type"]
        if not isinstance(type_, MemRefType):
            raise VerifyException(f"'memref.global' op type must be a memref, got {type_}")
        init = self.initial_value
        if init is not None and not isinstance(init, UnitAttr | DenseIntOrFPElementsAttr):
            raise VerifyException("'memref.global' op initial value must be a dense elements "
                                  "attribute or 'uninitialized'")
        if isinstance(init, DenseIntOrFPElementsAttr) and (
                tuple(init.get_shape()) != tuple(type_.get_shape())):
            raise VerifyException("'memref.global' op initial value shape does not match the "
                                  "memref type")
        align = self.properties.get("alignment")
        if isinstance(align, IntegerAttr):
            n = align.value.data
            if n <= 0 or n & (n - 1):
                raise VerifyException(f"'memref.global' op alignment {n} is not a power of 2")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        props: dict[str, Attribute] = {}
        visibility = parser.parse_optional_str_literal()
        if visibility is not None:
            props["sym_visibility"] = StringAttr(visibility)
        if parser.parse_optional_keyword("constant") is not None:
            props["constant"] = UnitAttr()
        props["sym_name"] = parser.parse_symbol_name()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error(f"memref.global type must be a memref type, got {type_}")
        props["type"] = type_
        if parser.parse_optional_punctuation("=") is not None:
            if parser.parse_optional_keyword("uninitialized") is not None:
                props["initial_value"] = UnitAttr()
            else:
                parser.parse_keyword("dense")
                tensor = TensorType(type_.element_type, type_.get_shape())
                props["initial_value"] = parser.parse_dense_int_or_fp_elements_attr(tensor)
        attrs = parser.parse_optional_attr_dict()
        if "alignment" in attrs:
            props["alignment"] = attrs.pop("alignment")
        return cls.create(properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        if self.sym_visibility is not None:
            printer.print_string(" ")
            printer.print_string_literal(self.sym_visibility.data)
        if self.constant is not None:
            printer.print_string(" constant")
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" : ")
        printer.print_attribute(self.type)
        init = self.initial_value
        if isinstance(init, UnitAttr):
            printer.print_string(" = uninitialized")
        elif isinstance(init, DenseIntOrFPElementsAttr):
            printer.print_string(" = ")
            printer.print_string(_attr_without_type(printer, init))
        elif init is not None:  # not valid (see verify_), printed as is
            printer.print_string(" = ")
            printer.print_attribute(init)
        shown = dict(self.attributes)
        if self.alignment is not None:
            shown["alignment"] = self.alignment
        print_attr_dict(printer, shown)


def _attr_without_type(printer: Printer, attr: DenseIntOrFPElementsAttr) -> str:
    """`dense<...>` without its trailing `: tensor<...>` (the op's type implies it)."""
    stream = io.StringIO()
    sub = type(printer)(stream=stream)
    sub.print_attribute(attr)
    text = stream.getvalue()
    tail = io.StringIO()
    type(printer)(stream=tail).print_attribute(attr.type)
    suffix = " : " + tail.getvalue()
    return text[: -len(suffix)] if text.endswith(suffix) else text


class CastOp(xmemref.CastOp):
    """`memref.cast %m : memref<?xf32> to memref<*xf32>`."""

    name = "memref.cast"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source = parser.resolve_operand(operand, parser.parse_type())
        parser.parse_keyword("to")
        result = parser.parse_type()
        return cls.create(operands=[source], result_types=[result], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dest.type)


class CopyOp(xmemref.CopyOp):
    """`memref.copy %a, %b : memref<4xf32> to memref<4xf32>`."""

    name = "memref.copy"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        dst = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        dst_type = parser.parse_type()
        return cls.create(operands=[parser.resolve_operand(src, src_type),
                                    parser.resolve_operand(dst, dst_type)], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.source, self.destination], printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.destination.type)


@irdl_op_definition
class RankOp(IRDLOperation):
    """`memref.rank %m : memref<?xf32>` (or `memref<*xf32>`: MLIR accepts unranked memrefs,
    xDSL's op only ranked ones)."""

    name = "memref.rank"
    source = operand_def(MemRefType | UnrankedMemRefType)
    rank = result_def(IndexType)
    traits = traits_def(NoMemoryEffect())

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source = parser.resolve_operand(operand, parser.parse_type())
        return cls.create(operands=[source], result_types=[IndexType()], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)


class ExtractAlignedPointerAsIndexOp(xmemref.ExtractAlignedPointerAsIndexOp):
    """`memref.extract_aligned_pointer_as_index %m : memref<..> -> index`: the address of the
    memref's aligned pointer (for a workgroup memref on a GPU: its shared memory address, as
    wgmma matrix descriptors need it)."""

    name = "memref.extract_aligned_pointer_as_index"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        source = parser.resolve_operand(operand, parser.parse_type())
        parser.parse_punctuation("->")
        result = parser.parse_type()
        attrs = parser.parse_optional_attr_dict()
        return cls.create(operands=[source], result_types=[result], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.aligned_pointer.type)
        print_attr_dict(printer, self.attributes)


class AtomicRMWOp(xmemref.AtomicRMWOp):
    """`memref.atomic_rmw addf %v, %m[%i] : (f32, memref<?xf32>) -> f32`."""

    name = "memref.atomic_rmw"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = parser.parse_keyword_in(ATOMIC_RMW_KINDS, " (an atomic_rmw kind)")
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mem = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType()))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        value_v, mem_v = parser.resolve_operands([value, mem], ftype.inputs.data, pos)
        return cls.create(
            operands=[value_v, mem_v, *indices], result_types=list(ftype.outputs.data),
            properties={"kind": IntegerAttr(ATOMIC_RMW_KINDS.index(kind), i64)},
            attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {atomic_rmw_kind_name(self)} ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.memref)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("]")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        printer.print_list([self.value.type, self.memref.type], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        kind = self.kind.value.data
        if not 0 <= kind < len(ATOMIC_RMW_KINDS):
            raise VerifyException(f"'memref.atomic_rmw' op invalid kind {kind}")
        name = ATOMIC_RMW_KINDS[kind]
        from xdsl.dialects.builtin import AnyFloat
        is_float = isinstance(self.value.type, AnyFloat)
        if name.endswith("f") and not is_float:
            raise VerifyException(f"'memref.atomic_rmw' op {name} expects a floating-point "
                                  f"type, got {self.value.type}")
        if name[-1] in "isu" and name != "assign" and is_float:
            raise VerifyException(f"'memref.atomic_rmw' op {name} expects an integer type, "
                                  f"got {self.value.type}")
        mem = self.memref.type
        if isinstance(mem, MemRefType) and len(self.indices) != mem.get_num_dims():
            raise VerifyException("'memref.atomic_rmw' op expects the number of subscripts "
                                  "to be equal to memref rank")


@irdl_op_definition
class GenericAtomicRMWOp(IRDLOperation):
    """`memref.generic_atomic_rmw %m[%i] : memref<?xi32> { ^bb0(%cur: i32): ... }`: atomically
    replace the element by what the region computes from its current value (the region's one
    argument); the result is the value it replaced."""

    name = "memref.generic_atomic_rmw"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()
    atomic_body = region_def("single_block")

    def __init__(self, ref: SSAValue, indices: list[SSAValue], element: Attribute) -> None:
        super().__init__(operands=[ref, indices], result_types=[element],
                         regions=[Region(Block(arg_types=[element]))])

    @property
    def current(self) -> SSAValue:
        """The region's argument: the element's current value."""
        return self.atomic_body.blocks[0].args[0]

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        mem = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType()))
        parser.parse_punctuation(":")
        pos = parser.pos
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error(f"'memref.generic_atomic_rmw' expects a memref type, got {type_}",
                               pos, parser.pos)
        body = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        return cls.create(operands=[parser.resolve_operand(mem, type_), *indices],
                          result_types=[type_.element_type], regions=[body], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.memref)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("] : ")
        printer.print_attribute(self.memref.type)
        printer.print_string(" ")
        printer.print_region(self.atomic_body, print_entry_block_args=True)
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        ty = self.memref.type
        assert isinstance(ty, MemRefType)
        if self.result.type != ty.element_type:
            raise VerifyException("'memref.generic_atomic_rmw' op result type must be the "
                                  "memref's element type")
        if len(self.indices) != ty.get_num_dims():  # stricter than upstream, which lowers
            # a wrong count to an invalid address computation
            raise VerifyException("'memref.generic_atomic_rmw' op expects the number of "
                                  "subscripts to be equal to memref rank")
        block = self.atomic_body.blocks[0]
        if len(block.args) != 1:
            raise VerifyException("'memref.generic_atomic_rmw' op expected single number of "
                                  "entry block arguments")
        if block.args[0].type != self.result.type:
            raise VerifyException("'memref.generic_atomic_rmw' op expected block argument of "
                                  "the same type result type")
        for inner in block.ops:
            effects = get_effects(inner) if not inner.has_trait(IsTerminator) else set()
            if effects:  # unknown (None) passes: xDSL does not model every op's effects
                raise VerifyException("body of 'memref.generic_atomic_rmw' should contain only "
                                      "operations with no side effects")


@irdl_op_definition
class AtomicYieldOp(IRDLOperation):
    """`memref.atomic_yield %new : i32`: the value a generic_atomic_rmw region stores."""

    name = "memref.atomic_yield"
    result = operand_def()
    traits = traits_def(IsTerminator(), HasParent(GenericAtomicRMWOp))

    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])

    def verify_(self) -> None:
        parent = self.parent_op()
        if isinstance(parent, GenericAtomicRMWOp) and self.result.type != parent.result.type:
            raise VerifyException(f"'memref.atomic_yield' op types mismatch between yield op: "
                                  f"'{self.result.type}' and its parent: "
                                  f"'{parent.result.type}'")


_REPLACEMENTS = {op.name: op for op in (GlobalOp, CastOp, CopyOp, RankOp, AtomicRMWOp,
                                         ExtractAlignedPointerAsIndexOp)}

MEMREF = Dialect(
    "memref",
    [*(_REPLACEMENTS.get(op.name, op) for op in xmemref.MemRef.operations),
     GenericAtomicRMWOp, AtomicYieldOp],
    list(xmemref.MemRef.attributes),
)
