"""Convolution library plans (`nova.abi.ConvPlan`) in hand-written MLIR on the cpu device: the
NumPy binding against torch's conv2d (float64) for strides, padding, dilation, groups, bias,
residual and ReLU in every dtype, and a named error for every malformed plan."""

from __future__ import annotations

import json

import numpy as np
import pytest
from library_programs import entry_arg, load, program

from nova.abi import LIBRARY_PLANS_KEY, ConvPlan, library_plans
from nova.errors import NovaError
from nova.runtime.cpu.library import narrow, widen

torch = pytest.importorskip("torch")

CASES = {
    "plain": {},
    "stride-pad": {"stride_h": 2, "stride_w": 3, "pad_h": 1, "pad_w": 2},
    "dilation": {"dil_h": 2, "dil_w": 1, "pad_h": 2},
    "groups": {"groups": 2, "pad_h": 1, "pad_w": 1},
    "depthwise": {"groups": 4, "pad_h": 1, "pad_w": 1},
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(("case", "epilogue"), [
    ("plain", "none"), ("plain", "bias+z+relu"), ("stride-pad", "bias+relu"),
    ("dilation", "z"), ("groups", "bias+z+relu"), ("depthwise", "bias+relu")])
def test_conv_plan_matches_torch(case: str, epilogue: str, dtype: str) -> None:
    bias, residual = "bias" in epilogue, "z" in epilogue.split("+")
    k = 8
    plan = ConvPlan(n=2, c=4, h=9, w=10, k=k, r=3, s=3, dtype=dtype, bias=bias,
                    residual=residual, activation="relu" if "relu" in epilogue else "none",
                    **CASES[case])  # type: ignore[arg-type]
    p, q = plan.out_hw
    rng = np.random.default_rng(0)

    def storage(*shape: int) -> np.ndarray:
        return narrow(rng.standard_normal(shape).astype(np.float32), dtype)

    x, w = storage(2, 4, 9, 10), storage(k, 4 // plan.groups, 3, 3)
    b, z = storage(k), storage(2, k, p, q)
    y = np.zeros(2 * k * p * q, x.dtype)
    operands = [x, w, *([b] if bias else []), *([z] if residual else []), y]
    module = load(program([o.size for o in operands], dtype), [plan.to_json()], "conv.mlir")
    module.forward(*(entry_arg(o.reshape(-1), dtype) for o in operands))  # type: ignore[attr-defined]

    def t64(v: np.ndarray) -> object:
        return torch.from_numpy(widen(v, dtype, np.float64))

    want = torch.nn.functional.conv2d(
        t64(x), t64(w), t64(b) if bias else None, stride=(plan.stride_h, plan.stride_w),
        padding=(plan.pad_h, plan.pad_w), dilation=(plan.dil_h, plan.dil_w),
        groups=plan.groups)
    if residual:
        want = want + t64(z)
    if plan.activation == "relu":
        want = torch.relu(want)
    want = want.numpy()
    got = widen(y, dtype, np.float64).reshape(want.shape)
    tol = 1e-7 if dtype == "float32" else 1e-2
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= tol


def test_conv_plan_json_round_trips_and_lists_its_operands() -> None:
    plan = ConvPlan(n=1, c=2, h=3, w=3, k=2, r=1, s=1, dtype="float16", bias=True,
                    residual=True, activation="relu")
    (back,) = library_plans({LIBRARY_PLANS_KEY: json.dumps([plan.to_json()])})
    assert back == plan and back.operands == ("x", "w", "bias", "z", "y")


_GOOD = {"n": 1, "c": 4, "h": 5, "w": 5, "k": 4, "r": 3, "s": 3, "dtype": "float32",
         "kind": "conv2d"}


@pytest.mark.parametrize(("change", "message"), [
    ({"n": 0}, "n must be a positive integer"),
    ({"stride_h": 1.5}, "stride_h must be a positive integer"),
    ({"pad_w": -1}, "pad_w must be a non-negative integer"),
    ({"groups": 3}, "3 groups do not divide 4 input and 4 output channels"),
    ({"r": 9}, "window does not fit"),
    ({"dtype": "int8"}, "dtype 'int8' is not supported"),
    ({"activation": "gelu_tanh"}, "activation 'gelu_tanh' is not supported"),
    ({"colour": 1}, "unknown conv plan field"),
    ({"kind": "conv3d"}, "kind 'conv3d' is not supported"),
])
def test_malformed_conv_plans_are_errors(change: dict[str, object], message: str) -> None:
    plans = json.dumps([{**_GOOD, **change}])
    with pytest.raises(ValueError, match=message):
        library_plans({LIBRARY_PLANS_KEY: plans})
    module = load(program([1, 1, 1], "float32"), plans, "conv.mlir")
    with pytest.raises(NovaError, match=message):
        module.forward(*(np.zeros(1, np.float32) for _ in range(3)))  # type: ignore[attr-defined]


def test_wrong_operand_count_is_an_error() -> None:
    plan = ConvPlan(n=1, c=1, h=2, w=2, k=1, r=1, s=1, dtype="float32", bias=True)
    module = load(program([4, 1, 4], "float32"), [plan.to_json()], "conv.mlir")
    with pytest.raises(NovaError, match=r"3 operands passed, the plan takes 4 \(x, w, bias, y\)"):
        module.forward(*(np.zeros(n, np.float32) for n in (4, 1, 4)))  # type: ignore[attr-defined]
