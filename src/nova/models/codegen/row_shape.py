"""A row anchor's input viewed as rows x elements, and the f32 conversions row kernels compute
through (shared by the register-resident kernels of rows_resident.py and the strided fallback of
rows.py)."""

from __future__ import annotations

import math

from nova.models.codegen.context import KernelContext
from nova.models.codegen.text import Index
from nova.models.graph import Node
from nova.models.ops.nn import norm_axis
from nova.models.passes.rewrite import reduce_axes_of


class Rows:
    """Index helpers for a tensor viewed as rows (kept axes) x elements (reduced axes)."""

    def __init__(self, ctx: KernelContext, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
        self.ctx = ctx
        self.shape = shape
        self.axes = axes
        self.kept = tuple(i for i in range(len(shape)) if i not in axes)
        self.rows = math.prod(shape[i] for i in self.kept)
        self.length = math.prod(shape[i] for i in axes)
        self.trailing = axes == tuple(range(len(shape) - len(axes), len(shape)))
        self.elem_shape = tuple(shape[a] for a in axes)

    def full_index(self, row_idx: list[Index], elem_idx: list[Index]) -> list[Index]:
        idx: list[Index] = [0] * len(self.shape)
        for a, v in zip(self.kept, row_idx, strict=True):
            idx[a] = v
        for a, v in zip(self.axes, elem_idx, strict=True):
            idx[a] = v
        return idx

    def point(self, row: Index, row_idx: list[Index], j: Index) -> tuple[list[Index], Index]:
        """(multi-index, linear index) of element `j` of row `row`."""
        b = self.ctx.body
        elem_idx = b.delinearize(j, self.elem_shape)
        idx = self.full_index(row_idx, elem_idx)
        if self.trailing:
            return idx, b.add(b.mul(row, self.length), j)
        return idx, b.linear(idx, self.shape)


def row_axes(ctx: KernelContext, node: Node) -> tuple[int, ...]:
    """The axes a Softmax / LayerNormalization / Reduce* anchor reduces over."""
    rank = len(ctx.shape(node.inputs[0]))
    if node.op == "Softmax":
        return (norm_axis(node, int(node.attrs["axis"]), rank),)
    if node.op == "LayerNormalization":
        return tuple(range(norm_axis(node, int(node.attrs["axis"]), rank), rank))
    return reduce_axes_of(ctx.graph, node)
