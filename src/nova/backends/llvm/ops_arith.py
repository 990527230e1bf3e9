"""arith dialect handlers: integer/float arithmetic, comparisons, select, casts, constants, on
scalars and on 1-D vectors (`<N x T>`: LLVM's instructions and intrinsics take vector operands
lane-wise, so the same builder calls serve both; constants splat, comparisons give `<N x i1>`,
dense constants become vector constants). Integer division variants follow MLIR semantics
(floordivsi rounds toward -inf, ceildiv toward +inf); maximumf/minimumf propagate NaN
(llvm.maximum/minimum), maxnumf/minnumf ignore it (llvm.maxnum/minnum).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from llvmlite import ir
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr
from xdsl.ir import Operation

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text
from nova.backends.llvm.target import Handler

Builder: TypeAlias = ir.IRBuilder
Binary: TypeAlias = Callable[[Builder, ir.Value, ir.Value], ir.Value]

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
_REL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def icmp(b: Builder, pred: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """Integer comparison for an MLIR predicate keyword (eq, ne, slt, ..., uge)."""
    if pred in ("eq", "ne"):
        return b.icmp_signed(_REL[pred], lhs, rhs)
    if pred[0] == "s":
        return b.icmp_signed(_REL[pred[1:]], lhs, rhs)
    return b.icmp_unsigned(_REL[pred[1:]], lhs, rhs)


def fcmp(b: Builder, pred: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """Float comparison for an MLIR predicate keyword (oeq, ..., uno, true, false)."""
    if pred == "false":
        return ir.Constant(T.like(lhs.type, T.I1), 0)
    if pred == "true":
        return ir.Constant(T.like(lhs.type, T.I1), 1)
    if pred in ("ord", "uno"):
        return b.fcmp_ordered(pred, lhs, rhs)
    rel = _REL["ne" if pred[1:] == "ne" else pred[1:]]
    if pred[0] == "o":
        return b.fcmp_ordered(rel, lhs, rhs)
    return b.fcmp_unordered(rel, lhs, rhs)


def predicate(op: Operation, names: tuple[str, ...]) -> str:
    """The predicate keyword of a cmpi/cmpf-like op (integer or enum attribute)."""
    raw = attr(op, "predicate")
    value = getattr(raw, "value", None)
    if value is not None and hasattr(value, "data"):
        return names[int(value.data)]
    text = enum_text(raw)
    if text is None or text not in names:
        raise ValueError(f"bad predicate {raw}")
    return text


def floordiv_s(b: Builder, x: ir.Value, y: ir.Value) -> ir.Value:
    """Signed division rounding toward negative infinity."""
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    zero = ir.Constant(x.type, 0)
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                  b.icmp_signed("<", y, zero)))
    return b.sub(q, b.zext(adjust, x.type))


def ceildiv_s(b: Builder, x: ir.Value, y: ir.Value) -> ir.Value:
    """Signed division rounding toward positive infinity."""
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    zero = ir.Constant(x.type, 0)
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.icmp_signed("==", b.icmp_signed(">", r, zero),
                                  b.icmp_signed(">", y, zero)))
    return b.add(q, b.zext(adjust, x.type))


def ceildiv_u(b: Builder, x: ir.Value, y: ir.Value) -> ir.Value:
    """Unsigned division rounding up."""
    q = b.udiv(x, y)
    r = b.urem(x, y)
    return b.add(q, b.zext(b.icmp_unsigned("!=", r, ir.Constant(x.type, 0)), x.type))


def _minmax(pred: str, take_lhs_when: bool = True) -> Binary:
    def fn(b: Builder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(icmp(b, pred, x, y), x, y)
    return fn


INT_BINARY: dict[str, Binary] = {
    "addi": Builder.add, "subi": Builder.sub, "muli": Builder.mul,
    "divsi": Builder.sdiv, "divui": Builder.udiv, "remsi": Builder.srem, "remui": Builder.urem,
    "andi": Builder.and_, "ori": Builder.or_, "xori": Builder.xor,
    "shli": Builder.shl, "shrsi": Builder.ashr, "shrui": Builder.lshr,
    "maxsi": _minmax("sgt"), "minsi": _minmax("slt"),
    "maxui": _minmax("ugt"), "minui": _minmax("ult"),
    "floordivsi": floordiv_s, "ceildivsi": ceildiv_s, "ceildivui": ceildiv_u,
}

FLOAT_BINARY: dict[str, Binary] = {
    "addf": Builder.fadd, "subf": Builder.fsub, "mulf": Builder.fmul,
    "divf": Builder.fdiv, "remf": Builder.frem,
}

FLOAT_MINMAX = {"maximumf": "llvm.maximum", "minimumf": "llvm.minimum",
                "maxnumf": "llvm.maxnum", "minnumf": "llvm.minnum"}


def _int_binary(fn: Binary) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        lhs, rhs = fe.operands(op)
        fe.bind(op.results[0], fn(fe.builder, lhs, rhs))
    return handler


def _float_minmax(intrinsic: str) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        lhs, rhs = fe.operands(op)
        fn = fe.module.intrinsic(intrinsic, lhs.type, 2)
        fe.bind(op.results[0], fe.builder.call(fn, [lhs, rhs]))
    return handler


def lower_constant(fe: FunctionEmitter, op: Operation) -> None:
    value = attr(op, "value")
    llty = fe.lower_type(op.results[0].type)
    fe.bind(op.results[0], constant(value, llty, fe, op))


def constant(value: object, llty: ir.Type, fe: FunctionEmitter, op: Operation) -> ir.Constant:
    """An LLVM constant for an IntegerAttr/FloatAttr, or a vector constant for a dense attr of
    a 1-D vector type (splat or one value per lane)."""
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(llty, ir.VectorType):
        return dense_constant(value.get_values(), llty)
    if isinstance(value, IntegerAttr):
        number = int(value.value.data)
        assert isinstance(llty, ir.IntType)
        return ir.Constant(llty, number & ((1 << llty.width) - 1))
    if isinstance(value, FloatAttr):
        return ir.Constant(llty, float(value.value.data))
    raise fe.unsupported(op, f"constant attribute {value}")


def dense_constant(values: tuple[int | float, ...], llty: ir.VectorType) -> ir.Constant:
    """`<N x T>` constant from the N values of a dense attribute (integers wrap to the element
    width, as the scalar constants do)."""
    elem = llty.element
    if isinstance(elem, ir.IntType):
        mask = (1 << elem.width) - 1
        return ir.Constant(llty, [ir.Constant(elem, int(v) & mask) for v in values])
    return ir.Constant(llty, [ir.Constant(elem, float(v)) for v in values])


def lower_cmpi(fe: FunctionEmitter, op: Operation) -> None:
    lhs, rhs = fe.operands(op)
    fe.bind(op.results[0], icmp(fe.builder, predicate(op, CMPI_PREDICATES), lhs, rhs))


def lower_cmpf(fe: FunctionEmitter, op: Operation) -> None:
    lhs, rhs = fe.operands(op)
    fe.bind(op.results[0], fcmp(fe.builder, predicate(op, CMPF_PREDICATES), lhs, rhs))


def lower_select(fe: FunctionEmitter, op: Operation) -> None:
    cond = fe.lookup(op.operands[0])
    a = fe.lookup_any(op.operands[1])
    b = fe.lookup_any(op.operands[2])
    if isinstance(a, M.MemRefDescriptor) and isinstance(b, M.MemRefDescriptor):
        fields = [fe.builder.select(cond, x, y)
                  for x, y in zip(a.flatten(), b.flatten(), strict=True)]
        fe.bind(op.results[0], M.from_fields(a.ty, fields))
        return
    fe.bind(op.results[0], fe.builder.select(cond, fe.lookup(op.operands[1]),
                                             fe.lookup(op.operands[2])))


def lower_negf(fe: FunctionEmitter, op: Operation) -> None:
    (x,) = fe.operands(op)
    fe.bind(op.results[0], fe.builder.fneg(x))


def int_resize(b: Builder, x: ir.Value, to: ir.Type, signed: bool) -> ir.Value:
    """Sign/zero-extend or truncate an integer (or each lane of an integer vector) to `to`
    (identity when equal widths)."""
    have, want = T.element_of(x.type), T.element_of(to)
    assert isinstance(have, ir.IntType) and isinstance(want, ir.IntType)
    if have.width == want.width:
        return x
    if have.width > want.width:
        return b.trunc(x, to)
    return b.sext(x, to) if signed else b.zext(x, to)


def _cast(kind: str) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        (x,) = fe.operands(op)
        to = fe.lower_type(op.results[0].type)
        b = fe.builder
        if kind in ("index_cast", "extsi", "trunci"):
            out = int_resize(b, x, to, signed=True)
        elif kind in ("index_castui", "extui"):
            out = int_resize(b, x, to, signed=False)
        elif kind == "sitofp":
            out = b.sitofp(x, to)
        elif kind == "uitofp":
            out = b.uitofp(x, to)
        elif kind == "fptosi":
            out = b.fptosi(x, to)
        elif kind == "fptoui":
            out = b.fptoui(x, to)
        elif kind == "extf":
            out = b.fpext(x, to) if x.type != to else x
        elif kind == "truncf":
            out = b.fptrunc(x, to) if x.type != to else x
        else:  # bitcast
            out = b.bitcast(x, to) if x.type != to else x
        fe.bind(op.results[0], out)
    return handler


def _extended(signed: bool) -> Handler:
    """mulsi_extended / mului_extended: low and high halves of the double-width product."""
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        x, y = fe.operands(op)
        b = fe.builder
        width = T.element_of(x.type).width
        wide = T.like(x.type, ir.IntType(width * 2))
        prod = b.mul(int_resize(b, x, wide, signed), int_resize(b, y, wide, signed))
        fe.bind(op.results[0], b.trunc(prod, x.type))
        fe.bind(op.results[1], b.trunc(b.lshr(prod, ir.Constant(wide, width)), x.type))
    return handler


def lower_addui_extended(fe: FunctionEmitter, op: Operation) -> None:
    x, y = fe.operands(op)
    total = fe.builder.add(x, y)
    fe.bind(op.results[0], total)
    fe.bind(op.results[1], fe.builder.icmp_unsigned("<", total, x))


HANDLERS: dict[str, Handler] = {
    "arith.constant": lower_constant,
    "arith.cmpi": lower_cmpi,
    "arith.cmpf": lower_cmpf,
    "arith.select": lower_select,
    "arith.negf": lower_negf,
    "arith.mulsi_extended": _extended(True),
    "arith.mului_extended": _extended(False),
    "arith.addui_extended": lower_addui_extended,
}
HANDLERS.update({f"arith.{k}": _int_binary(v) for k, v in INT_BINARY.items()})
HANDLERS.update({f"arith.{k}": _int_binary(v) for k, v in FLOAT_BINARY.items()})
HANDLERS.update({f"arith.{k}": _float_minmax(v) for k, v in FLOAT_MINMAX.items()})
HANDLERS.update({f"arith.{k}": _cast(k) for k in (
    "index_cast", "index_castui", "extsi", "extui", "trunci", "sitofp", "uitofp",
    "fptosi", "fptoui", "extf", "truncf", "bitcast")})
