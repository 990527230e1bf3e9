"""FX handlers of the torch.compile backend for what real architectures add to the basic layers
(torch_backend.py has those): tensor indexing (`x[:, 0]`, `mask[:, None, None, :]`,
`bias[:, :, :t, :t]`), embeddings, masks (`torch.where`, `masked_fill`, SDPA's `is_causal`),
comparisons and bool logic, dtype conversions, clamps (ReLU6 is `hardtanh`), `expand`,
`unbind`/`chunk`/`stack`, and constants shaped like an input (`zeros_like`).

Each handler maps one FX call to nova.models graph nodes; anything outside what it implements
raises the translator's UnsupportedOpError naming the FX node and saying what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Handler = Callable[[Any, Any, list[Any], dict[str, Any]], Any]


def _params(names: list[str], args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(names, args, strict=False)) | kwargs


def _out_dtype(tr: Any, node: Any) -> str:
    from nova.models.torch_backend import torch_dtype

    return torch_dtype(tr.meta(node), node.name)


def _scalar(tr: Any, node: Any, value: Any, dtype: str) -> str | None:
    """A graph tensor for a clamp bound / fill value: None stays None, numbers become
    one-element weights of `dtype`, tensors translate as usual."""
    import torch.fx

    if value is None:
        return None
    if isinstance(value, torch.fx.Node):
        return str(tr.t(value))
    from nova.models.graph import numpy_dtype

    return str(tr.graph.weight(np.asarray(value, dtype=numpy_dtype(dtype))))


def _clip(lo: float | None, hi: float | None, names: tuple[str, ...] = ()) -> Handler:
    """clamp / clip / hardtanh / relu6 -> Clip: the bounds are the call's arguments `names`
    (positional after the input, or keywords: 'min'/'min_val' low, 'max'/'max_val' high),
    defaulting to `lo` / `hi` (None: unbounded)."""
    def run(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        p = _params(["input", *names], args, kwargs)
        dtype = _out_dtype(tr, node)
        low = next((p[k] for k in ("min", "min_val") if k in p), lo)
        high = next((p[k] for k in ("max", "max_val") if k in p), hi)
        return str(tr.graph.node("Clip", [tr.t(p["input"]), _scalar(tr, node, low, dtype),
                                          _scalar(tr, node, high, dtype)], name=node.name))
    return run


def _hardsigmoid(tr: Any, x: str, dtype: str, node: Any) -> str:
    """relu6(x + 3) / 6."""
    y = tr.graph.node("Add", [x, _scalar(tr, node, 3.0, dtype)])
    y = tr.graph.node("Clip", [y, _scalar(tr, node, 0.0, dtype), _scalar(tr, node, 6.0, dtype)])
    return str(tr.graph.node("Div", [y, _scalar(tr, node, 6.0, dtype)]))


def hardsigmoid(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return _hardsigmoid(tr, tr.t(args[0]), _out_dtype(tr, node), node)


def hardswish(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    x = tr.t(args[0])
    return str(tr.graph.node("Mul", [x, _hardsigmoid(tr, x, _out_dtype(tr, node), node)],
                             name=node.name))


def rsqrt(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return str(tr.graph.node("Reciprocal", [tr.graph.node("Sqrt", [tr.t(args[0])])],
                             name=node.name))


def log_softmax(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if dim is None:
        raise tr.fail(node, "log_softmax needs dim")
    soft = tr.graph.node("Softmax", [tr.t(args[0])], {"axis": int(dim)})
    return str(tr.graph.node("Log", [soft], name=node.name))


def convert(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    """.to(dtype) / .float() / .half() / .type_as(t) ...: a Cast when the dtype changes (the
    device of a `.to(device)` is the program's anyway)."""
    dst = _out_dtype(tr, node)
    if dst == _out_dtype(tr, args[0]):
        return str(tr.t(args[0]))
    return str(tr.graph.node("Cast", [tr.t(args[0])], {"to": dst}, name=node.name))


def embedding(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    p = _params(["input", "weight", "padding_idx", "max_norm"], args, kwargs)
    if p.get("max_norm") is not None:
        raise tr.fail(node, "max_norm (renormalises the table in place)")
    return str(tr.graph.node("Gather", [tr.t(p["weight"]), tr.t(p["input"])], {"axis": 0},
                             name=node.name))


def where(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    p = _params(["condition", "input", "other"], args, kwargs)
    if "input" not in p:
        raise tr.fail(node, "torch.where(condition) (nonzero) has a data-dependent shape")
    dtype = _out_dtype(tr, node)
    return str(tr.graph.node("Where", [tr.t(p["condition"]),
                                       _scalar(tr, node, p["input"], dtype),
                                       _scalar(tr, node, p["other"], dtype)], name=node.name))


def masked_fill(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    p = _params(["input", "mask", "value"], args, kwargs)
    return str(tr.graph.node("Where", [tr.t(p["mask"]),
                                       _scalar(tr, node, p["value"], _out_dtype(tr, node)),
                                       tr.t(p["input"])], name=node.name))


def expand(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    shape = np.asarray(tr.shape(node), np.int64)
    return str(tr.graph.node("Expand", [tr.t(args[0]), shape], name=node.name))


def to_shape(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    """squeeze / unsqueeze / view_as / reshape_as: a Reshape to the recorded shape."""
    return str(tr.graph.reshape(tr.t(args[0]), list(tr.shape(node))))


def filled(value: float | None) -> Handler:
    """zeros_like / ones_like / full_like / new_zeros ...: a constant of the output's shape
    (None: the fill value is the call's `fill_value` argument)."""
    def run(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        from nova.models.graph import numpy_dtype

        fill = value
        if fill is None:
            fill = kwargs.get("fill_value", args[-1] if len(args) > 1 else None)
            if not isinstance(fill, int | float | bool):
                raise tr.fail(node, "the fill value must be a Python number")
        dtype = numpy_dtype(_out_dtype(tr, node))
        return str(tr.graph.weight(np.full(tr.shape(node), fill, dtype=dtype)))
    return run


def unbind(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[str, ...]:
    dim = int(kwargs.get("dim", args[1] if len(args) > 1 else 0))
    shape = tr.shape(args[0])
    dim %= len(shape)
    parts = tr.graph.split(tr.t(args[0]), [1] * shape[dim], axis=dim)
    rest = [d for i, d in enumerate(shape) if i != dim]
    return tuple(str(tr.graph.reshape(p, rest)) for p in parts)


def stack(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    dim = int(kwargs.get("dim", args[1] if len(args) > 1 else 0))
    out = tr.shape(node)
    dim %= len(out)
    one = [*out[:dim], 1, *out[dim + 1:]]
    parts = [tr.graph.reshape(tr.t(a), one) for a in args[0]]
    return str(tr.graph.node("Concat", parts, {"axis": dim}, name=node.name))


def causal_mask(q_len: int, k_len: int, dtype: str) -> np.ndarray:
    """SDPA's `is_causal=True` as an additive mask: query i sees keys 0..i (top-left aligned,
    torch's convention), the others -inf."""
    from nova.models.graph import numpy_dtype

    keep = np.tril(np.ones((q_len, k_len), dtype=bool))
    return np.where(keep, 0.0, -np.inf).astype(numpy_dtype(dtype))


def sdpa(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    p = _params(["query", "key", "value", "attn_mask", "dropout_p", "is_causal"], args, kwargs)
    if p.get("dropout_p", 0.0) or p.get("enable_gqa"):
        raise tr.fail(node, "dropout_p and enable_gqa are not supported")
    dtype = _out_dtype(tr, node)
    mask = p.get("attn_mask")
    mask_name: str | None = None
    if p.get("is_causal"):
        if mask is not None:
            raise tr.fail(node, "attn_mask together with is_causal")
        mask_name = str(tr.graph.weight(causal_mask(tr.shape(p["query"])[-2],
                                                    tr.shape(p["key"])[-2], dtype)))
    elif mask is not None:
        mask_name = str(tr.t(mask))
        if _out_dtype(tr, mask) == "bool":  # True = attend
            mask_name = str(tr.graph.node("Where", [mask_name, _scalar(tr, node, 0.0, dtype),
                                                    _scalar(tr, node, -np.inf, dtype)]))
    return str(tr.graph.node("Attention", [tr.t(p["query"]), tr.t(p["key"]), tr.t(p["value"]),
                                           mask_name], {"scale": p.get("scale")},
                             name=node.name))


def _compare(op: str, negate: bool = False) -> Handler:
    """x > y ... -> Greater ...; a Python number takes the tensor operand's dtype."""
    def run(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        import torch.fx

        a, b = args[0], args[1]
        like = a if isinstance(a, torch.fx.Node) else b
        dtype = _out_dtype(tr, like)
        y = tr.graph.node(op, [_scalar(tr, node, a, dtype), _scalar(tr, node, b, dtype)],
                          name=None if negate else node.name)
        return str(tr.graph.node("Not", [y], name=node.name) if negate else y)
    return run


def _logical(op: str) -> Handler:
    """~m, m & n, m | n on bool masks -> Not / And / Or."""
    def run(tr: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        if _out_dtype(tr, node) != "bool":
            raise tr.fail(node, "bitwise ops on integers (only bool masks)")
        return str(tr.graph.node(op, [tr.t(a) for a in args[: 1 if op == "Not" else 2]],
                                 name=node.name))
    return run


# ---- indexing ---------------------------------------------------------------------------------

def _int(tr: Any, node: Any, value: Any) -> int:
    """A slice bound or index: a Python int, or a size dynamo computed (concrete here)."""
    import torch.fx

    if isinstance(value, torch.fx.Node):
        value = tr.names.get(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise tr.fail(node, f"index {value!r} is not an integer known at compile time")
    return value


def _expand_ellipsis(tr: Any, node: Any, items: tuple[Any, ...], rank: int) -> list[Any]:
    real = sum(1 for it in items if it is not None and it is not Ellipsis)
    if real > rank:
        raise tr.fail(node, f"too many indices for a rank-{rank} tensor")
    out: list[Any] = []
    for it in items:
        out += [slice(None)] * (rank - real) if it is Ellipsis else [it]
    if Ellipsis not in items:
        out += [slice(None)] * (rank - real)
    return out


def index(tr: Any, node: Any, src: Any, key: Any) -> str:
    """`src[key]` for basic indexing (ints, slices with step >= 1, None, ...) plus at most one
    int64 index tensor among full slices: a Slice, a Gather, then a Reshape to the result's
    shape (ints drop a size-1 dim, None adds one)."""
    import torch.fx

    shape = tr.shape(src)
    items = _expand_ellipsis(tr, node, key if isinstance(key, tuple) else (key,), len(shape))
    starts: list[int] = []
    ends: list[int] = []
    axes: list[int] = []
    steps: list[int] = []
    gather: tuple[int, Any] | None = None
    dim = 0
    for it in items:
        if it is None:
            continue
        if isinstance(it, torch.fx.Node) and hasattr(tr.meta(it), "shape"):
            if gather is not None or _out_dtype(tr, it) not in ("int64", "int32"):
                raise tr.fail(node, "advanced indexing beyond one integer index tensor")
            gather = (dim, it)
        elif isinstance(it, slice):
            lo = 0 if it.start is None else _int(tr, node, it.start)
            hi = shape[dim] if it.stop is None else _int(tr, node, it.stop)
            step = 1 if it.step is None else _int(tr, node, it.step)
            if (lo, hi, step) != (0, shape[dim], 1):
                starts, ends, axes, steps = ([*starts, lo], [*ends, hi], [*axes, dim],
                                             [*steps, step])
        else:
            i = _int(tr, node, it) % shape[dim]
            starts, ends, axes, steps = [*starts, i], [*ends, i + 1], [*axes, dim], [*steps, 1]
        dim += 1
    if gather is not None and (starts or any(not isinstance(it, slice) for it in items
                                             if it is not None and it is not gather[1])):
        raise tr.fail(node, "an index tensor mixed with integer or partial-slice indices")
    x = str(tr.t(src))
    if starts:
        x = str(tr.graph.slice(x, starts, ends, axes, steps))
    if gather is not None:
        x = str(tr.graph.node("Gather", [x, tr.t(gather[1])], {"axis": gather[0]}))
    return str(tr.graph.reshape(x, list(tr.shape(node))))


HANDLERS: dict[str, Handler] = {
    "hardtanh": _clip(-1.0, 1.0, ("min_val", "max_val")), "relu6": _clip(0.0, 6.0),
    "clamp": _clip(None, None, ("min", "max")), "clip": _clip(None, None, ("min", "max")),
    "clamp_min": _clip(None, None, ("min",)), "clamp_max": _clip(None, None, ("max",)),
    "hardsigmoid": hardsigmoid, "hardswish": hardswish, "rsqrt": rsqrt,
    "log_softmax": log_softmax,
    **{name: convert for name in ("to", "type", "type_as", "float", "half", "double",
                                  "bfloat16", "long", "int", "bool")},
    "embedding": embedding, "where": where, "masked_fill": masked_fill,
    "masked_fill_": masked_fill, "expand": expand, "expand_as": expand,
    **{name: to_shape for name in ("squeeze", "unsqueeze", "view_as", "reshape_as")},
    "zeros_like": filled(0), "ones_like": filled(1), "full_like": filled(None),
    "new_zeros": filled(0), "new_ones": filled(1), "new_full": filled(None),
    "unbind": unbind, "stack": stack, "scaled_dot_product_attention": sdpa,
    "gt": _compare("Greater"), "lt": _compare("Less"), "ge": _compare("GreaterOrEqual"),
    "le": _compare("LessOrEqual"), "eq": _compare("Equal"), "ne": _compare("Equal", True),
    **{name: _logical("Not") for name in ("invert", "bitwise_not", "logical_not")},
    **{name: _logical("And") for name in ("and_", "bitwise_and", "logical_and")},
    **{name: _logical("Or") for name in ("or_", "bitwise_or", "logical_or")},
}
