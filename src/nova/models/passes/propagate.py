"""Shape inference with constant folding, on a graph whose input shapes are bound.

One walk in node order: a node whose inputs are all constants (weights) is evaluated with its
NumPy reference and its outputs become weights (so Shape -> Gather -> Concat -> Reshape chains that
exporters emit for dynamic batch sizes collapse to a constant target shape once the batch is
known); any other node gets its output types from its op's shape rule. Nodes producing graph
outputs are kept (their outputs must be computed by the program), except compile-time-only ops.
"""

from __future__ import annotations

import numpy as np

from nova.models.errors import ModelError
from nova.models.graph import Dim, Graph, TensorType, dtype_name
from nova.models.ops import check_node

MAX_FOLD_ELEMENTS = 1 << 24
"""Constant results larger than this stay computed at run time (keeps .nova files small)."""


def bind_symbols(graph: Graph, bindings: dict[str, int]) -> Graph:
    """A copy of `graph` whose input dims named in `bindings` are replaced by their sizes."""
    g = graph.copy()
    for name in g.inputs:
        t = g.types[name]
        g.types[name] = TensorType(t.dtype, tuple(_bind(d, bindings) for d in t.shape))
    for name in list(g.types):
        if name not in g.inputs:
            del g.types[name]
    return g


def _bind(d: Dim, bindings: dict[str, int]) -> Dim:
    return bindings.get(d, d) if isinstance(d, str) else d


def propagate(graph: Graph, fold: bool = True) -> Graph:
    """Infer every tensor's type (rewriting `graph.types`) and fold constant nodes in place.
    Input shapes must be static. Returns `graph`."""
    for name in graph.inputs:
        if not graph.types[name].is_static:
            raise ModelError(f"input '{name}' has symbolic dims {graph.types[name]}: bind them "
                             "first (nova.models.passes.propagate.bind_symbols)")
    types = {n: graph.types[n] for n in graph.inputs}
    for name, value in graph.weights.items():
        types[name] = TensorType(dtype_name(value.dtype), tuple(value.shape))
    outputs = set(graph.outputs)
    kept = []
    for node in graph.nodes:
        op = check_node(node)
        values = [graph.weights.get(n) if n else None for n in node.inputs]
        in_types = [types.get(n) if n else None for n in node.inputs]
        constant = all(v is not None for n, v in zip(node.inputs, values, strict=True) if n)
        can_fold = op.kind == "const" or (
            fold and constant and not outputs.intersection(node.outputs))
        if can_fold:
            if op.kind == "const":  # Shape reads only its input's shape: a zero-copy stand-in
                values = [v if v is not None or t is None else np.broadcast_to(
                    np.zeros((), np.float32), tuple(int(d) for d in t.shape))
                    for v, t in zip(values, in_types, strict=True)]
            results = op.evaluate(node, values)
            if op.kind == "const" or all(r.size <= MAX_FOLD_ELEMENTS for r in results):
                for out, value in zip(node.outputs, results, strict=False):
                    if out:
                        value = np.array(value, order="C")
                        graph.weights[out] = value
                        types[out] = TensorType(dtype_name(value.dtype), tuple(value.shape))
                continue
        for i, (n, t) in enumerate(zip(node.inputs, in_types, strict=True)):
            if n and t is None:
                raise ModelError(f"{node.describe()}: input {i} '{n}' has no type")
        try:
            out_types = op.infer(node, in_types, values)
        except ModelError:
            raise
        except (ValueError, TypeError, IndexError) as exc:
            raise ModelError(f"{node.describe()}: cannot infer output shapes: {exc}") from exc
        for out, t in zip(node.outputs, out_types, strict=False):
            if out:
                types[out] = t
        kept.append(node)
    graph.nodes = kept
    graph.types = types
    missing = [o for o in graph.outputs if o not in types]
    if missing:
        raise ModelError(f"graph outputs {missing} are never produced")
    return graph


def eliminate_dead_code(graph: Graph) -> Graph:
    """Drop nodes whose outputs nothing reads and weights no node reads. Returns `graph`."""
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if live.intersection(node.outputs):
            kept.append(node)
            live.update(n for n in node.inputs if n)
    graph.nodes = kept[::-1]
    graph.weights = {k: v for k, v in graph.weights.items() if k in live}
    graph.types = {k: v for k, v in graph.types.items() if k in live or k in graph.inputs}
    return graph
