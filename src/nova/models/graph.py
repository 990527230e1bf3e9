"""The model graph IR: tensors (dtype + shape, dims may be symbols such as 'batch'), weights
(NumPy initialisers) and nodes in topological order.

Every way in (the builder, the ONNX importer, the torch.compile backend) produces this one
structure, and every rewrite is a pass over it (nova.models.passes). It is deliberately small: a
node is an op name, input and output tensor names and a dict of attributes; the op's meaning,
attribute schema and shape rule live in nova.models.ops.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nova.models.errors import ModelError

Dim = int | str
"""A tensor dimension: a size, or a symbol bound when the model is run (e.g. 'batch')."""

DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "float64": np.dtype(np.float64),
    "int64": np.dtype(np.int64),
    "int32": np.dtype(np.int32),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}
"""Graph dtype name -> NumPy dtype ('bfloat16' maps to ml_dtypes.bfloat16, see numpy_dtype)."""

FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def numpy_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a graph dtype name."""
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    try:
        return DTYPES[dtype]
    except KeyError:
        raise ModelError(f"unsupported dtype '{dtype}' (supported: "
                         f"{', '.join([*DTYPES, 'bfloat16'])})") from None


def dtype_name(dtype: Any) -> str:
    """The graph dtype name of a NumPy dtype (or anything np.dtype accepts)."""
    npd = np.dtype(dtype)
    if "bfloat16" in npd.name:
        return "bfloat16"
    for name, candidate in DTYPES.items():
        if candidate == npd:
            return name
    raise ModelError(f"unsupported dtype '{npd}'")


@dataclass(frozen=True)
class TensorType:
    """A tensor's element type and shape."""

    dtype: str
    shape: tuple[Dim, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def numel(self) -> int:
        """Number of elements (static shapes only)."""
        return int(np.prod([int(d) for d in self.shape], dtype=np.int64))

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass
class Node:
    """One operation: `outputs = op(inputs, **attrs)`. An empty input name is an omitted optional
    input (ONNX convention)."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    def describe(self) -> str:
        """'node NAME (OP)', for error messages."""
        return f"node '{self.name or self.outputs[0]}' ({self.op})"


@dataclass
class Graph:
    """A model: named inputs and outputs, tensor types, weights and nodes in topological order.

    Tensor names are unique. `types` holds the type of every tensor that has one (inputs always;
    the rest after shape inference); `weights` the constant tensors (initialisers)."""

    name: str = "model"
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    types: dict[str, TensorType] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    def copy(self) -> Graph:
        """A copy whose nodes, types and weight table can be rewritten (weight arrays shared)."""
        return Graph(self.name, list(self.inputs), list(self.outputs),
                     [copy.deepcopy(n) for n in self.nodes], dict(self.types),
                     dict(self.weights))

    def producers(self) -> dict[str, Node]:
        """Tensor name -> the node that writes it."""
        return {out: node for node in self.nodes for out in node.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        """Tensor name -> the nodes that read it (in node order; a node reading a tensor twice is
        listed once)."""
        result: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.inputs):
                if name:
                    result.setdefault(name, []).append(node)
        return result

    def type_of(self, name: str) -> TensorType:
        try:
            return self.types[name]
        except KeyError:
            raise ModelError(f"tensor '{name}' has no known type (run shape inference first)") \
                from None

    def symbols(self) -> list[str]:
        """The symbolic dimension names of the inputs, in order of first appearance."""
        seen: dict[str, None] = {}
        for name in self.inputs:
            for d in self.types[name].shape:
                if isinstance(d, str):
                    seen.setdefault(d)
        return list(seen)

    def validate_structure(self) -> None:
        """Names are defined before use, written once, and every output is produced."""
        defined = set(self.inputs) | set(self.weights)
        for node in self.nodes:
            for name in node.inputs:
                if name and name not in defined:
                    raise ModelError(f"{node.describe()} reads '{name}', which is not defined "
                                     "before it (the graph must be in topological order)")
            for name in node.outputs:
                if name in defined:
                    raise ModelError(f"{node.describe()} writes '{name}', which is already "
                                     "defined")
                defined.add(name)
        for name in self.outputs:
            if name not in defined:
                raise ModelError(f"graph output '{name}' is never produced")

    def __str__(self) -> str:
        lines = [f"graph {self.name}("
                 + ", ".join(f"{n}: {self.types[n]}" for n in self.inputs) + ")"]
        for node in self.nodes:
            attrs = ", ".join(f"{k}={_short(v)}" for k, v in sorted(node.attrs.items()))
            outs = ", ".join(node.outputs)
            lines.append(f"  {outs} = {node.op}({', '.join(node.inputs)})"
                         + (f" {{{attrs}}}" if attrs else ""))
        lines.append(f"  return {', '.join(self.outputs)}")
        return "\n".join(lines)


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)}"
    return repr(value)
