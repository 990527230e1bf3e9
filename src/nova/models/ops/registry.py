"""The op table: for every op nova.models knows, its attribute schema (names and defaults), input
and output counts, kind (how codegen treats it), shape/dtype rule and NumPy reference.

The table is the single source of truth for "is this op supported": importers validate every
node against it (`check_node`) before anything is compiled, so an unsupported op or attribute is
an error naming the node, the op type and the attribute. The NumPy references double as the
constant folder and the reference interpreter (nova.models.reference).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from nova.models.errors import UnsupportedOpError
from nova.models.graph import Node, TensorType

REQUIRED = object()
"""Attribute default meaning 'must be given'."""

InferFn = Callable[[Node, list[TensorType | None], list[np.ndarray | None]], list[TensorType]]
EvalFn = Callable[[Node, list[np.ndarray | None]], list[np.ndarray]]
CheckFn = Callable[[Node], None]

T = TypeVar("T")

KINDS = ("pointwise", "view", "matmul", "conv", "row", "pool", "attention", "const",
         "composite")
"""pointwise: one output element from input elements (fused into kernels); view: a reshape that
aliases its input's buffer; matmul/conv/row/pool/attention: anchor kernels that take an
elementwise epilogue (attention: the fused softmax(q k^T) v kernel, passes/attention.py);
const: computed at compile time only (Shape, Constant); composite: rewritten into other ops by
a pass before codegen (Gemm, BatchNormalization, Attention, ...)."""


@dataclass(frozen=True)
class OpDef:
    """What nova.models knows about one op."""

    name: str
    kind: str
    infer: InferFn
    evaluate: EvalFn
    attrs: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[int, int] = (1, 1)
    outputs: tuple[int, int] = (1, 1)
    check: CheckFn | None = None
    const_inputs: tuple[int, ...] = ()
    """Inputs that must be compile-time constants once the model is specialised (shapes, axes)."""


OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.kind not in KINDS:
        raise ValueError(f"op {op.name}: unknown kind {op.kind}")
    OPS[op.name] = op
    return op


def get_op(node: Node) -> OpDef:
    """The OpDef of `node`, or an UnsupportedOpError naming the node and its op type."""
    op = OPS.get(node.op)
    if op is None:
        raise UnsupportedOpError(f"{node.describe()}: op type '{node.op}' is not supported "
                                 f"(supported: {', '.join(sorted(OPS))})")
    return op


def check_node(node: Node) -> OpDef:
    """Validate `node` against its OpDef: known op, input/output counts, only known attributes,
    attribute values the implementation supports. Fills in attribute defaults."""
    op = get_op(node)
    lo, hi = op.inputs
    if not lo <= len(node.inputs) <= hi:
        raise UnsupportedOpError(f"{node.describe()}: takes {_count(lo, hi)} inputs, got "
                                 f"{len(node.inputs)}")
    for i in range(lo):
        if not node.inputs[i]:
            raise UnsupportedOpError(f"{node.describe()}: input {i} is required")
    lo, hi = op.outputs
    if not lo <= len(node.outputs) <= hi:
        raise UnsupportedOpError(f"{node.describe()}: has {_count(lo, hi)} outputs, got "
                                 f"{len(node.outputs)}")
    for key in node.attrs:
        if key not in op.attrs:
            raise UnsupportedOpError(f"{node.describe()}: attribute '{key}' is not supported "
                                     f"(supported: {', '.join(sorted(op.attrs)) or 'none'})")
    for key, default in op.attrs.items():
        if key not in node.attrs:
            if default is REQUIRED:
                raise UnsupportedOpError(f"{node.describe()}: attribute '{key}' is required")
            if default is not None:
                node.attrs[key] = default
    if op.check is not None:
        op.check(node)
    return op


def required(items: list[T | None], i: int) -> T:
    """Input `i`'s value or type, for an input the op requires (below its minimum input count,
    or any input of an op whose check rejects omitted ones): check_node rejects a node without
    it, and shape rules and references only see checked nodes with every named input's type /
    value."""
    item = items[i]
    assert item is not None, f"input {i} is required (check_node rejects a node without it)"
    return item


def unsupported_attr(node: Node, key: str, why: str) -> UnsupportedOpError:
    """The error for an attribute value the implementation does not support."""
    return UnsupportedOpError(f"{node.describe()}: attribute '{key}' = {node.attrs.get(key)!r} "
                              f"is not supported: {why}")


def _count(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo} to {hi}"
