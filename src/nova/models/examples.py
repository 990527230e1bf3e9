"""A small model zoo built with the Python builder, each with an independent NumPy forward (written
directly, not through the op table): the models tests/models and bench/models.py run.

- `mlp`: Linear -> GELU -> ... -> Linear.
- `conv_block`: Conv 3x3 -> BatchNorm -> ReLU -> MaxPool 2x2.
- `encoder_layer`: pre-LN transformer encoder layer (multi-head self-attention + GELU MLP).
- `resnet_stack`: stem conv, two residual basic blocks (one strided with a 1x1 projection),
  global average pool, linear classifier.

Weights come from a seeded generator, scaled like common initialisers so activations stay O(1).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nova.models.builder import Graph


@dataclass
class Example:
    """A builder graph, its NumPy forward (float64) and its weights by role."""

    graph: Graph
    forward: Any
    params: dict[str, np.ndarray] = field(default_factory=dict)


BNParams = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""BatchNormalization's (scale, bias, mean, var)."""


def _erf(x: np.ndarray) -> np.ndarray:
    # asarray: for a 0-d input the frompyfunc ufunc returns a Python float, not an array
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)


def gelu_ref(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _linear_init(rng: np.random.Generator, out: int, inp: int) -> tuple[np.ndarray, np.ndarray]:
    bound = 1.0 / math.sqrt(inp)
    return (rng.uniform(-bound, bound, (out, inp)).astype(np.float32),
            rng.uniform(-bound, bound, out).astype(np.float32))


def mlp(sizes: tuple[int, ...] = (64, 128, 32), seed: int = 0) -> Example:
    """Linear layers with exact GELU between them; input [batch, sizes[0]]."""
    rng = np.random.default_rng(seed)
    g = Graph("mlp")
    h = g.input("x", ("batch", sizes[0]))
    layers = [_linear_init(rng, o, i) for i, o in itertools.pairwise(sizes)]
    for n, (w, b) in enumerate(layers):
        h = g.linear(h, w, b)
        if n < len(layers) - 1:
            h = g.gelu(h)
    g.output(h)

    def forward(x: np.ndarray) -> np.ndarray:
        y = x.astype(np.float64)
        for n, (w, b) in enumerate(layers):
            y = y @ w.T.astype(np.float64) + b
            if n < len(layers) - 1:
                y = gelu_ref(y)
        return y

    params = {f"w{i}": w for i, (w, _) in enumerate(layers)}
    params.update({f"b{i}": b for i, (_, b) in enumerate(layers)})
    return Example(g, forward, params)


def _bn_params(rng: np.random.Generator, c: int) -> BNParams:
    return (rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-0.2, 0.2, c).astype(
        np.float32), rng.uniform(-0.2, 0.2, c).astype(np.float32),
        rng.uniform(0.5, 1.5, c).astype(np.float32))


def _conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, _, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out


def _bn_ref(x: np.ndarray, p: BNParams, eps: float = 1e-5) -> np.ndarray:
    s, b, m, v = (a.astype(np.float64).reshape(1, -1, 1, 1) for a in p)
    return (x - m) / np.sqrt(v + eps) * s + b


def conv_block(channels: tuple[int, int] = (3, 8), seed: int = 0) -> Example:
    """Conv 3x3 (pad 1, bias) -> BatchNorm -> ReLU -> MaxPool 2x2; input [batch, C, H, W]."""
    rng = np.random.default_rng(seed)
    ci, co = channels
    w = (rng.standard_normal((co, ci, 3, 3)) * math.sqrt(2.0 / (ci * 9))).astype(np.float32)
    bias = rng.uniform(-0.1, 0.1, co).astype(np.float32)
    bn = _bn_params(rng, co)
    g = Graph("conv_block")
    x = g.input("x", ("batch", ci, "height", "width"))
    y = g.conv2d(x, w, bias, padding=1)
    y = g.max_pool2d(g.relu(g.batch_norm(y, *bn)), 2)
    g.output(y)

    def forward(xv: np.ndarray) -> np.ndarray:
        y = _conv_ref(xv.astype(np.float64), w, 1, 1) + bias.reshape(1, -1, 1, 1)
        y = np.maximum(_bn_ref(y, bn), 0.0)
        n, c, h, wd = y.shape
        y = y[:, :, :h // 2 * 2, :wd // 2 * 2]
        return y.reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))

    return Example(g, forward, {"w": w, "bias": bias, "bn_scale": bn[0], "bn_shift": bn[1],
                                "bn_mean": bn[2], "bn_var": bn[3]})


def _layer_norm_ref(x: np.ndarray, s: np.ndarray, b: np.ndarray, eps: float = 1e-5) \
        -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * s + b


def encoder_layer(d: int = 32, heads: int = 4, ff: int = 64, seed: int = 0) -> Example:
    """Pre-LN encoder layer: x + MHA(LN(x)); then + MLP(LN(.)) with GELU; input [batch, seq,
    d]."""
    rng = np.random.default_rng(seed)
    dh = d // heads
    ln1 = (rng.uniform(0.8, 1.2, d).astype(np.float32), rng.uniform(-.1, .1, d).astype(
        np.float32))
    ln2 = (rng.uniform(0.8, 1.2, d).astype(np.float32), rng.uniform(-.1, .1, d).astype(
        np.float32))
    wqkv, bqkv = _linear_init(rng, 3 * d, d)
    wo, bo = _linear_init(rng, d, d)
    w1, b1 = _linear_init(rng, ff, d)
    w2, b2 = _linear_init(rng, d, ff)
    g = Graph("encoder_layer")
    x = g.input("x", ("batch", "seq", d))
    h = g.layer_norm(x, *ln1)
    qkv = g.linear(h, wqkv, bqkv)
    q, k, v = g.split(qkv, [d, d, d], axis=2)

    def heads_first(t: str) -> str:
        return g.transpose(g.reshape(t, [0, 0, heads, dh]), [0, 2, 1, 3])

    a = g.attention(heads_first(q), heads_first(k), heads_first(v))
    a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [0, 0, d])
    x1 = g.add(x, g.linear(a, wo, bo))
    f = g.linear(g.gelu(g.linear(g.layer_norm(x1, *ln2), w1, b1)), w2, b2)
    g.output(g.add(x1, f))

    def forward(xv: np.ndarray) -> np.ndarray:
        xf = xv.astype(np.float64)
        bsz, s, _ = xf.shape
        hh = _layer_norm_ref(xf, *ln1)
        qkv_v = hh @ wqkv.T + bqkv
        qv, kv, vv = (qkv_v[..., i * d:(i + 1) * d].reshape(bsz, s, heads, dh).transpose(
            0, 2, 1, 3) for i in range(3))
        sc = qv @ kv.transpose(0, 1, 3, 2) / math.sqrt(dh)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        att = (e / e.sum(-1, keepdims=True)) @ vv
        att = att.transpose(0, 2, 1, 3).reshape(bsz, s, d)
        x1v = xf + att @ wo.T + bo
        fv = gelu_ref(_layer_norm_ref(x1v, *ln2) @ w1.T + b1) @ w2.T + b2
        return x1v + fv

    params = {"ln1_s": ln1[0], "ln1_b": ln1[1], "ln2_s": ln2[0], "ln2_b": ln2[1],
              "wqkv": wqkv, "bqkv": bqkv, "wo": wo, "bo": bo, "w1": w1, "b1": b1, "w2": w2,
              "b2": b2}
    return Example(g, forward, params)


def resnet_stack(channels: int = 8, classes: int = 10, seed: int = 0) -> Example:
    """Stem conv+BN+ReLU, a basic block, a strided basic block with a 1x1 projection shortcut,
    global average pool, linear classifier; input [batch, 3, H, W]."""
    rng = np.random.default_rng(seed)

    def conv_w(co: int, ci: int, k: int) -> np.ndarray:
        return (rng.standard_normal((co, ci, k, k)) * math.sqrt(2.0 / (ci * k * k))).astype(
            np.float32)

    c, c2 = channels, channels * 2
    stem = (conv_w(c, 3, 3), _bn_params(rng, c))
    b1 = [(conv_w(c, c, 3), _bn_params(rng, c)), (conv_w(c, c, 3), _bn_params(rng, c))]
    b2 = [(conv_w(c2, c, 3), _bn_params(rng, c2)), (conv_w(c2, c2, 3), _bn_params(rng, c2))]
    proj = (conv_w(c2, c, 1), _bn_params(rng, c2))
    fc_w, fc_b = _linear_init(rng, classes, c2)
    g = Graph("resnet_stack")
    x = g.input("x", ("batch", 3, "height", "width"))

    def cbn(t: str, p: tuple[np.ndarray, BNParams], stride: int = 1,
            relu: bool = True) -> str:
        k = p[0].shape[-1]
        y = g.batch_norm(g.conv2d(t, p[0], None, stride=stride, padding=k // 2), *p[1])
        return g.relu(y) if relu else y

    h = cbn(x, stem)
    h = g.relu(g.add(h, cbn(cbn(h, b1[0]), b1[1], relu=False)))
    h = g.relu(g.add(cbn(h, proj, 2, relu=False), cbn(cbn(h, b2[0], 2), b2[1], relu=False)))
    h = g.flatten(g.global_avg_pool(h), 1)
    g.output(g.linear(h, fc_w, fc_b))

    def np_cbn(t: np.ndarray, p: Any, stride: int = 1, relu: bool = True) -> np.ndarray:
        k = p[0].shape[-1]
        y = _bn_ref(_conv_ref(t, p[0], stride, k // 2), p[1])
        return np.maximum(y, 0.0) if relu else y

    def forward(xv: np.ndarray) -> np.ndarray:
        hv = np_cbn(xv.astype(np.float64), stem)
        hv = np.maximum(hv + np_cbn(np_cbn(hv, b1[0]), b1[1], relu=False), 0.0)
        hv = np.maximum(np_cbn(hv, proj, 2, relu=False) + np_cbn(np_cbn(hv, b2[0], 2), b2[1],
                                                                relu=False), 0.0)
        return hv.mean(axis=(2, 3)) @ fc_w.T.astype(np.float64) + fc_b

    return Example(g, forward, {})
