"""vector dialect ops that xDSL 0.74 lacks, with MLIR's (LLVM 22) custom syntax:
`vector.constant_mask`, `vector.shape_cast`, `vector.from_elements` and `vector.step`; and
the arith ops whose xDSL versions reject vectors: `arith.select` with a vector condition and
`arith.cmpi`/`arith.cmpf` with a vector-of-i1 result (`ARITH_OPS`, registered in
`nova.ir.dialects.scf_arith_func`'s arith).

The vector ops are registered by `nova.ir.dialects.vector` next to xDSL's vector ops.
(`vector.splat`,
`vector.extractelement` and `vector.insertelement` are gone from upstream MLIR: `mlir-opt` 22
rejects them, so Nova does too.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects import arith as xarith
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import print_attr_dict


@irdl_op_definition
class ConstantMaskOp(IRDLOperation):
    """`%m = vector.constant_mask [2] : vector<4xi1>`: the first 2 lanes set, the others clear.
    The sizes are the `mask_dim_sizes` property (`array<i64: ...>`), one per dimension."""

    name = "vector.constant_mask"
    mask_dim_sizes = prop_def(DenseArrayBase)
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, sizes: Sequence[int], result_type: VectorType) -> None:
        super().__init__(result_types=[result_type],
                         properties={"mask_dim_sizes": DenseArrayBase.from_list(i64, sizes)})

    def sizes(self) -> tuple[int, ...]:
        """The mask size of each dimension."""
        return tuple(int(v) for v in self.mask_dim_sizes.get_values())

    def verify_(self) -> None:
        ty = self.result.type
        assert isinstance(ty, VectorType)
        if ty.element_type != i1:
            raise VerifyException("'vector.constant_mask' op result must be a vector of i1")
        sizes = self.sizes()
        shape = ty.get_shape()
        if len(sizes) != len(shape):
            raise VerifyException("'vector.constant_mask' op must specify array attr of size "
                                  "equal vector result rank")
        for size, dim in zip(sizes, shape, strict=True):
            if size < 0 or size > dim:
                raise VerifyException("'vector.constant_mask' op array attr of size out of "
                                      "bounds of vector result dimension size")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        sizes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        if not isinstance(ty, VectorType):
            parser.raise_error("'vector.constant_mask' expects a vector result type")
        op = cls(sizes, ty)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" [" + ", ".join(str(s) for s in self.sizes()) + "]")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class ShapeCastOp(IRDLOperation):
    """`%r = vector.shape_cast %v : vector<4xf32> to vector<4xf32>`: the same elements in
    row-major order under another shape (element types equal, element counts equal)."""

    name = "vector.shape_cast"
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, result_type: VectorType) -> None:
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        assert isinstance(src, VectorType) and isinstance(dst, VectorType)
        if src.element_type != dst.element_type:
            raise VerifyException("'vector.shape_cast' op source and result element types "
                                  "differ")
        if src.element_count() != dst.element_count():
            raise VerifyException(f"'vector.shape_cast' op has different number of elements at "
                                  f"source ({src.element_count()}) and result "
                                  f"({dst.element_count()})")


@irdl_op_definition
class FromElementsOp(IRDLOperation):
    """`%v = vector.from_elements %a, %b : vector<2xf32>`: a vector of the given scalars, in
    row-major order (as many operands as elements, each of the element type)."""

    name = "vector.from_elements"
    elements = var_operand_def()
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, elements: Sequence[SSAValue], result_type: VectorType) -> None:
        super().__init__(operands=[list(elements)], result_types=[result_type])

    def verify_(self) -> None:
        ty = self.result.type
        assert isinstance(ty, VectorType)
        if len(self.elements) != ty.element_count():
            raise VerifyException(f"'vector.from_elements' op number of operands and types do "
                                  f"not match: got {len(self.elements)} operands and "
                                  f"{ty.element_count()} types")
        for value in self.elements:
            if value.type != ty.element_type:
                raise VerifyException(f"'vector.from_elements' op element of type {value.type} "
                                      f"does not match {ty.element_type}")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        if not isinstance(ty, VectorType):
            parser.raise_error("'vector.from_elements' expects a vector result type")
        if len(operands) != ty.element_count():
            # upstream resolves one operand per element of the type, erring at the operands
            parser.raise_error(f"custom op 'vector.from_elements' number of operands and types "
                               f"do not match: got {len(operands)} operands and "
                               f"{ty.element_count()} types", pos, pos + 1)
        values = [parser.resolve_operand(o, ty.element_type) for o in operands]
        op = cls(values, ty)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.elements:
            printer.print_string(" ")
            printer.print_list(self.elements, printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class StepOp(IRDLOperation):
    """`%s = vector.step : vector<4xindex>`: the vector [0, 1, ..., N-1] of index."""

    name = "vector.step"
    result = result_def()  # a 1-D vector of index: nova.ir.ods_types checks it, upstream's words
    traits = traits_def(Pure())

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute) -> None:
        super().__init__(result_types=[result_type])


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`arith.select %c, %a, %b : T` (an i1 condition) or `arith.select %c, %a, %b :
    vector<4xi1>, vector<4xf32>` (a lane-wise condition of the same shape), as MLIR spells it;
    replaces xDSL 0.74's, which accepts only an i1 condition."""

    name = "arith.select"
    cond = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        ty = self.result.type
        if self.lhs.type != ty or self.rhs.type != ty:
            raise VerifyException("'arith.select' op requires the same type for all operands "
                                  "and results")
        cond = self.cond.type
        if cond == i1:
            return
        if not (isinstance(cond, VectorType) and cond.element_type == i1
                and isinstance(ty, VectorType) and cond.get_shape() == ty.get_shape()
                and cond.get_scalable_dims() == ty.get_scalable_dims()):
            raise VerifyException("'arith.select' op failed to verify that condition is signless "
                                  "i1 or has matching shape")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        cond = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        first = parser.parse_type()
        cond_type: Attribute = i1
        ty = first
        if parser.parse_optional_punctuation(",") is not None:
            cond_type, ty = first, parser.parse_type()
        op = cls(parser.resolve_operand(cond, cond_type), parser.resolve_operand(lhs, ty),
                 parser.resolve_operand(rhs, ty))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.cond, self.lhs, self.rhs], printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        if self.cond.type != i1:
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)


def i1_like(ty: Attribute) -> Attribute:
    """The comparison result type for operands of type `ty`: i1, or a vector of i1 of the same
    shape (and scalable dimensions)."""
    if isinstance(ty, VectorType):
        return VectorType(i1, ty.get_shape(), ty.scalable_dims)
    return i1


@irdl_op_definition
class CmpiOp(IRDLOperation):
    """`arith.cmpi` whose result is a vector of i1 for vector operands (xDSL 0.74 types it i1
    always); syntax and predicates as xDSL's (its parse/print are reused)."""

    name = "arith.cmpi"
    predicate = prop_def(IntegerAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    # xDSL's parse body, run with cls = this op (mypy sees no __func__ on the bound method)
    parse = classmethod(xarith.CmpiOp.parse.__func__)  # type: ignore[attr-defined,var-annotated]
    print = xarith.CmpiOp.print

    def __init__(self, operand1: SSAValue | Operation, operand2: SSAValue | Operation,
                 arg: int | str) -> None:
        lhs, rhs = SSAValue.get(operand1), SSAValue.get(operand2)
        predicate = arg if isinstance(arg, int) else CMPI_COMPARISON_OPERATIONS.index(arg)
        IRDLOperation.__init__(self, operands=[lhs, rhs], result_types=[i1_like(lhs.type)],
                               properties={"predicate": IntegerAttr(predicate, 64)})

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type:
            raise VerifyException("'arith.cmpi' op requires all operands to have the same type")
        if self.result.type != i1_like(self.lhs.type):
            raise VerifyException(f"'arith.cmpi' op result must be {i1_like(self.lhs.type)}")


@irdl_op_definition
class CmpfOp(IRDLOperation):
    """`arith.cmpf` whose result is a vector of i1 for vector operands (xDSL 0.74 types it i1
    always); syntax, predicates and fastmath flags as xDSL's (its parse/print are reused)."""

    name = "arith.cmpf"
    predicate = prop_def(IntegerAttr)
    lhs = operand_def()
    rhs = operand_def()
    fastmath = prop_def(xarith.FastMathFlagsAttr,
                        default_value=xarith.FastMathFlagsAttr("none"))
    result = result_def()
    traits = traits_def(Pure())

    # xDSL's parse body, run with cls = this op (mypy sees no __func__ on the bound method)
    parse = classmethod(xarith.CmpfOp.parse.__func__)  # type: ignore[attr-defined,var-annotated]
    print = xarith.CmpfOp.print

    def __init__(self, operand1: SSAValue | Operation, operand2: SSAValue | Operation,
                 arg: int | str,
                 fastmath: xarith.FastMathFlagsAttr | None = None) -> None:
        fastmath = fastmath if fastmath is not None else xarith.FastMathFlagsAttr("none")
        lhs, rhs = SSAValue.get(operand1), SSAValue.get(operand2)
        predicate = arg if isinstance(arg, int) else CMPF_COMPARISON_OPERATIONS.index(arg)
        IRDLOperation.__init__(self, operands=[lhs, rhs], result_types=[i1_like(lhs.type)],
                               properties={"predicate": IntegerAttr(predicate, 64),
                                           "fastmath": fastmath})

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type:
            raise VerifyException("'arith.cmpf' op requires all operands to have the same type")
        if self.result.type != i1_like(self.lhs.type):
            raise VerifyException(f"'arith.cmpf' op result must be {i1_like(self.lhs.type)}")


def _kind(ty: Attribute) -> str:
    """'int', 'index' or 'float' for a scalar type or a vector's element type ('' otherwise)."""
    elem = ty.element_type if isinstance(ty, VectorType) else ty
    if isinstance(elem, IndexType):
        return "index"
    if isinstance(elem, IntegerType):
        return "int"
    if isinstance(elem, AnyFloat):
        return "float"
    return ""


def _shape(ty: Attribute) -> tuple[object, ...] | None:
    """A vector's shape and scalable dims (None for a scalar): casts keep them."""
    if isinstance(ty, VectorType):
        return (ty.get_shape(), ty.get_scalable_dims())
    return None


def _width(ty: Attribute) -> int:
    elem = ty.element_type if isinstance(ty, VectorType) else ty
    return int(elem.width.data) if isinstance(elem, IntegerType) else 0


class _CastMixin:
    """Syntax (`%r = arith.sitofp %x : vector<4xi32> to vector<4xf32>`) and verifier of the
    arith casts on scalars and vectors (xDSL 0.74's accept scalars only). Subclasses set
    `name`, `FROM`/`TO` (operand/result kinds) and `WIDTH` ('wider', 'narrower' or '')."""

    FROM: ClassVar[tuple[str, ...]] = ()
    TO: ClassVar[tuple[str, ...]] = ()
    WIDTH: ClassVar[str] = ""
    OVERFLOW: ClassVar[bool] = False
    """True for arith.trunci, which carries `overflow<nsw, nuw>` flags (`overflowFlags`)."""

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type  # type: ignore[attr-defined]
        if _shape(src) != _shape(dst):
            raise VerifyException(f"'{self.name}' op requires the same shape for all operands "  # type: ignore[attr-defined]
                                  "and results")
        ok = _kind(src) in self.FROM and _kind(dst) in self.TO
        if ok and self.WIDTH == "wider":
            ok = _width(dst) > _width(src)
        elif ok and self.WIDTH == "narrower":
            ok = _width(dst) < _width(src)
        if not ok:
            raise VerifyException(f"'{self.name}' op operand type '{src}' and result type "  # type: ignore[attr-defined]
                                  f"'{dst}' are cast incompatible")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        flags = None
        if cls.OVERFLOW and parser.parse_optional_keyword("overflow") is not None:
            flags = xarith.IntegerOverflowAttr(
                xarith.IntegerOverflowAttr.parse_parameter(parser))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src = parser.parse_type()
        parser.parse_keyword("to")
        dst = parser.parse_type()
        op = cls(parser.resolve_operand(operand, src), dst)  # type: ignore[call-arg]
        if flags is not None:
            op.properties["overflowFlags"] = flags  # type: ignore[attr-defined]
        op.attributes.update(attrs)  # type: ignore[attr-defined]
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)  # type: ignore[attr-defined]
        flags = self.properties.get("overflowFlags")  # type: ignore[attr-defined]
        if flags is not None and flags != xarith.IntegerOverflowAttr("none"):
            printer.print_string(" overflow")
            flags.print_parameter(printer)
        print_attr_dict(printer, self.attributes)  # type: ignore[attr-defined]
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)  # type: ignore[attr-defined]
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)  # type: ignore[attr-defined]


def _cast(op_name: str, kinds_from: tuple[str, ...], kinds_to: tuple[str, ...],
          width: str = "") -> type[IRDLOperation]:
    """An arith cast op class `op_name` from `kinds_from` to `kinds_to` element kinds."""

    class CastOp(_CastMixin, IRDLOperation):
        name = op_name
        FROM: ClassVar[tuple[str, ...]] = kinds_from
        TO: ClassVar[tuple[str, ...]] = kinds_to
        WIDTH: ClassVar[str] = width
        input = operand_def()
        result = result_def()
        traits = traits_def(Pure())

        def __init__(self, value: SSAValue, result_type: Attribute) -> None:
            super().__init__(operands=[value], result_types=[result_type])

    CastOp.__name__ = CastOp.__qualname__ = "".join(
        p.capitalize() for p in op_name.split(".")[1].split("_")) + "Op"
    return irdl_op_definition(CastOp)


@irdl_op_definition
class TruncIOp(_CastMixin, IRDLOperation):
    """`arith.trunci %x [overflow<nsw, nuw>] : vector<4xi32> to vector<4xi8>`."""

    name = "arith.trunci"
    FROM: ClassVar[tuple[str, ...]] = ("int",)
    TO: ClassVar[tuple[str, ...]] = ("int",)
    WIDTH: ClassVar[str] = "narrower"
    OVERFLOW: ClassVar[bool] = True
    input = operand_def()
    result = result_def()
    overflow_flags = prop_def(xarith.IntegerOverflowAttr,
                              default_value=xarith.IntegerOverflowAttr("none"),
                              prop_name="overflowFlags")
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, result_type: Attribute) -> None:
        super().__init__(operands=[value], result_types=[result_type])


CAST_OPS = (
    _cast("arith.sitofp", ("int",), ("float",)),
    _cast("arith.uitofp", ("int",), ("float",)),
    _cast("arith.fptosi", ("float",), ("int",)),
    _cast("arith.fptoui", ("float",), ("int",)),
    _cast("arith.extsi", ("int",), ("int",), "wider"),
    _cast("arith.extui", ("int",), ("int",), "wider"),
    TruncIOp,
    _cast("arith.index_cast", ("int", "index"), ("int", "index")),
    _cast("arith.index_castui", ("int", "index"), ("int", "index")),
)
"""arith casts on scalars and vectors (index_cast/index_castui also verify that exactly one side
is index)."""

ARITH_OPS = (SelectOp, CmpiOp, CmpfOp, *CAST_OPS)
"""The arith ops this module replaces (vector conditions, comparison results and casts)."""

OPS = (ConstantMaskOp, ShapeCastOp, FromElementsOp, StepOp)
"""The ops this module adds to the vector dialect."""
