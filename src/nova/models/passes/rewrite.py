"""Graph rewrites before codegen (each one small, each with its own test in tests/models):

- `fold_batchnorm`: Conv (or 2-D MatMul with a constant weight) followed by an inference
  BatchNormalization that is its only reader -> the same Conv/MatMul with scaled weights and a
  shifted bias (onnxruntime's and TVM's "fold scale axis").
- `canonicalize`: composite ops into the ops codegen implements: Gemm -> MatMul (+ Add bias);
  remaining BatchNormalization -> Mul + Add (a fused elementwise kernel); Global*Pool ->
  Reduce*; Attention -> MatMul(q, k, trans_b, alpha=scale) -> Softmax -> MatMul; Split -> Slices;
  variadic Sum / Mean -> a chain of Adds (Mean: times 1/n).
- `fuse_layer_norm`: ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div(/Mul/Add) -> LayerNormalization.
- `fold_transposes`: MatMul(A, Transpose(B)) where the transpose swaps the last two axes ->
  MatMul with trans_b (no copy kernel), likewise for A.
- `weight_layout`: constant MatMul weights stored [N, K] for the GEMV kernel (few rows) or
  [K, N] for the tiled kernels (vector loads of B tiles).
- `convert_floats`: run the model in float16/bfloat16: float weights, inputs and Cast targets
  change type; kernels still accumulate in float32.

All of them need types (run nova.models.passes.propagate first) and keep the graph typed by
re-running propagate afterwards where they create tensors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from nova.models.errors import ModelError
from nova.models.graph import Dim, Graph, Node, TensorType, numpy_dtype
from nova.models.ops.nn import attention_scale, bn_scale_shift, reduce_axes
from nova.models.ops.shape import split_sizes, transpose_perm


class _Names:
    """Fresh tensor names that do not clash with the graph's."""

    def __init__(self, graph: Graph) -> None:
        self.used = set(graph.types) | set(graph.weights) | {
            o for n in graph.nodes for o in n.outputs}
        self.count = 0

    def __call__(self, base: str) -> str:
        while True:
            self.count += 1
            name = f"{base}__{self.count}"
            if name not in self.used:
                self.used.add(name)
                return name


def fold_batchnorm(graph: Graph) -> Graph:
    """Fold inference BatchNormalization into the Conv / MatMul that feeds it (see module doc)."""
    consumers = graph.consumers()
    producers = graph.producers()
    removed: set[int] = set()
    for bn in graph.nodes:
        if bn.op != "BatchNormalization":
            continue
        src = producers.get(bn.inputs[0])
        params = _bn_params(graph, bn)
        if src is None or params is None or len(consumers[bn.inputs[0]]) != 1 \
                or bn.inputs[0] in graph.outputs:
            continue
        a, b = bn_scale_shift(bn, *params)
        if src.op == "Conv" and src.inputs[1] in graph.weights and _const_or_absent(
                graph, src, 2):
            w = graph.weights[src.inputs[1]]
            bias = graph.weights[src.inputs[2]] if len(src.inputs) > 2 and src.inputs[2] \
                else np.zeros(w.shape[0])
            new_w = (w.astype(np.float64) * a.reshape(-1, 1, 1, 1)).astype(w.dtype)
            new_b = (bias.astype(np.float64) * a + b).astype(w.dtype)
            names = _Names(graph)
            wn, bn_name = names(src.inputs[1] + "_bnfold"), names(bn.outputs[0] + "_bias")
            graph.weights[wn], graph.weights[bn_name] = new_w, new_b
            src.inputs = [src.inputs[0], wn, bn_name]
            src.outputs = [bn.outputs[0]]
            removed.add(id(bn))
        elif src.op == "MatMul" and src.inputs[1] in graph.weights and not src.attrs.get(
                "trans_a") and graph.weights[src.inputs[1]].ndim == 2 and \
                graph.type_of(bn.inputs[0]).rank == 2:
            w = graph.weights[src.inputs[1]]
            col = a.reshape(-1, 1) if src.attrs.get("trans_b") else a.reshape(1, -1)
            names = _Names(graph)
            wn, bias_name = names(src.inputs[1] + "_bnfold"), names(bn.outputs[0] + "_shift")
            graph.weights[wn] = (w.astype(np.float64) * col).astype(w.dtype)
            graph.weights[bias_name] = b.astype(w.dtype)
            src.inputs = [src.inputs[0], wn]
            bn.op, bn.inputs, bn.attrs = "Add", [bn.inputs[0], bias_name], {}
            bn.outputs = bn.outputs[:1]
    graph.nodes = [n for n in graph.nodes if id(n) not in removed]
    return graph


def _const_or_absent(graph: Graph, node: Node, index: int) -> bool:
    return index >= len(node.inputs) or not node.inputs[index] or \
        node.inputs[index] in graph.weights


def canonicalize(graph: Graph) -> Graph:
    """Rewrite composite ops into implemented ones (see module doc). Returns `graph`."""
    names = _Names(graph)
    out: list[Node] = []
    for node in graph.nodes:
        out.extend(_canonical(graph, node, names))
    graph.nodes = out
    return graph


def _scalar(graph: Graph, names: _Names, value: float, dtype: str) -> str:
    name = names("const")
    graph.weights[name] = np.asarray(value, dtype=numpy_dtype(dtype))
    return name


def _sum_chain(graph: Graph, node: Node, names: _Names) -> Iterator[Node]:
    """Variadic Sum / Mean -> Add, Add, ... (Mean: then times 1/n)."""
    dtype = graph.type_of(node.outputs[0]).dtype
    acc = node.inputs[0]
    last = len(node.inputs) - 1
    for i, other in enumerate(node.inputs[1:], 1):
        done = i == last and node.op == "Sum"
        out = node.outputs[0] if done else names(f"{node.outputs[0]}_acc{i}")
        yield Node("Add", [acc, other], [out], {}, f"{node.name}_{i}")
        acc = out
    if node.op == "Mean":
        yield Node("Mul", [acc, _scalar(graph, names, 1.0 / len(node.inputs), dtype)],
                   node.outputs[:1], {}, f"{node.name}_mean")
    elif last == 0:
        yield Node("Identity", [acc], node.outputs[:1], {}, node.name)


def _canonical(graph: Graph, node: Node, names: _Names) -> Iterator[Node]:
    op, attrs = node.op, node.attrs
    if op == "Gemm":
        dtype = graph.type_of(node.inputs[0]).dtype
        has_c = len(node.inputs) > 2 and node.inputs[2]
        mm_out = names(node.outputs[0] + "_mm") if has_c else node.outputs[0]
        yield Node("MatMul", node.inputs[:2], [mm_out],
                   {"trans_a": attrs["transA"], "trans_b": attrs["transB"],
                    "alpha": float(attrs["alpha"])}, node.name)
        if has_c:
            c = node.inputs[2]
            if float(attrs["beta"]) != 1.0:
                if c in graph.weights:
                    scaled = names(c + "_beta")
                    graph.weights[scaled] = (graph.weights[c] * attrs["beta"]).astype(
                        graph.weights[c].dtype)
                    c = scaled
                else:
                    scaled = names(c + "_beta")
                    yield Node("Mul", [c, _scalar(graph, names, attrs["beta"], dtype)],
                               [scaled], {}, node.name + "_beta")
                    c = scaled
            yield Node("Add", [mm_out, c], node.outputs[:1], {}, node.name + "_bias")
    elif op == "BatchNormalization":
        x = graph.type_of(node.inputs[0])
        params = _bn_params(graph, node)
        if params is None:
            raise ModelError(f"{node.describe()}: scale, bias, mean and var must be constants")
        a, b = bn_scale_shift(node, *params)
        shape = (-1,) + (1,) * (x.rank - 2)
        dt = numpy_dtype(x.dtype)
        an, bn = names(node.outputs[0] + "_scale"), names(node.outputs[0] + "_shift")
        graph.weights[an] = a.reshape(shape).astype(dt)
        graph.weights[bn] = b.reshape(shape).astype(dt)
        mid = names(node.outputs[0] + "_mul")
        yield Node("Mul", [node.inputs[0], an], [mid], {}, node.name + "_scale")
        yield Node("Add", [mid, bn], node.outputs[:1], {}, node.name + "_shift")
    elif op in ("GlobalAveragePool", "GlobalMaxPool"):
        rank = graph.type_of(node.inputs[0]).rank
        yield Node("ReduceMean" if op == "GlobalAveragePool" else "ReduceMax", node.inputs,
                   node.outputs, {"axes": list(range(2, rank)), "keepdims": 1}, node.name)
    elif op == "Attention":
        q, k, v = node.inputs[:3]
        scale = attention_scale(node, int(graph.type_of(q).shape[-1]))
        scores, probs = names(node.outputs[0] + "_scores"), names(node.outputs[0] + "_probs")
        yield Node("MatMul", [q, k], [scores], {"trans_b": 1, "alpha": scale},
                   node.name + "_qk")
        if len(node.inputs) > 3 and node.inputs[3]:
            masked = names(node.outputs[0] + "_masked")
            yield Node("Add", [scores, node.inputs[3]], [masked], {}, node.name + "_mask")
            scores = masked
        yield Node("Softmax", [scores], [probs], {"axis": -1}, node.name + "_softmax")
        yield Node("MatMul", [probs, v], node.outputs[:1], {}, node.name + "_pv")
    elif op in ("Sum", "Mean"):
        yield from _sum_chain(graph, node, names)
    elif op == "Split":
        x = graph.type_of(node.inputs[0])
        axis = int(attrs["axis"]) % x.rank
        values = [graph.weights.get(n) if n else None for n in node.inputs]
        start = 0
        for i, (out, size) in enumerate(zip(node.outputs, split_sizes(
                node, int(x.shape[axis]), values), strict=True)):
            if out:
                consts = [_int_const(graph, names, v) for v in ([start], [start + size],
                                                                 [axis])]
                yield Node("Slice", [node.inputs[0], *consts], [out], {}, f"{node.name}_{i}")
            start += size
    else:
        yield node


def _bn_params(graph: Graph, bn: Node) -> list[np.ndarray] | None:
    """A BatchNormalization's scale, bias, mean and var, or None unless all are constants."""
    params = [graph.weights.get(n) for n in bn.inputs[1:5]]
    consts = [p for p in params if p is not None]
    return consts if len(consts) == len(params) else None


def _int_const(graph: Graph, names: _Names, values: list[int]) -> str:
    name = names("ints")
    graph.weights[name] = np.asarray(values, dtype=np.int64)
    return name


def fuse_layer_norm(graph: Graph) -> Graph:
    """The decomposed layer norm older exporters emit (opset < 17, TF converters) ->
    LayerNormalization (one row kernel instead of five):

        mean = ReduceMean(X, axes=tail, keepdims=1);  D = Sub(X, mean)
        var = ReduceMean(Pow(D, 2) | Mul(D, D), axes=tail);  S = Sqrt(Add(var, eps))
        N = Div(D, S)  [;  N = Mul(N, gamma)]  [;  N = Add(N, beta)]

    matched only when every intermediate has no other reader and eps, gamma, beta are
    constants."""
    matcher = _LayerNormMatcher(graph)
    replaced: dict[int, Node] = {}
    dropped: set[int] = set()
    for div in graph.nodes:
        core = matcher.match_normalize(div) if div.op == "Div" else None
        if core is None:
            continue
        x_type = graph.type_of(core.x)
        norm_shape = _static_dims(x_type.shape[x_type.rank - len(core.axes):])
        if norm_shape is None:  # symbolic: the graph was not propagated with bound dims
            continue
        last, gamma, beta, scaled = matcher.match_affine(div, norm_shape)
        chain = [*core.nodes, div, *scaled]
        if gamma is None:
            gamma = matcher.names("ln_scale")
            graph.weights[gamma] = np.ones(norm_shape, numpy_dtype(x_type.dtype))
        replaced[id(last)] = Node("LayerNormalization", [core.x, gamma, beta or ""], last.outputs,
                                  {"axis": -len(core.axes), "epsilon": core.eps},
                                  last.name or div.name)
        dropped.update(id(n) for n in chain if n is not last)
    if replaced:
        graph.nodes = [replaced.get(id(n), n) for n in graph.nodes if id(n) not in dropped]
        for node in graph.nodes:
            while node.inputs and not node.inputs[-1]:
                node.inputs.pop()
    return graph


@dataclass
class _Normalize:
    """A matched `(X - mean) / sqrt(var + eps)`: X, eps, the reduced (trailing) axes and the
    nodes before the Div (mean, sub, square, var, add_eps, sqrt)."""

    x: str
    eps: float
    axes: tuple[int, ...]
    nodes: list[Node]


class _LayerNormMatcher:
    """The pattern matching of fuse_layer_norm on one graph (producers and consumers taken once:
    the graph's nodes are only replaced after every match)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producers = graph.producers()
        self.consumers = graph.consumers()
        self.outputs = set(graph.outputs)
        self.names = _Names(graph)

    def only(self, tensor: str, reader: Node) -> bool:
        """Whether `reader` is the only reader of `tensor` (and it is no graph output)."""
        return tensor not in self.outputs and [
            id(n) for n in self.consumers.get(tensor, [])] == [id(reader)]

    def const(self, tensor: str) -> np.ndarray | None:
        return self.graph.weights.get(tensor)

    def produced_by(self, tensor: str, op: str) -> Node | None:
        node = self.producers.get(tensor)
        return node if node is not None and node.op == op else None

    def match_normalize(self, div: Node) -> _Normalize | None:
        """The normalisation that Div node `div` ends, or None."""
        d, s = div.inputs
        sqrt, sub = self.produced_by(s, "Sqrt"), self.produced_by(d, "Sub")
        if sqrt is None or sub is None:
            return None
        add_eps = self.produced_by(sqrt.inputs[0], "Add")
        if add_eps is None:
            return None
        var_name, eps_name = add_eps.inputs
        if self.const(eps_name) is None:
            var_name, eps_name = eps_name, var_name
        eps = self.const(eps_name)
        var = self.produced_by(var_name, "ReduceMean")
        if eps is None or eps.size != 1 or var is None:
            return None
        sq = self.producers.get(var.inputs[0])
        x, mean_name = sub.inputs
        mean = self.produced_by(mean_name, "ReduceMean")
        if sq is None or mean is None or mean.inputs[0] != x:
            return None
        if not self.squares(sq, d):
            return None
        axes = self.trailing_axes(x, mean, var)
        if axes is None:
            return None
        nodes = [mean, sub, sq, var, add_eps, sqrt]
        if not self.private_chain(nodes, div):
            return None
        return _Normalize(x, float(eps.reshape(-1)[0]), axes, nodes)

    def squares(self, sq: Node, d: str) -> bool:
        """Whether `sq` is Pow(d, 2) or Mul(d, d)."""
        if sq.op == "Pow":
            exponent = self.const(sq.inputs[1])
            return sq.inputs[0] == d and exponent is not None and float(
                np.asarray(exponent).reshape(-1)[0]) == 2.0
        return sq.op == "Mul" and sq.inputs == [d, d]

    def trailing_axes(self, x: str, mean: Node, var: Node) -> tuple[int, ...] | None:
        """The axes both ReduceMeans reduce, when they are the same trailing axes of `x` and
        both keep dims; else None."""
        rank = self.graph.type_of(x).rank
        axes = reduce_axes_of(self.graph, mean)
        if reduce_axes_of(self.graph, var) != axes or not axes or \
                axes != tuple(range(rank - len(axes), rank)) or \
                not mean.attrs.get("keepdims", 1) or not var.attrs.get("keepdims", 1):
            return None
        return axes

    def private_chain(self, nodes: list[Node], div: Node) -> bool:
        """Whether no intermediate of mean, sub, sq, var, add_eps, sqrt -> div is read elsewhere
        (D = sub's output is read by exactly sq and div)."""
        _, sub, sq, var, add_eps, sqrt = nodes
        d, s = div.inputs
        return (self.only(sub.inputs[1], sub) and self.only(sq.outputs[0], var)
                and self.only(var.outputs[0], add_eps) and self.only(add_eps.outputs[0], sqrt)
                and self.only(s, div)
                and sorted(id(n) for n in self.consumers.get(d, [])) == sorted([id(sq), id(div)])
                and d not in self.outputs)

    def match_affine(self, div: Node, norm_shape: tuple[int, ...]
                     ) -> tuple[Node, str | None, str | None, list[Node]]:
        """The optional Mul(gamma) then Add(beta) after `div`, with constants that broadcast to
        `norm_shape`: (the last node, gamma, beta, the matched Mul/Add nodes)."""
        last, gamma, beta = div, None, None
        matched: list[Node] = []
        for op in ("Mul", "Add"):
            users = self.consumers.get(last.outputs[0], [])
            if len(users) != 1 or users[0].op != op or last.outputs[0] in self.outputs:
                break
            other = [i for i in users[0].inputs if i != last.outputs[0]]
            value = self.const(other[0]) if len(other) == 1 else None
            if value is None or not _broadcasts_to(value.shape, norm_shape):
                break
            last = users[0]
            matched.append(last)
            if op == "Mul":
                gamma = other[0]
            else:
                beta = other[0]
        return last, gamma, beta, matched


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether an array of `shape` broadcasts to `target` without growing it."""
    return len(shape) <= len(target) and all(
        d in (1, n) for d, n in zip(shape[::-1], target[::-1], strict=False))


def _static_dims(dims: tuple[Dim, ...]) -> tuple[int, ...] | None:
    """`dims` as ints, or None when one is symbolic."""
    ints = tuple(d for d in dims if isinstance(d, int))
    return ints if len(ints) == len(dims) else None


def fold_transposes(graph: Graph) -> Graph:
    """MatMul(Transpose(X)) with a last-two-axes swap -> MatMul with trans_a / trans_b."""
    consumers = graph.consumers()
    producers = graph.producers()
    for node in graph.nodes:
        if node.op != "MatMul":
            continue
        for slot, key in ((0, "trans_a"), (1, "trans_b")):
            src = producers.get(node.inputs[slot])
            if src is None or src.op != "Transpose" or len(consumers[src.outputs[0]]) != 1 \
                    or src.outputs[0] in graph.outputs:
                continue
            rank = graph.type_of(src.inputs[0]).rank
            perm = transpose_perm(src, rank)
            if rank < 2 or perm != [*range(rank - 2), rank - 1, rank - 2]:
                continue
            node.inputs[slot] = src.inputs[0]
            node.attrs[key] = 1 - int(node.attrs.get(key, 0))
    return graph


SMALL_M = 8
"""MatMuls with at most this many rows of A (and a 2-D [N, K] weight) run as the GEMV kernel
(nova.models.codegen.matmul.small_m_kernel)."""


def gemv_rows(graph: Graph, node: Node) -> int | None:
    """Total rows of A when MatMul `node` runs as the GEMV kernel (B 2-D and stored [N, K], A
    not transposed, at most SMALL_M rows in all), else None."""
    if node.op != "MatMul" or node.attrs.get("trans_a", 0) or not node.attrs.get("trans_b", 0):
        return None
    a, b = graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1])
    if b.rank != 2:
        return None
    rows = int(np.prod([int(d) for d in a.shape[:-1]]))
    return rows if rows <= SMALL_M else None


def weight_layout(graph: Graph) -> Graph:
    """Lay out constant 2-D MatMul weights for the kernel that will read them: few-row products
    (at most SMALL_M rows of A, the GEMV kernel) want W stored [N, K] (trans_b), so each output's
    weights are contiguous; larger products (tiled/tensor-core GEMM) want [K, N], so a B tile's
    rows are contiguous and load as 16-byte vectors. Weights read elsewhere are copied."""
    consumers = graph.consumers()
    for node in graph.nodes:
        if node.op != "MatMul" or node.attrs.get("trans_a"):
            continue
        w = graph.weights.get(node.inputs[1])
        if w is None or w.ndim != 2:
            continue
        rows = int(np.prod([int(d) for d in graph.type_of(node.inputs[0]).shape[:-1]]))
        want = 1 if rows <= SMALL_M else 0
        if int(node.attrs.get("trans_b", 0)) == want:
            continue
        name = node.inputs[1]
        if len(consumers.get(name, [])) != 1:
            name = _Names(graph)(name + "_t")
        graph.weights[name] = np.ascontiguousarray(w.T)
        node.inputs[1] = name
        node.attrs["trans_b"] = want
    return graph


def saturate(value: np.ndarray, target: np.dtype) -> np.ndarray:
    """`value` in `target`, finite values clamped to its finite range (infinities and NaN kept)."""
    import ml_dtypes

    big = float(ml_dtypes.finfo(target).max)
    if value.size and np.isfinite(value).all() and float(np.abs(value).max()) <= big:
        return value.astype(target)
    clamped = np.where(np.isfinite(value), np.clip(value, -big, big), value)
    return clamped.astype(target)


def convert_floats(graph: Graph, dtype: str) -> Graph:
    """Make every float32 weight, input and Cast target `dtype` (float16 or bfloat16).

    Finite weights beyond the target's range saturate to its largest finite value instead of
    becoming infinities: masks are built as `(1 - mask) * finfo(float32).min` (HF BERT), where an
    infinite constant turns the kept positions' `0 * -inf` into NaN."""
    if dtype == "float32":
        return graph
    target = numpy_dtype(dtype)
    for name, value in list(graph.weights.items()):
        if value.dtype == np.float32:
            graph.weights[name] = saturate(value, target)
    for name in graph.inputs:
        t = graph.types[name]
        if t.dtype == "float32":
            graph.types[name] = TensorType(dtype, t.shape)
    for node in graph.nodes:
        if node.op == "Cast" and node.attrs.get("to") in (1, "float32"):
            node.attrs["to"] = dtype
    return graph


def reduce_axes_of(graph: Graph, node: Node) -> tuple[int, ...]:
    """The reduced axes of a typed Reduce* node."""
    values = [graph.weights.get(n) if n else None for n in node.inputs]
    return reduce_axes(node, graph.type_of(node.inputs[0]).rank, values)

