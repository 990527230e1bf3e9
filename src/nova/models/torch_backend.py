"""`torch.compile(model, backend="nova")`: a TorchDynamo backend that translates the FX graph into a
nova.models graph and runs it as one compiled .nova program.

Registered under the name "nova" when this module is imported, and through the
`torch_dynamo_backends` entry point of the nova package (so `backend="nova"` works once nova is
installed). torch is optional: nothing else in Nova imports it.

- Module parameters and buffers (FX placeholders named `..._parameters_...`/`..._buffers_...`)
  are frozen into weights at compile time, as inference compilers do; user inputs stay inputs.
- Shapes: a static graph is compiled when dynamo hands it over; a graph with symbolic sizes
  (dynamo marks a dimension dynamic after seeing two sizes, or dynamic=True) is run once
  eagerly per new input shape to record concrete sizes, then compiled for that shape and cached.
- An FX node nova.models cannot translate raises UnsupportedOpError naming the node and op.
- Device: the inputs' (cuda tensors run on Nova's cuda device, exchanged through DLPack without
  copies); CPU tensors run on `options={"device": ...}` (default "cpu").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nova.models import torch_ops
from nova.models.builder import Graph
from nova.models.errors import UnsupportedOpError

Handler = Callable[["_Translator", Any, list[Any], dict[str, Any]], Any]

_TORCH_DTYPES = {"torch.float32": "float32", "torch.float16": "float16",
                 "torch.bfloat16": "bfloat16", "torch.int64": "int64", "torch.int32": "int32",
                 "torch.bool": "bool", "torch.float64": "float64"}


def torch_dtype(t: Any, what: str) -> str:
    """The graph dtype name of tensor `t` (`what` names it in the error)."""
    return _dtype(t, what)


def _dtype(t: Any, what: str) -> str:
    name = _TORCH_DTYPES.get(str(t.dtype))
    if name is None:
        raise UnsupportedOpError(f"torch.compile backend 'nova': {what} has dtype {t.dtype}, "
                                 "which is not supported")
    return name


def _to_numpy(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _op_name(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", str(target))


class _Translator:
    """FX GraphModule -> nova.models Graph (see the module doc)."""

    def __init__(self, gm: Any, example_inputs: Sequence[Any],
                 values: dict[Any, Any] | None = None) -> None:
        self.gm = gm
        self.graph = Graph(type(gm).__name__)
        self.names: dict[Any, Any] = {}
        self.inputs: list[int] = []
        self.examples = list(example_inputs)
        self.values = values
        """Every node's value from one real run (dynamic graphs), else None: dynamo's meta."""
        self.consts: dict[Any, Any] = {}
        """Nodes whose value does not depend on the user inputs (parameters, buffers, and calls
        on nothing else): their values, computed at compile time."""

    def fold(self, node: Any) -> bool:
        """Compute `node` now when it reads only constants (arange, torch.tensor, a slice of a
        causal-mask buffer, a parameter's expand): its result becomes a weight. False when it
        depends on an input (or is random)."""
        import torch
        import torch.fx

        if _op_name(node) in _NOT_FOLDED:
            return False
        reads: list[Any] = []
        torch.fx.node.map_arg((node.args, node.kwargs), reads.append)
        if any(r not in self.consts for r in reads):
            return False
        if self.values is not None and node in self.values:
            value = self.values[node]
        else:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                                 lambda n: self.consts[n])
            with torch.no_grad():
                if node.op == "call_method":
                    value = getattr(args[0], node.target)(*args[1:], **kwargs)
                else:
                    value = node.target(*args, **kwargs)
        self.consts[node] = value
        self.names[node] = self._materialise(node, value)
        return True

    def _materialise(self, node: Any, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(self._materialise(node, v) for v in value)
        if hasattr(value, "shape"):
            _dtype(value, node.name)
            return self.graph.weight(_to_numpy(value))
        return value

    def fail(self, node: Any, why: str = "") -> UnsupportedOpError:
        return UnsupportedOpError(
            f"torch.compile backend 'nova': FX node '{node.name}' ({node.op} "
            f"{_op_name(node)}) is not supported{': ' + why if why else ''}")

    def meta(self, node: Any) -> Any:
        if self.values is not None and node in self.values:
            return self.values[node]
        value = node.meta.get("example_value", node.meta.get("val"))
        if value is None:
            raise self.fail(node, "no example value recorded by dynamo")
        return value

    def shape(self, node: Any) -> tuple[int, ...]:
        try:
            return tuple(int(d) for d in self.meta(node).shape)
        except TypeError as exc:
            raise self.fail(node, "symbolic shapes: compile with dynamic=False") from exc

    def t(self, value: Any, like: Any = None) -> str:
        """The graph tensor for an FX argument (a node, or a Python number)."""
        import torch.fx

        if isinstance(value, torch.fx.Node):
            name = self.names[value]
            if not isinstance(name, int | float):
                return name
            value = name  # a size computed from shapes: a constant of this specialisation
        dtype = "float32"
        if like is not None:
            dtype = _dtype(self.meta(like), like.name)
        from nova.models.graph import numpy_dtype

        return self.graph.weight(np.asarray(value, dtype=numpy_dtype(dtype)))

    def translate(self) -> Graph:
        index = 0
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                example = self.examples[index]
                index += 1
                if self.values is not None and isinstance(example, int | float):
                    self.names[node] = example  # a symbolic size, concrete in this run
                    self.consts[node] = example
                    continue
                if not hasattr(example, "shape"):
                    raise self.fail(node, "a non-tensor input")
                if "_parameters_" in node.name or "_buffers_" in node.name:
                    self.names[node] = self.graph.weight(_to_numpy(example), node.name)
                    self.consts[node] = example
                else:
                    self.inputs.append(index - 1)
                    self.names[node] = self.graph.input(
                        node.name, tuple(int(d) for d in example.shape), _dtype(example,
                                                                                node.name))
            elif node.op == "get_attr":
                self.consts[node] = _get_attr(self.gm, node.target)
                self.names[node] = self.graph.weight(_to_numpy(self.consts[node]), node.name)
            elif node.op in ("call_function", "call_method"):
                if self.values is not None and isinstance(self.values.get(node),
                                                          int | float | tuple | list) and \
                        not _has_tensor(self.values[node]):
                    self.names[node] = self.values[node]  # size arithmetic: a constant here
                    self.consts[node] = self.values[node]
                    continue
                if self.fold(node):
                    continue
                handler = HANDLERS.get(_op_name(node))
                if handler is None:
                    raise self.fail(node)
                self.names[node] = handler(self, node, list(node.args), dict(node.kwargs))
            elif node.op == "output":
                outs = node.args[0]
                outs = outs if isinstance(outs, list | tuple) else (outs,)
                for out in outs:
                    if out is None or out not in self.names:
                        raise self.fail(node, "outputs must be tensors computed by the graph")
                    self.graph.output(self.names[out])
            else:
                raise self.fail(node)
        return self.graph


def _has_tensor(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_has_tensor(v) for v in value)
    return hasattr(value, "shape")


def _get_attr(gm: Any, target: str) -> Any:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


# ---- handlers ---------------------------------------------------------------------------------

def _binary(op: str) -> Handler:
    def run(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        if kwargs.get("alpha", 1) != 1:
            raise tr.fail(node, "alpha != 1")
        a, b = args[0], args[1]
        like = node
        return tr.graph.node(op, [tr.t(a, like), tr.t(b, like)], name=node.name)
    return run


def _unary(op: str, attrs: dict[str, Any] | None = None) -> Handler:
    def run(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        return tr.graph.node(op, [tr.t(args[0])], dict(attrs or {}), name=node.name)
    return run


def _identity(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return tr.t(args[0])


def _dropout(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    training = kwargs.get("training", args[2] if len(args) > 2 else False)
    if training:
        raise tr.fail(node, "dropout in training mode")
    return tr.t(args[0])


def _gelu(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return tr.graph.node("Gelu", [tr.t(args[0])],
                         {"approximate": kwargs.get("approximate", "none")}, name=node.name)


def _linear(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    y = tr.graph.node("MatMul", [tr.t(x), tr.t(w)], {"trans_b": 1}, name=node.name + "_mm")
    return y if b is None else tr.graph.node("Add", [y, tr.t(b)], name=node.name)


def _matmul(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return tr.graph.node("MatMul", [tr.t(args[0]), tr.t(args[1])], name=node.name)


def _softmax(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if dim is None:
        raise tr.fail(node, "softmax needs dim")
    return tr.graph.node("Softmax", [tr.t(args[0])], {"axis": int(dim)}, name=node.name)


def _layer_norm(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    params = [*args, None, None, None, None][:5]
    x, shape, w, b, eps = params
    w, b = kwargs.get("weight", w), kwargs.get("bias", b)
    eps = kwargs.get("eps", 1e-5 if eps is None else eps)
    if w is None:
        w = np.ones(tuple(shape), np.float32)
    return tr.graph.node("LayerNormalization", [tr.t(x), tr.t(w), None if b is None else tr.t(b)],
                         {"axis": -len(shape), "epsilon": float(eps)}, name=node.name)


def _pair(v: Any) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int) else [int(a) for a in v]


def _conv2d(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    names = ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
    p = dict(zip(names, args, strict=False)) | kwargs
    if isinstance(p.get("padding", 0), str):
        raise tr.fail(node, f"padding={p['padding']!r}: give explicit padding")
    pads = _pair(p.get("padding", 0))
    return tr.graph.node("Conv", [tr.t(p["input"]), tr.t(p["weight"]),
                                  None if p.get("bias") is None else tr.t(p["bias"])],
                         {"strides": _pair(p.get("stride", 1)), "pads": pads * 2,
                          "dilations": _pair(p.get("dilation", 1)),
                          "group": int(p.get("groups", 1))}, name=node.name)


def _batch_norm(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    names = ["input", "running_mean", "running_var", "weight", "bias", "training", "momentum",
             "eps"]
    p = dict(zip(names, args, strict=False)) | kwargs
    if p.get("training"):
        raise tr.fail(node, "batch_norm in training mode")
    c = tr.shape(p["input"])[1]
    w = p.get("weight")
    b = p.get("bias")
    return tr.graph.node("BatchNormalization", [
        tr.t(p["input"]), tr.t(w) if w is not None else np.ones(c, np.float32),
        tr.t(b) if b is not None else np.zeros(c, np.float32), tr.t(p["running_mean"]),
        tr.t(p["running_var"])], {"epsilon": float(p.get("eps", 1e-5))}, name=node.name)


def _pool(op: str) -> Handler:
    def run(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        names = ["input", "kernel_size", "stride", "padding"]
        names += ["dilation", "ceil_mode"] if op == "MaxPool" else ["ceil_mode",
                                                                     "count_include_pad"]
        p = dict(zip(names, args, strict=False)) | kwargs
        if p.get("ceil_mode"):
            raise tr.fail(node, "ceil_mode=True")
        if op == "MaxPool" and _pair(p.get("dilation", 1)) != [1, 1]:
            raise tr.fail(node, "dilation != 1")
        if p.get("return_indices"):
            raise tr.fail(node, "return_indices=True")
        k = _pair(p["kernel_size"])
        stride = p.get("stride") or k
        attrs: dict[str, Any] = {"kernel_shape": k, "strides": _pair(stride),
                                 "pads": _pair(p.get("padding", 0)) * 2}
        if op == "AveragePool":
            attrs["count_include_pad"] = int(p.get("count_include_pad", True))
            if p.get("divisor_override"):
                raise tr.fail(node, "divisor_override")
        return tr.graph.node(op, [tr.t(p["input"])], attrs, name=node.name)
    return run


def _adaptive_avg_pool2d(tr: _Translator, node: Any, args: list[Any],
                         kwargs: dict[str, Any]) -> str:
    if _pair(args[1] if len(args) > 1 else kwargs["output_size"]) != [1, 1]:
        raise tr.fail(node, "only output size 1 (global average pooling)")
    return tr.graph.node("GlobalAveragePool", [tr.t(args[0])], name=node.name)


def _reshape(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return tr.graph.reshape(tr.t(args[0]), list(tr.shape(node)))


def _transpose(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    rank = len(tr.shape(args[0]))
    d0, d1 = (int(a) % rank for a in args[1:3])
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return tr.graph.node("Transpose", [tr.t(args[0])], {"perm": perm}, name=node.name)


def _permute(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    dims = args[1] if len(args) == 2 and isinstance(args[1], list | tuple) else args[1:]
    dims = kwargs.get("dims", dims)
    rank = len(tr.shape(args[0]))
    return tr.graph.node("Transpose", [tr.t(args[0])], {"perm": [int(d) % rank for d in dims]},
                         name=node.name)


def _cat(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    return tr.graph.node("Concat", [tr.t(a) for a in args[0]], {"axis": int(dim)},
                         name=node.name)


def _split(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    outs = tr.meta(node)
    dim = int(kwargs.get("dim", args[2] if len(args) > 2 else 0))
    sizes = [int(o.shape[dim]) for o in outs]
    return tr.graph.split(tr.t(args[0]), sizes, axis=dim)


def _getitem(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    import torch.fx

    src, key = args
    if isinstance(src, torch.fx.Node) and isinstance(tr.names.get(src), tuple):
        if not isinstance(key, int):
            raise tr.fail(node, "a tuple of tensors indexed by a non-integer")
        return tr.names[src][key]
    return torch_ops.index(tr, node, src, key)


def _flatten(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
    return tr.graph.reshape(tr.t(args[0]), list(tr.shape(node)))


def _reduce(op: str) -> Handler:
    def run(tr: _Translator, node: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if dims is None:
            dims = list(range(len(tr.shape(args[0]))))
        dims = [dims] if isinstance(dims, int) else list(dims)
        keep = bool(kwargs.get("keepdim", args[2] if len(args) > 2 else False))
        return tr.graph.node(op, [tr.t(args[0]), np.asarray(dims, np.int64)],
                             {"keepdims": int(keep)}, name=node.name)
    return run


HANDLERS: dict[str, Handler] = {
    "add": _binary("Add"), "iadd": _binary("Add"), "sub": _binary("Sub"),
    "mul": _binary("Mul"), "imul": _binary("Mul"), "truediv": _binary("Div"),
    "div": _binary("Div"), "pow": _binary("Pow"), "maximum": _binary("Max"),
    "minimum": _binary("Min"),
    "relu": _unary("Relu"), "sigmoid": _unary("Sigmoid"), "tanh": _unary("Tanh"),
    "exp": _unary("Exp"), "sqrt": _unary("Sqrt"), "erf": _unary("Erf"), "neg": _unary("Neg"),
    "silu": _unary("Silu"), "abs": _unary("Abs"), "log": _unary("Log"), "gelu": _gelu,
    "contiguous": _identity, "dropout": _dropout,
    "linear": _linear, "matmul": _matmul, "bmm": _matmul, "softmax": _softmax,
    "layer_norm": _layer_norm, "conv2d": _conv2d, "batch_norm": _batch_norm,
    "max_pool2d": _pool("MaxPool"), "avg_pool2d": _pool("AveragePool"),
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "reshape": _reshape, "view": _reshape, "flatten": _flatten, "transpose": _transpose,
    "permute": _permute, "cat": _cat, "split": _split, "getitem": _getitem,
    "chunk": _split, "mean": _reduce("ReduceMean"),
    "sum": _reduce("ReduceSum"), "amax": _reduce("ReduceMax"), **torch_ops.HANDLERS,
}

_NOT_FOLDED = frozenset(["rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                         "normal", "bernoulli", "multinomial", "dropout", "uniform_",
                         "normal_"])
"""Calls never computed at compile time even on constants (random: a fresh value per run)."""


def nova_backend(gm: Any, example_inputs: Sequence[Any], options: dict[str, Any] | None = None
                 ) -> Callable[..., Any]:
    """The TorchDynamo backend: translate, compile, and return the callable dynamo runs. A graph
    with symbolic sizes (dynamo's automatic dynamic shapes, or dynamic=True) is compiled per
    concrete input shapes on first use, like CompiledModel does for symbolic batch sizes."""
    options = dict(options or {})
    if any(not hasattr(x, "shape") or not all(isinstance(d, int) for d in x.shape)
           for x in example_inputs):
        return _PerShape(gm, options)
    return _compile(gm, list(example_inputs), None, options)


class _PerShape:
    """A dynamic-shape graph: one Nova program per tuple of input shapes (and size values)."""

    def __init__(self, gm: Any, options: dict[str, Any]) -> None:
        self.gm = gm
        self.options = options
        self.cache: dict[tuple[Any, ...], Callable[..., list[Any]]] = {}

    def __call__(self, *args: Any) -> list[Any]:
        key = tuple((tuple(a.shape), str(a.dtype)) if hasattr(a, "shape") else a for a in args)
        run = self.cache.get(key)
        if run is None:
            values = _record(self.gm, args)
            run = _compile(self.gm, list(args), values, dict(self.options))
            self.cache[key] = run
        return run(*args)


def _record(gm: Any, args: Sequence[Any]) -> dict[Any, Any]:
    """Every node's value in one eager run of `gm` on `args` (concrete shapes and sizes)."""
    import torch
    import torch.fx

    values: dict[Any, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            result = super().run_node(n)
            values[n] = result
            return result

    with torch.no_grad():
        Recorder(gm).run(*args)
    return values


def _compile(gm: Any, inputs: list[Any], values: dict[Any, Any] | None,
             options: dict[str, Any]) -> Callable[..., list[Any]]:
    import nova.models

    tr = _Translator(gm, inputs, values)
    graph = tr.translate()
    on_cuda = any(getattr(x, "is_cuda", False) for x in inputs)
    device = "cuda" if on_cuda else options.pop("device", "cpu")
    model = nova.models.compile(graph, device=device, **options)
    positions = tr.inputs

    def run(*args: Any) -> list[Any]:
        import torch

        if on_cuda:
            torch.cuda.synchronize()
            outs = model(*(nova.from_dlpack(args[i].contiguous()) for i in positions))
            model.synchronize()
            outs = outs if isinstance(outs, tuple) else (outs,)
            return [torch.from_dlpack(o) for o in outs]
        outs = model(*(_to_numpy(args[i]) for i in positions))
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [_from_numpy(o) for o in outs]

    run.nova_model = model  # type: ignore[attr-defined]  # mypy does not model function attributes
    return run


def _from_numpy(array: np.ndarray) -> Any:
    import torch

    if "bfloat16" in array.dtype.name:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def register() -> None:
    """Register "nova" with TorchDynamo (idempotent)."""
    from torch._dynamo import register_backend

    with contextlib.suppress(AssertionError):  # "duplicate name": registered already
        register_backend(nova_backend, name="nova")


register()
