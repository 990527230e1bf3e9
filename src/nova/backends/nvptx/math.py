"""math.* on NVPTX without libdevice.

NVPTX has instructions for sqrt (sqrt.rn, correctly rounded), fabs, floor/ceil/trunc/round,
roundeven, fma, copysign, min/max; those use LLVM intrinsics. LLVM's NVPTX backend cannot lower
llvm.exp/log/sin/cos/pow (no libcall), and the `*.approx` instructions are only ~2^-22 accurate
(and worse after argument scaling), so the transcendental functions are emitted inline:

* f32, f16 and bf16 (f16/bf16 extended to f32, the result rounded back): every function has a
  single-precision implementation in math32.py (FMA polynomials, CUDA's range reductions, no
  f64 instruction), within CUDA's documented ulp bounds for its f32 libm; see that module.
* f64: the IEEE-double code below.

* exp/exp2/expm1: Cody-Waite reduction by ln2 (|r| <= ln2/2), 14-term Taylor polynomial, exact
  scaling by 2^k built from exponent bits (two factors, so the full range including gradual
  underflow is covered).
* log/log2/log10/log1p: exponent/mantissa split (denormals pre-scaled), m in [sqrt(1/2), sqrt(2)),
  ln(m) = 2 atanh((m-1)/(m+1)) by a 12-term odd series.
* sin/cos/tan: reduction by pi/2 in two fma steps (pi/2 split into two doubles), Taylor
  polynomials of degree 21/22 on |r| <= pi/4, quadrant selection.
* tanh/sinh/cosh from expm1/exp; atan (two reductions, 22-term series), atan2, asin, acos;
  powf = exp(y log|x|) with C's special cases for negative bases, zero and one; cbrt by
  Newton steps. erf/erfc have no f64 version (UnsupportedError).

Accuracy of the f64 code (measured by tests/unit/test_nvptx_math.py, which runs this same IR
on the host): exp/exp2/expm1/sin/cos/atan/log/log2/log10 within 2 ulp (sin/cos for
|x| <= 1e5; beyond ~1e6 the two-part pi/2 reduction loses accuracy), tan/tanh/log1p/cbrt within
3-4 ulp, sinh/cosh within 4 ulp; powf in f64 carries the error of y*log(x) (~|y log x| ulp).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir
from xdsl.ir import Attribute

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.nvptx.float_builder import FloatBuilder
from nova.backends.nvptx.math32 import IMPLS32, Math32
from nova.errors import UnsupportedError

DIRECT = {
    "math.sqrt": "llvm.sqrt", "math.absf": "llvm.fabs", "math.floor": "llvm.floor",
    "math.ceil": "llvm.ceil", "math.trunc": "llvm.trunc", "math.round": "llvm.round",
    "math.roundeven": "llvm.roundeven", "math.fma": "llvm.fma", "math.copysign": "llvm.copysign",
}

LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
PIO2_HI = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17


def lower(fe: FunctionEmitter, name: str, args: list[ir.Value], mlir_type: Attribute) -> ir.Value:
    """Emit math op `name` on `args` (all of the same float type) for NVPTX."""
    ty = args[0].type
    if name in DIRECT:
        fn = fe.module.intrinsic(DIRECT[name], ty, len(args))
        return fe.builder.call(fn, args)
    b = fe.builder
    impl32 = IMPLS32.get(name)
    if ty != T.F64 and impl32 is not None:
        narrow = [x if x.type == T.F32 else b.fpext(x, T.F32) for x in args]
        result32 = impl32(Math32(fe), *narrow)
        return result32 if ty == T.F32 else b.fptrunc(result32, ty)
    impl = _IMPLS.get(name)
    if impl is None:
        raise UnsupportedError(f"'{name}' on {mlir_type} is not supported by the NVPTX target "
                               f"(supported: {', '.join(sorted([*DIRECT, *_IMPLS]))}; "
                               "erf/erfc for f32/f16/bf16 only)")
    wide = [x if x.type == T.F64 else b.fpext(x, T.F64) for x in args]
    result = impl(Math64(fe), *wide)
    return result if ty == T.F64 else b.fptrunc(result, ty)


class Math64(FloatBuilder):
    """IR builders for IEEE-double helpers (every value is a `double`)."""

    FLOAT = T.F64

    def pow2(self, k: ir.Value) -> ir.Value:
        """2^k for an i64 k in [-1022, 1023], built from exponent bits."""
        bits = self.b.shl(self.b.add(k, ir.Constant(T.I64, 1023)), ir.Constant(T.I64, 52))
        return self.b.bitcast(bits, T.F64)

    def ldexp(self, x: ir.Value, k: ir.Value) -> ir.Value:
        """x * 2^k for i64 k in [-2044, 2046] (two exact factors, one final rounding)."""
        half = self.b.ashr(k, ir.Constant(T.I64, 1))
        rest = self.b.sub(k, half)
        return self.b.fmul(self.b.fmul(x, self.pow2(half)), self.pow2(rest))

    def exp_core(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(p, k) with exp(x) = p * 2^k, p = exp(r), |r| <= ln2/2; x must be finite, clamped."""
        b = self.b
        t = self.intr("llvm.roundeven", b.fmul(x, self.c(1 / math.log(2))))
        r = self.fma(b.fneg(t), self.c(LN2_HI), x)
        r = self.fma(b.fneg(t), self.c(LN2_LO), r)
        p = self.poly(r, [1 / math.factorial(n) for n in range(14)])
        return p, b.fptosi(t, T.I64)

    def exp(self, x: ir.Value) -> ir.Value:
        xc = self.intr("llvm.minnum", self.intr("llvm.maxnum", x, self.c(-760.0)), self.c(720.0))
        p, k = self.exp_core(xc)
        return self.select(self.isnan(x), x, self.ldexp(p, k))

    def exp2(self, x: ir.Value) -> ir.Value:
        b = self.b
        xc = self.intr("llvm.minnum", self.intr("llvm.maxnum", x, self.c(-1100.0)),
                       self.c(1030.0))
        t = self.intr("llvm.roundeven", xc)
        r = b.fmul(b.fsub(xc, t), self.c(math.log(2)))
        p = self.poly(r, [1 / math.factorial(n) for n in range(14)])
        return self.select(self.isnan(x), x, self.ldexp(p, b.fptosi(t, T.I64)))

    def expm1(self, x: ir.Value) -> ir.Value:
        """Taylor series for |x| < 0.5 (no cancellation), exp(x) - 1 beyond."""
        small = self.b.fmul(x, self.poly(x, [1 / math.factorial(n + 1) for n in range(18)]))
        big = self.b.fsub(self.exp(x), self.c(1.0))
        return self.select(self.lt(self.abs(x), self.c(0.5)), small, big)

    def log_parts(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(e, ln m) with x = 2^e * m, m in [sqrt(1/2), sqrt(2)); x positive finite."""
        b = self.b
        tiny = self.lt(x, self.c(2.2250738585072014e-308))
        xs = self.select(tiny, b.fmul(x, self.c(2.0 ** 54)), x)
        bits = b.bitcast(xs, T.I64)
        e = b.sub(b.and_(b.lshr(bits, ir.Constant(T.I64, 52)), ir.Constant(T.I64, 0x7FF)),
                  ir.Constant(T.I64, 1022))
        e = b.sub(e, b.select(tiny, ir.Constant(T.I64, 54), ir.Constant(T.I64, 0)))
        mbits = b.or_(b.and_(bits, ir.Constant(T.I64, (1 << 52) - 1)),
                      ir.Constant(T.I64, 1022 << 52))
        m = b.bitcast(mbits, T.F64)  # [0.5, 1)
        low = self.lt(m, self.c(math.sqrt(0.5)))
        m = self.select(low, b.fmul(m, self.c(2.0)), m)
        e = b.sub(e, b.zext(low, T.I64))
        s = b.fdiv(b.fsub(m, self.c(1.0)), b.fadd(m, self.c(1.0)))
        s2 = b.fmul(s, s)
        series = self.poly(s2, [1.0 / (2 * k + 1) for k in range(12)])
        return b.sitofp(e, T.F64), b.fmul(b.fmul(self.c(2.0), s), series)

    def log_special(self, x: ir.Value, value: ir.Value) -> ir.Value:
        """Apply log's special cases: NaN/negative -> NaN, 0 -> -inf, +inf -> +inf."""
        b = self.b
        value = self.select(b.fcmp_ordered("==", x, self.c(math.inf)), x, value)
        value = self.select(b.fcmp_ordered("==", x, self.c(0.0)), self.c(-math.inf), value)
        return self.select(b.fcmp_unordered("<", x, self.c(0.0)), self.c(math.nan), value)

    def log(self, x: ir.Value) -> ir.Value:
        e, lnm = self.log_parts(x)
        b = self.b
        value = b.fadd(b.fmul(e, self.c(LN2_HI)), b.fadd(b.fmul(e, self.c(LN2_LO)), lnm))
        return self.log_special(x, value)

    def log2(self, x: ir.Value) -> ir.Value:
        e, lnm = self.log_parts(x)
        return self.log_special(x, self.b.fadd(e, self.b.fmul(lnm, self.c(1 / math.log(2)))))

    def log10(self, x: ir.Value) -> ir.Value:
        e, lnm = self.log_parts(x)
        b = self.b
        value = b.fadd(b.fmul(e, self.c(math.log10(2))), b.fmul(lnm, self.c(1 / math.log(10))))
        return self.log_special(x, value)

    def log1p(self, x: ir.Value) -> ir.Value:
        """log(u) * x / (u - 1) with u = 1 + x (Goldberg's trick), x when u == 1."""
        b = self.b
        u = b.fadd(x, self.c(1.0))
        um1 = b.fsub(u, self.c(1.0))
        scaled = b.fmul(self.log(u), b.fdiv(x, um1))
        value = self.select(b.fcmp_ordered("==", um1, self.c(0.0)), x, scaled)
        return self.select(b.fcmp_ordered("==", u, self.c(math.inf)), u, value)

    def reduce_pio2(self, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(sin r, cos r, quadrant i64 in 0..3) with x = q*pi/2 + r."""
        b = self.b
        j = self.intr("llvm.roundeven", b.fmul(x, self.c(2 / math.pi)))
        r = self.fma(b.fneg(j), self.c(PIO2_HI), x)
        r = self.fma(b.fneg(j), self.c(PIO2_LO), r)
        quarter = b.fsub(j, b.fmul(self.c(4.0), self.intr("llvm.floor", b.fmul(j, self.c(0.25)))))
        q = b.fptosi(quarter, T.I64)
        z = b.fmul(r, r)
        sin_r = b.fmul(r, self.poly(z, [(-1) ** k / math.factorial(2 * k + 1) for k in range(11)]))
        cos_r = self.poly(z, [(-1) ** k / math.factorial(2 * k) for k in range(12)])
        return sin_r, cos_r, q

    def _quadrant(self, q: ir.Value, v0: ir.Value, v1: ir.Value, v2: ir.Value,
                  v3: ir.Value) -> ir.Value:
        b = self.b

        def eq(n: int) -> ir.Value:
            return b.icmp_signed("==", q, ir.Constant(T.I64, n))

        return self.select(eq(0), v0, self.select(eq(1), v1, self.select(eq(2), v2, v3)))

    def finite_or_nan(self, x: ir.Value, value: ir.Value) -> ir.Value:
        inf = self.b.fcmp_ordered("==", self.abs(x), self.c(math.inf))
        return self.select(self.b.or_(inf, self.isnan(x)), self.c(math.nan), value)

    def sin(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        return self.finite_or_nan(x, self._quadrant(q, s, c, b.fneg(s), b.fneg(c)))

    def cos(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        return self.finite_or_nan(x, self._quadrant(q, c, b.fneg(s), b.fneg(c), s))

    def tan(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        odd = b.trunc(q, T.I1)
        value = self.select(odd, b.fdiv(b.fneg(c), s), b.fdiv(s, c))
        return self.finite_or_nan(x, value)

    def tanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        em1 = self.expm1(b.fmul(self.c(2.0), self.intr("llvm.minnum", a, self.c(40.0))))
        t = b.fdiv(em1, b.fadd(em1, self.c(2.0)))
        return self.intr("llvm.copysign", self.select(self.isnan(x), x, t), x)

    def _half_exp_large(self, a: ir.Value) -> ir.Value:
        """exp(a)/2 for large a without overflowing early: (exp(a/2)/2) * exp(a/2)."""
        h = self.exp(self.b.fmul(a, self.c(0.5)))
        return self.b.fmul(self.b.fmul(h, self.c(0.5)), h)

    def sinh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        em1 = self.expm1(self.intr("llvm.minnum", a, self.c(700.0)))
        # sinh|x| = (e - 1/e)/2 = (em1 + em1/(em1+1))/2
        v = b.fmul(self.c(0.5), b.fadd(em1, b.fdiv(em1, b.fadd(em1, self.c(1.0)))))
        v = self.select(self.lt(a, self.c(700.0)), v, self._half_exp_large(a))
        return self.intr("llvm.copysign", v, x)

    def cosh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        e = self.exp(self.intr("llvm.minnum", a, self.c(700.0)))
        v = b.fmul(self.c(0.5), b.fadd(e, b.fdiv(self.c(1.0), e)))
        return self.select(self.lt(a, self.c(700.0)), v, self._half_exp_large(a))

    def atan(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        inv = self.lt(self.c(1.0), a)
        y = self.select(inv, b.fdiv(self.c(1.0), a), a)  # [0, 1]
        mid = self.lt(self.c(math.tan(math.pi / 8)), y)
        y2 = self.select(mid, b.fdiv(b.fsub(y, self.c(1.0)), b.fadd(y, self.c(1.0))), y)
        z = b.fmul(y2, y2)
        base = b.fmul(y2, self.poly(z, [(-1) ** k / (2 * k + 1) for k in range(22)]))
        base = self.select(mid, b.fadd(self.c(math.pi / 4), base), base)
        base = self.select(inv, b.fsub(self.c(math.pi / 2), base), base)
        return self.intr("llvm.copysign", self.select(self.isnan(x), x, base), x)

    def atan2(self, y: ir.Value, x: ir.Value) -> ir.Value:
        b = self.b
        ay, ax = self.abs(y), self.abs(x)
        both_inf = b.and_(b.fcmp_ordered("==", ay, self.c(math.inf)),
                          b.fcmp_ordered("==", ax, self.c(math.inf)))
        small = b.fcmp_ordered("<=", ay, ax)
        ratio = self.select(small, b.fdiv(ay, ax), b.fdiv(ax, ay))
        ratio = self.select(b.fcmp_ordered("==", ax, self.c(0.0)),
                            self.select(b.fcmp_ordered("==", ay, self.c(0.0)), self.c(0.0),
                                        ratio), ratio)
        a = self.atan(ratio)
        a = self.select(small, a, b.fsub(self.c(math.pi / 2), a))
        a = self.select(both_inf, self.c(math.pi / 4), a)
        x_neg = b.icmp_signed("<", b.bitcast(x, T.I64), ir.Constant(T.I64, 0))
        a = self.select(x_neg, b.fsub(self.c(math.pi), a), a)
        a = self.intr("llvm.copysign", a, y)
        return self.select(b.or_(self.isnan(x), self.isnan(y)), self.c(math.nan), a)

    def asin(self, x: ir.Value) -> ir.Value:
        b = self.b
        root = self.intr("llvm.sqrt", b.fmul(b.fsub(self.c(1.0), x), b.fadd(self.c(1.0), x)))
        return self.atan2(x, root)

    def acos(self, x: ir.Value) -> ir.Value:
        b = self.b
        root = self.intr("llvm.sqrt", b.fmul(b.fsub(self.c(1.0), x), b.fadd(self.c(1.0), x)))
        return self.atan2(root, x)

    def pow(self, x: ir.Value, y: ir.Value) -> ir.Value:
        b = self.b
        mag = self.exp(b.fmul(y, self.log(self.abs(x))))
        y_int = b.fcmp_ordered("==", self.intr("llvm.trunc", y), y)
        half = b.fmul(y, self.c(0.5))
        y_odd = b.and_(y_int, b.fcmp_ordered("!=", self.intr("llvm.trunc", half), half))
        x_neg = self.lt(x, self.c(0.0))
        value = self.select(b.and_(x_neg, y_odd), b.fneg(mag), mag)
        value = self.select(b.and_(x_neg, b.not_(y_int)), self.c(math.nan), value)
        # x == -0 with odd y keeps the sign: (-0)^3 = -0, (-0)^-3 = -inf
        zero_neg = b.and_(b.fcmp_ordered("==", x, self.c(0.0)),
                          b.icmp_signed("<", b.bitcast(x, T.I64), ir.Constant(T.I64, 0)))
        value = self.select(b.and_(zero_neg, y_odd), b.fneg(mag), value)
        one = b.or_(b.fcmp_ordered("==", y, self.c(0.0)), b.fcmp_ordered("==", x, self.c(1.0)))
        return self.select(one, self.c(1.0), value)

    def cbrt(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        guess = self.exp(b.fmul(self.log(a), self.c(1 / 3)))
        for _ in range(2):  # Newton: g -= (g^3 - a) / (3 g^2)
            g2 = b.fmul(guess, guess)
            guess = b.fsub(guess, b.fdiv(b.fsub(b.fmul(g2, guess), a), b.fmul(self.c(3.0), g2)))
        special = b.or_(b.fcmp_ordered("==", a, self.c(0.0)),
                        b.fcmp_unordered("==", a, self.c(math.inf)))
        return self.intr("llvm.copysign", self.select(special, a, guess), x)


_IMPLS: dict[str, Callable[..., ir.Value]] = {
    "math.exp": Math64.exp, "math.exp2": Math64.exp2, "math.expm1": Math64.expm1,
    "math.log": Math64.log, "math.log2": Math64.log2, "math.log10": Math64.log10,
    "math.log1p": Math64.log1p, "math.sin": Math64.sin, "math.cos": Math64.cos,
    "math.tan": Math64.tan, "math.tanh": Math64.tanh, "math.sinh": Math64.sinh,
    "math.cosh": Math64.cosh, "math.atan": Math64.atan, "math.atan2": Math64.atan2,
    "math.asin": Math64.asin, "math.acos": Math64.acos, "math.powf": Math64.pow,
    "math.cbrt": Math64.cbrt,
}
