"""Elementwise ops (unary, binary with NumPy broadcasting, Where, Cast): shape rules and NumPy
references. Their kernel code is in nova.models.codegen.pointwise."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nova.models.errors import ModelError
from nova.models.graph import Dim, Node, TensorType, dtype_name, numpy_dtype
from nova.models.ops.registry import EvalFn, OpDef, register, required, unsupported_attr

UnaryFn = Callable[[np.ndarray], Any]
"""A NumPy function of one array (returning an array, or a scalar for a 0-d input)."""


def broadcast_shapes(node: Node, *shapes: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """NumPy broadcasting of `shapes`, or an error naming the node."""
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ModelError(f"{node.describe()}: shapes {', '.join(str(list(s)) for s in shapes)}"
                             " do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _erf(x: np.ndarray) -> np.ndarray:
    # asarray: for a 0-d input the frompyfunc ufunc returns a Python float, not an array
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)), dtype=np.float64)


def _in_f64(fn: UnaryFn) -> Callable[[np.ndarray], np.ndarray]:
    """Evaluate a float function in float64 and return the input's dtype."""
    def run(x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)
    return run


def _gelu(node: Node, x: np.ndarray) -> np.ndarray:
    xf = x.astype(np.float64)
    if node.attrs.get("approximate", "none") == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (xf + 0.044715 * xf ** 3)
        return (0.5 * xf * (1.0 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * xf * (1.0 + _erf(xf / math.sqrt(2.0)))).astype(x.dtype)


UNARY: dict[str, UnaryFn] = {
    "Relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "Sigmoid": _in_f64(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "Tanh": _in_f64(np.tanh),
    "Exp": _in_f64(np.exp),
    "Log": _in_f64(np.log),
    "Sqrt": _in_f64(np.sqrt),
    "Erf": _in_f64(_erf),
    "Neg": np.negative,
    "Abs": np.abs,
    "Reciprocal": _in_f64(lambda x: 1.0 / x),
    "Silu": _in_f64(lambda x: x / (1.0 + np.exp(-x))),
    "Identity": lambda x: x.copy(),
}
"""Unary ops -> NumPy reference (Gelu, LeakyRelu and Clip take attributes, below)."""

BINARY: dict[str, Callable[[np.ndarray, np.ndarray], Any] | None] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": None, "Pow": None,
    "Max": np.maximum, "Min": np.minimum,
}


def _same_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    t = types[0]
    assert t is not None
    return [t]


def _unary_eval(fn: UnaryFn) -> EvalFn:
    def run(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
        return [np.asarray(fn(required(xs, 0)))]
    return run


for _name, _fn in UNARY.items():
    register(OpDef(_name, "pointwise", _same_type, _unary_eval(_fn)))

def _gelu_check(node: Node) -> None:
    if node.attrs["approximate"] not in ("none", "tanh"):
        raise unsupported_attr(node, "approximate", "use 'none' or 'tanh'")


def _gelu_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [_gelu(node, required(xs, 0))]


def _leaky_relu_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = required(xs, 0)
    return [np.where(x >= 0, x, x * np.asarray(node.attrs["alpha"], x.dtype))]


register(OpDef("Gelu", "pointwise", _same_type, _gelu_eval, attrs={"approximate": "none"},
               check=_gelu_check))
register(OpDef("LeakyRelu", "pointwise", _same_type, _leaky_relu_eval, attrs={"alpha": 0.01}))


def _clip_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = xs[0]
    assert x is not None
    lo = xs[1] if len(xs) > 1 and xs[1] is not None else None
    hi = xs[2] if len(xs) > 2 and xs[2] is not None else None
    out = x
    if lo is not None:
        out = np.maximum(out, lo.astype(x.dtype))
    if hi is not None:
        out = np.minimum(out, hi.astype(x.dtype))
    return [np.asarray(out)]


register(OpDef("Clip", "pointwise", _same_type, _clip_eval, inputs=(1, 3), const_inputs=(1, 2)))


def _binary_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    a, b = types[0], types[1]
    assert a is not None and b is not None
    if node.op != "Pow" and a.dtype != b.dtype:
        raise ModelError(f"{node.describe()}: input dtypes differ ({a.dtype} and {b.dtype})")
    return [TensorType(a.dtype, broadcast_shapes(node, a.shape, b.shape))]


def _binary_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = xs[0], xs[1]
    assert a is not None and b is not None
    if node.op == "Div":
        if np.issubdtype(a.dtype, np.integer):
            return [np.trunc(a / b).astype(a.dtype)]
        return [np.asarray(a / b).astype(a.dtype)]
    if node.op == "Pow":
        return [np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)]
    fn = BINARY[node.op]
    assert fn is not None, "only Div and Pow have no NumPy function, handled above"
    return [np.asarray(fn(a, b)).astype(a.dtype)]


for _name in BINARY:
    register(OpDef(_name, "pointwise", _binary_type, _binary_eval, inputs=(2, 2)))


def _where_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    c, a, b = types
    assert c is not None and a is not None and b is not None
    if c.dtype != "bool":
        raise ModelError(f"{node.describe()}: the condition must be bool, got {c.dtype}")
    return [TensorType(a.dtype, broadcast_shapes(node, c.shape, a.shape, b.shape))]


def _where_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [np.where(required(xs, 0), required(xs, 1), required(xs, 2))]


register(OpDef("Where", "pointwise", _where_type, _where_eval, inputs=(3, 3)))

def _variadic_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    ts = [t for t in types if t is not None]
    if len({t.dtype for t in ts}) > 1:
        raise ModelError(f"{node.describe()}: input dtypes differ "
                         f"({', '.join(sorted({t.dtype for t in ts}))})")
    return [TensorType(ts[0].dtype, broadcast_shapes(node, *(t.shape for t in ts)))]


def _variadic_eval(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    arrays = [required(xs, i) for i in range(len(xs))]
    total = np.sum(np.broadcast_arrays(*(a.astype(np.float64) for a in arrays)), axis=0)
    if node.op == "Mean":
        total = total / len(arrays)
    return [np.asarray(total).astype(arrays[0].dtype)]


for _name in ("Sum", "Mean"):  # ONNX's variadic forms; canonicalize makes them Add chains
    register(OpDef(_name, "composite", _variadic_type, _variadic_eval, inputs=(1, 1 << 16)))

COMPARE = {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
           "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}


def _compare_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    t = _binary_type(node, types, _v)[0]
    return [TensorType("bool", t.shape)]


for _name, _cmp in COMPARE.items():
    register(OpDef(_name, "pointwise", _compare_type,
                   (lambda fn: lambda n, xs: [np.asarray(fn(xs[0], xs[1]))])(_cmp),
                   inputs=(2, 2)))

LOGICAL: dict[str, Callable[..., Any]] = {"Not": np.logical_not, "And": np.logical_and,
                                         "Or": np.logical_or, "Xor": np.logical_xor}
"""Boolean ops (attention masks: HF builds causal and padding masks with them)."""


def _logical_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    for i, t in enumerate(types):
        if t is not None and t.dtype != "bool":
            raise ModelError(f"{node.describe()}: input {i} must be bool, got {t.dtype}")
    shapes = [t.shape for t in types if t is not None]
    return [TensorType("bool", broadcast_shapes(node, *shapes))]


for _name, _logic in LOGICAL.items():
    register(OpDef(_name, "pointwise", _logical_type,
                   (lambda fn: lambda n, xs: [np.asarray(fn(*xs))])(_logic),
                   inputs=(1, 1) if _name == "Not" else (2, 2)))

ONNX_DTYPES = {1: "float32", 10: "float16", 16: "bfloat16", 11: "float64", 7: "int64",
               6: "int32", 3: "int8", 2: "uint8", 9: "bool"}
"""ONNX TensorProto data type -> graph dtype name (the ones nova.models implements)."""


def cast_target(node: Node) -> str:
    """The dtype name a Cast node converts to ('to' is an ONNX type number or a name)."""
    to = node.attrs["to"]
    if isinstance(to, str):
        numpy_dtype(to)
        return to
    name = ONNX_DTYPES.get(int(to))
    if name is None:
        raise unsupported_attr(node, "to", "that element type is not implemented")
    return name


def _cast_check(node: Node) -> None:
    cast_target(node)


def _cast_type(node: Node, types: list[TensorType | None], _v: object) -> list[TensorType]:
    t = types[0]
    assert t is not None
    return [TensorType(cast_target(node), t.shape)]


register(OpDef("Cast", "pointwise", _cast_type,
               lambda n, xs: [np.asarray(xs[0]).astype(numpy_dtype(cast_target(n)))],
               attrs={"to": None, "saturate": 1}, check=_cast_check))

__all__ = ["BINARY", "COMPARE", "LOGICAL", "ONNX_DTYPES", "UNARY", "broadcast_shapes",
           "cast_target", "dtype_name"]
