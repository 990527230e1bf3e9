"""math dialect handlers. Integer ops (absi, ctlz, cttz, ctpop, ipowi) and rsqrt/fpowi lower here
the same on every target; every floating-point function goes through `Target.math_function`
(LLVM intrinsics, libm calls, or inline code on NVPTX).

On 1-D vectors: absi/ctlz/cttz/ctpop call the vector overloads of their intrinsics; every other
op is *scalarized*, one call of the scalar lowering per lane (`lanewise`), because the targets'
math hooks are scalar (libm functions, NVPTX's inline IEEE code, powi's scalar exponent). Each
lane therefore computes exactly what the scalar op computes, on every target; LLVM's SLP
vectorizer may re-merge the lanes where the target has vector instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, intrinsic_suffix
from nova.backends.llvm.target import Handler

ScalarFn = Callable[[FunctionEmitter, list[ir.Value]], ir.Value]
"""A scalar lowering: operands (one lane each) -> the result of that lane."""


def lanewise(fe: FunctionEmitter, args: Sequence[ir.Value], result: ir.Type,
             fn: ScalarFn) -> ir.Value:
    """Apply scalar lowering `fn` to every lane of vector operands `args` (scalars when `result`
    is not a vector) and assemble the `result`-typed vector."""
    if not isinstance(result, ir.VectorType):
        return fn(fe, list(args))
    b = fe.builder
    out: ir.Value = ir.Constant(result, ir.Undefined)
    for lane in range(result.count):
        index = ir.Constant(T.I32, lane)
        value = fn(fe, [b.extract_element(a, index) for a in args])
        out = b.insert_element(out, value, index)
    return out


def element_type(ty: Attribute) -> Attribute:
    """The element type of an MLIR vector type, or the type itself."""
    return ty.element_type if isinstance(ty, VectorType) else ty


def _lanewise_handler(fn: ScalarFn) -> Handler:
    """A handler binding the op's one result to `fn` applied lane by lane."""
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        result = fe.lower_type(op.results[0].type)
        fe.bind(op.results[0], lanewise(fe, fe.operands(op), result, fn))
    return handler

FLOAT_FUNCTIONS = (
    "sqrt", "absf", "floor", "ceil", "trunc", "round", "roundeven", "fma", "copysign", "exp",
    "exp2", "log", "log2", "log10", "sin", "cos", "powf", "tan", "tanh", "atan", "atan2",
    "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "expm1", "log1p",
    "cbrt",
)


def allows_approx(op: Operation) -> bool:
    """True when the op's `fastmath` flags allow approximate functions (`afn` or `fast`)."""
    flags = op.properties.get("fastmath")
    names = {str(getattr(f, "value", f)) for f in getattr(flags, "data", ())}
    return bool(names & {"afn", "fast"})


def _float_fn(name: str) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        mlir_type = element_type(op.results[0].type)
        approx = allows_approx(op)

        def scalar(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
            if approx:
                value = fe.target.approx_math_function(fe, name, args, mlir_type)
                if value is not None:
                    return value
            return fe.target.math_function(fe, name, args, mlir_type)

        result = fe.lower_type(op.results[0].type)
        fe.bind(op.results[0], lanewise(fe, fe.operands(op), result, scalar))
    return handler


def lower_sincos(fe: FunctionEmitter, op: Operation) -> None:
    """`%s, %c = math.sincos %x`: the target's own math.sin and math.cos of every lane, so each
    result is bit-identical to the separate op on every device."""
    mlir_type = element_type(op.results[0].type)
    result = fe.lower_type(op.results[0].type)
    for res, name in zip(op.results, ("math.sin", "math.cos"), strict=True):
        def scalar(fe: FunctionEmitter, args: list[ir.Value], name: str = name) -> ir.Value:
            return fe.target.math_function(fe, name, args, mlir_type)

        fe.bind(res, lanewise(fe, fe.operands(op), result, scalar))


def lower_rsqrt(fe: FunctionEmitter, op: Operation) -> None:
    """1 / sqrt(x) (lane by lane for vectors)."""
    mlir_type = element_type(op.results[0].type)

    def scalar(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
        root = fe.target.math_function(fe, "math.sqrt", args, mlir_type)
        return fe.builder.fdiv(ir.Constant(root.type, 1.0), root)

    result = fe.lower_type(op.results[0].type)
    fe.bind(op.results[0], lanewise(fe, fe.operands(op), result, scalar))


def lower_absi(fe: FunctionEmitter, op: Operation) -> None:
    (x,) = fe.operands(op)
    fn = fe.module.declare(f"llvm.abs.{intrinsic_suffix(x.type)}",
                           ir.FunctionType(x.type, [x.type, ir.IntType(1)]))
    fe.bind(op.results[0], fe.builder.call(fn, [x, ir.Constant(ir.IntType(1), 0)]))


def _bitcount(intrinsic: str, zero_poison: bool | None) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        (x,) = fe.operands(op)
        if zero_poison is None:
            fn = fe.module.intrinsic(intrinsic, x.type, 1)
            out = fe.builder.call(fn, [x])
        else:
            fn = fe.module.declare(f"{intrinsic}.{intrinsic_suffix(x.type)}",
                                   ir.FunctionType(x.type, [x.type, ir.IntType(1)]))
            out = fe.builder.call(fn, [x, ir.Constant(ir.IntType(1), int(zero_poison))])
        fe.bind(op.results[0], out)
    return handler


def fpowi_value(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
    """x ** n for integer n: llvm.powi on i32 exponents (wider ones are truncated first, as
    MLIR's lowering does). On x86 this calls compiler-rt's __powisf2/__powidf2 (the CPU target
    supplies them); targets without them use `lower_fpowi_by_squaring`."""
    x, n = args
    i32 = ir.IntType(32)
    if n.type.width > 32:
        n = fe.builder.trunc(n, i32)
    elif n.type.width < 32:
        n = fe.builder.sext(n, i32)
    suffix = "f32" if x.type == ir.FloatType() else "f64" if x.type == ir.DoubleType() else "f16"
    fn = fe.module.declare(f"llvm.powi.{suffix}.i32", ir.FunctionType(x.type, [x.type, i32]))
    return fe.builder.call(fn, [x, n])


def fpowi_by_squaring_value(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
    """x ** n for an integer n by repeated squaring over the bits of |n|, 1/x**|n| for negative
    n, inline: for targets where llvm.powi would need a compiler-rt call (NVPTX has none, and
    LLVM aborts the process on it)."""
    x, n = args
    b = fe.builder
    ty = x.type
    ity = n.type
    zero = ir.Constant(ity, 0)
    negative = b.icmp_signed("<", n, zero)
    magnitude = b.select(negative, b.sub(zero, n), n)
    pre = b.block
    loop = fe.function.append_basic_block("fpowi.loop")
    done = fe.function.append_basic_block("fpowi.done")
    b.cbranch(b.icmp_signed("==", magnitude, zero), done, loop)
    b.position_at_end(loop)
    acc = b.phi(ty)
    base = b.phi(ty)
    exp = b.phi(ity)
    acc.add_incoming(ir.Constant(ty, 1.0), pre)
    base.add_incoming(x, pre)
    exp.add_incoming(magnitude, pre)
    acc2 = b.select(b.trunc(exp, ir.IntType(1)), b.fmul(acc, base), acc)
    exp2 = b.lshr(exp, ir.Constant(ity, 1))
    acc.add_incoming(acc2, loop)
    base.add_incoming(b.fmul(base, base), loop)
    exp.add_incoming(exp2, loop)
    b.cbranch(b.icmp_signed("==", exp2, zero), done, loop)
    b.position_at_end(done)
    power = b.phi(ty)
    power.add_incoming(ir.Constant(ty, 1.0), pre)
    power.add_incoming(acc2, loop)
    return b.select(negative, b.fdiv(ir.Constant(ty, 1.0), power), power)


lower_fpowi = _lanewise_handler(fpowi_value)
lower_fpowi_by_squaring = _lanewise_handler(fpowi_by_squaring_value)


def ipowi_value(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
    """Integer power by repeated squaring; a negative exponent gives 1 for x == 1, +-1 for
    x == -1 and 0 otherwise (MLIR's semantics)."""
    x, n = args
    b = fe.builder
    ty = x.type
    one, zero = ir.Constant(ty, 1), ir.Constant(ty, 0)
    odd = b.trunc(n, ir.IntType(1))
    negative_result = b.select(b.icmp_signed("==", x, one), one,
                               b.select(b.icmp_signed("==", x, ir.Constant(ty, -1)),
                                        b.select(odd, x, one), zero))
    early = b.select(b.icmp_signed("<", n, zero), negative_result, one)  # n <= 0
    pre = b.block
    loop = fe.function.append_basic_block("ipowi.loop")
    done = fe.function.append_basic_block("ipowi.done")
    b.cbranch(b.icmp_signed("<=", n, zero), done, loop)
    b.position_at_end(loop)
    acc = b.phi(ty)
    base = b.phi(ty)
    exp = b.phi(ty)
    acc.add_incoming(one, pre)
    base.add_incoming(x, pre)
    exp.add_incoming(n, pre)
    acc2 = b.select(b.trunc(exp, ir.IntType(1)), b.mul(acc, base), acc)
    exp2 = b.lshr(exp, one)
    acc.add_incoming(acc2, loop)
    base.add_incoming(b.mul(base, base), loop)
    exp.add_incoming(exp2, loop)
    b.cbranch(b.icmp_signed("==", exp2, zero), done, loop)
    b.position_at_end(done)
    result = b.phi(ty)
    result.add_incoming(acc2, loop)
    result.add_incoming(early, pre)
    return result


lower_ipowi = _lanewise_handler(ipowi_value)


HANDLERS: dict[str, Handler] = {f"math.{n}": _float_fn(f"math.{n}") for n in FLOAT_FUNCTIONS}
HANDLERS.update({
    "math.rsqrt": lower_rsqrt,
    "math.sincos": lower_sincos,
    "math.absi": lower_absi,
    "math.ctlz": _bitcount("llvm.ctlz", False),
    "math.cttz": _bitcount("llvm.cttz", False),
    "math.ctpop": _bitcount("llvm.ctpop", None),
    "math.fpowi": lower_fpowi,
    "math.ipowi": lower_ipowi,
})
