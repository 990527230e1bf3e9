"""A NumPy interpreter of graphs (float64 inside each op), built from the ops' references: the
oracle tests compare compiled models against, and what constant folding evaluates with."""

from __future__ import annotations

from typing import Any

import numpy as np

from nova.models.errors import InputError
from nova.models.graph import Graph
from nova.models.ops import check_node


def run_reference(graph: Graph, *inputs: Any) -> Any:
    """Evaluate `graph` on NumPy `inputs` (in graph input order); one output as is, several as
    a tuple."""
    if len(inputs) != len(graph.inputs):
        raise InputError(f"the graph takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env: dict[str, np.ndarray] = dict(graph.weights)
    env.update({n: np.asarray(v) for n, v in zip(graph.inputs, inputs, strict=True)})
    for node in graph.nodes:
        op = check_node(node)
        results = op.evaluate(node, [env[n] if n else None for n in node.inputs])
        for name, value in zip(node.outputs, results, strict=False):
            if name:
                env[name] = np.asarray(value)
    outs = [env[n] for n in graph.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)
