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
from nova.models.graph import Dim, Graph, Node, TensorType, dtype_name
from nova.models.ops import OpDef, check_node

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
    _require_static_inputs(graph)
    types = {n: graph.types[n] for n in graph.inputs}
    for name, value in graph.weights.items():
        types[name] = _value_type(value)
    outputs = set(graph.outputs)
    kept = []
    for node in graph.nodes:
        op = check_node(node)
        values = [graph.weights.get(n) if n else None for n in node.inputs]
        in_types = [types.get(n) if n else None for n in node.inputs]
        if op.kind == "const" or (fold and _all_constant(node, values)
                                  and not outputs.intersection(node.outputs)):
            results = _fold(op, node, values, in_types)
            if results is not None:
                for out, value in zip(node.outputs, results, strict=False):
                    if out:
                        graph.weights[out] = value
                        types[out] = _value_type(value)
                continue
        out_types = _infer(op, node, in_types, values)
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


def _require_static_inputs(graph: Graph) -> None:
    for name in graph.inputs:
        if not graph.types[name].is_static:
            raise ModelError(f"input '{name}' has symbolic dims {graph.types[name]}: bind them "
                             "first (nova.models.passes.propagate.bind_symbols)")


def _value_type(value: np.ndarray) -> TensorType:
    return TensorType(dtype_name(value.dtype), tuple(value.shape))


def _all_constant(node: Node, values: list[np.ndarray | None]) -> bool:
    """Whether every input `node` names is a weight (absent optional inputs don't count)."""
    return all(v is not None for n, v in zip(node.inputs, values, strict=True) if n)


def _fold(op: OpDef, node: Node, values: list[np.ndarray | None],
          in_types: list[TensorType | None]) -> list[np.ndarray] | None:
    """`node` evaluated at compile time (C-contiguous copies of its results), or None when a
    result is too large to store in the program (compile-time-only ops are always folded)."""
    if op.kind == "const":  # Shape reads only its input's shape: a zero-copy stand-in
        for i in op.const_inputs:  # ... but Range / ConstantOfShape read values
            if i < len(node.inputs) and node.inputs[i] and values[i] is None:
                raise ModelError(f"{node.describe()}: input {i} '{node.inputs[i]}' must be a "
                                 "compile-time constant (an initializer, or computed from "
                                 "shapes), it depends on the model's inputs")
        values = [v if v is not None or t is None else np.broadcast_to(
            np.zeros((), np.float32), tuple(int(d) for d in t.shape))
            for v, t in zip(values, in_types, strict=True)]
    results = op.evaluate(node, values)
    if op.kind != "const" and any(r.size > MAX_FOLD_ELEMENTS for r in results):
        return None
    return [np.array(r, order="C") for r in results]


def _infer(op: OpDef, node: Node, in_types: list[TensorType | None],
           values: list[np.ndarray | None]) -> list[TensorType]:
    """The output types of `node` by its op's shape rule; every input it names must be typed."""
    for i, (n, t) in enumerate(zip(node.inputs, in_types, strict=True)):
        if n and t is None:
            raise ModelError(f"{node.describe()}: input {i} '{n}' has no type")
    try:
        return op.infer(node, in_types, values)
    except ModelError:
        raise
    except (ValueError, TypeError, IndexError) as exc:
        raise ModelError(f"{node.describe()}: cannot infer output shapes: {exc}") from exc


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
