"""Shape and data-movement ops: Reshape/Flatten/Squeeze/Unsqueeze (views of their input's buffer),
Transpose/Concat/Slice/Gather/Expand/Trilu (pointwise index maps, fused into consumers), Split
(rewritten into Slices), Shape/Constant/ConstantOfShape/Range (compile-time only)."""

from __future__ import annotations

import numpy as np

from nova.models.errors import ModelError, UnsupportedOpError
from nova.models.graph import Node, TensorType, dtype_name
from nova.models.ops.elementwise import broadcast_shapes
from nova.models.ops.nn import norm_axis
from nova.models.ops.registry import REQUIRED, OpDef, register, required, unsupported_attr


def const_input(node: Node, values: list[np.ndarray | None], index: int, what: str) \
        -> np.ndarray | None:
    """The constant value of input `index` (None when omitted), or an error naming the node."""
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    value = values[index] if index < len(values) else None
    if value is None:
        raise ModelError(f"{node.describe()}: {what} input '{node.inputs[index]}' must be a "
                         "compile-time constant (an initializer, or computed from shapes)")
    return np.asarray(value)


def _ints(value: np.ndarray | None) -> list[int]:
    return [] if value is None else [int(v) for v in value.reshape(-1)]


def _static(node: Node, t: TensorType) -> tuple[int, ...]:
    if not t.is_static:
        raise ModelError(f"{node.describe()}: needs a static input shape, got {t}")
    return tuple(int(d) for d in t.shape)


# ---- views ------------------------------------------------------------------------------------


def reshape_target(node: Node, shape: tuple[int, ...], spec: list[int]) -> tuple[int, ...]:
    """ONNX Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred."""
    out = [shape[i] if d == 0 and not node.attrs.get("allowzero", 0) else d
           for i, d in enumerate(spec)]
    total = int(np.prod(shape, dtype=np.int64))
    if out.count(-1) > 1:
        raise ModelError(f"{node.describe()}: more than one -1 in the target shape {spec}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            raise ModelError(f"{node.describe()}: cannot reshape {list(shape)} to {spec}")
        out[out.index(-1)] = total // known
    if int(np.prod(out, dtype=np.int64)) != total:
        raise ModelError(f"{node.describe()}: cannot reshape {list(shape)} to {spec}")
    return tuple(out)


def view_shape(node: Node, shape: tuple[int, ...], values: list[np.ndarray | None]) \
        -> tuple[int, ...]:
    """The output shape of a view op (Reshape, Flatten, Squeeze, Unsqueeze)."""
    rank = len(shape)
    if node.op == "Reshape":
        spec = _ints(const_input(node, values, 1, "shape"))
        return reshape_target(node, shape, spec)
    if node.op == "Flatten":
        axis = int(node.attrs["axis"])
        if not -rank <= axis <= rank:
            raise ModelError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
        if axis < 0:
            axis += rank
        return (int(np.prod(shape[:axis], dtype=np.int64)),
                int(np.prod(shape[axis:], dtype=np.int64)))
    axes = _ints(const_input(node, values, 1, "axes")) or list(node.attrs.get("axes") or [])
    if node.op == "Squeeze":
        if not axes:
            return tuple(d for d in shape if d != 1)
        norm = {norm_axis(node, a, rank) for a in axes}
        for a in norm:
            if shape[a] != 1:
                raise ModelError(f"{node.describe()}: cannot squeeze axis {a} of size {shape[a]}")
        return tuple(d for i, d in enumerate(shape) if i not in norm)
    out_rank = rank + len(axes)
    inserted = {norm_axis(node, a, out_rank) for a in axes}
    out: list[int] = []
    it = iter(shape)
    for i in range(out_rank):
        out.append(1 if i in inserted else next(it))
    return tuple(out)


def _view_type(node: Node, types: list[TensorType | None], values: list[np.ndarray | None]) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    return [TensorType(x.dtype, view_shape(node, _static(node, x), values))]


def _view_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    return [x.reshape(view_shape(node, x.shape, xs)).copy()]


register(OpDef("Reshape", "view", _view_type, _view_eval, inputs=(2, 2), const_inputs=(1,),
               attrs={"allowzero": 0}))
register(OpDef("Flatten", "view", _view_type, _view_eval, attrs={"axis": 1}))
register(OpDef("Squeeze", "view", _view_type, _view_eval, inputs=(1, 2), const_inputs=(1,),
               attrs={"axes": None}))
register(OpDef("Unsqueeze", "view", _view_type, _view_eval, inputs=(1, 2), const_inputs=(1,),
               attrs={"axes": None}))

# ---- pointwise index maps ---------------------------------------------------------------------


def transpose_perm(node: Node, rank: int) -> list[int]:
    perm = node.attrs.get("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ModelError(f"{node.describe()}: perm {perm} is not a permutation of {rank} axes")
    return perm


def _transpose_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x = types[0]
    assert x is not None
    perm = transpose_perm(node, x.rank)
    return [TensorType(x.dtype, tuple(x.shape[p] for p in perm))]


def _transpose_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = required(xs, 0)
    return [np.transpose(x, transpose_perm(node, x.ndim)).copy()]


register(OpDef("Transpose", "pointwise", _transpose_type, _transpose_eval, attrs={"perm": None}))


def _concat_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    ts = [t for t in types if t is not None]
    rank = ts[0].rank
    axis = norm_axis(node, int(node.attrs["axis"]), rank)
    total = 0
    for t in ts:
        if t.rank != rank or t.dtype != ts[0].dtype or any(
                t.shape[i] != ts[0].shape[i] for i in range(rank) if i != axis):
            raise ModelError(f"{node.describe()}: inputs {', '.join(map(str, ts))} do not "
                             f"concatenate along axis {axis}")
        total += int(t.shape[axis])
    shape = list(ts[0].shape)
    shape[axis] = total
    return [TensorType(ts[0].dtype, tuple(shape))]


def _concat_check(node: Node) -> None:
    for i, name in enumerate(node.inputs):
        if not name:
            raise UnsupportedOpError(f"{node.describe()}: input {i} is required (Concat has no "
                                     "optional inputs)")


def _concat_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [np.concatenate([required(xs, i) for i in range(len(xs))],
                           axis=int(node.attrs["axis"]))]


register(OpDef("Concat", "pointwise", _concat_type, _concat_eval, inputs=(1, 1 << 16),
               attrs={"axis": REQUIRED}, check=_concat_check))


def slice_params(node: Node, shape: tuple[int, ...], values: list[np.ndarray | None]) \
        -> tuple[list[int], list[int], tuple[int, ...]]:
    """(start, step, out shape) per axis of a Slice node, with ONNX clamping rules."""
    starts = _ints(const_input(node, values, 1, "starts"))
    ends = _ints(const_input(node, values, 2, "ends"))
    axes = _ints(const_input(node, values, 3, "axes")) or list(range(len(starts)))
    steps = _ints(const_input(node, values, 4, "steps")) or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ModelError(f"{node.describe()}: starts, ends, axes and steps differ in length")
    start = [0] * len(shape)
    step = [1] * len(shape)
    out = list(shape)
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = norm_axis(node, a, len(shape))
        if st == 0:
            raise ModelError(f"{node.describe()}: a step of 0")
        begin, stop, stride = slice(s, e, st).indices(shape[a])
        start[a], step[a] = begin, stride
        out[a] = len(range(begin, stop, stride))
    return start, step, tuple(out)


def _slice_type(node: Node, types: list[TensorType | None], values: list[np.ndarray | None]) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    return [TensorType(x.dtype, slice_params(node, _static(node, x), values)[2])]


def _slice_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    start, step, out = slice_params(node, x.shape, xs)
    index = tuple(slice(b, b + n * s if b + n * s >= 0 else None, s)
                  for b, s, n in zip(start, step, out, strict=True))
    return [x[index].copy()]


register(OpDef("Slice", "pointwise", _slice_type, _slice_eval, inputs=(3, 5),
               const_inputs=(1, 2, 3, 4)))


def _gather_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x, idx = types[0], types[1]
    assert x is not None and idx is not None
    if idx.dtype not in ("int64", "int32"):
        raise ModelError(f"{node.describe()}: indices must be int32 or int64, got {idx.dtype}")
    axis = norm_axis(node, int(node.attrs["axis"]), x.rank)
    return [TensorType(x.dtype, (*x.shape[:axis], *idx.shape, *x.shape[axis + 1:]))]


def _gather_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [np.take(required(xs, 0), required(xs, 1), axis=int(node.attrs["axis"]))]


register(OpDef("Gather", "pointwise", _gather_type, _gather_eval, inputs=(2, 2),
               attrs={"axis": 0}))


def _expand_type(node: Node, types: list[TensorType | None], values: list[np.ndarray | None]) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    target = tuple(_ints(const_input(node, values, 1, "shape")))
    return [TensorType(x.dtype, broadcast_shapes(node, x.shape, target))]


def _expand_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = required(xs, 0)
    target = tuple(_ints(required(xs, 1)))
    shape = tuple(int(d) for d in broadcast_shapes(node, x.shape, target))  # arrays: all ints
    return [np.broadcast_to(x, shape).copy()]


register(OpDef("Expand", "pointwise", _expand_type, _expand_eval, inputs=(2, 2),
               const_inputs=(1,)))

# ---- Split (rewritten into Slice nodes once shapes are known) ---------------------------------


def split_sizes(node: Node, size: int, values: list[np.ndarray | None]) -> list[int]:
    sizes = _ints(const_input(node, values, 1, "split")) or list(node.attrs.get("split") or [])
    if not sizes:
        n = int(node.attrs.get("num_outputs") or len(node.outputs))
        chunk = -(-size // n)
        sizes = [min(chunk, size - i * chunk) for i in range(n)]
    if sum(sizes) != size or len(sizes) != len(node.outputs):
        raise ModelError(f"{node.describe()}: split sizes {sizes} do not divide {size} into "
                         f"{len(node.outputs)} outputs")
    return sizes


def _split_type(node: Node, types: list[TensorType | None], values: list[np.ndarray | None]) \
        -> list[TensorType]:
    x = types[0]
    assert x is not None
    axis = norm_axis(node, int(node.attrs["axis"]), x.rank)
    out = []
    for s in split_sizes(node, int(x.shape[axis]), values):
        shape = list(x.shape)
        shape[axis] = s
        out.append(TensorType(x.dtype, tuple(shape)))
    return out


def _split_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    axis = int(node.attrs["axis"])
    sizes = split_sizes(node, x.shape[axis], xs)
    return [a.copy() for a in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


register(OpDef("Split", "composite", _split_type, _split_eval, inputs=(1, 2),
               outputs=(1, 1 << 16), const_inputs=(1,),
               attrs={"axis": 0, "num_outputs": None, "split": None}))

def trilu_k(node: Node, values: list[np.ndarray | None]) -> int:
    """The diagonal offset k of a Trilu node (input 1, default 0)."""
    k = const_input(node, values, 1, "k")
    return 0 if k is None else int(k.reshape(-1)[0])


def _trilu_type(node: Node, types: list[TensorType | None],
                values: list[np.ndarray | None]) -> list[TensorType]:
    x = required(types, 0)
    if x.rank < 2:
        raise ModelError(f"{node.describe()}: needs a rank >= 2 input, got {x}")
    trilu_k(node, values)
    return [x]


def _trilu_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, k = required(xs, 0), trilu_k(node, xs)
    return [np.triu(x, k) if node.attrs["upper"] else np.tril(x, k)]


register(OpDef("Trilu", "pointwise", _trilu_type, _trilu_eval, inputs=(1, 2), const_inputs=(1,),
               attrs={"upper": 1}))

# ---- compile-time only ------------------------------------------------------------------------


def _shape_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    x = types[0]
    assert x is not None
    n = len(_shape_eval(node, [np.empty([0] * x.rank)])[0])
    return [TensorType("int64", (n,))]


def _shape_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    return [np.asarray(x.shape[start:end], dtype=np.int64)]


register(OpDef("Shape", "const", _shape_type, _shape_eval, attrs={"start": 0, "end": None}))


def constant_value(node: Node) -> np.ndarray:
    """The value of a Constant node (value, value_float(s), value_int(s))."""
    attrs = node.attrs
    if attrs.get("value") is not None:
        return np.asarray(attrs["value"])
    if attrs.get("value_float") is not None:
        return np.asarray(attrs["value_float"], np.float32)
    if attrs.get("value_floats") is not None:
        return np.asarray(attrs["value_floats"], np.float32)
    if attrs.get("value_int") is not None:
        return np.asarray(attrs["value_int"], np.int64)
    if attrs.get("value_ints") is not None:
        return np.asarray(attrs["value_ints"], np.int64)
    raise unsupported_attr(node, "value", "a Constant needs value, value_float(s) or "
                           "value_int(s)")


def _constant_type(node: Node, _t: object, _v: object) -> list[TensorType]:
    value = constant_value(node)
    return [TensorType(dtype_name(value.dtype), tuple(value.shape))]


def _constant_check(node: Node) -> None:
    constant_value(node)


register(OpDef("Constant", "const", _constant_type, lambda n, xs: [constant_value(n)],
               inputs=(0, 0), check=_constant_check,
               attrs={"value": None, "value_float": None, "value_floats": None,
                      "value_int": None, "value_ints": None}))


def _cos_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    shape = tuple(_ints(xs[0]))
    value = node.attrs.get("value")
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


register(OpDef("ConstantOfShape", "const",
               lambda n, t, v: [TensorType(dtype_name(_cos_eval(n, v)[0].dtype),
                                           tuple(_ints(v[0])))],
               _cos_eval, const_inputs=(0,), attrs={"value": None}))


def _range_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    start, limit, delta = (np.asarray(required(xs, i)).reshape(()) for i in range(3))
    if delta == 0:
        raise ModelError(f"{node.describe()}: delta is 0")
    return [np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)]


def _range_type(node: Node, _t: object, values: list[np.ndarray | None]) -> list[TensorType]:
    value = _range_eval(node, values)[0]
    return [TensorType(dtype_name(value.dtype), tuple(value.shape))]


register(OpDef("Range", "const", _range_type, _range_eval, inputs=(3, 3), const_inputs=(0, 1, 2)))

