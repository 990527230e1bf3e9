"""Strided views: when a kernel's prologue (index maps of one buffer) is affine, the element at
multi-index `idx` of the mapped tensor is `buffer[offset + sum(idx[i] * strides[i])]`.

The fused attention kernel uses this to load Q, K, V rows with 16-byte vector loads straight from
the QKV GEMM output through the head split (Slice -> Reshape -> Transpose), instead of one
scalar load with the whole index map per element. Transpose permutes strides, Slice adds an
offset and scales strides by its steps, Expand gives broadcast dims stride 0, and reshapes
(Reshape, Flatten, Squeeze, Unsqueeze, Identity) keep a view when the merged dims are
contiguous with each other (NumPy's no-copy reshape rule); anything else is not a view.
"""

from __future__ import annotations

from nova.models.codegen.context import KernelContext
from nova.models.graph import Node
from nova.models.ops.shape import slice_params, transpose_perm

Strided = tuple[str, int, list[int]]
"""(tensor whose buffer holds the data, element offset, element stride per dim)."""

RESHAPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


def strided_view(ctx: KernelContext, members: dict[str, Node], tensor: str) -> Strided | None:
    """`tensor` as a strided view of a buffer, following the prologue `members` (tensor ->
    producing node), or None when some map is not affine."""
    shape = ctx.shape(tensor)
    node = members.get(tensor)
    if node is None:
        strides, acc = [0] * len(shape), 1
        for i in range(len(shape) - 1, -1, -1):
            strides[i] = acc
            acc *= shape[i]
        return tensor, 0, strides
    src = strided_view(ctx, members, node.inputs[0])
    if src is None:
        return None
    base, offset, st = src
    in_shape = ctx.shape(node.inputs[0])
    if node.op == "Transpose":
        return base, offset, [st[p] for p in transpose_perm(node, len(in_shape))]
    if node.op == "Slice":
        values = [ctx.graph.weights.get(n) if n else None for n in node.inputs]
        start, step, _ = slice_params(node, in_shape, values)
        return base, offset + sum(b * s for b, s in zip(start, st, strict=True)), \
            [s * k for s, k in zip(st, step, strict=True)]
    if node.op == "Expand":
        lead = len(shape) - len(in_shape)
        return base, offset, [0] * lead + [0 if d == 1 and o != 1 else s for d, o, s in zip(
            in_shape, shape[lead:], st, strict=True)]
    if node.op in RESHAPES:
        new = reshape_strides(in_shape, st, shape)
        return None if new is None else (base, offset, new)
    return None


def reshape_strides(old: tuple[int, ...], strides: list[int], new: tuple[int, ...]) \
        -> list[int] | None:
    """Strides of `new` viewing the same elements as (`old`, `strides`), or None when a group
    of old dims merged into new ones is not contiguous (NumPy's _attempt_nocopy_reshape)."""
    dims = [(d, s) for d, s in zip(old, strides, strict=True) if d != 1]
    out = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(dims):
        np_, op = new[ni], dims[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                if nj >= len(new):
                    return None
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(dims):
                    return None
                op *= dims[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if dims[k][1] != dims[k + 1][0] * dims[k + 1][1]:
                return None
        out[nj - 1] = dims[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    return out
