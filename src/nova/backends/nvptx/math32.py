"""Single-precision math.* for NVPTX: FMA polynomials in f32, no f64 instruction.

f32 (and f16/bf16: extended to f32, computed, rounded back) math functions are computed here in
single precision with the range reductions CUDA's own libm uses; math.py keeps the IEEE-double
code for f64. No `*.approx` PTX instruction is used (every division is IEEE `div.rn.f32`; only
an op allowing approximate functions, `fastmath<afn>`, gets one: approx_math_function), so
the very same IR runs on the host CPU in tests/unit/test_nvptx_math.py, which measures the
errors. Polynomial coefficients are minimax fits (Lawson's iteratively reweighted least squares
on Chebyshev nodes, relative error, rounded to f32; scripts/fit-f32-math.py refits them), with
the leading -1/2 of the log polynomials set exactly; the erf ones are N. Juffa's published
erff, and the erfc fit agrees with his erfcf's to a few ulp of each coefficient.

* exp: j = rint(x log2 e), r = x - j ln2 in two FMA steps (Cody-Waite), e^r by a degree-6
  polynomial, scaled by 2^j as two exact factors (gradual underflow rounds once).
* exp2: j = rint(x), 2^(x-j) by a degree-7 polynomial, same scaling.
* expm1: j = rint(x / ln2), e^r - 1 = r_hi + (r_lo + r^2 q(r)); j <= 0: 2^j (e^r - 1) +
  (2^j - 1) in one FMA; j >= 1: 2^j ((1 - 2^-j) + (e^r - 1)) with the sum compensated (TwoSum)
  and the scaling exact.
* log/log10: x = 2^e (1 + m), m in [-1/3, 1/3) from x's bits (subnormals pre-scaled),
  log(1+m) = m + m^2 q(m), plus e ln2 (ln2 in two parts); log10 forms both products in
  double-float arithmetic. log1p: 1 + x = 2^e (1 + m) split at 3/4 with m = x 2^-e + (2^-e - 1)
  exact (N. Juffa's scheme), so 1 + x is never rounded.
* log2 and pow: a double-float log2 (log(1+m) = 2 atanh(u), u = m / (2 + m) with its division
  residual, u^3 in two parts; about 2^-33 absolute); log2 rounds it once; pow multiplies by y in
  double-float, 2^(hi + lo) by exp2's polynomial; C99's special cases by selects.
* tanh: x + x^3 p(x^2) for |x| < 0.6, 1 - 2 / (e^(2|x|) + 1) beyond.
* sinh: odd polynomial below 1, (m + m / (m + 1)) / 2 with m = expm1(|x|) (no cancellation)
  up to 9; cosh: (e + 1/e) / 2; both e^|x| / 2 from |x| = 9 on, with the halving folded into
  exp's scaling (no early overflow).
* erf: N. Juffa's erff (x + x p(x^2) up to 0.927734375, 1 - e^(q(|x|)) above).
* erfc: erfc(a) = e^(-a^2) (1 + p(t)) / (1 + 2a), t = (a - 2) / (a + 2) (N. Juffa's erfcf
  scheme, own fit), both divisions corrected by their residuals and e^(-a^2) by the rounding
  error of a^2; 2 - erfc(-x) for x < 0.
* sin/cos/tan: j = rint(x 2/pi), r = x - j pi/2 in three FMA steps for |x| <= 105615 (CUDA's
  fast-path bound); beyond, a branch to an exact Payne-Hanek reduction (x's significand times a
  96-bit window of 2/pi chosen by x's exponent, 32-bit words and 64-bit integer products), so
  every finite x is reduced correctly. Degree-9/10 polynomials on |r| <= pi/4.
* atan: t = min(|x|, 1/|x|), t + t^3 p(t^2), pi/2 - atan for |x| > 1; atan2 from the ratio of
  the smaller to the larger magnitude, then the octant; asin/acos: t + t^3 p(t^2) for
  |x| <= 1/2, pi/2 -/+ 2 asin(sqrt((1 - |x|) / 2)) beyond.
* cbrt: exponent / 3 bit guess, three Newton steps, a last one on the exact residual y^3 - a.

Special values (inf, NaN, -0, subnormal inputs and outputs, overflow and underflow
thresholds) are as C's libm. Maximum errors measured in ulp (every 97th f32 bit pattern, 44M
inputs, plus 4M uniform samples of each function's interesting range and the special values;
pow/atan2: 4M/2M pairs), CUDA's documented bound for its f32 function in parentheses:
exp 0.88 (2), exp2 0.86 (2), expm1 0.85 (1), log 0.94 (1), log2 0.503 (1), log10 1.54 (2),
log1p 0.954 (1), tanh 1.36 (2), sinh 1.31 (3), cosh 1.32 (2), erf 0.99 (2), erfc 3.60 (4),
sin 1.49 (2), cos 1.48 (2), tan 3.06 (4), atan 1.33 (2), atan2 1.47 (3; 1.40 over the 2M
pairs, 1.47 in another sample), asin 1.86 (2), acos 1.26 (2), pow 0.90 (4), cbrt 0.500 (1).
MEASURED_ULP holds them (rounded up) for the unit tests. f16/bf16 results are these rounded
once more (exp/tanh/erf/sin/log1p are tested on every finite half: within one half ulp).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from llvmlite import ir

from nova.backends.llvm import types as T
from nova.backends.nvptx.float_builder import FloatBuilder

MEASURED_ULP = {
    "exp": (0.9, 2), "exp2": (0.9, 2), "expm1": (0.9, 1), "log": (0.97, 1), "log2": (0.52, 1),
    "log10": (1.6, 2), "log1p": (0.98, 1), "tanh": (1.4, 2), "erf": (1.0, 2), "erfc": (3.7, 4),
    "sin": (1.5, 2), "cos": (1.5, 2), "tan": (3.1, 4), "sinh": (1.35, 3), "cosh": (1.35, 2),
    "atan": (1.35, 2), "atan2": (1.5, 3), "asin": (1.9, 2), "acos": (1.3, 2), "pow": (0.95, 4),
    "cbrt": (0.51, 1),
}
"""function -> (max ulp error measured (module docstring), rounded up: the unit tests' bound;
CUDA's documented bound for its f32 function)."""


def _hex(*values: str) -> list[float]:
    return [float.fromhex(v) for v in values]


LN2_HI = float.fromhex("0x1.62e400p-1")  # 16 significant bits: j * LN2_HI is exact
LN2_LO = float.fromhex("0x1.7f7d1cp-20")
LOG2E = float.fromhex("0x1.715476p+0")
EXP_Q = _hex("0x1.fffffcp-2", "0x1.555492p-3", "0x1.5558f2p-5", "0x1.1239d4p-7",
             "0x1.6a244cp-10")
EXP2_G = _hex("0x1.62e430p-1", "0x1.ebfbe0p-3", "0x1.c6b08ap-5", "0x1.3b29f4p-7",
              "0x1.5d8a86p-10", "0x1.445c84p-13", "0x1.fde5fep-17")
EXPM1_Q = _hex("0x1.000000p-1", "0x1.555554p-3", "0x1.5554b2p-5", "0x1.11118ap-7",
               "0x1.6d71e6p-10", "0x1.a032bep-13")
LOG_Q = _hex("-0x1.000000p-1", "0x1.555558p-2", "-0x1.fffe28p-3", "0x1.99968cp-3",
             "-0x1.55b1d0p-3", "0x1.250bb8p-3", "-0x1.f1720cp-4", "0x1.b6b05ap-4",
             "-0x1.0af506p-3", "0x1.f221dep-4")
LOG1P_Q = _hex("-0x1.000000p-1", "0x1.55555cp-2", "-0x1.0000c2p-2", "0x1.9997a0p-3",
               "-0x1.5509f8p-3", "0x1.244a9cp-3", "-0x1.051eeap-3", "0x1.e18078p-4",
               "-0x1.75d59cp-4", "0x1.31b84ep-5")
LOG_SPLIT = float.fromhex("0x1.555556p-1")  # 2/3 rounded up: m in [-1/3, 1/3)
TANH_P = _hex("-0x1.55553ep-2", "0x1.1109aep-3", "-0x1.b898dep-5", "0x1.54b8a0p-6",
              "-0x1.82585ap-8")
SINH_P = _hex("0x1.555556p-3", "0x1.111134p-7", "0x1.9ffe92p-13", "0x1.7a15b4p-19")
SIN_P = _hex("-0x1.555556p-3", "0x1.111108p-7", "-0x1.a00f80p-13", "0x1.6cd1f2p-19")
COS_Q = _hex("0x1.555556p-5", "-0x1.6c16b8p-10", "0x1.a010dep-16", "-0x1.241e9cp-22")
ATAN_P = _hex("-0x1.55553ep-2", "0x1.9991fep-3", "-0x1.2421b6p-3", "0x1.c099fep-4",
              "-0x1.583492p-4", "0x1.dac9e6p-5", "-0x1.fed166p-6", "0x1.65a662p-7",
              "-0x1.d62ffap-10")
ASIN_P = _hex("0x1.55554cp-3", "0x1.33387cp-4", "0x1.6caed2p-5", "0x1.0491a0p-5",
              "0x1.d91facp-7", "0x1.3355bep-5")
ATANH_P = _hex("0x1.555556p-1", "0x1.999990p-2", "0x1.2496e0p-2", "0x1.c554a2p-3",
               "0x1.9c1256p-3")
ERF_SMALL = [-5.96761703e-4, 4.99119423e-3, -2.67681349e-2, 1.12819925e-1, -3.76125336e-1,
             1.28379166e-1]
ERFC_P = _hex("0x1.1ba03ap-2", "-0x1.7bf614p-4", "-0x1.540846p-3", "0x1.4ffc3cp-3",
              "-0x1.bc0b0cp-5", "-0x1.081a18p-7", "0x1.1addd4p-7", "0x1.585b3ap-10",
              "-0x1.42a626p-10", "-0x1.a49336p-12")


def _pi_bits(bits: int) -> int:
    """floor(pi * 2^bits) by Machin's formula in integer arithmetic (exact to the last bit)."""
    guard = bits + 32

    def arctan_inv(n: int) -> int:
        total, term, k, sign = 0, (1 << guard) // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (16 * arctan_inv(5) - 4 * arctan_inv(239)) >> 32


TWO_OVER_PI_BITS = 256
TWO_OVER_PI = (1 << (2 * TWO_OVER_PI_BITS + 1)) // _pi_bits(TWO_OVER_PI_BITS)
"""floor(2/pi * 2^256) (within one unit), the Payne-Hanek reduction's table."""
TWO_OVER_PI_WORDS = [(TWO_OVER_PI >> (32 * k)) & 0xFFFFFFFF for k in range(9)]
PIO2 = [float.fromhex("0x1.921fb6p+0"), float.fromhex("-0x1.777a5cp-25"),
        float.fromhex("-0x1.ee59dap-50")]
"""pi/2 as a sum of three floats (Cody-Waite; x - j PIO2[0] is exact under FMA)."""
TRIG_FAST_MAX = 105615.0


class Math32(FloatBuilder):
    """IR builders for single-precision helpers (every float value is an f32)."""

    FLOAT = T.F32

    # --- basic helpers ----------------------------------------------------------------------
    def i(self, v: int) -> ir.Constant:
        return ir.Constant(T.I32, v)

    def intr_i(self, name: str, *xs: ir.Value) -> ir.Value:
        return self.b.call(self.fe.module.intrinsic(name, T.I32, len(xs)), list(xs))

    def eq(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("==", a, b)

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """x limited to [lo, hi]; NaN becomes lo (callers restore NaN at the end)."""
        return self.intr("llvm.minnum", self.intr("llvm.maxnum", x, self.c(lo)), self.c(hi))

    def bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, T.I32)

    def from_bits(self, k: ir.Value) -> ir.Value:
        return self.b.bitcast(k, T.F32)

    def pow2(self, k: ir.Value) -> ir.Value:
        """2^k for an i32 k in [-126, 127], built from exponent bits."""
        return self.from_bits(self.b.shl(self.b.add(k, self.i(127)), self.i(23)))

    def ldexp(self, x: ir.Value, k: ir.Value) -> ir.Value:
        """x * 2^k for i32 k in [-252, 254] (two exact factors, one final rounding)."""
        half = self.b.ashr(k, self.i(1))
        return self.b.fmul(self.b.fmul(x, self.pow2(half)), self.pow2(self.b.sub(k, half)))

    def to_int(self, j: ir.Value) -> ir.Value:
        """An integral f32 in i32 range to i32."""
        return self.b.fptosi(j, T.I32)

    # --- exponentials -----------------------------------------------------------------------
    def exp_reduce(self, x: ir.Value, j: ir.Value) -> ir.Value:
        """x - j ln2 (Cody-Waite, two FMA steps)."""
        r = self.fma(j, self.c(-LN2_HI), x)
        return self.fma(j, self.c(-LN2_LO), r)

    def exp_parts(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(p, k) with e^x = p 2^k, p in [2^-1/2, 2^1/2], k an i32 in [-150, 150]."""
        b = self.b
        xc = self.clamp(x, -104.0, 104.0)  # e^+-104 over/underflows whatever the rounding
        j = self.intr("llvm.roundeven", b.fmul(xc, self.c(LOG2E)))
        r = self.exp_reduce(xc, j)
        p = self.fma(self.fma(self.poly(r, EXP_Q), r, self.c(1.0)), r, self.c(1.0))
        return p, self.to_int(j)

    def exp(self, x: ir.Value) -> ir.Value:
        p, k = self.exp_parts(x)
        return self.select(self.isnan(x), x, self.ldexp(p, k))

    def exp_bounded(self, x: ir.Value) -> ir.Value:
        """e^x for x known to lie in [-80, 80] (no NaN): exp without the clamp, the NaN case
        and the second scaling factor (e^x is normal there), for erf and tanh."""
        b = self.b
        j = self.intr("llvm.roundeven", b.fmul(x, self.c(LOG2E)))
        r = self.exp_reduce(x, j)
        p = self.fma(self.fma(self.poly(r, EXP_Q), r, self.c(1.0)), r, self.c(1.0))
        return b.fmul(p, self.pow2(self.to_int(j)))

    def exp2(self, x: ir.Value) -> ir.Value:
        b = self.b
        xc = self.clamp(x, -160.0, 160.0)
        j = self.intr("llvm.roundeven", xc)
        r = b.fsub(xc, j)  # exact
        p = self.fma(self.poly(r, EXP2_G), r, self.c(1.0))
        return self.select(self.isnan(x), x, self.ldexp(p, self.to_int(j)))

    def expm1(self, x: ir.Value) -> ir.Value:
        b = self.b
        xc = self.clamp(x, -40.0, 100.0)
        j = self.intr("llvm.roundeven", b.fmul(xc, self.c(LOG2E)))
        r_hi = self.fma(j, self.c(-LN2_HI), xc)  # exact
        r_lo = b.fmul(j, self.c(-LN2_LO))
        r = b.fadd(r_hi, r_lo)
        tail = self.fma(b.fmul(r, r), self.poly(r, EXPM1_Q), r_lo)  # e^r - 1 = r_hi + tail
        k = self.to_int(j)
        # j <= 0: 2^j (e^r - 1) + (2^j - 1), both terms negative (or j = 0)
        scale = self.pow2(k)
        low = self.fma(scale, b.fadd(r_hi, tail), b.fsub(scale, self.c(1.0)))
        # j >= 1: 2^j ((1 - 2^-j) + e^r - 1), the sum compensated (TwoSum), the scaling exact
        inv_scale = self.pow2(b.sub(self.i(0), self.intr_i("llvm.smin", k, self.i(126))))
        head = b.fsub(self.c(1.0), inv_scale)  # rounds for j > 24
        head_err = b.fsub(b.fsub(self.c(1.0), head), inv_scale)  # exact
        s = b.fadd(head, r_hi)
        hv = b.fsub(s, r_hi)
        err = b.fadd(b.fsub(head, hv), b.fsub(r_hi, b.fsub(s, hv)))
        err = b.fadd(err, b.fadd(tail, head_err))
        high = self.ldexp(b.fadd(s, err), k)
        value = self.select(self.lt(self.c(0.0), j), high, low)
        value = self.select(self.eq(x, self.c(0.0)), x, value)  # keeps -0
        return self.select(self.isnan(x), x, value)

    # --- logarithms -------------------------------------------------------------------------
    def log_split(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(e, m) with x = 2^e (1 + m), m in [-1/3, 1/3), e as f32; x positive finite (tiny
        and subnormal x are scaled by 2^23 first)."""
        b = self.b
        tiny = self.lt(x, self.c(2.0 ** -100))
        xs = self.select(tiny, b.fmul(x, self.c(2.0 ** 23)), x)
        e = b.and_(b.sub(self.bits(xs), self.bits(self.c(LOG_SPLIT))), self.i(-(1 << 23)))
        m = b.fsub(self.from_bits(b.sub(self.bits(xs), e)), self.c(1.0))  # exact
        ef = b.fmul(b.sitofp(e, T.F32), self.c(2.0 ** -23))
        return b.fsub(ef, self.select(tiny, self.c(23.0), self.c(0.0))), m

    def log1p_poly(self, m: ir.Value, coeffs: list[float] = LOG_Q) -> tuple[ir.Value, ir.Value]:
        """(m, m^2 q(m)) with log(1+m) ~ m + m^2 q(m), m in [-1/3, 1/3) (LOG_Q) or
        [-1/4, 1/2) (LOG1P_Q)."""
        return m, self.b.fmul(self.b.fmul(m, m), self.poly(m, coeffs))

    def log_finish(self, x: ir.Value, value: ir.Value, zero_at: float = 0.0) -> ir.Value:
        """log's special cases: NaN -> NaN, below zero_at -> NaN, zero_at -> -inf, inf -> inf."""
        b = self.b
        value = self.select(self.eq(x, self.c(math.inf)), x, value)
        value = self.select(self.eq(x, self.c(zero_at)), self.c(-math.inf), value)
        value = self.select(b.fcmp_ordered("<", x, self.c(zero_at)), self.c(math.nan), value)
        return self.select(self.isnan(x), x, value)

    def log(self, x: ir.Value) -> ir.Value:
        e, m = self.log_split(x)
        m, t = self.log1p_poly(m)
        r = self.fma(e, self.c(LN2_LO), t)
        return self.log_finish(x, self.fma(e, self.c(LN2_HI), self.b.fadd(m, r)))

    def _scaled_log(self, e: ir.Value, m: ir.Value, t: ir.Value, factor: float,
                    e_factor: float) -> ir.Value:
        """e * e_factor + (m + t) * factor, the products formed in double-float arithmetic."""
        b = self.b
        hi_c = float(_f32(factor))
        lo_c = float(_f32(factor - hi_c))
        hi = b.fmul(m, self.c(hi_c))
        lo = self.fma(m, self.c(hi_c), b.fneg(hi))  # exact error of hi
        lo = self.fma(m, self.c(lo_c), lo)
        lo = self.fma(t, self.c(factor), lo)
        ehi = float(_f32(e_factor))
        elo = float(_f32(e_factor - ehi))
        lo = self.fma(e, self.c(elo), lo)
        return self.fma(e, self.c(ehi), b.fadd(hi, lo))

    def log2(self, x: ir.Value) -> ir.Value:
        """The double-float log2 (pow's) rounded once: log2f's 1 ulp bound leaves no room
        for the rounding errors of the cheaper log's scaling."""
        hi, lo = self.log2_double(x)
        return self.log_finish(x, self.b.fadd(hi, lo))

    def log10(self, x: ir.Value) -> ir.Value:
        e, m = self.log_split(x)
        m, t = self.log1p_poly(m)
        return self.log_finish(x, self._scaled_log(e, m, t, 1 / math.log(10),
                                                   math.log10(2)))

    def log1p(self, x: ir.Value) -> ir.Value:
        """1 + x = 2^e (1 + m) with m = x 2^-e + (2^-e - 1) formed from x's bits (N. Juffa)."""
        b = self.b
        xc = x  # out-of-domain x compute garbage that log_finish replaces
        u = b.fadd(xc, self.c(1.0))
        # split at 3/4: m in [-1/4, 1/2), x 2^-e + (2^-e - 1) exact by Sterbenz's lemma
        e = b.and_(b.sub(self.bits(u), self.bits(self.c(0.75))), self.i(-(1 << 23)))
        scaled = self.from_bits(b.sub(self.bits(xc), e))  # x 2^-e
        four = self.from_bits(b.sub(self.bits(self.c(4.0)), e))  # 2^(2-e), normal
        m = b.fadd(scaled, self.fma(self.c(0.25), four, self.c(-1.0)))
        ef = b.fmul(b.sitofp(e, T.F32), self.c(2.0 ** -23))
        m, t = self.log1p_poly(m, LOG1P_Q)
        r = self.fma(ef, self.c(LN2_LO), t)
        value = self.fma(ef, self.c(LN2_HI), b.fadd(m, r))
        value = self.select(self.eq(x, self.c(0.0)), x, value)  # keeps -0
        return self.log_finish(x, value, zero_at=-1.0)

    def log2_double(self, a: ir.Value) -> tuple[ir.Value, ir.Value]:
        """log2(a) as an unevaluated sum hi + lo (about 2^-40 relative), a positive finite:
        a = 2^e (1 + m), log(1 + m) = 2 atanh(u) with u = m / (2 + m) in double-float."""
        b = self.b
        e, m = self.log_split(a)
        d = b.fadd(self.c(2.0), m)
        d_lo = b.fsub(m, b.fsub(d, self.c(2.0)))  # Fast2Sum: 2 + m = d + d_lo exactly
        u = b.fdiv(m, d)
        resid = self.fma(b.fneg(u), d_lo, self.fma(b.fneg(u), d, m))  # m - u (2 + m)
        u_lo = b.fmul(resid, b.fmul(b.fsub(self.c(1.0), u), self.c(0.5)))  # 1/d = (1 - u)/2
        # u^3 = c_hi + c_lo (u^2 exact by FMA)
        s_hi = b.fmul(u, u)
        s_lo = self.fma(u, u, b.fneg(s_hi))
        c_hi = b.fmul(s_hi, u)
        c_lo = self.fma(s_lo, u, self.fma(s_hi, u, b.fneg(c_hi)))
        # log(1+m) - 2u = (2/3) U^3 + U^3 s P'(s) + 2 u_lo = t_hi + t_lo, U = u + u_lo
        k_hi = float(_f32(2 / 3))
        k_lo = float(_f32(2 / 3 - k_hi))
        t_hi = b.fmul(c_hi, self.c(k_hi))
        t_lo = self.fma(c_hi, self.c(k_hi), b.fneg(t_hi))
        t_lo = b.fadd(t_lo, self.fma(c_hi, self.c(k_lo), b.fmul(c_lo, self.c(k_hi))))
        rest = b.fmul(b.fmul(c_hi, s_hi), self.poly(s_hi, ATANH_P[1:]))
        u_lo2 = b.fmul(u_lo, self.c(2.0))  # 2 u_lo (1 + u^2): u_lo's share of 2u + 2u^3/3
        t_lo = b.fadd(t_lo, self.fma(u_lo2, s_hi, b.fadd(u_lo2, rest)))
        # ln(1+m) = 2u + t_hi + t_lo = big + big_lo (Fast2Sum: |2u| > |t_hi|)
        u2 = b.fmul(u, self.c(2.0))
        big = b.fadd(u2, t_hi)
        big_lo = b.fadd(b.fadd(b.fsub(u2, big), t_hi), t_lo)
        # times 1/ln2 = l_hi + l_lo
        l_hi = float(_f32(1 / math.log(2)))
        l_lo = float(_f32(1 / math.log(2) - l_hi))
        hi = b.fmul(big, self.c(l_hi))
        lo = self.fma(big, self.c(l_hi), b.fneg(hi))
        lo = b.fadd(lo, self.fma(big, self.c(l_lo), b.fmul(big_lo, self.c(l_hi))))
        head = b.fadd(e, hi)  # e integral, |hi| < 1: TwoSum
        hv = b.fsub(head, hi)
        err = b.fadd(b.fadd(b.fsub(e, hv), b.fsub(hi, b.fsub(head, hv))), lo)
        total = b.fadd(head, err)
        return total, b.fadd(b.fsub(head, total), err)  # Fast2Sum: normalized

    def pow(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """|x|^y = 2^(y log2|x|) with the log and the product in double-float arithmetic
        and the exponential of the low part folded in; C99's special cases by selects."""
        b = self.b
        a = self.abs(x)
        fin = b.and_(self.lt(self.c(0.0), a), self.lt(a, self.c(math.inf)))
        l_hi, l_lo = self.log2_double(self.select(fin, a, self.c(1.0)))
        yc = self.select(self.lt(self.abs(y), self.c(math.inf)), y, self.c(0.0))
        p_hi = b.fmul(yc, l_hi)
        p_lo = self.fma(yc, l_lo, self.fma(yc, l_hi, b.fneg(p_hi)))
        pc = self.clamp(p_hi, -200.0, 200.0)
        j = self.intr("llvm.roundeven", pc)
        r = b.fadd(b.fsub(pc, j), self.clamp(p_lo, -1.0, 1.0))  # pc - j exact
        two_r = self.fma(self.poly(r, EXP2_G), r, self.c(1.0))
        mag = self.ldexp(two_r, self.to_int(j))
        # zero / infinite |x| or y
        y_neg = self.lt(y, self.c(0.0))
        zero_or_inf = self.select(b.xor(self.eq(a, self.c(0.0)), y_neg), self.c(0.0),
                                  self.c(math.inf))
        mag = self.select(b.or_(self.eq(a, self.c(0.0)), self.eq(a, self.c(math.inf))),
                          zero_or_inf, mag)
        y_inf = self.eq(self.abs(y), self.c(math.inf))
        by_y = self.select(b.xor(self.lt(a, self.c(1.0)), y_neg), self.c(0.0), self.c(math.inf))
        mag = self.select(y_inf, self.select(self.eq(a, self.c(1.0)), self.c(1.0), by_y), mag)
        # sign and domain for negative x
        y_int = self.eq(self.intr("llvm.trunc", y), y)
        half = b.fmul(y, self.c(0.5))
        y_odd = b.and_(y_int, b.fcmp_ordered("!=", self.intr("llvm.trunc", half), half))
        x_neg = b.icmp_signed("<", self.bits(x), self.i(0))
        value = self.select(b.and_(x_neg, y_odd), b.fneg(mag), mag)
        bad = b.and_(b.and_(x_neg, fin), b.not_(b.or_(y_int, y_inf)))
        value = self.select(bad, self.c(math.nan), value)
        value = self.select(b.or_(self.isnan(x), self.isnan(y)), b.fadd(x, y), value)
        one = b.or_(self.eq(y, self.c(0.0)), self.eq(x, self.c(1.0)))
        return self.select(one, self.c(1.0), value)

    def cbrt(self, x: ir.Value) -> ir.Value:
        """Bit-level first guess (exponent / 3), three Newton steps, and a last step on the
        residual y^3 - a formed exactly with FMAs (y^2 in two parts)."""
        b = self.b
        a = self.abs(x)
        tiny = self.lt(a, self.c(2.0 ** -100))
        s = self.select(tiny, b.fmul(a, self.c(2.0 ** 24)), a)  # cbrt(2^24) = 2^8
        y = self.from_bits(b.add(b.udiv(self.bits(s), self.i(3)), self.i(0x2A5137A0)))
        for _ in range(3):
            y2 = b.fmul(y, y)
            y = b.fsub(y, b.fdiv(self.fma(y2, y, b.fneg(s)), b.fmul(self.c(3.0), y2)))
        y2 = b.fmul(y, y)
        y2_lo = self.fma(y, y, b.fneg(y2))
        resid = self.fma(y2_lo, y, self.fma(y2, y, b.fneg(s)))
        y = self.fma(b.fneg(resid), b.fdiv(self.c(1.0), b.fmul(self.c(3.0), y2)), y)
        y = self.select(tiny, b.fmul(y, self.c(2.0 ** -8)), y)
        special = b.or_(self.eq(a, self.c(0.0)), b.fcmp_unordered("==", a, self.c(math.inf)))
        return self.intr("llvm.copysign", self.select(special, b.fadd(x, x), y), x)

    # --- hyperbolic and error functions -----------------------------------------------------
    def tanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        s = b.fmul(x, x)
        small = self.fma(b.fmul(s, x), self.poly(s, TANH_P), x)
        e = self.exp_bounded(b.fmul(self.c(2.0), self.intr("llvm.minnum", a, self.c(20.0))))
        large = self.fma(self.c(-2.0), b.fdiv(self.c(1.0), b.fadd(e, self.c(1.0))), self.c(1.0))
        large = self.intr("llvm.copysign", large, x)
        value = self.select(self.lt(a, self.c(0.6)), small, large)
        return self.select(b.or_(self.eq(x, self.c(0.0)), self.isnan(x)), x, value)  # -0, NaN

    def _half_exp(self, a: ir.Value) -> ir.Value:
        """e^a / 2 for a >= 0 without overflowing before the result does."""
        p, k = self.exp_parts(a)
        return self.ldexp(p, self.b.sub(k, self.i(1)))

    def sinh(self, x: ir.Value) -> ir.Value:
        """a + a^3 p(a^2) for a = |x| < 1; (m + m / (m + 1)) / 2 with m = e^a - 1 (no
        cancellation) up to 9; e^a / 2 beyond."""
        b = self.b
        a = self.abs(x)
        s = b.fmul(a, a)
        v = self.fma(b.fmul(s, a), self.poly(s, SINH_P), a)
        m = self.expm1(self.clamp(a, 1.0, 9.0))
        mid = b.fmul(self.c(0.5), b.fadd(m, b.fdiv(m, b.fadd(m, self.c(1.0)))))
        v = self.select(self.lt(a, self.c(1.0)), v, mid)
        v = self.select(self.lt(a, self.c(9.0)), v, self._half_exp(a))
        return self.select(self.isnan(x), x, self.intr("llvm.copysign", v, x))

    def cosh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        e = self.exp(self.intr("llvm.minnum", a, self.c(9.0)))
        v = self.fma(self.c(0.5), e, b.fdiv(self.c(0.5), e))
        v = self.select(self.lt(a, self.c(9.0)), v, self._half_exp(a))
        return self.select(self.isnan(x), x, v)

    # --- inverse trigonometric --------------------------------------------------------------
    def atan_unit(self, t: ir.Value) -> ir.Value:
        """atan(t) for t in [0, 1]: t + t^3 p(t^2)."""
        s = self.b.fmul(t, t)
        return self.fma(self.b.fmul(s, t), self.poly(s, ATAN_P), t)

    def pio2_minus(self, r: ir.Value, scale: float = 1.0) -> ir.Value:
        """scale pi/2 - r with scale pi/2 in two parts."""
        hi = float(_f32(scale * math.pi / 2))
        lo = float(_f32(scale * math.pi / 2 - hi))
        return self.b.fadd(self.b.fsub(self.c(hi), r), self.c(lo))

    def atan(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.abs(x)
        inv = self.lt(self.c(1.0), a)
        t = self.select(inv, b.fdiv(self.c(1.0), a), a)
        r = self.atan_unit(t)
        r = self.select(inv, self.pio2_minus(r), r)
        return self.select(self.isnan(x), x, self.intr("llvm.copysign", r, x))

    def atan2(self, y: ir.Value, x: ir.Value) -> ir.Value:
        b = self.b
        ay, ax = self.abs(y), self.abs(x)
        swap = self.lt(ax, ay)
        num = self.select(swap, ax, ay)
        den = self.select(swap, ay, ax)
        t = b.fdiv(num, den)
        both_inf = b.and_(self.eq(ay, self.c(math.inf)), self.eq(ax, self.c(math.inf)))
        t = self.select(both_inf, self.c(1.0), t)
        t = self.select(self.eq(den, self.c(0.0)), self.c(0.0), t)
        r = self.atan_unit(t)
        r = self.select(swap, self.pio2_minus(r), r)
        x_neg = b.icmp_signed("<", self.bits(x), self.i(0))
        r = self.select(x_neg, self.pio2_minus(r, 2.0), r)
        r = self.intr("llvm.copysign", r, y)
        return self.select(b.or_(self.isnan(x), self.isnan(y)), b.fadd(x, y), r)

    def asin_half(self, t: ir.Value) -> ir.Value:
        """asin(t) for |t| <= 1/2: t + t^3 p(t^2)."""
        s = self.b.fmul(t, t)
        return self.fma(self.b.fmul(s, t), self.poly(s, ASIN_P), t)

    def asin_parts(self, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(a > 1/2, asin(x) for |x| <= 1/2, asin(sqrt((1 - a)/2))) with a = |x|."""
        b = self.b
        a = self.abs(x)
        big = self.lt(self.c(0.5), a)
        half = b.fmul(b.fsub(self.c(1.0), self.intr("llvm.minnum", a, self.c(1.0))),
                      self.c(0.5))  # exact
        far = self.asin_half(self.intr("llvm.sqrt", half))
        near = self.asin_half(self.select(big, self.c(0.0), x))
        return big, near, far

    def asin(self, x: ir.Value) -> ir.Value:
        """asin(a) = pi/2 - 2 asin(sqrt((1 - a)/2)) for a = |x| > 1/2."""
        big, near, far = self.asin_parts(x)
        b = self.b
        wide = self.intr("llvm.copysign", self.pio2_minus(b.fmul(far, self.c(2.0))), x)
        value = self.select(big, wide, near)
        out = self.lt(self.c(1.0), self.abs(x))
        return self.select(b.or_(out, self.isnan(x)), self.c(math.nan), value)

    def acos(self, x: ir.Value) -> ir.Value:
        """pi/2 - asin(x) for |x| <= 1/2; 2 asin(sqrt((1 - |x|)/2)) (or pi minus it) beyond."""
        big, near, far = self.asin_parts(x)
        b = self.b
        twice = b.fmul(far, self.c(2.0))
        wide = self.select(self.lt(x, self.c(0.0)), self.pio2_minus(twice, 2.0), twice)
        value = self.select(big, wide, self.pio2_minus(near))
        out = self.lt(self.c(1.0), self.abs(x))
        return self.select(b.or_(out, self.isnan(x)), self.c(math.nan), value)

    def erf(self, x: ir.Value) -> ir.Value:
        b = self.b
        t = self.abs(x)
        s = b.fmul(x, x)
        small = self.fma(self.poly(s, ERF_SMALL[::-1]), x, x)
        tc = self.intr("llvm.minnum", t, self.c(4.0))  # erf(4) rounds to 1
        sc = b.fmul(tc, tc)
        r = self.fma(self.c(-1.72853470e-5), tc, self.c(3.83197126e-4))
        u = self.fma(self.c(-3.88396438e-3), tc, self.c(2.42546219e-2))
        r = self.fma(r, sc, u)
        for k in (-1.06777877e-1, -6.34846687e-1, -1.28717512e-1):
            r = self.fma(r, tc, self.c(k))
        q = self.fma(r, tc, b.fneg(tc))
        large = self.intr("llvm.copysign", b.fsub(self.c(1.0), self.exp_bounded(q)), x)
        value = self.select(b.fcmp_ordered("<=", t, self.c(0.927734375)), small, large)
        return self.select(self.isnan(x), x, value)

    def erfc(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.intr("llvm.minnum", self.abs(x), self.c(10.5))
        # t = (a - 2) / (a + 2), with the division's rounding error corrected
        inv = b.fdiv(self.c(1.0), b.fadd(a, self.c(2.0)))
        t = self.fma(self.c(-4.0), inv, self.c(1.0))
        resid = self.fma(b.fadd(t, self.c(1.0)), self.c(-2.0), a)
        resid = self.fma(b.fneg(a), t, resid)
        t = self.fma(inv, resid, t)
        p = self.poly(t, ERFC_P)
        # (1 + p) / (1 + 2a), one correction step
        d = self.fma(self.c(2.0), a, self.c(1.0))
        inv = b.fdiv(self.c(1.0), d)
        q = self.fma(p, inv, inv)
        one_p = b.fadd(self.c(1.0), p)
        one_p_err = b.fadd(b.fsub(self.c(1.0), one_p), p)  # Fast2Sum: |p| < 1
        resid = b.fadd(self.fma(b.fneg(q), d, one_p), one_p_err)  # (1 + p) - q d
        q = self.fma(resid, inv, q)
        # times e^(-a^2): e^(-s) (1 + (s - a^2)) with s = a^2 rounded
        s = b.fmul(a, a)
        err = self.fma(b.fneg(a), a, s)
        r = b.fmul(q, self.exp(b.fneg(s)))
        r = self.fma(r, err, r)
        r = self.select(self.lt(x, self.c(0.0)), b.fsub(self.c(2.0), r), r)
        return self.select(self.isnan(x), x, r)

    # --- trigonometric ----------------------------------------------------------------------
    def reduce_fast(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(r, quadrant) for |x| <= TRIG_FAST_MAX: three-step Cody-Waite by pi/2."""
        b = self.b
        j = self.intr("llvm.roundeven", b.fmul(x, self.c(float(_f32(2 / math.pi)))))
        r = x
        for part in PIO2:
            r = self.fma(j, self.c(-part), r)
        q = self.to_int(self.clamp(j, -(2.0 ** 20), 2.0 ** 20))
        return r, q

    def reduce_slow(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(r, quadrant) for any finite |x| >= 2^16 by Payne-Hanek: x = M 2^(eb-158) with the
        32-bit M = significand << 8; M * floor(2/pi 2^(eb-64)) mod 2^96, >> 32, is x 2/pi
        mod 4 in 2.62 fixed point (a 96-bit window of 2/pi: 32-bit words, 64-bit products)."""
        b = self.b
        i64 = T.I64
        xb = self.bits(x)
        eb = b.and_(b.lshr(xb, self.i(23)), self.i(0xFF))
        mant = b.zext(b.or_(b.shl(xb, self.i(8)), self.i(-0x80000000)), i64)
        shift = b.sub(self.i(TWO_OVER_PI_BITS + 64), eb)  # window = 2/pi bits >> shift
        word = b.lshr(shift, self.i(5))
        rsh = b.zext(b.and_(shift, self.i(31)), i64)

        def table(k: int) -> ir.Value:  # 2/pi word (word + k), by a select chain
            acc: ir.Value = ir.Constant(i64, 0)
            for idx in range(2, 6):
                pick = b.icmp_unsigned("==", word, self.i(idx))
                acc = b.select(pick, ir.Constant(i64, TWO_OVER_PI_WORDS[idx + k]), acc)
            return acc

        w = [table(k) for k in range(4)]
        mask = ir.Constant(i64, 0xFFFFFFFF)
        g = [b.and_(b.lshr(b.or_(b.shl(w[k + 1], ir.Constant(i64, 32)), w[k]), rsh), mask)
             for k in range(3)]
        low = b.lshr(b.mul(mant, g[0]), ir.Constant(i64, 32))
        y = b.add(b.add(b.mul(mant, g[1]), low), b.shl(b.mul(mant, g[2]), ir.Constant(i64, 32)))
        q64 = b.lshr(b.add(y, ir.Constant(i64, 1 << 61)), ir.Constant(i64, 62))
        d = b.sub(y, b.shl(q64, ir.Constant(i64, 62)))  # signed, |d| <= 2^61
        hi = b.sitofp(d, T.F32)
        lo = b.sitofp(b.sub(d, b.fptosi(hi, i64)), T.F32)
        scale = math.pi / 2 * 2.0 ** -62
        c_hi = float(_f32(scale))
        c_lo = float(_f32(scale - c_hi))
        r = self.fma(hi, self.c(c_hi), self.fma(lo, self.c(c_hi), b.fmul(hi, self.c(c_lo))))
        q = b.trunc(q64, T.I32)
        neg = b.icmp_signed("<", xb, self.i(0))
        return self.select(neg, b.fneg(r), r), self.select(neg, b.sub(self.i(0), q), q)

    def reduce_pio2(self, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(sin r, cos r, quadrant 0..3) with x = q pi/2 + r; the slow reduction only on a
        branch taken for finite |x| > TRIG_FAST_MAX."""
        b = self.b
        fn = b.function
        r_fast, q_fast = self.reduce_fast(x)
        a = self.abs(x)
        big = b.and_(self.lt(self.c(TRIG_FAST_MAX), a), self.lt(a, self.c(math.inf)))
        fast_end = b.block
        slow_bb = fn.append_basic_block("trig.slow")
        done_bb = fn.append_basic_block("trig.done")
        b.cbranch(big, slow_bb, done_bb)
        b.position_at_end(slow_bb)
        r_slow, q_slow = self.reduce_slow(x)
        slow_end = b.block
        b.branch(done_bb)
        b.position_at_end(done_bb)
        r = b.phi(T.F32)
        r.add_incoming(r_fast, fast_end)
        r.add_incoming(r_slow, slow_end)
        q = b.phi(T.I32)
        q.add_incoming(q_fast, fast_end)
        q.add_incoming(q_slow, slow_end)
        s = b.fmul(r, r)
        sin_r = self.fma(b.fmul(s, r), self.poly(s, SIN_P), r)
        cos_r = self.fma(s, self.fma(s, self.poly(s, COS_Q), self.c(-0.5)), self.c(1.0))
        return sin_r, cos_r, b.and_(q, self.i(3))

    def _quadrant(self, q: ir.Value, v0: ir.Value, v1: ir.Value, v2: ir.Value,
                  v3: ir.Value) -> ir.Value:
        b = self.b

        def at(n: int) -> ir.Value:
            return b.icmp_signed("==", q, self.i(n))

        return self.select(at(0), v0, self.select(at(1), v1, self.select(at(2), v2, v3)))

    def finite_or_nan(self, x: ir.Value, value: ir.Value) -> ir.Value:
        inf = self.eq(self.abs(x), self.c(math.inf))
        return self.select(self.b.or_(inf, self.isnan(x)), self.b.fsub(x, x), value)

    def sin(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        value = self._quadrant(q, s, c, b.fneg(s), b.fneg(c))
        value = self.select(self.eq(x, self.c(0.0)), x, value)  # keeps -0
        return self.finite_or_nan(x, value)

    def cos(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        return self.finite_or_nan(x, self._quadrant(q, c, b.fneg(s), b.fneg(c), s))

    def tan(self, x: ir.Value) -> ir.Value:
        s, c, q = self.reduce_pio2(x)
        b = self.b
        odd = b.trunc(q, T.I1)
        value = self.select(odd, b.fdiv(b.fneg(c), s), b.fdiv(s, c))
        value = self.select(self.eq(x, self.c(0.0)), x, value)
        return self.finite_or_nan(x, value)


def _f32(v: float) -> float:
    """v rounded to single precision."""
    return float(struct.unpack("f", struct.pack("f", v))[0])


IMPLS32: dict[str, Callable[..., ir.Value]] = {
    "math.exp": Math32.exp, "math.exp2": Math32.exp2, "math.expm1": Math32.expm1,
    "math.log": Math32.log, "math.log2": Math32.log2, "math.log10": Math32.log10,
    "math.log1p": Math32.log1p, "math.tanh": Math32.tanh, "math.erf": Math32.erf,
    "math.erfc": Math32.erfc, "math.sin": Math32.sin, "math.cos": Math32.cos,
    "math.tan": Math32.tan, "math.sinh": Math32.sinh, "math.cosh": Math32.cosh,
    "math.atan": Math32.atan, "math.atan2": Math32.atan2, "math.asin": Math32.asin,
    "math.acos": Math32.acos, "math.powf": Math32.pow,
    "math.cbrt": Math32.cbrt,
}
"""math ops with a single-precision implementation (f32, f16 and bf16 use it)."""
