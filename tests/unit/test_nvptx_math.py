"""Accuracy of the NVPTX math implementations (nvptx_math), run on the host: the same LLVM IR
the NVPTX target emits is JIT-compiled for x86-64 and compared with Python's libm."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llvmlite import ir
from tests.unit.test_llvm_jit_support import scalar_function

from nova.backends.nvptx.math import Math64

RNG = np.random.default_rng(1234)


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


def test_erf_is_float32_accurate() -> None:
    erf, erfc = compiled("erf"), compiled("erfc")
    for x in sample(-8.0, 8.0):
        assert abs(np.float32(erf(x)) - np.float32(math.erf(x))) <= 2 * np.spacing(
            np.float32(abs(math.erf(x)))), x
        want = math.erfc(x)
        if want > 1e-37:
            assert abs(erfc(x) - want) <= 3e-7 * want + 1e-45, x


def test_float32_path_rounds_once() -> None:
    """f32 math is computed in f64 and rounded once: equal to rounding libm's double result."""
    def build(fe, args):  # type: ignore[no-untyped-def]
        from nova.backends.nvptx import math as nvptx_math
        return nvptx_math.lower(fe, "math.sin", args, None)  # type: ignore[arg-type]
    f = scalar_function(build, 1, ir.FloatType())
    mismatches = 0
    for x in sample(-100.0, 100.0, 2000):
        x32 = float(np.float32(x))
        if f(x32) != float(np.float32(math.sin(x32))):
            mismatches += 1
    assert mismatches <= 2
