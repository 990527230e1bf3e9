"""Library calls in hand-written MLIR (`func.call @__nova_library_<i>`, nova_rt_library_plan /
nova_rt_library_call) on the cpu device: results against NumPy for each dtype, epilogue and
batch layout, and a located / named error for every malformed use."""

from __future__ import annotations

import numpy as np
import pytest
from library_programs import entry_arg, load, program

from nova.abi import LIBRARY_PLANS_KEY, LibraryPlan, library_plans
from nova.errors import NovaError, UnsupportedError
from nova.runtime.cpu.library import narrow, widen


def _storage(values: np.ndarray, dtype: str) -> np.ndarray:
    return narrow(values.astype(np.float32), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(False, False), (True, True)])
def test_batched_gemm_with_epilogue_matches_numpy(dtype: str, trans_a: bool,
                                                  trans_b: bool) -> None:
    batch, m, n, k = 3, 5, 6, 4
    plan = LibraryPlan(m=m, n=n, k=k, dtype=dtype, batch=batch, a_stride=m * k, b_stride=0,
                       trans_a=trans_a, trans_b=trans_b, alpha=0.5, bias=True, residual=True,
                       activation="gelu_tanh")
    rng = np.random.default_rng(0)
    a = _storage(rng.standard_normal((batch, k, m) if trans_a else (batch, m, k)), dtype)
    b = _storage(rng.standard_normal((n, k) if trans_b else (k, n)), dtype)
    bias = _storage(rng.standard_normal(n), dtype)
    c = _storage(rng.standard_normal((batch, m, n)), dtype)
    d = np.zeros(batch * m * n, a.dtype)
    module = load(program([a.size, b.size, n, c.size, d.size], dtype), [plan.to_json()])
    module.forward(*(entry_arg(v.reshape(-1), dtype) for v in (a, b, bias, c, d)))  # type: ignore[attr-defined]

    def f64(x: np.ndarray) -> np.ndarray:
        return widen(x, dtype, np.float64)

    av = np.swapaxes(f64(a), -1, -2) if trans_a else f64(a)
    bv = f64(b).T if trans_b else f64(b)
    x = 0.5 * (av @ bv) + f64(bias) + f64(c)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    got = f64(d).reshape(batch, m, n)
    tol = 1e-6 if dtype == "float32" else 1e-2
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= tol


def test_library_call_in_a_capture_replays() -> None:
    plan = LibraryPlan(m=2, n=3, k=4, dtype="float32", activation="relu")
    module = load(program([8, 12, 6], "float32"), [plan.to_json()])
    a = np.arange(8, dtype=np.float32) - 4
    b = np.ones(12, np.float32)
    d = np.zeros(6, np.float32)
    captured = module.capture("forward", a, b, d)  # type: ignore[attr-defined]
    captured.replay(a, b, d)
    np.testing.assert_array_equal(captured.buffers[2].numpy(), [0, 0, 0, 6, 6, 6])
    captured.replay(a * 2, b, d)  # the recording reads the capture-time buffers anew
    np.testing.assert_array_equal(captured.buffers[2].numpy(), [0, 0, 0, 12, 12, 12])


def test_wrong_operand_count_is_an_error() -> None:
    plan = LibraryPlan(m=2, n=3, k=4, dtype="float32", bias=True)  # a, b, bias, d
    module = load(program([8, 12, 6], "float32"), [plan.to_json()])
    with pytest.raises(NovaError, match="3 operands passed, the plan takes 4"):
        module.forward(np.zeros(8, np.float32), np.zeros(12, np.float32),  # type: ignore[attr-defined]
                       np.zeros(6, np.float32))


def test_missing_plan_is_an_error() -> None:
    module = load(program([8, 12, 6], "float32", "__nova_library_3"),
                  [LibraryPlan(m=2, n=3, k=4, dtype="float32").to_json()])
    with pytest.raises(NovaError, match="plan 3 does not exist"):
        module.forward(np.zeros(8, np.float32), np.zeros(12, np.float32),  # type: ignore[attr-defined]
                       np.zeros(6, np.float32))


@pytest.mark.parametrize(("plans", "message"), [
    ("not json", "not valid JSON"),
    ('{"m": 1}', "must be a JSON list"),
    ('[{"m": 0, "n": 1, "k": 1, "dtype": "float32"}]', "m must be a positive integer"),
    ('[{"m": 1, "n": 1, "k": 1, "dtype": "int8"}]', "dtype 'int8' is not supported"),
    ('[{"m": 1, "n": 1, "k": 1, "dtype": "float32", "activation": "gelu"}]',
     "activation 'gelu' is not supported"),
    ('[{"m": 1, "n": 1, "k": 1, "dtype": "float32", "colour": 1}]', "unknown library plan"),
    ('[{"m": 1, "n": 1, "k": 1, "dtype": "float32", "kind": "conv"}]', "kind 'conv'"),
])
def test_malformed_plans_are_errors(plans: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        library_plans({LIBRARY_PLANS_KEY: plans})
    module = load(program([1, 1, 1], "float32"), plans)
    with pytest.raises(NovaError, match=message):
        module.forward(*(np.zeros(1, np.float32) for _ in range(3)))  # type: ignore[attr-defined]


def test_bad_callee_name_and_operands_are_located_errors() -> None:
    with pytest.raises(UnsupportedError, match="named __nova_library_<plan index>"):
        load(program([1, 1, 1], "float32", "__nova_library_x"), [])
    scalar = """
module {
  func.func private @__nova_library_0(f32)
  func.func @forward(%x: f32) {
    func.call @__nova_library_0(%x) : (f32) -> ()
    return
  }
}
"""
    with pytest.raises(UnsupportedError, match="operand #0 is f32; library calls take ranked"):
        load(scalar, [])


def test_bf16_rounding_is_nearest_even() -> None:
    values = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf], np.float32)
    bits = narrow(values, "bfloat16")
    np.testing.assert_array_equal(bits, [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F80])
    assert np.isnan(widen(narrow(np.array([np.nan], np.float32), "bfloat16"), "bfloat16",
                          np.float32))[0]
