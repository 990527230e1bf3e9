"""Typed values and the typed arithmetic of kernel code, emitted as arith/math ops.

A kernel expression evaluates either to a `Const` (a Python value known at compile time: literals,
captured globals, dtypes, modules, functions) or a `Val` (an SSA value and its Nova type). `Emitter`
appends ops to the current block and gives every op the Python source location being translated.

Semantics implemented here (docs/python-kernels.md):
- integers wrap around (two's complement) at their width; `//` and `%` follow Python (floor
  division, remainder with the divisor's sign) for signed integers and floats, plain division for
  unsigned; division by zero is undefined (as on the GPU).
- shifts: the amount is converted to the left operand's type; `<<` and unsigned `>>` give 0 for
  amounts outside 0..bits-1 and signed `>>` gives the sign fill (NumPy's results), `>>` is
  arithmetic on signed and logical on unsigned types.
- `/` is true division: integers convert to float64 first (Python).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, SSAValue

from nova.errors import SourceLocation
from nova.ir.dialects.scf_arith_func import IndexCastUIOp
from nova.ir.locations import set_location
from nova.lang import types as T
from nova.lang.lanes import LaneLevels


@dataclass(frozen=True)
class Const:
    """A compile-time Python value."""

    value: Any


@dataclass(frozen=True)
class Val:
    """A run-time value of a Nova type (a scalar, or an array's memref)."""

    ssa: SSAValue
    type: T.ValueType


Value = Const | Val


class TypeFault(Exception):
    """Raised by typed helpers; the translator turns it into a located KernelTypeError."""


def is_number(value: Any) -> bool:
    import numpy as np

    return isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating)


class Emitter:
    """Appends ops to `block`, stamping each with `location`."""

    def __init__(self) -> None:
        self.block: Block | None = None
        self.location: SourceLocation | None = None
        self.lanes = LaneLevels()

    def op(self, op: Operation) -> Operation:
        assert self.block is not None, "emitting after a terminator"
        set_location(op, self.location)
        self.block.add_op(op)
        self.lanes.emitted(op)
        return op

    def res(self, op: Operation) -> SSAValue:
        return self.op(op).results[0]

    # --- constants and conversions ------------------------------------------------------------
    def constant(self, value: Any, ty: T.ScalarType) -> Val:
        """Materialize a Python number as `ty` (ints must fit the type's range)."""
        if ty is T.bfloat16:
            return self.convert(self.constant(value, T.float32), ty)
        if ty.is_float:
            mlir = ty.mlir
            assert isinstance(mlir, AnyFloat)  # ScalarType.mlir of a float kind
            return Val(self.res(arith.ConstantOp(FloatAttr(float(value), mlir))), ty)
        if isinstance(value, float) and not float(value).is_integer():
            raise TypeFault(f"the float {value!r} cannot be used as {ty}: cast explicitly")
        v = int(value)
        lo, hi = ty.min_max()
        if not lo <= v <= hi:
            raise TypeFault(f"the literal {v} does not fit {ty} (range {lo}..{hi}); cast it "
                            f"explicitly, e.g. nova.{ty}(...), or use a wider type")
        if ty.is_bool:
            return Val(self.res(arith.ConstantOp(IntegerAttr(v, IntegerType(1)))), ty)
        if v >= 1 << (ty.bits - 1):
            v -= 1 << ty.bits
        return Val(self.res(arith.ConstantOp(IntegerAttr(v, IntegerType(ty.bits)))), ty)

    def index(self, value: Val) -> SSAValue:
        """An integer value as an MLIR index (signed or unsigned extension by type)."""
        t = value.type
        if not isinstance(t, T.ScalarType) or t.is_float:
            raise TypeFault(f"an array index must be an integer, not {t}")
        if t.is_bool:
            value = self.convert(value, T.int64)
        if t.kind == "uint":
            return self.res(IndexCastUIOp(value.ssa, IndexType()))
        return self.res(arith.IndexCastOp(value.ssa, IndexType()))

    def from_index(self, ssa: SSAValue) -> Val:
        return Val(self.res(arith.IndexCastOp(ssa, IntegerType(64))), T.int64)

    def convert(self, value: Val, to: T.ScalarType) -> Val:
        """C-style conversion of a scalar to `to` (wrap for ints, truncation toward 0 for
        float->int, != 0 for ->bool)."""
        src = value.type
        if not isinstance(src, T.ScalarType):
            raise TypeFault(f"cannot convert {src} to {to}")
        if src is to:
            return value
        v = value.ssa
        if to.is_bool:
            return self.truth(value)
        if src is T.bfloat16:
            return self.convert(self._bf16_to_f32(value), to)
        if to is T.bfloat16:
            return self._f32_to_bf16(self.convert(value, T.float32))
        target = to.mlir
        if to.is_float:
            assert isinstance(target, AnyFloat)  # ScalarType.mlir of a float kind
            if src.is_float:
                if src.bits == to.bits:  # float16 <-> bfloat16 through float32
                    v = self.res(arith.ExtFOp(v, T.float32.mlir))
                    return Val(self.res(arith.TruncFOp(v, target)), to)
                resize = arith.ExtFOp if to.bits > src.bits else arith.TruncFOp
                return Val(self.res(resize(v, target)), to)
            from_int = arith.SIToFPOp if src.is_signed else arith.UIToFPOp
            return Val(self.res(from_int(v, target)), to)
        assert isinstance(target, IntegerType)  # ScalarType.mlir of the other kinds
        if src.is_float:
            to_int = arith.FPToSIOp if to.is_signed else arith.FPToUIOp
            return Val(self.res(to_int(v, target)), to)
        if to.bits == src.bits:
            return Val(v, to)
        if to.bits < src.bits:
            return Val(self.res(arith.TruncIOp(v, target)), to)
        extend = arith.ExtSIOp if src.is_signed else arith.ExtUIOp
        return Val(self.res(extend(v, target)), to)

    # bfloat16 <-> float32 through bit patterns: LLVM 0.50's llvmlite has no bfloat type, so the
    # emitter stores bf16 as i16 and only bitcasts and integer ops are safe on every target.
    def _bits(self, v: SSAValue, bits: int) -> SSAValue:
        return self.res(arith.BitcastOp(v, IntegerType(bits)))

    def _int_const(self, value: int, bits: int) -> SSAValue:
        return self.res(arith.ConstantOp(IntegerAttr(value, IntegerType(bits))))

    def _bf16_to_f32(self, value: Val) -> Val:
        wide = self.res(arith.ExtUIOp(self._bits(value.ssa, 16), IntegerType(32)))
        shifted = self.res(arith.ShLIOp(wide, self._int_const(16, 32)))
        return Val(self.res(arith.BitcastOp(shifted, T.float32.mlir)), T.float32)

    def _f32_to_bf16(self, value: Val) -> Val:
        """Round to nearest even; NaN stays a (quiet) NaN."""
        u = self._bits(value.ssa, 32)
        sixteen = self._int_const(16, 32)
        lsb = self.res(arith.AndIOp(self.res(arith.ShRUIOp(u, sixteen)), self._int_const(1, 32)))
        bias = self.res(arith.AddiOp(lsb, self._int_const(0x7FFF, 32)))
        rounded = self.res(arith.ShRUIOp(self.res(arith.AddiOp(u, bias)), sixteen))
        nan = self.res(arith.CmpfOp(value.ssa, value.ssa, "uno"))
        bits = self.res(arith.SelectOp(nan, self._int_const(0x7FC0, 32), rounded))
        narrow = self.res(arith.TruncIOp(bits, IntegerType(16)))
        return Val(self.res(arith.BitcastOp(narrow, T.bfloat16.mlir)), T.bfloat16)

    def truth(self, value: Val) -> Val:
        """Python truthiness as a bool value."""
        t = value.type
        if not isinstance(t, T.ScalarType):
            raise TypeFault(f"an {t} has no truth value in a kernel")
        if t.is_bool:
            return value
        zero = self.constant(0, t)
        if t is T.bfloat16:
            return self.truth(self.convert(value, T.float32))
        if t.is_float:
            return Val(self.res(arith.CmpfOp(value.ssa, zero.ssa, "une")), T.bool_)
        return Val(self.res(arith.CmpiOp(value.ssa, zero.ssa, "ne")), T.bool_)

    def select(self, cond: Val, a: Val, b: Val) -> Val:
        return Val(self.res(arith.SelectOp(cond.ssa, a.ssa, b.ssa)), a.type)

    # --- arithmetic ---------------------------------------------------------------------------
    def binary(self, op: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        """`a op b` with both operands already of type `t` (op is a Python operator symbol)."""
        if t.is_bool:
            if op in ("&", "|", "^"):
                return self._int_binary(op, a, b, t)
            a, b, t = self.convert(a, T.int64), self.convert(b, T.int64), T.int64
        if op == "/":
            if not t.is_float:
                a, b, t = self.convert(a, T.float64), self.convert(b, T.float64), T.float64
            return Val(self.res(arith.DivfOp(a.ssa, b.ssa)), t)
        if t is T.bfloat16:  # exact: float32 holds every bfloat16 result before rounding
            wide = self.binary(op, self.convert(a, T.float32), self.convert(b, T.float32),
                               T.float32)
            return self.convert(wide, t)
        if t.is_float:
            return self._float_binary(op, a, b, t)
        return self._int_binary(op, a, b, t)

    def _float_binary(self, op: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        simple: dict[str, Callable[..., Operation]] = {
            "+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp}
        if op in simple:
            return Val(self.res(simple[op](a.ssa, b.ssa)), t)
        if op == "//":
            q = self.res(arith.DivfOp(a.ssa, b.ssa))
            return Val(self.res(math.FloorOp(q)), t)
        if op == "%":
            r = Val(self.res(arith.RemFOp(a.ssa, b.ssa)), t) if hasattr(arith, "RemFOp") \
                else self._frem(a, b, t)
            return self._python_mod_fix(r, b, t)
        if op == "**":
            return Val(self.res(math.PowFOp(a.ssa, b.ssa)), t)
        raise TypeFault(f"operator {op} is not defined for {t} (integer types only)")

    def _frem(self, a: Val, b: Val, t: T.ScalarType) -> Val:
        # a - trunc(a / b) * b  (xDSL 0.74 has no arith.remf)
        q = self.res(math.TruncOp(self.res(arith.DivfOp(a.ssa, b.ssa))))
        return Val(self.res(arith.SubfOp(a.ssa, self.res(arith.MulfOp(q, b.ssa)))), t)

    def _python_mod_fix(self, r: Val, b: Val, t: T.ScalarType) -> Val:
        """Turn a truncated remainder into Python's (the divisor's sign): r + b when r != 0 and
        r and b have different signs."""
        zero = self.constant(0, t)
        if t.is_float:
            nz = self.res(arith.CmpfOp(r.ssa, zero.ssa, "une"))
            rneg = self.res(arith.CmpfOp(r.ssa, zero.ssa, "olt"))
            bneg = self.res(arith.CmpfOp(b.ssa, zero.ssa, "olt"))
            fixed = self.res(arith.AddfOp(r.ssa, b.ssa))
        else:
            nz = self.res(arith.CmpiOp(r.ssa, zero.ssa, "ne"))
            rneg = self.res(arith.CmpiOp(r.ssa, zero.ssa, "slt"))
            bneg = self.res(arith.CmpiOp(b.ssa, zero.ssa, "slt"))
            fixed = self.res(arith.AddiOp(r.ssa, b.ssa))
        differ = self.res(arith.XOrIOp(rneg, bneg))
        need = self.res(arith.AndIOp(nz, differ))
        return Val(self.res(arith.SelectOp(need, fixed, r.ssa)), t)

    def _int_binary(self, op: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        signed = t.is_signed
        simple: dict[str, Callable[..., Operation]] = {
            "+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "&": arith.AndIOp,
            "|": arith.OrIOp, "^": arith.XOrIOp}
        if op in simple:
            return Val(self.res(simple[op](a.ssa, b.ssa)), t)
        if op == "//":
            cls = arith.FloorDivSIOp if signed else arith.DivUIOp
            return Val(self.res(cls(a.ssa, b.ssa)), t)
        if op == "%":
            if not signed:
                return Val(self.res(arith.RemUIOp(a.ssa, b.ssa)), t)
            r = Val(self.res(arith.RemSIOp(a.ssa, b.ssa)), t)
            return self._python_mod_fix(r, b, t)
        if op in ("<<", ">>"):
            return self._shift(op, a, b, t)
        if op == "**":
            return Val(self.res(math.IPowIOp(a.ssa, b.ssa)), t)
        raise TypeFault(f"operator {op} is not defined for {t}")

    def _shift(self, op: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        width = self.constant(t.bits, t)
        if op == "<<":
            shifted = self.res(arith.ShLIOp(a.ssa, b.ssa))
            fill = self.constant(0, t).ssa
        elif t.is_signed:
            shifted = self.res(arith.ShRSIOp(a.ssa, b.ssa))
            fill = self.res(arith.ShRSIOp(a.ssa, self.constant(t.bits - 1, t).ssa))
        else:
            shifted = self.res(arith.ShRUIOp(a.ssa, b.ssa))
            fill = self.constant(0, t).ssa
        inside = self.res(arith.CmpiOp(b.ssa, width.ssa, "ult"))
        return Val(self.res(arith.SelectOp(inside, shifted, fill)), t)

    def compare(self, op: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        """`a op b` for ==, !=, <, <=, >, >= with both operands of type `t`."""
        rel = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[op]
        if t is T.bfloat16:
            a, b, t = self.convert(a, T.float32), self.convert(b, T.float32), T.float32
        if t.is_float:
            pred = "une" if rel == "ne" else f"o{rel}"
            return Val(self.res(arith.CmpfOp(a.ssa, b.ssa, pred)), T.bool_)
        if rel not in ("eq", "ne"):
            rel = ("s" if t.is_signed else "u") + rel
        return Val(self.res(arith.CmpiOp(a.ssa, b.ssa, rel)), T.bool_)

    def negate(self, a: Val) -> Val:
        t = a.type
        assert isinstance(t, T.ScalarType)
        if t is T.bfloat16:
            return self.convert(self.negate(self.convert(a, T.float32)), t)
        if t.is_float:
            return Val(self.res(arith.NegfOp(a.ssa)), t)
        if t.is_bool:
            a, t = self.convert(a, T.int64), T.int64
        return Val(self.res(arith.SubiOp(self.constant(0, t).ssa, a.ssa)), t)

    def invert(self, a: Val) -> Val:
        t = a.type
        assert isinstance(t, T.ScalarType)
        if t.is_float:
            raise TypeFault(f"operator ~ is not defined for {t} (integer types only)")
        if t.is_bool:
            return self.logical_not(a)
        ones = self.res(arith.ConstantOp(IntegerAttr(-1, IntegerType(t.bits))))
        return Val(self.res(arith.XOrIOp(a.ssa, ones)), t)

    def logical_not(self, a: Val) -> Val:
        b = self.truth(a)
        one = self.res(arith.ConstantOp(IntegerAttr(1, IntegerType(1))))
        return Val(self.res(arith.XOrIOp(b.ssa, one)), T.bool_)

    def minmax(self, which: str, a: Val, b: Val, t: T.ScalarType) -> Val:
        """min/max (NaN-propagating for floats, like Python's with a NaN first operand...)."""
        if t is T.bfloat16:
            wide = self.minmax(which, self.convert(a, T.float32), self.convert(b, T.float32),
                               T.float32)
            return self.convert(wide, t)
        cls: Callable[[SSAValue, SSAValue], Operation]
        if t.is_float:
            cls = arith.MaximumfOp if which == "max" else arith.MinimumfOp
        elif t.is_signed:
            cls = arith.MaxSIOp if which == "max" else arith.MinSIOp
        else:
            cls = arith.MaxUIOp if which == "max" else arith.MinUIOp
        return Val(self.res(cls(a.ssa, b.ssa)), t)
