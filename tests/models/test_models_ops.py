"""Operator coverage: small graphs of each op (and fused combinations) compiled and run, against
the NumPy reference interpreter (nova.models.reference, float64 inside each op)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova.models.graph import numpy_dtype
from nova.models.reference import run_reference

RNG = np.random.default_rng(3)


def r(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _conv(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (2, 3, 9, 9))
    y = g.conv2d(x, r(8, 3, 3, 3), r(8), stride=1, padding=1)
    y = g.relu(g.batch_norm(y, r(8) ** 2, r(8), r(8), np.abs(r(8)) + 0.5))
    g.output(g.max_pool2d(y, 2, 2))
    return [r(2, 3, 9, 9)]


def _conv_groups(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (2, 4, 8, 7))
    g.output(g.conv2d(x, r(6, 2, 3, 2), None, stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                      groups=2))
    return [r(2, 4, 8, 7)]


def _depthwise(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (1, 4, 6, 6))
    g.output(g.silu(g.conv2d(x, r(4, 1, 3, 3), r(4), padding=1, groups=4)))
    return [r(1, 4, 6, 6)]


def _pools(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (2, 3, 7, 7))
    g.output(g.avg_pool2d(x, 3, 2, 1), g.avg_pool2d(x, 3, 2, 1, count_include_pad=True),
             g.max_pool2d(x, 3, 2, 1), g.global_avg_pool(x))
    return [r(2, 3, 7, 7)]


def _softmax(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (3, 5, 37))
    g.output(g.softmax(x, -1), g.softmax(x, 1))
    return [r(3, 5, 37)]


def _layer_norm(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (4, 6, 40))
    g.output(g.relu(g.layer_norm(x, r(40), r(40))), g.layer_norm(x, r(6, 40), None, axis=1))
    return [r(4, 6, 40)]


def _reductions(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (4, 6, 5))
    g.output(g.reduce_mean(x, [1]), g.reduce_sum(x, [0, 2], keepdims=False),
             g.reduce_max(x, [2]))
    return [r(4, 6, 5)]


def _shapes(g: nm.Graph) -> list[np.ndarray]:
    x = g.input("x", (4, 6, 5))
    a = g.reshape(g.transpose(x, [2, 0, 1]), [5, 24])
    c = g.slice(a, [1, 2], [4, 20], [0, 1], [1, 3])
    d = g.concat([c, g.mul(c, 2.0)], axis=0)
    s1, s2 = g.split(x, [2, 2], axis=0)
    e = g.gather(x, np.array([[0, 3], [-1, 1]], np.int64), axis=1)
    f = g.unsqueeze(g.squeeze(g.reduce_mean(x, [2]), [2]), [0])
    rev = g.slice(x, [-1], [-100], [2], [-2])
    g.output(d, g.add(s1, s2), e, f, g.flatten(x, 1), rev)
    return [r(4, 6, 5)]


def _attention(g: nm.Graph) -> list[np.ndarray]:
    q = g.input("q", (2, 3, 17, 8))
    k = g.input("k", (2, 3, 19, 8))
    v = g.input("v", (2, 3, 19, 8))
    g.output(g.attention(q, k, v, mask=r(17, 19)))
    return [r(2, 3, 17, 8), r(2, 3, 19, 8), r(2, 3, 19, 8)]


def _matmul_broadcast(g: nm.Graph) -> list[np.ndarray]:
    a = g.input("a", (3, 70, 33))
    b = g.input("b", (33, 5))
    c = g.input("c", (2, 1, 5, 70))
    g.output(g.matmul(a, b), g.matmul(g.transpose(b, [1, 0]), a, trans_b=True, alpha=0.5),
             g.matmul(c, a))
    return [r(3, 70, 33), r(33, 5), r(2, 1, 5, 70)]


def _gemm(g: nm.Graph) -> list[np.ndarray]:
    a = g.input("a", (9, 20))
    g.output(g.gemm(a, r(12, 20), r(12), alpha=0.5, beta=2.0, trans_b=True),
             g.gemm(g.transpose(a, [1, 0]), r(20, 7), None, trans_a=True))
    return [r(9, 20)]


def _elementwise(g: nm.Graph) -> list[np.ndarray]:
    a = g.input("a", (3, 4))
    b = g.input("b", (4,))
    y = g.add(g.mul(g.sigmoid(a), g.silu(a)),
              g.div(g.exp(g.tanh(b)), g.sqrt(g.add(g.pow(a, 2.0), 1.0))))
    y = g.sub(g.erf(y), g.gelu(b, "tanh"))
    g.output(y, g.cast(g.cast(g.mul(a, 3.0), "int64"), "float32"), g.node("Clip", [a, -0.5, 0.5]),
             g.node("LeakyRelu", [a], {"alpha": 0.2}), g.pow(g.node("Abs", [a]), b))
    return [r(3, 4), r(4)]


def _where(g: nm.Graph) -> list[np.ndarray]:
    a = g.input("a", (5, 6))
    b = g.input("b", (6,))
    g.output(g.node("Where", [g.node("Greater", [a, b]), a, g.node("Neg", [b])]))
    return [r(5, 6), r(6)]


def _masks(g: nm.Graph) -> list[np.ndarray]:
    """What exporters build attention masks from: Trilu (k input, upper and lower, float and
    bool), the <=/>= comparisons, Not/And/Or/Xor, and a one-element bool constant (whose MLIR
    constant was misspelled `true : i1`, so any kernel reading one failed to parse)."""
    a = g.input("a", (2, 5, 7))
    lower = g.node("Trilu", [a, np.asarray(-1, np.int64)], {"upper": 0})
    upper = g.node("Trilu", [a], {"upper": 1})
    le = g.node("LessOrEqual", [lower, np.float32(0.0)])
    ge = g.node("GreaterOrEqual", [upper, np.float32(0.0)])
    mixed = g.node("Xor", [g.node("Or", [g.node("Not", [g.node("And", [le, ge])]),
                                         g.node("Less", [a, np.float32(0.5)])]),
                           np.asarray([True])])
    causal = g.node("Trilu", [g.node("Greater", [a, np.float32(-9.0)])], {"upper": 0})
    g.output(lower, upper, mixed, g.node("Where", [causal, a, np.float32(-1e9)]))
    return [r(2, 5, 7)]


def _variadic(g: nm.Graph) -> list[np.ndarray]:
    """ONNX Sum / Mean of 1-3 broadcasting inputs (rewritten into Add chains)."""
    a = g.input("a", (3, 4))
    b = g.input("b", (4,))
    g.output(g.node("Sum", [a, b, a]), g.node("Mean", [a, b]), g.node("Mean", [b]),
             g.node("Sum", [a]))
    return [r(3, 4), r(4)]


def _small_m(g: nm.Graph) -> list[np.ndarray]:
    """The GEMV kernel: 1..8 rows, vector and scalar loads, batch dims on A, alpha, a weight
    stored [K, N] (re-laid out) and an activation epilogue."""
    a = g.input("a", (1, 64))
    b = g.input("b", (2, 3, 40))
    c = g.input("c", (8, 30))
    g.output(g.relu(g.linear(a, r(100, 64), r(100))),
             g.matmul(b, r(24, 40), trans_b=True, alpha=0.25),
             g.gelu(g.matmul(c, r(30, 17))))
    return [r(1, 64), r(2, 3, 40), r(8, 30)]


def _big_tiles(g: nm.Graph) -> list[np.ndarray]:
    """M, N >= 128: the 128x128x8 tile (ragged edges, a cheap epilogue), next to a staged
    (transcendental) epilogue that keeps the 64x64 tile."""
    a = g.input("a", (130, 20))
    w = r(20, 140)
    g.output(g.relu(g.add(g.matmul(a, w), r(140))), g.tanh(g.matmul(a, w)))
    return [r(130, 20)]


CASES: dict[str, Callable[[nm.Graph], list[np.ndarray]]] = {
    "big_tiles": _big_tiles,
    "small_m_gemv": _small_m,
    "conv_bn_relu_pool": _conv, "conv_groups_stride_dilation": _conv_groups,
    "depthwise_silu": _depthwise, "pools": _pools, "softmax": _softmax,
    "layer_norm": _layer_norm, "reductions": _reductions, "shapes": _shapes,
    "attention_mask": _attention, "matmul_broadcast": _matmul_broadcast, "gemm": _gemm,
    "elementwise": _elementwise, "where": _where, "masks": _masks,
    "variadic_sum_mean": _variadic,
}


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_reference(case: str, device: str) -> None:
    g = nm.Graph(case)
    inputs = CASES[case](g)
    got = nm.compile(g, device=device)(*inputs)
    want = run_reference(g, *inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert rel_err(a, b) <= TOLERANCE["float32"], f"output {i}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", ["conv_bn_relu_pool", "layer_norm", "attention_mask", "gemm",
                                  "small_m_gemv"])
def test_op_half_precision(case: str, dtype: str, device: str) -> None:
    g = nm.Graph(case)
    inputs = CASES[case](g)
    got = nm.compile(g, device=device, dtype=dtype)(*(x.astype(numpy_dtype(dtype))
                                                      for x in inputs))
    want = run_reference(g, *inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == numpy_dtype(dtype)
        assert rel_err(a, b) <= TOLERANCE[dtype]


def test_tensor_core_gemm_on_cpu_device() -> None:
    """The WMMA kernels (used for fp16 on cuda) checked on the cpu device, which emulates them:
    a batched MatMul with ragged edges and a Conv with an epilogue."""
    g = nm.Graph("wmma")
    a = g.input("a", (2, 70, 40))
    x = g.input("x", (1, 4, 6, 6))
    h = g.input("h", (2, 16, 3, 24))
    g.output(g.add(g.matmul(a, r(40, 33)), r(33)),                   # vector A tiles only
             g.relu(g.conv2d(x, r(6, 4, 3, 3), r(6), padding=1)),      # scalar gathers
             g.gelu(g.linear(a, r(48, 40), r(48))),                     # vector A and B tiles
             g.matmul(g.transpose(h, [0, 2, 1, 3]), r(24, 40)))        # A through a prologue
    inputs = [r(2, 70, 40), r(1, 4, 6, 6), r(2, 16, 3, 24)]
    model = nm.compile(g, device="cpu", dtype="float16", tensor_cores=True)
    got = model(*(v.astype(np.float16) for v in inputs))
    (spec,) = model._cache.values()
    assert spec.mlir.count("gpu.subgroup_mma_compute") == 32  # 4 kernels x 2 steps x 2x2
    assert spec.mlir.count("vector.load") == 8  # 2 per vector tile: A, A, B, B (last kernel)
    for a_, b_ in zip(got, run_reference(g, *inputs), strict=True):
        assert rel_err(a_, b_) <= TOLERANCE["float16"]


def test_gather_with_runtime_indices() -> None:
    g = nm.Graph("embed")
    ids = g.input("ids", (2, 3), "int64")
    table = r(10, 4)
    g.output(g.gather(table, ids, axis=0))
    idx = np.array([[1, 9, 0], [-1, 4, 4]], np.int64)
    got = nm.compile(g, device="cpu")(idx)
    np.testing.assert_array_equal(got, table[idx])


def test_erf_and_gelu_of_a_scalar() -> None:
    """Regression: the Erf reference (also Gelu's, and the constant folder's) returned a Python
    float for a 0-d tensor and failed on `.astype`, so such a graph did not compile."""
    g = nm.Graph("scalar_erf")
    x = g.input("x", ())
    folded = g.node("Erf", [np.asarray(0.5, np.float32)])  # constant: folded at compile time
    g.output(g.add(g.erf(x), folded), g.gelu(x))
    xv = np.asarray(0.3, np.float32)
    want = (math.erf(0.3) + math.erf(0.5), 0.15 * (1.0 + math.erf(0.3 / math.sqrt(2.0))))
    for got in (run_reference(g, xv), nm.compile(g, device="cpu")(xv)):
        assert [np.shape(v) for v in got] == [(), ()]
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6)


def test_range_folds_and_needs_constant_inputs() -> None:
    """Range (position ids of GPT-2 exports) is computed at compile time; when its bounds depend
    on the model's inputs' values (not just their shapes) that is a located error, not a
    result computed from a stand-in."""
    g = nm.Graph("range")
    x = g.input("x", (2, 5))
    n = g.node("Shape", [x], {"start": 1})
    pos = g.node("Range", [np.asarray(0, np.int64), g.node("Squeeze", [n, np.asarray([0])]),
                           np.asarray(1, np.int64)])
    g.output(g.add(x, g.cast(pos, "float32")))
    xv = r(2, 5)
    np.testing.assert_allclose(nm.compile(g, device="cpu")(xv), xv + np.arange(5), rtol=1e-6)

    bad = nm.Graph("range_runtime")
    limit = bad.input("limit", (), "int64")
    bad.output(bad.node("Range", [np.asarray(0, np.int64), limit, np.asarray(1, np.int64)],
                        name="positions"))
    with pytest.raises(nm.ModelError, match=r"node 'positions' \(Range\): input 1 'limit' "
                                            "must be a compile-time constant"):
        nm.compile(bad, device="cpu")(np.asarray(4, np.int64))


def test_builder_names_never_collide() -> None:
    """Regression: explicit node names (the torch backend passes FX names such as `w_1`) could
    equal a generated weight name, and a generated name an earlier node's output, giving a
    graph whose tensor is written twice (GPT-2's `w = torch.where(...)` did)."""
    g = nm.Graph("names")
    x = g.input("x", (2,))
    w = g.weight(np.ones(2, np.float32))
    a = g.node("Add", [x, w], name=w)
    b = g.node("Mul", [a, 2.0])
    c = g.node("Add", [b, x], name=b)
    d = g.weight(np.full(2, 3.0, np.float32), name=c)
    assert len({x, w, a, b, c, d}) == 6
    g.output(g.add(c, d))
    xv = np.array([1.0, 2.0], np.float32)
    np.testing.assert_allclose(nm.compile(g, device="cpu")(xv), (xv + 1) * 2 + xv + 3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_saturates_float32_min_masks(dtype: str) -> None:
    """Regression: HF BERT's `(1 - mask) * finfo(float32).min` became `0 * -inf = NaN` once the
    constant was converted to fp16/bf16 (it overflowed to -inf); now it saturates to the
    target's most negative finite value, as converting the model in PyTorch would give."""
    g = nm.Graph("mask")
    x = g.input("x", (2, 6))
    mask = g.input("mask", (2, 6), "int64")
    ext = g.mul(g.sub(1.0, g.cast(mask, "float32")), float(np.finfo(np.float32).min))
    g.output(g.softmax(g.add(x, ext), -1))
    xv, mv = r(2, 6), np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int64)
    got = nm.compile(g, device="cpu", dtype=dtype)(xv.astype(numpy_dtype(dtype)), mv)
    assert np.isfinite(got.astype(np.float32)).all()
    assert rel_err(got, run_reference(g, xv, mv)) <= TOLERANCE[dtype]
