"""Neural-network ops: MatMul/Gemm, Conv, BatchNormalization, pooling, Softmax, LayerNormalization,
reductions and attention: shape rules and NumPy references."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nova.models.errors import ModelError, UnsupportedOpError
from nova.models.graph import Dim, Node, TensorType
from nova.models.ops.elementwise import broadcast_shapes
from nova.models.ops.registry import REQUIRED, OpDef, register, required, unsupported_attr

# ---- MatMul / Gemm ----------------------------------------------------------------------------


def _matmul_dims(node: Node, a: TensorType, b: TensorType) -> tuple[Dim, ...]:
    if a.rank < 2 or b.rank < 2:
        raise ModelError(f"{node.describe()}: inputs must have rank >= 2 (got {a} and {b})")
    ta, tb = node.attrs.get("trans_a", 0), node.attrs.get("trans_b", 0)
    m, ka = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    kb, n = (b.shape[-1], b.shape[-2]) if tb else (b.shape[-2], b.shape[-1])
    if ka != kb:
        raise ModelError(f"{node.describe()}: inner dimensions differ ({a} x {b})")
    batch = broadcast_shapes(node, a.shape[:-2], b.shape[:-2])
    return (*batch, m, n)


def _matmul_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    a, b = types[0], types[1]
    assert a is not None and b is not None
    if a.dtype != b.dtype:
        raise ModelError(f"{node.describe()}: input dtypes differ ({a.dtype} and {b.dtype})")
    return [TensorType(a.dtype, _matmul_dims(node, a, b))]


def _matmul_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = required(xs, 0), required(xs, 1)
    dtype = a.dtype
    if node.attrs.get("trans_a", 0):
        a = np.swapaxes(a, -1, -2)
    if node.attrs.get("trans_b", 0):
        b = np.swapaxes(b, -1, -2)
    out = np.matmul(a.astype(np.float64), b.astype(np.float64)) * node.attrs.get("alpha", 1.0)
    return [out.astype(dtype)]


register(OpDef("MatMul", "matmul", _matmul_type, _matmul_eval, inputs=(2, 2),
               attrs={"trans_a": 0, "trans_b": 0, "alpha": 1.0}))


def _gemm_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    a, b = types[0], types[1]
    assert a is not None and b is not None
    if a.rank != 2 or b.rank != 2:
        raise ModelError(f"{node.describe()}: Gemm takes 2-D inputs (got {a} and {b})")
    probe = Node("MatMul", [], [], {"trans_a": node.attrs["transA"],
                                    "trans_b": node.attrs["transB"]}, node.name)
    return [TensorType(a.dtype, _matmul_dims(probe, a, b))]


def _gemm_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = required(xs, 0), required(xs, 1)
    c = xs[2] if len(xs) > 2 else None
    dtype = a.dtype
    a = a.T if node.attrs["transA"] else a
    b = b.T if node.attrs["transB"] else b
    out = node.attrs["alpha"] * (a.astype(np.float64) @ b.astype(np.float64))
    if c is not None:
        out = out + node.attrs["beta"] * c.astype(np.float64)
    return [out.astype(dtype)]


register(OpDef("Gemm", "composite", _gemm_type, _gemm_eval, inputs=(2, 3),
               attrs={"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}))

# ---- Conv -------------------------------------------------------------------------------------


def conv_params(node: Node, kernel: tuple[int, int]) -> tuple[list[int], list[int], list[int]]:
    """(strides, pads [top, left, bottom, right], dilations) of a 2-D Conv or pool node."""
    strides = list(node.attrs.get("strides") or [1, 1])
    pads = list(node.attrs.get("pads") or [0, 0, 0, 0])
    dilations = list(node.attrs.get("dilations") or [1, 1])
    if len(strides) != 2 or len(pads) != 4 or len(dilations) != 2:
        raise ModelError(f"{node.describe()}: only 2-D windows are supported (strides "
                         f"{strides}, pads {pads}, dilations {dilations})")
    del kernel
    return strides, pads, dilations


def window_out(node: Node, size: int, k: int, s: int, p0: int, p1: int, d: int) -> int:
    out = (size + p0 + p1 - d * (k - 1) - 1) // s + 1
    if out <= 0:
        raise ModelError(f"{node.describe()}: the window ({k}, stride {s}, dilation {d}) does "
                         f"not fit a dimension of {size} with padding {p0}+{p1}")
    return out


def _check_auto_pad(node: Node) -> None:
    if node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise unsupported_attr(node, "auto_pad", "give explicit 'pads' (NOTSET) instead")


def _conv_check(node: Node) -> None:
    _check_auto_pad(node)
    if node.attrs.get("auto_pad") == "VALID":
        node.attrs["pads"] = [0, 0, 0, 0]


def _conv_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x, w = types[0], types[1]
    assert x is not None and w is not None
    if x.rank != 4 or w.rank != 4:
        raise ModelError(f"{node.describe()}: only 2-D convolution (NCHW input, OIHW weight) is "
                         f"supported (got {x} and {w})")
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    group = int(node.attrs.get("group", 1))
    if not isinstance(c, int) or not isinstance(co, int) or c != ci * group or co % group:
        raise ModelError(f"{node.describe()}: {c} input channels do not match the weight "
                         f"{list(w.shape)} with group={group}")
    ks = node.attrs.get("kernel_shape")
    if ks and list(ks) != [kh, kw]:
        raise ModelError(f"{node.describe()}: kernel_shape {ks} differs from the weight "
                         f"{list(w.shape)}")
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = conv_params(node, (int(kh), int(kw)))
    oh = window_out(node, int(h), int(kh), sh, pt, pb, dh)
    ow = window_out(node, int(wd), int(kw), sw, pl, pr, dw)
    return [TensorType(x.dtype, (n, co, oh, ow))]


def conv2d_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: list[int],
                     pads: list[int], dilations: list[int], group: int) -> np.ndarray:
    """NCHW 2-D convolution in float64 (im2col + matmul), the reference for tests and folding."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, _, h, wd = x.shape
    co, ci, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, co, oh, ow))
    cog = co // group
    for g in range(group):
        xs = xp[:, g * ci:(g + 1) * ci]
        cols = np.empty((n, ci, kh, kw, oh, ow))
        for i in range(kh):
            for j in range(kw):
                hi, wj = i * dilations[0], j * dilations[1]
                cols[:, :, i, j] = xs[:, :, hi:hi + strides[0] * oh:strides[0],
                                      wj:wj + strides[1] * ow:strides[1]]
        wg = w[g * cog:(g + 1) * cog].reshape(cog, -1)
        out[:, g * cog:(g + 1) * cog] = np.einsum("ok,nkhw->nohw", wg,
                                                  cols.reshape(n, -1, oh, ow))
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out


def _conv_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, w = xs[0], xs[1]
    assert x is not None and w is not None
    strides, pads, dilations = conv_params(node, (w.shape[2], w.shape[3]))
    b = xs[2] if len(xs) > 2 else None
    out = conv2d_reference(x, w, b, strides, pads, dilations, int(node.attrs.get("group", 1)))
    return [out.astype(x.dtype)]


register(OpDef("Conv", "conv", _conv_type, _conv_eval, inputs=(2, 3), check=_conv_check,
               attrs={"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
                      "pads": None, "strides": None}))

# ---- BatchNormalization (inference) -----------------------------------------------------------


def _bn_check(node: Node) -> None:
    if node.attrs.get("training_mode", 0):
        raise unsupported_attr(node, "training_mode", "only inference (0) is implemented")
    if len(node.outputs) > 1 and any(node.outputs[1:]):
        raise ModelError(f"{node.describe()}: only the first output (Y) is supported "
                         "(running mean/var outputs are training-mode only)")


def bn_scale_shift(node: Node, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                   var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (a, b) with BN(x) = a * x + b, in float64."""
    a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + node.attrs["epsilon"])
    return a, bias.astype(np.float64) - mean.astype(np.float64) * a


def _bn_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    a, b = bn_scale_shift(node, *(required(xs, i) for i in range(1, 5)))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return [(x.astype(np.float64) * a.reshape(shape) + b.reshape(shape)).astype(x.dtype)]


def _first_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    t = types[0]
    assert t is not None
    return [t]


register(OpDef("BatchNormalization", "composite", _first_type, _bn_eval, inputs=(5, 5),
               outputs=(1, 3), check=_bn_check,
               attrs={"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0}))

# ---- Pooling ----------------------------------------------------------------------------------


def _pool_check(node: Node) -> None:
    _check_auto_pad(node)
    if node.attrs.get("ceil_mode", 0):
        raise unsupported_attr(node, "ceil_mode", "only floor (0) is implemented")
    if node.attrs.get("storage_order", 0):
        raise unsupported_attr(node, "storage_order", "only row major (0) is implemented")
    if node.attrs.get("dilations") and list(node.attrs["dilations"]) != [1, 1]:
        raise unsupported_attr(node, "dilations", "only 1 is implemented for pooling")
    if len(node.attrs["kernel_shape"]) != 2:
        raise unsupported_attr(node, "kernel_shape", "only 2-D pooling is implemented")
    if len(node.outputs) > 1 and any(node.outputs[1:]):
        raise ModelError(f"{node.describe()}: the Indices output is not supported")


def _pool_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x = types[0]
    assert x is not None
    if x.rank != 4:
        raise ModelError(f"{node.describe()}: only NCHW (rank 4) input is supported, got {x}")
    kh, kw = node.attrs["kernel_shape"]
    (sh, sw), (pt, pl, pb, pr), _ = conv_params(node, (kh, kw))
    n, c, h, w = x.shape
    return [TensorType(x.dtype, (n, c, window_out(node, int(h), kh, sh, pt, pb, 1),
                                 window_out(node, int(w), kw, sw, pl, pr, 1)))]


def _pool_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    kh, kw = node.attrs["kernel_shape"]
    (sh, sw), (pt, pl, pb, pr), _ = conv_params(node, (kh, kw))
    n, c, h, w = x.shape
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    is_max = node.op == "MaxPool"
    fill = -np.inf if is_max else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((pt, pb), (pl, pr)))
    out = np.full((n, c, oh, ow), fill)
    count = np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw]
            out = np.maximum(out, win) if is_max else out + win
            count += ones[i:i + sh * oh:sh, j:j + sw * ow:sw]
    if not is_max:
        out = out / (kh * kw if node.attrs.get("count_include_pad", 0) else count)
    return [out.astype(x.dtype)]


_POOL_ATTRS = {"auto_pad": "NOTSET", "ceil_mode": 0, "kernel_shape": REQUIRED, "pads": None,
               "strides": None}
register(OpDef("MaxPool", "pool", _pool_type, _pool_eval, outputs=(1, 2), check=_pool_check,
               attrs={**_POOL_ATTRS, "dilations": None, "storage_order": 0}))
register(OpDef("AveragePool", "pool", _pool_type, _pool_eval, check=_pool_check,
               attrs={**_POOL_ATTRS, "count_include_pad": 0, "dilations": None}))


def _global_pool_type(node: Node, types: list[TensorType | None], _v: object) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    if x.rank < 3:
        raise ModelError(f"{node.describe()}: needs rank >= 3 (N, C, spatial...), got {x}")
    return [TensorType(x.dtype, (*x.shape[:2], *([1] * (x.rank - 2))))]


def _global_pool_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    axes = tuple(range(2, x.ndim))
    fn = np.mean if node.op == "GlobalAveragePool" else np.max
    return [fn(x.astype(np.float64), axis=axes, keepdims=True).astype(x.dtype)]


register(OpDef("GlobalAveragePool", "composite", _global_pool_type, _global_pool_eval))
register(OpDef("GlobalMaxPool", "composite", _global_pool_type, _global_pool_eval))

# ---- Row ops: Softmax, LayerNormalization, reductions -----------------------------------------


def norm_axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ModelError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _softmax_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x = types[0]
    assert x is not None
    norm_axis(node, int(node.attrs["axis"]), x.rank)
    return [x]


def _softmax_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    xf = x.astype(np.float64)
    axis = int(node.attrs["axis"])
    e = np.exp(xf - xf.max(axis=axis, keepdims=True))
    return [(e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)]


register(OpDef("Softmax", "row", _softmax_type, _softmax_eval, attrs={"axis": -1}))


def _ln_check(node: Node) -> None:
    if len(node.outputs) > 1 and any(node.outputs[1:]):
        raise ModelError(f"{node.describe()}: only the first output (Y) is supported (Mean and "
                         "InvStdDev are training outputs)")


def _ln_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x = types[0]
    assert x is not None
    axis = norm_axis(node, int(node.attrs["axis"]), x.rank)
    for i, t in enumerate(types[1:3], 1):
        if t is not None:
            broadcast_shapes(node, x.shape[axis:], t.shape)
            if len(t.shape) > x.rank - axis:
                raise ModelError(f"{node.describe()}: input {i} {t} does not match the "
                                 f"normalised shape {list(x.shape[axis:])}")
    return [x]


def layer_norm_reference(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int,
                         eps: float) -> np.ndarray:
    xf = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (xf - mean) / np.sqrt(var + eps) * scale.astype(np.float64)
    if bias is not None:
        out = out + bias.astype(np.float64)
    return out


def _ln_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, s = xs[0], xs[1]
    assert x is not None and s is not None
    b = xs[2] if len(xs) > 2 else None
    out = layer_norm_reference(x, s, b, int(node.attrs["axis"]), float(node.attrs["epsilon"]))
    return [out.astype(x.dtype)]


register(OpDef("LayerNormalization", "row", _ln_type, _ln_eval, inputs=(2, 3), outputs=(1, 3),
               check=_ln_check, attrs={"axis": -1, "epsilon": 1e-5, "stash_type": 1}))


def reduce_axes(node: Node, rank: int, values: list[np.ndarray | None]) -> tuple[int, ...]:
    """The reduced axes of a Reduce* node (attribute, or the constant second input)."""
    axes = node.attrs.get("axes")
    if len(node.inputs) > 1 and node.inputs[1]:
        value = values[1] if len(values) > 1 else None
        if value is None:
            raise ModelError(f"{node.describe()}: the axes input '{node.inputs[1]}' must be a "
                             "constant")
        axes = [int(a) for a in np.asarray(value).reshape(-1)]
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return ()
        return tuple(range(rank))
    return tuple(sorted({norm_axis(node, int(a), rank) for a in axes}))


def _reduce_type(node: Node, types: list[TensorType | None], values: list[np.ndarray | None]) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    axes = reduce_axes(node, x.rank, values)
    keep = node.attrs.get("keepdims", 1)
    shape = tuple((1 if keep else None) if i in axes else d for i, d in enumerate(x.shape))
    return [TensorType(x.dtype, tuple(d for d in shape if d is not None))]


_REDUCE: dict[str, Callable[..., Any]] = {"ReduceMean": np.mean, "ReduceSum": np.sum,
                                          "ReduceMax": np.max}


def _reduce_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    axes = reduce_axes(node, x.ndim, xs)
    out = _REDUCE[node.op](x.astype(np.float64), axis=axes,
                           keepdims=bool(node.attrs.get("keepdims", 1)))
    return [np.asarray(out).astype(x.dtype)]


for _name in _REDUCE:
    register(OpDef(_name, "row", _reduce_type, _reduce_eval, inputs=(1, 2), const_inputs=(1,),
                   attrs={"axes": None, "keepdims": 1, "noop_with_empty_axes": 0}))

# ---- Attention (scaled dot product) -----------------------------------------------------------


def attention_scale(node: Node, head_dim: int) -> float:
    scale = node.attrs.get("scale")
    return float(scale) if scale is not None else 1.0 / math.sqrt(head_dim)


def _attention_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    q, k, v = types[0], types[1], types[2]
    assert q is not None and k is not None and v is not None
    if q.rank < 2 or k.rank != q.rank or v.rank != q.rank:
        raise ModelError(f"{node.describe()}: q, k, v must have the same rank >= 2 ({q}, {k}, "
                         f"{v})")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ModelError(f"{node.describe()}: q {q}, k {k}, v {v} do not fit "
                         "softmax(q k^T) v")
    return [TensorType(q.dtype, (*broadcast_shapes(node, q.shape[:-2], k.shape[:-2]),
                                 q.shape[-2], v.shape[-1]))]


def _attention_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    q, k, v = (required(xs, i).astype(np.float64) for i in range(3))
    mask = xs[3] if len(xs) > 3 else None
    s = q @ np.swapaxes(k, -1, -2) * attention_scale(node, q.shape[-1])
    if mask is not None:
        s = s + mask.astype(np.float64)
    if node.attrs.get("causal", 0):
        sq, sk = s.shape[-2], s.shape[-1]
        s = np.where(np.tril(np.ones((sq, sk), bool), sk - sq), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return [((e / e.sum(axis=-1, keepdims=True)) @ v).astype(required(xs, 0).dtype)]


def _attention_check(node: Node) -> None:
    if node.attrs.get("causal", 0):
        raise unsupported_attr(node, "causal", "pass an additive mask input instead")


register(OpDef("Attention", "composite", _attention_type, _attention_eval, inputs=(3, 4),
               check=_attention_check, attrs={"scale": None, "causal": 0}))


# ---- FusedAttention (internal: made by passes/attention.py, never imported) -------------------


def _fused_logical(node: Node, q: TensorType, v: TensorType) -> tuple[Dim, ...]:
    """Shape of softmax(q k^T) v before the output permutation."""
    dv = v.shape[-2] if node.attrs.get("trans_v", 0) else v.shape[-1]
    return (*node.attrs["batch"], q.shape[-2], dv)


def _fused_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    q, v = types[0], types[2]
    assert q is not None and v is not None
    shape = _fused_logical(node, q, v)
    perm = node.attrs.get("out_perm")
    if perm:
        shape = tuple(shape[p] for p in perm)
    return [TensorType(q.dtype, shape)]


def fused_attention_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    """softmax(q k^T * scale [+ mask]) v in float64, then the output permutation."""
    q, k, v = (required(xs, i).astype(np.float64) for i in range(3))
    if not node.attrs.get("trans_k", 1):
        k = np.swapaxes(k, -1, -2)
    if node.attrs.get("trans_v", 0):
        v = np.swapaxes(v, -1, -2)
    s = q @ np.swapaxes(k, -1, -2) * float(node.attrs["scale"])
    if len(xs) > 3 and xs[3] is not None:
        s = s + xs[3].astype(np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    out = (e / e.sum(axis=-1, keepdims=True)) @ v
    perm = node.attrs.get("out_perm")
    if perm:
        out = np.transpose(out, perm)
    return [np.ascontiguousarray(out).astype(required(xs, 0).dtype)]


def _fused_check(node: Node) -> None:
    raise UnsupportedOpError(f"{node.describe()}: FusedAttention is internal to nova.models "
                             "(made by its attention pass); use Attention or the "
                             "MatMul/Softmax/MatMul pattern")


register(OpDef("FusedAttention", "attention", _fused_type, fused_attention_eval, inputs=(3, 4),
               check=_fused_check, attrs={"scale": REQUIRED, "batch": REQUIRED, "trans_k": 1,
                                          "trans_v": 0, "tensor_cores": 0, "out_perm": None}))
