"""index dialect handlers (index is i64): arithmetic, comparisons, casts and constants, sharing
the integer helpers of ops_arith."""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text
from nova.backends.llvm.ops_arith import (
    CMPI_PREDICATES,
    INT_BINARY,
    Binary,
    icmp,
    int_resize,
)
from nova.backends.llvm.target import Handler

INDEX_BINARY: dict[str, str] = {
    "add": "addi", "sub": "subi", "mul": "muli", "divs": "divsi", "divu": "divui",
    "rems": "remsi", "remu": "remui", "and": "andi", "or": "ori", "xor": "xori",
    "shl": "shli", "shrs": "shrsi", "shru": "shrui", "maxs": "maxsi", "mins": "minsi",
    "maxu": "maxui", "minu": "minui", "ceildivs": "ceildivsi", "ceildivu": "ceildivui",
    "floordivs": "floordivsi",
}


def _binary(fn: Binary) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        lhs, rhs = fe.operands(op)
        fe.bind(op.results[0], fn(fe.builder, lhs, rhs))
    return handler


def lower_cmp(fe: FunctionEmitter, op: Operation) -> None:
    lhs, rhs = fe.operands(op)
    raw = attr(op, "pred")
    value = getattr(raw, "value", None)
    if value is not None and hasattr(value, "data"):
        pred = CMPI_PREDICATES[int(value.data)]
    else:
        pred = enum_text(raw) or ""
    if pred not in CMPI_PREDICATES:
        raise fe.error(op, f"unknown index.cmp predicate {raw}")
    fe.bind(op.results[0], icmp(fe.builder, pred, lhs, rhs))


def lower_constant(fe: FunctionEmitter, op: Operation) -> None:
    value = attr(op, "value")
    number = int(getattr(getattr(value, "value", value), "data", 0))
    fe.bind(op.results[0], ir.Constant(T.INDEX, number))


def lower_bool_constant(fe: FunctionEmitter, op: Operation) -> None:
    value = attr(op, "value")
    number = getattr(getattr(value, "value", value), "data", 0)
    fe.bind(op.results[0], ir.Constant(T.I1, int(bool(number))))


def _cast(signed: bool) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        (x,) = fe.operands(op)
        to = fe.lower_type(op.results[0].type)
        fe.bind(op.results[0], int_resize(fe.builder, x, to, signed))
    return handler


def lower_sizeof(fe: FunctionEmitter, op: Operation) -> None:
    """index.sizeof: the bit width of `index` (64 on every Nova target)."""
    fe.bind(op.results[0], ir.Constant(T.INDEX, 64))


HANDLERS: dict[str, Handler] = {
    f"index.{name}": _binary(INT_BINARY[arith]) for name, arith in INDEX_BINARY.items()
}
HANDLERS.update({
    "index.cmp": lower_cmp,
    "index.constant": lower_constant,
    "index.bool.constant": lower_bool_constant,
    "index.casts": _cast(True),
    "index.castu": _cast(False),
    "index.sizeof": lower_sizeof,
})
