"""Accuracy of the NVPTX math implementations (nvptx_math, math32), run on the host: the same
LLVM IR the NVPTX target emits is JIT-compiled for x86-64 and compared with libm (Python's and
NumPy's double-precision functions as references for the f32 ones)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from llvmlite import ir
from tests.unit.test_llvm_jit_support import JitTarget, array_function, scalar_function

from nova.backends.llvm import FunctionEmitter, ModuleEmitter
from nova.backends.nvptx import math as nvptx_math
from nova.backends.nvptx.math import Math64
from nova.backends.nvptx.math32 import IMPLS32, MEASURED_ULP, TRIG_FAST_MAX, Math32

RNG = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _rng_per_test(request: pytest.FixtureRequest) -> None:
    """Each test draws from its own seeded generator: with pytest-xdist the tests a worker
    runs before this one differ from run to run, and a shared generator made the samples (and
    the worst error found) differ with them."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def ulp_error(got: float, want: float) -> float:
    if math.isnan(want):
        return 0.0 if math.isnan(got) else math.inf
    if math.isinf(want) or want == 0.0:
        return 0.0 if got == want else abs(got - want) / 5e-324
    return abs(got - want) / math.ulp(want)


def compiled(name: str, nargs: int = 1):  # type: ignore[no-untyped-def]
    return scalar_function(lambda fe, args: getattr(Math64(fe), name)(*args), nargs)


def sample(lo: float, hi: float, n: int = 3000) -> list[float]:
    return [*RNG.uniform(lo, hi, n), lo, hi, 0.0, -0.0]


@pytest.mark.parametrize(("name", "ref", "lo", "hi", "max_ulp"), [
    ("exp", math.exp, -745.0, 709.0, 2),
    ("exp2", lambda x: 2.0 ** x, -1074.0, 1023.0, 2),
    ("expm1", math.expm1, -5.0, 5.0, 2),
    ("sin", math.sin, -1e5, 1e5, 2),
    ("cos", math.cos, -1e5, 1e5, 2),
    ("tan", math.tan, -100.0, 100.0, 4),
    ("tanh", math.tanh, -30.0, 30.0, 3),
    ("sinh", math.sinh, -700.0, 700.0, 4),
    ("cosh", math.cosh, -700.0, 700.0, 4),
    ("atan", math.atan, -1e4, 1e4, 2),
    ("cbrt", lambda x: math.copysign(abs(x) ** (1 / 3), x), -1e6, 1e6, 3),
])
def test_f64_accuracy(name: str, ref, lo: float, hi: float, max_ulp: float) -> None:  # type: ignore[no-untyped-def]
    f = compiled(name)
    worst = max((ulp_error(f(x), ref(x)), x) for x in sample(lo, hi))
    assert worst[0] <= max_ulp, f"{name}({worst[1]!r}): {worst[0]} ulp"


@pytest.mark.parametrize(("name", "ref"), [
    ("log", math.log), ("log2", math.log2), ("log10", math.log10), ("log1p", math.log1p),
])
def test_f64_logs(name: str, ref) -> None:  # type: ignore[no-untyped-def]
    f = compiled(name)
    xs = [float(v) for v in 10.0 ** RNG.uniform(-307, 307, 3000)] + [1.0, 2.0, 0.5, 8.0, 5e-324]
    worst = max((ulp_error(f(x), ref(x)), x) for x in xs)
    assert worst[0] <= 3, f"{name}({worst[1]!r}): {worst[0]} ulp"
    assert f(0.0) == -math.inf if name != "log1p" else f(0.0) == 0.0
    assert math.isnan(f(-1.5))
    assert f(math.inf) == math.inf


def test_exact_powers_of_two_in_log2_and_exp2() -> None:
    log2, exp2 = compiled("log2"), compiled("exp2")
    for k in range(-1070, 1024, 7):
        assert log2(2.0 ** k) == k
        assert exp2(float(k)) == 2.0 ** k


def test_special_values() -> None:
    exp, sin, tanh, atan2 = compiled("exp"), compiled("sin"), compiled("tanh"), compiled("atan2", 2)
    assert exp(math.inf) == math.inf and exp(-math.inf) == 0.0 and math.isnan(exp(math.nan))
    assert exp(710.0) == math.inf and exp(-746.0) == 0.0
    assert math.isnan(sin(math.inf)) and math.isnan(sin(math.nan))
    assert tanh(math.inf) == 1.0 and tanh(-math.inf) == -1.0
    for y, x in [(0.0, 0.0), (0.0, -0.0), (-0.0, -1.0), (1.0, 0.0), (math.inf, math.inf),
                 (-math.inf, -math.inf), (1.0, -math.inf), (3.0, -4.0), (-2.0, 5.0)]:
        assert atan2(y, x) == pytest.approx(math.atan2(y, x), rel=1e-15), (y, x)
        assert math.copysign(1, atan2(y, x)) == math.copysign(1, math.atan2(y, x)), (y, x)


def test_asin_acos_pow() -> None:
    asin, acos, pw = compiled("asin"), compiled("acos"), compiled("pow", 2)
    for x in sample(-1.0, 1.0, 500):
        assert asin(x) == pytest.approx(math.asin(x), rel=1e-14, abs=1e-300)
        assert acos(x) == pytest.approx(math.acos(x), rel=1e-14)
    for x, y in [(2.0, 10.0), (-2.0, 3.0), (-2.0, 2.0), (0.0, -1.0), (-0.0, -3.0), (-0.0, 3.0),
                 (1.0, math.nan), (math.nan, 0.0), (10.0, -2.0), (0.5, 0.5)]:
        want = math.pow(x, y) if not (x == 0.0 and y < 0) else math.copysign(math.inf, x) \
            if y == -3.0 else math.inf
        got = pw(x, y)
        assert got == pytest.approx(want, rel=1e-13) or (math.isnan(got) and math.isnan(want))
        assert math.copysign(1, got) == math.copysign(1, want), (x, y)
    assert math.isnan(pw(-2.0, 0.5))


# --- single precision (math32) -------------------------------------------------------------

_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)
REFS32 = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "atan": np.arctan, "asin": np.arcsin,
    "acos": np.arccos, "cbrt": np.cbrt,
    "erf": lambda x: _ERF(x).astype(np.float64), "erfc": lambda x: _ERFC(x).astype(np.float64),
}
FLT_MAX = float(np.finfo(np.float32).max)
FLT_TRUE_MIN = 2.0 ** -149


def f32_function(name: str, nargs: int = 1):  # type: ignore[no-untyped-def]
    return array_function(lambda fe, xs: getattr(Math32(fe), name)(*xs), nargs)


def reference32(ref, *xs: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The double-precision reference, with results beyond the f32 range as f32 rounds them."""
    with np.errstate(all="ignore"):
        want = np.asarray(ref(*[x.astype(np.float64) for x in xs]), dtype=np.float64)
        rounded = want.astype(np.float32).astype(np.float64)
    return np.where(np.isinf(rounded), rounded, want)


def ulp32_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the f32 ulp at `want` (subnormal ulp 2^-149 at the bottom);
    inf where one is NaN/inf/zero-of-the-other-sign and the other is not the same."""
    got = got.astype(np.float64)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    mag = np.abs(want)
    exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    ulp = np.exp2(np.maximum(exponent, -126) - 23)
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / ulp
    special = ~np.isfinite(got) | ~np.isfinite(want) | (want == 0) & (got == 0)
    return np.where(same, 0.0, np.where(special, np.inf, err))


def bit_sweep(stride: int = 4099) -> np.ndarray:
    """Every stride-th f32 bit pattern (both signs, all binades, subnormals), finite ones."""
    x = np.arange(0, 2 ** 32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x[np.isfinite(x)]


SPECIALS = np.array([0.0, -0.0, math.inf, -math.inf, math.nan, FLT_TRUE_MIN, -FLT_TRUE_MIN,
                     2.0 ** -126, -(2.0 ** -126), 2.0 ** -126 - FLT_TRUE_MIN, 1e-30, -1e-30,
                     FLT_MAX, -FLT_MAX, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, 3.0, 10.0, -10.0,
                     # over/underflow boundaries of exp, exp2, expm1, sinh, cosh, erfc
                     88.72283, 88.72284, -87.33654, -103.27892, -103.97207, -103.97209, 104.0,
                     127.99999, 128.0, -126.0, -149.0, -149.5, -150.0, 89.41598, 89.416,
                     10.0546875, 10.06, 9.0, 0.927734375, 0.6, 4.0, 105615.0, 105616.0, 3e38,
                     # log1p near -1, tanh/erf saturation
                     -0.99999994, -0.75, 9.1, 20.0, -20.0], dtype=np.float32)


@pytest.mark.parametrize("name", sorted(REFS32))
def test_f32_dense_sweep_within_measured_and_cuda_bounds(name: str) -> None:
    """A million f32 bit patterns plus the special values: the max ulp error is the one stated
    in math32.MEASURED_ULP, itself within CUDA's documented bound for the f32 function; inf,
    NaN and signed zeros exactly as C's libm."""
    measured, cuda = MEASURED_ULP[name]
    assert measured <= cuda
    f = f32_function(name)
    x = np.concatenate([bit_sweep(), SPECIALS])
    err = ulp32_errors(f(x), reference32(REFS32[name], x))
    worst = int(np.argmax(err))
    assert err[worst] <= measured, f"{name}({x[worst]!r}): {err[worst]} ulp"


@pytest.mark.parametrize(("name", "lo", "hi"), [
    ("exp", -104.0, 89.0), ("exp2", -150.0, 128.0), ("expm1", -20.0, 89.0),
    ("log", 0.0, 4.0), ("log2", 0.0, 4.0), ("log10", 0.0, 4.0), ("log1p", -1.0, 3.0),
    ("tanh", -10.0, 10.0), ("erf", -4.0, 4.0), ("erfc", -2.0, 10.1),
    ("sin", -1e3, 1e3), ("cos", -1e3, 1e3), ("tan", -10.0, 10.0), ("sinh", -90.0, 90.0),
    ("cosh", -90.0, 90.0), ("atan", -20.0, 20.0), ("asin", -1.0, 1.0), ("acos", -1.0, 1.0),
])
def test_f32_uniform_ranges(name: str, lo: float, hi: float) -> None:
    """Uniform samples over the range where the function is interesting (the bit sweep is
    thin there)."""
    x = RNG.uniform(lo, hi, 400_000).astype(np.float32)
    err = ulp32_errors(f32_function(name)(x), reference32(REFS32[name], x))
    worst = int(np.argmax(err))
    assert err[worst] <= MEASURED_ULP[name][0], f"{name}({x[worst]!r}): {err[worst]} ulp"


def test_f32_sin_cos_large_arguments_by_payne_hanek() -> None:
    """Beyond TRIG_FAST_MAX the reduction is exact (Payne-Hanek on x's bits): accurate up to
    FLT_MAX, including the arguments closest to multiples of pi/2 in each binade."""
    x = np.exp2(RNG.uniform(np.log2(TRIG_FAST_MAX), 128, 200_000)).astype(np.float32)
    x = np.concatenate([x, -x, np.float32([FLT_MAX, 1.0e38, 2.0 ** 100, 105616.0])])
    # near-multiples of pi/2: k pi/2 rounded to f32 for large k
    k = np.unique(np.floor(np.exp2(RNG.uniform(17, 60, 20_000))))
    x = np.concatenate([x, (k * (math.pi / 2)).astype(np.float32)])
    for name in ("sin", "cos", "tan"):
        err = ulp32_errors(f32_function(name)(x), reference32(REFS32[name], x))
        worst = int(np.argmax(err))
        assert err[worst] <= MEASURED_ULP[name][0], f"{name}({x[worst]!r}): {err[worst]} ulp"


def test_f32_exact_cases() -> None:
    """Results C's libm gives exactly: powers of two through exp2/log2, e^0, logs of 1."""
    k = np.arange(-149, 128, dtype=np.float32)
    assert np.array_equal(f32_function("exp2")(k), np.exp2(k.astype(np.float64)).astype(
        np.float32))
    assert np.array_equal(f32_function("log2")(np.exp2(k).astype(np.float32)), k)
    ones = np.float32([1.0])
    for name, want in [("exp", 1.0), ("log", 0.0), ("log10", 0.0), ("cos", 1.0),
                       ("cosh", 1.0), ("erfc", 1.0)]:
        arg = ones if name.startswith("log") else np.float32([0.0])
        assert f32_function(name)(arg)[0] == want, name
    tens = np.float32([10.0, 100.0, 1e10])
    assert np.array_equal(f32_function("log10")(tens), np.float32([1.0, 2.0, 10.0]))


POW_SPECIAL = [(x, y) for x in (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, math.inf, -math.inf,
                                math.nan, FLT_TRUE_MIN, FLT_MAX, -3.0)
               for y in (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, math.inf,
                         -math.inf, math.nan, 1e10, -1e10, 2.0 ** 24 + 2, 2.0 ** 24 - 1)]


def test_f32_pow_special_cases_as_c() -> None:
    """C99 Annex F for every combination of zeros, ones, infinities, NaN, negative bases with
    odd/even/non-integer exponents."""
    x = np.float32([p[0] for p in POW_SPECIAL])
    y = np.float32([p[1] for p in POW_SPECIAL])
    got = f32_function("pow", 2)(x, y)
    want = reference32(np.power, x, y)
    err = ulp32_errors(got, want)
    bad = [(float(a), float(b), float(g), float(w)) for a, b, g, w, e
           in zip(x, y, got, want, err, strict=True) if e > MEASURED_ULP["pow"][0]]
    assert not bad


def test_f32_pow_sweep() -> None:
    """Random bit patterns for both operands, moderate bases with large exponents (results over
    the whole f32 range), and negative bases with integer exponents."""
    n = 300_000
    bits = RNG.integers(0, 2 ** 32, size=(2, n), dtype=np.uint64).astype(np.uint32)
    x, y = bits.view(np.float32)
    x2 = np.exp2(RNG.uniform(-126, 127, n)).astype(np.float32)
    y2 = (RNG.uniform(-1, 1, n) * 127 / np.maximum(np.abs(np.log2(x2.astype(np.float64))),
                                                   1e-3)).astype(np.float32)
    x3 = RNG.uniform(-8, 0, n).astype(np.float32)
    y3 = np.round(RNG.uniform(-40, 40, n)).astype(np.float32)
    xs, ys = np.concatenate([x, x2, x3]), np.concatenate([y, y2, y3])
    err = ulp32_errors(f32_function("pow", 2)(xs, ys), reference32(np.power, xs, ys))
    worst = int(np.argmax(err))
    assert err[worst] <= MEASURED_ULP["pow"][0], (xs[worst], ys[worst], err[worst])


def test_f32_atan2_sweep_and_special_cases() -> None:
    n = 300_000
    bits = RNG.integers(0, 2 ** 32, size=(2, n), dtype=np.uint64).astype(np.uint32)
    y, x = bits.view(np.float32)
    y2, x2 = RNG.uniform(-10, 10, (2, n)).astype(np.float32)
    edge = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, FLT_TRUE_MIN, FLT_MAX]
    ye = np.float32([a for a in edge for _ in edge])
    xe = np.float32([b for _ in edge for b in edge])
    ys, xs = np.concatenate([y, y2, ye]), np.concatenate([x, x2, xe])
    err = ulp32_errors(f32_function("atan2", 2)(ys, xs), reference32(np.arctan2, ys, xs))
    worst = int(np.argmax(err))
    assert err[worst] <= MEASURED_ULP["atan2"][0], (ys[worst], xs[worst], err[worst])


def _lowered(name: str, llty: ir.Type, nargs: int = 1) -> str:
    """The LLVM IR text of `f(x...) = math.<name>(x...)` lowered for NVPTX in type llty."""
    me = ModuleEmitter(JitTarget(), "ir")
    fn = ir.Function(me.module, ir.FunctionType(llty, [llty] * nargs), name="f")
    fe = FunctionEmitter(me, None, fn)  # type: ignore[arg-type]
    fe.builder.ret(nvptx_math.lower(fe, f"math.{name}", list(fn.args), None))  # type: ignore[arg-type]
    return str(me.module)


@pytest.mark.parametrize("name", sorted(n.removeprefix("math.") for n in IMPLS32))
def test_f32_f16_bf16_lowering_has_no_double(name: str) -> None:
    """f32/f16/bf16 math stays in single precision: no f64 value anywhere in the IR."""
    nargs = 2 if name in ("powf", "atan2") else 1
    for llty in (ir.FloatType(), ir.HalfType()):
        text = _lowered(name, llty, nargs)
        assert "double" not in text, (name, llty)


def test_f64_lowering_keeps_the_double_code() -> None:
    assert "double" in _lowered("exp", ir.DoubleType())
    with pytest.raises(Exception, match="erf"):
        _lowered("erf", ir.DoubleType())


def test_f16_and_bf16_extend_compute_in_f32_and_round() -> None:
    """f16/bf16 math: fpext to float, the f32 code, one fptrunc back."""
    text = _lowered("exp", ir.HalfType())
    assert "fpext half" in text and "fptrunc float" in text and text.count("fptrunc") == 1


@pytest.mark.parametrize("name", ["exp", "tanh", "erf", "sin", "log1p"])
def test_f16_through_f32_every_half(name: str) -> None:
    """f16 math is the f32 result rounded to half (what the lowering emits; the host JIT has no
    half conversions): exhaustively within 1 half ulp of the reference (double rounding of a
    <= 2 ulp f32 result costs at most one half ulp)."""
    halves = np.arange(0, 2 ** 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)]
    with np.errstate(over="ignore", invalid="ignore"):  # results beyond half's range: inf
        got = f32_function(name)(halves.astype(np.float32)).astype(np.float16)
        want = reference32(REFS32[name], halves.astype(np.float32))
        finite = np.isfinite(want) & (np.abs(want) <= 65504)
        ulp = np.exp2(np.maximum(np.floor(np.log2(np.maximum(np.abs(want), 2.0 ** -24))), -14)
                      - 10)
        assert np.all(np.abs(got.astype(np.float64) - want)[finite] <= ulp[finite]), name
