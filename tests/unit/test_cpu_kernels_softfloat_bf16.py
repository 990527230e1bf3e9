"""The bf16 rounding helpers the CPU object defines for LLVM's libcalls (__truncsfbf2,
__truncdfbf2 in nova.backends.cpu.softfloat), against ml_dtypes' IEEE round-to-nearest-even."""

from __future__ import annotations

import ctypes
import functools

import ml_dtypes
import numpy as np
from cpu_jit import jit_module
from llvmlite import ir

from nova.backends.cpu import softfloat as sf
from nova.backends.llvm.types import BFloatType


@functools.cache
def _converters():  # type: ignore[no-untyped-def]
    module = ir.Module("softfloat_bf16")
    module.triple = "x86_64-unknown-linux-gnu"
    i16 = ir.IntType(16)
    for name, src in (("f2b", ir.FloatType()), ("d2b", ir.DoubleType())):
        fn = ir.Function(module, ir.FunctionType(i16, [src]), name)
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(b.bitcast(b.fptrunc(fn.args[0], BFloatType()), i16))
    sf.add_libcall_helpers(module)
    loaded = jit_module(module)
    return (loaded, loaded.function("f2b", ctypes.c_uint16, ctypes.c_float),
            loaded.function("d2b", ctypes.c_uint16, ctypes.c_double))


def _exact_bf16(values: np.ndarray) -> np.ndarray:
    """RNE of normal-range doubles straight to bf16's 8-bit significand (ml_dtypes converts
    double -> float -> bf16 and so rounds some ties twice)."""
    bits = values.view(np.uint64)
    odd = (bits >> np.uint64(45)) & np.uint64(1)
    rounded = (bits + np.uint64((1 << 44) - 1) + odd) >> np.uint64(45) << np.uint64(45)
    return rounded.view(np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)


def _check(got_bits: np.ndarray, values: np.ndarray, exact: bool = False) -> None:
    with np.errstate(invalid="ignore", over="ignore"):
        want = _exact_bf16(values) if exact else values.astype(ml_dtypes.bfloat16)
    nan = np.isnan(want.astype(np.float32))
    got = got_bits.view(ml_dtypes.bfloat16)
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.array_equal(got_bits[~nan], want.view(np.uint16)[~nan])


def test_float_to_bfloat_rounds_to_nearest_even() -> None:
    _, f2b, _ = _converters()
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2**32, 50_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ties = (np.arange(0, 1 << 16, 7, dtype=np.uint32) << 16 | 0x8000).view(np.float32)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, 1e-45, 1.0, -2.5],
                    np.float32)
    values = np.concatenate([random, ties, edge])
    _check(np.array([f2b(float(v)) for v in values], np.uint16), values)


def test_double_to_bfloat_has_no_double_rounding() -> None:
    _, _, d2b = _converters()
    rng = np.random.default_rng(1)
    values = rng.standard_normal(50_000) * np.exp2(rng.integers(-60, 60, 50_000))
    # just above a bf16 tie in double, exactly a tie once rounded to float: must round up
    tie = np.float64(1.0) + 2.0 ** -8 + 2.0 ** -40
    values = np.concatenate([values, [tie, -tie, np.nan, np.inf, 0.0]])
    _check(np.array([d2b(float(v)) for v in values], np.uint16), values, exact=True)
    assert d2b(float(tie)) == 0x3F81
