"""Warp-level matrix ops of Nova's `gpu` dialect (MLIR's `gpu.subgroup_mma_*`, tensor-core WMMA).

A `!gpu.mma_matrix<16x16xf16, "AOp">` is an opaque per-warp fragment: the ops below are
collective over the 32 lanes of a warp, and how the fragment's elements are spread over the lanes
is not visible to the program. The ops:

- `gpu.subgroup_mma_load_matrix %m[%i, %j] {leadDimension = 16 : index (, transpose)?}`:
  the tile of the memref at `[%i, %j]`, rows `leadDimension` elements apart (`transpose`: the
  memory holds the tile column-major);
- `gpu.subgroup_mma_store_matrix %d, %m[%i, %j] {leadDimension = ...}`: the inverse (COp only);
- `gpu.subgroup_mma_compute %a, %b, %c {a_transpose?, b_transpose?}`: `a x b + c`;
- `gpu.subgroup_mma_constant_matrix %v`: every element `%v`;
- `gpu.subgroup_mma_elementwise  addf %a, %b`: an element-wise op (`#gpu<mma_element_wise ..>`).

Syntax, property names and verifiers are upstream's (LLVM 22 `mlir-opt` is the oracle), so every
program upstream accepts parses here; upstream allows any 2-D shape and si8/ui8/i32/f16/f32/f64
elements. What the LLVM lowering supports (16x16x16 tiles, f16 A/B, f16 or f32 C) is checked by
`mma_lowering_error`, which the backends report at the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from nova.ir.gpu.base import (
    UnprefixedVerifyError,
    parse_memref_access,
    parse_memref_read,
    print_attr_dict,
    print_memref_access,
    print_memref_read,
    split_properties,
)

MMA_OPERANDS = ("AOp", "BOp", "COp")
"""The fragment kinds: A and B (multiplicands) and C (accumulator / result)."""


@irdl_attr_definition
class MMAMatrixType(ParametrizedAttribute, TypeAttribute):
    """`!gpu.mma_matrix<RxCxT, "AOp"|"BOp"|"COp">`: one warp's opaque matrix fragment."""

    name = "gpu.mma_matrix"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    operand: StringAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, operand: str) -> None:
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element_type,
                         StringAttr(operand))

    def get_shape(self) -> tuple[int, ...]:
        """The fragment's (rows, columns)."""
        return tuple(d.data for d in self.shape.data)

    @property
    def kind(self) -> str:
        """"AOp", "BOp" or "COp"."""
        return self.operand.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        # upstream reports a bad shape or element type at the type's name (after `!gpu.`)
        start = parser.lexer.input.content.rfind("!gpu.mma_matrix", 0, parser.pos)
        start = parser.pos if start < 0 else start + len("!gpu.")
        with parser.in_angle_brackets():
            dims, elem = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            pos = parser.pos
            operand = parser.parse_str_literal()
            if operand not in MMA_OPERANDS:
                parser.raise_error("operand expected to be one of AOp, BOp or COp", pos,
                                   parser.pos)
        if len(dims) != 2:
            parser.raise_error("MMAMatrixType must have exactly two dimensions", start,
                               start + 1)
        if not _is_mma_element(elem):
            parser.raise_error("MMAMatrixType elements must be SI8, UI8, I32, F16, F32, or F64",
                               start, start + 1)
        return (ArrayAttr([IntAttr(d) for d in dims]), elem, StringAttr(operand))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "".join(f"{d}x" for d in self.get_shape()))
        printer.print_attribute(self.element_type)
        printer.print_string(f', "{self.kind}">')

    def verify(self) -> None:
        if len(self.shape.data) != 2:
            raise VerifyException("MMAMatrixType must have exactly two dimensions")
        if self.kind not in MMA_OPERANDS:
            raise VerifyException("operand expected to be one of AOp, BOp or COp")
        if not _is_mma_element(self.element_type):
            raise VerifyException("MMAMatrixType elements must be SI8, UI8, I32, F16, F32, or "
                                  "F64")


def _is_mma_element(ty: Attribute) -> bool:
    """Upstream's element rule: si8, ui8, i32 (signless), f16, f32, f64."""
    if isinstance(ty, Float16Type | Float32Type | Float64Type):
        return True
    if not isinstance(ty, IntegerType):
        return False
    sign = ty.signedness.data
    if ty.width.data == 8:
        return sign in (Signedness.SIGNED, Signedness.UNSIGNED)
    return ty.width.data == 32 and sign == Signedness.SIGNLESS


class MMAElementwiseOp(StrEnum):
    """MLIR's `gpu::MMAElementwiseOp` keywords."""

    ADDF = "addf"
    MULF = "mulf"
    SUBF = "subf"
    MAXF = "maxf"
    MINF = "minf"
    DIVF = "divf"
    ADDI = "addi"
    MULI = "muli"
    SUBI = "subi"
    DIVS = "divs"
    DIVU = "divu"
    NEGATEF = "negatef"
    NEGATES = "negates"
    EXTF = "extf"


@irdl_attr_definition
class MMAElementwiseOpAttr(EnumAttribute[MMAElementwiseOp], SpacedOpaqueSyntaxAttribute):
    """`#gpu<mma_element_wise addf>`."""

    name = "gpu.mma_element_wise"


def _unit_stride_last(ty: MemRefType) -> bool:
    """MLIR's `isLastDimUnitStride`: the innermost dimension is contiguous."""
    if isinstance(ty.layout, NoneAttr):
        return True
    strides = ty.layout.get_strides()
    if not strides:
        return False
    return strides[-1] == 1


_MMA_SCALARS = ("8-bit signless integer or 32-bit signless integer or 16-bit float or 32-bit "
                "float or 64-bit float")
"""Upstream's GPU_MMAMemRef element types (i8, i32, f16, f32, f64, or 1-D vectors of them),
in its constraint message's words."""


def _mma_memory_element(ty: Attribute) -> bool:
    if isinstance(ty, VectorType):
        return ty.get_num_dims() == 1 and _mma_memory_element(ty.element_type)
    if isinstance(ty, IntegerType):
        return ty.width.data in (8, 32) and ty.signedness.data == Signedness.SIGNLESS
    return isinstance(ty, Float16Type | Float32Type | Float64Type)


class _MatrixMemoryOp(IRDLOperation):
    """Shared parts of load_matrix/store_matrix: leadDimension, transpose, the memref access."""

    leadDimension = prop_def(IntegerAttr)
    transpose = opt_prop_def(UnitAttr)

    def _inherent(self) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {"leadDimension": self.leadDimension}
        if self.transpose is not None:
            props["transpose"] = self.transpose
        return {**props, **self.attributes}

    def _check_memref(self, ty: Attribute, which: str) -> None:
        if not isinstance(ty, MemRefType) or not _mma_memory_element(ty.element_type):
            raise VerifyException(f"'{self.name}' op operand #{which} must be memref of "
                                  f"{_MMA_SCALARS} or vector of {_MMA_SCALARS} values of ranks "
                                  f"1 values, but got '{ty}'")
        if not _unit_stride_last(ty):
            role = "source" if self.name.endswith("load_matrix") else "destination"
            raise UnprefixedVerifyError(f"expected {role} memref most minor dim must "
                                  "have unit stride")


@irdl_op_definition
class SubgroupMmaLoadMatrixOp(_MatrixMemoryOp):
    """`%f = gpu.subgroup_mma_load_matrix %m[%i, %j] {leadDimension = 16 : index} :
    memref<..> -> !gpu.mma_matrix<..>`."""

    name = "gpu.subgroup_mma_load_matrix"
    srcMemref = operand_def()
    indices = var_operand_def(IndexType)
    res = result_def(MMAMatrixType)

    def __init__(self, src: SSAValue, indices: Sequence[SSAValue], result_type: Attribute,
                 lead_dimension: int, transpose: bool = False) -> None:
        props: dict[str, Attribute] = {"leadDimension": IntegerAttr(lead_dimension,
                                                                    IndexType())}
        if transpose:
            props["transpose"] = UnitAttr()
        super().__init__(operands=[src, list(indices)], result_types=[result_type],
                         properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands, res_type, props, attrs = parse_memref_read(parser,
                                                             ("leadDimension", "transpose"))
        return cls.create(operands=operands, result_types=[res_type], properties=props,
                          attributes=attrs)

    def print(self, printer: Printer) -> None:
        print_memref_read(printer, self.srcMemref, self.indices, self._inherent(), self.res.type)

    def verify_(self) -> None:
        self._check_memref(self.srcMemref.type, "0")
        kind = self.res.type.kind
        if kind not in MMA_OPERANDS:
            raise VerifyException(f"'{self.name}' op only AOp, BOp and COp can be loaded")


@irdl_op_definition
class SubgroupMmaStoreMatrixOp(_MatrixMemoryOp):
    """`gpu.subgroup_mma_store_matrix %d, %m[%i, %j] {leadDimension = 16 : index} :
    !gpu.mma_matrix<.., "COp">, memref<..>`."""

    name = "gpu.subgroup_mma_store_matrix"
    src = operand_def(MMAMatrixType)
    dstMemref = operand_def()
    indices = var_operand_def(IndexType)

    def __init__(self, src: SSAValue, dst: SSAValue, indices: Sequence[SSAValue],
                 lead_dimension: int, transpose: bool = False) -> None:
        props: dict[str, Attribute] = {"leadDimension": IntegerAttr(lead_dimension,
                                                                    IndexType())}
        if transpose:
            props["transpose"] = UnitAttr()
        super().__init__(operands=[src, dst, list(indices)], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ref, indices = parse_memref_access(parser)
        attrs = dict(parser.parse_optional_attr_dict())
        props = split_properties(attrs, ("leadDimension", "transpose"))
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation(",")
        dst_type = parser.parse_type()
        src = parser.resolve_operand(value, src_type)
        dst = parser.resolve_operand(ref, dst_type)
        idx = [parser.resolve_operand(i, IndexType()) for i in indices]
        return cls.create(operands=[src, dst, *idx], properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string(", ")
        print_memref_access(printer, self.dstMemref, self.indices)
        print_attr_dict(printer, self._inherent())
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(", ")
        printer.print_attribute(self.dstMemref.type)

    def verify_(self) -> None:
        self._check_memref(self.dstMemref.type, "1")
        if self.src.type.kind != "COp":  # type: ignore[attr-defined]
            raise UnprefixedVerifyError("expected the operand matrix being stored to have 'COp' "
                                        "operand type")


@irdl_op_definition
class SubgroupMmaComputeOp(IRDLOperation):
    """`%d = gpu.subgroup_mma_compute %a, %b, %c {a_transpose?, b_transpose?} :
    !gpu.mma_matrix<MxK..,"AOp">, !gpu.mma_matrix<KxN..,"BOp"> -> !gpu.mma_matrix<MxN..,"COp">`
    (the C operand has the result's type)."""

    name = "gpu.subgroup_mma_compute"
    opA = operand_def(MMAMatrixType)
    opB = operand_def(MMAMatrixType)
    opC = operand_def(MMAMatrixType)
    a_transpose = opt_prop_def(UnitAttr)
    b_transpose = opt_prop_def(UnitAttr)
    res = result_def(MMAMatrixType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, a_transpose: bool = False,
                 b_transpose: bool = False) -> None:
        props: dict[str, Attribute] = {}
        if a_transpose:
            props["a_transpose"] = UnitAttr()
        if b_transpose:
            props["b_transpose"] = UnitAttr()
        super().__init__(operands=[a, b, c], result_types=[c.type], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        names = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                  parser.parse_unresolved_operand)
        attrs = dict(parser.parse_optional_attr_dict())
        props = split_properties(attrs, ("a_transpose", "b_transpose"))
        parser.parse_punctuation(":")
        a_type = parser.parse_type()
        parser.parse_punctuation(",")
        b_type = parser.parse_type()
        parser.parse_punctuation("->")
        res_type = parser.parse_type()
        if len(names) != 3:
            parser.raise_error(f"expected 3 operands, got {len(names)}")
        operands = [parser.resolve_operand(n, t)
                    for n, t in zip(names, (a_type, b_type, res_type), strict=True)]
        return cls.create(operands=operands, result_types=[res_type], properties=props,
                          attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.opA, self.opB, self.opC], printer.print_operand)
        props: dict[str, Attribute] = {}
        if self.a_transpose is not None:
            props["a_transpose"] = self.a_transpose
        if self.b_transpose is not None:
            props["b_transpose"] = self.b_transpose
        print_attr_dict(printer, {**props, **self.attributes})
        printer.print_string(" : ")
        printer.print_attribute(self.opA.type)
        printer.print_string(", ")
        printer.print_attribute(self.opB.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        a, b, c = (v.type for v in (self.opA, self.opB, self.opC))
        assert isinstance(a, MMAMatrixType) and isinstance(b, MMAMatrixType)
        assert isinstance(c, MMAMatrixType)
        if (a.kind, b.kind, c.kind) != MMA_OPERANDS:
            raise UnprefixedVerifyError("operands must be in the order AOp, BOp, "
                                  "COp")
        a_shape, b_shape, c_shape = a.get_shape(), b.get_shape(), c.get_shape()
        if self.a_transpose is not None:
            a_shape = a_shape[::-1]
        if self.b_transpose is not None:
            b_shape = b_shape[::-1]
        if a_shape[1] != b_shape[0] or a_shape[0] != c_shape[0] or b_shape[1] != c_shape[1]:
            raise UnprefixedVerifyError("operand shapes do not satisfy matmul "
                                  "constraints")
        if self.res.type != c:
            raise VerifyException(f"'{self.name}' op result type must equal the C operand type")


@irdl_op_definition
class SubgroupMmaConstantMatrixOp(IRDLOperation):
    """`%c = gpu.subgroup_mma_constant_matrix %v : !gpu.mma_matrix<16x16xf32, "COp">`."""

    name = "gpu.subgroup_mma_constant_matrix"
    value = operand_def()
    res = result_def(MMAMatrixType)
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, result_type: MMAMatrixType) -> None:
        super().__init__(operands=[value], result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        value = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        res_type = parser.parse_type()
        if not isinstance(res_type, MMAMatrixType):
            parser.raise_error(f"expected !gpu.mma_matrix type, got {res_type}", pos,
                               parser.pos)
        op = cls(parser.resolve_operand(value, res_type.element_type), res_type)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        elem = self.res.type.element_type
        if self.value.type != elem:
            raise VerifyException(f"'{self.name}' op failed to verify that value type matches "
                                  "element type of mma_matrix")


@irdl_op_definition
class SubgroupMmaElementwiseOp(IRDLOperation):
    """`%r = gpu.subgroup_mma_elementwise  addf %a, %b : (!gpu.mma_matrix<..>,
    !gpu.mma_matrix<..>) -> !gpu.mma_matrix<..>`."""

    name = "gpu.subgroup_mma_elementwise"
    args = var_operand_def(MMAMatrixType)
    opType = prop_def(MMAElementwiseOpAttr)
    res = result_def(MMAMatrixType)
    traits = traits_def(Pure())

    def __init__(self, kind: str | MMAElementwiseOp, args: Sequence[SSAValue],
                 result_type: Attribute) -> None:
        super().__init__(operands=[list(args)], result_types=[result_type],
                         properties={"opType": MMAElementwiseOpAttr(MMAElementwiseOp(kind))})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = parser.parse_str_enum(MMAElementwiseOp)
        names = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                  parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        if len(ftype.inputs.data) != len(names) or len(ftype.outputs.data) != 1:
            parser.raise_error(f"expected {len(names)} operand types and one result type", pos,
                               parser.pos)
        args = [parser.resolve_operand(n, t)
                for n, t in zip(names, ftype.inputs.data, strict=True)]
        op = cls(kind, args, ftype.outputs.data[0])
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f"  {self.opType.data.value} ")
        printer.print_list(self.args, printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.res.type)


MMA_OPS: tuple[type[IRDLOperation], ...] = (
    SubgroupMmaLoadMatrixOp, SubgroupMmaStoreMatrixOp, SubgroupMmaComputeOp,
    SubgroupMmaConstantMatrixOp, SubgroupMmaElementwiseOp,
)
MMA_ATTRS: tuple[type[Attribute], ...] = (MMAMatrixType, MMAElementwiseOpAttr)

# ---- what the LLVM lowering supports ---------------------------------------------------------

SUPPORTED_SHAPE = (16, 16)
"""The only fragment shape the backends lower (the m16n16k16 WMMA shape)."""

UNARY_ELEMENTWISE = frozenset({MMAElementwiseOp.NEGATEF, MMAElementwiseOp.EXTF})
FLOAT_ELEMENTWISE = frozenset({
    MMAElementwiseOp.ADDF, MMAElementwiseOp.MULF, MMAElementwiseOp.SUBF, MMAElementwiseOp.MAXF,
    MMAElementwiseOp.MINF, MMAElementwiseOp.DIVF, MMAElementwiseOp.NEGATEF,
    MMAElementwiseOp.EXTF,
})


def _type_support_error(ty: MMAMatrixType) -> str | None:
    if ty.get_shape() != SUPPORTED_SHAPE:
        shape = "x".join(map(str, ty.get_shape()))
        return (f"!gpu.mma_matrix of shape {shape} is not supported (only 16x16 fragments, the "
                "m16n16k16 WMMA shape, for now)")
    elem = ty.element_type
    if ty.kind in ("AOp", "BOp") and not isinstance(elem, Float16Type):
        return f"{ty.kind} fragments of {elem} are not supported (only f16 A/B operands)"
    if not isinstance(elem, Float16Type | Float32Type):
        return f"COp fragments of {elem} are not supported (only f16 or f32 accumulators)"
    return None


def mma_lowering_error(op: IRDLOperation) -> str | None:
    """Why the LLVM backends cannot lower this subgroup_mma op (None when they can): the
    fragment shapes/element types, a memref element type that differs from the fragment's,
    and integer element-wise kinds."""
    types = [v.type for v in (*op.operands, *op.results) if isinstance(v.type, MMAMatrixType)]
    for ty in types:
        problem = _type_support_error(ty)
        if problem is not None:
            return problem
    if isinstance(op, SubgroupMmaLoadMatrixOp | SubgroupMmaStoreMatrixOp):
        mem = op.srcMemref.type if isinstance(op, SubgroupMmaLoadMatrixOp) else op.dstMemref.type
        frag = op.res.type if isinstance(op, SubgroupMmaLoadMatrixOp) else op.src.type
        assert isinstance(mem, MemRefType) and isinstance(frag, MMAMatrixType)
        if mem.element_type != frag.element_type:
            return (f"memref element type {mem.element_type} differs from the fragment's "
                    f"{frag.element_type}")
        if len(op.indices) != mem.get_num_dims() or mem.get_num_dims() < 1:
            return "expected one index per dimension of a memref of rank >= 1"
    if isinstance(op, SubgroupMmaElementwiseOp):
        return _elementwise_error(op)
    return None


def _elementwise_error(op: SubgroupMmaElementwiseOp) -> str | None:
    kind = op.opType.data
    if kind not in FLOAT_ELEMENTWISE:
        return f"element-wise '{kind.value}' is not supported (only float kinds)"
    arity = 1 if kind in UNARY_ELEMENTWISE else 2
    if len(op.args) != arity:
        return f"element-wise '{kind.value}' takes {arity} operand(s), got {len(op.args)}"
    res = op.res.type
    assert isinstance(res, MMAMatrixType)
    if kind == MMAElementwiseOp.EXTF:
        src = op.args[0].type
        assert isinstance(src, MMAMatrixType)
        ok = (src.kind == res.kind == "COp" and isinstance(src.element_type, Float16Type)
              and isinstance(res.element_type, Float32Type))
        return None if ok else "element-wise 'extf' converts f16 COp to f32 COp fragments only"
    if any(a.type != res for a in op.args) or res.kind != "COp":
        return (f"element-wise '{kind.value}' needs COp operands of the result type "
                f"{res}")
    return None
