"""Upstream's verifier rules of the vector ops Nova takes from xDSL, with mlir-opt 22's messages,
run before xDSL's verifier (`nova.ir.upstream_checks.check_first`): xDSL words these checks
differently (`Mask value 9 out of range [-1, 8)`), states element-type rules as type variables
(`attribute f32 expected from variable 'T'`) and lacks some (a broadcast to a lower rank, a
masked load whose mask and result shapes differ).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, VectorType
from xdsl.ir import Attribute, Operation

from nova.ir.rules import RuleError

_FLOAT_KINDS = frozenset({"maxnumf", "minnumf", "maximumf", "minimumf"})
_INTEGER_KINDS = frozenset({"minui", "minsi", "maxui", "maxsi", "and", "or", "xor"})


def _element(ty: Attribute) -> Attribute:
    return ty.element_type if isinstance(ty, VectorType) else ty


def _fail(op: Operation, message: str) -> None:
    raise RuleError(f"'{op.name}' op {message}")


def _check_broadcast(op: Operation) -> None:
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(dst, VectorType):
        return
    if _element(src) != dst.element_type:
        _fail(op, "failed to verify that source operand and result have same element type")
    if not isinstance(src, VectorType):
        return
    src_shape, dst_shape = src.get_shape(), dst.get_shape()
    if len(src_shape) > len(dst_shape):
        _fail(op, "source rank higher than destination rank")
    lead = len(dst_shape) - len(src_shape)
    for s, d in zip(src_shape, dst_shape[lead:], strict=True):
        if s not in (1, d):
            _fail(op, f"dimension mismatch ({s} vs. {d})")


def _check_extract(op: Operation) -> None:
    source = op.operands[0].type
    if isinstance(source, VectorType) and _element(op.results[0].type) != source.element_type:
        _fail(op, "failed to verify that operand and result have same element type")


def _check_insert(op: Operation) -> None:
    dest = op.operands[1].type
    if isinstance(dest, VectorType) and _element(op.operands[0].type) != dest.element_type:
        _fail(op, "failed to verify that source operand and result have same element type")


def _leading(ty: Attribute) -> int:
    shape = ty.get_shape() if isinstance(ty, VectorType) else ()
    return shape[0] if shape else 1


def _check_shuffle(op: Operation) -> None:
    mask = op.properties.get("mask")
    values = mask.get_values() if hasattr(mask, "get_values") else ()  # type: ignore[union-attr]
    size = _leading(op.operands[0].type) + _leading(op.operands[1].type)
    for index, value in enumerate(values):
        if value != -1 and not 0 <= value < size:
            _fail(op, f"mask index #{index + 1} out of range")


def _check_reduction(op: Operation) -> None:
    source = op.operands[0].type
    if not isinstance(source, VectorType):
        return
    element = source.element_type
    if op.results[0].type != element:
        _fail(op, "failed to verify that source operand and result have same element type")
    kind = op.properties.get("kind")
    name = str(getattr(kind, "data", ""))
    is_float = not isinstance(element, IntegerType | IndexType)
    if (name in _FLOAT_KINDS and not is_float) or (name in _INTEGER_KINDS and is_float):
        _fail(op, f"unsupported reduction type ''{element}'' for kind '{name}'")


def _bits(ty: Attribute) -> int | None:
    width = getattr(ty, "bitwidth", None)
    return width if isinstance(width, int) else None


def _check_bitcast(op: Operation) -> None:
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, VectorType) or not isinstance(dst, VectorType):
        return
    s, d = src.get_shape(), dst.get_shape()
    if len(s) != len(d):
        _fail(op, "failed to verify that all of {source, result} have same rank")
    for index, (a, b) in enumerate(zip(s[:-1], d[:-1], strict=True)):
        if a != b:
            _fail(op, f"dimension size mismatch at: {index}")
    src_bits, dst_bits = _bits(src.element_type), _bits(dst.element_type)
    if s and src_bits is not None and dst_bits is not None and (
            s[-1] * src_bits != d[-1] * dst_bits):
        _fail(op, "source/result bitwidth of the minor 1-D vectors must be equal")


def _check_memory(base: Attribute, vector: Attribute, indices: int, op: Operation,
                  what: str) -> None:
    if not isinstance(base, MemRefType) or not isinstance(vector, VectorType):
        return
    if base.element_type != vector.element_type:
        _fail(op, what)
    rank = len(base.get_shape())
    if indices != rank:
        _fail(op, f"requires {rank} indices")


def _check_load(op: Operation) -> None:
    _check_memory(op.operands[0].type, op.results[0].type, len(op.operands) - 1, op,
                  "base and result element types should match")


def _check_store(op: Operation) -> None:
    _check_memory(op.operands[1].type, op.operands[0].type, len(op.operands) - 2, op,
                  "base and valueToStore element type should match")


def _check_masked_load(op: Operation) -> None:
    mask, result = op.operands[-2].type, op.results[0].type
    if isinstance(mask, VectorType) and isinstance(result, VectorType) and (
            mask.get_shape() != result.get_shape()):
        _fail(op, "expected result shape to match mask shape")


def _check_create_mask(op: Operation) -> None:
    result = op.results[0].type
    if isinstance(result, VectorType) and len(op.operands) != len(result.get_shape()):
        _fail(op, "must specify an operand for each result vector dimension")


VECTOR_CHECKS: dict[str, Callable[[Operation], None]] = {
    "vector.broadcast": _check_broadcast,
    "vector.extract": _check_extract,
    "vector.insert": _check_insert,
    "vector.shuffle": _check_shuffle,
    "vector.reduction": _check_reduction,
    "vector.bitcast": _check_bitcast,
    "vector.load": _check_load,
    "vector.store": _check_store,
    "vector.maskedload": _check_masked_load,
    "vector.create_mask": _check_create_mask,
}
"""Op name -> its upstream check (see the module docstring)."""

_SAME_ELEMENT = "failed to verify that source operand and result have same element type"

CONSTRAINT_MESSAGES: dict[str, str] = {
    "vector.extract": "'vector.extract' op failed to verify that operand and result have same "
                      "element type",
    "vector.insert": f"'vector.insert' op {_SAME_ELEMENT}",
    "vector.reduction": f"'vector.reduction' op {_SAME_ELEMENT}",
    "vector.broadcast": f"'vector.broadcast' op {_SAME_ELEMENT}",
}
"""Op name -> upstream's message for an element-type rule that xDSL checks while building the
op from its custom syntax (as a type variable), so the parser reports it (`nova.ir.parser`)."""
