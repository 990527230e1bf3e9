"""Row kernels: Softmax, LayerNormalization and ReduceMean/Sum/Max.

A "row" is one element of the kept dims; its elements are the reduced dims. Rows over trailing
axes that fit in registers (up to 16384 elements) run as rows_resident.py's kernels: a warp per
row up to 1024 elements, else a block per row; each row read once with vector loads and written
once. This module is the general fallback (reduced axes not trailing, or longer rows): one block
per row, each thread striding over the row accumulating in fp32, `gpu.all_reduce` combining the
block (a shared-memory tree on the GPU), results written through the group's epilogue. Softmax
reads the row three times (max, sum of exp, write) and LayerNorm three times (mean, variance,
write).
"""

from __future__ import annotations

from collections.abc import Callable

from nova.models.codegen.context import GeneratedKernel, KernelContext, from_f32, to_f32
from nova.models.codegen.pointwise import Evaluator, store_epilogue
from nova.models.codegen.row_shape import Rows, row_axes
from nova.models.codegen.rows_resident import resident_layout, resident_row_kernel
from nova.models.codegen.text import Index, broadcast_index
from nova.models.graph import Node
from nova.models.passes.fusion import KernelGroup

RowLoad = Callable[[Index], tuple[str, list[Index], Index]]
"""load(j) -> (element j of the block's row as f32, its multi-index, its linear index)."""
LoopBody = Callable[[str, list[str]], list[str]]
"""body(j, carried f32 values) -> the new carried values."""


def _threads(length: int) -> int:
    """Threads per row block: a power of two in [32, 256], no more than the row needs."""
    t = 32
    while t < 256 and t < length:
        t *= 2
    return t


def _loop(ctx: KernelContext, tid: str, threads: int, length: int, inits: list[str],
          body_fn: LoopBody) -> list[str]:
    """`for j = tid; j < length; j += threads` carrying f32 values; body_fn(j, accs) -> new."""
    b = ctx.body
    j = b.fresh("j")
    accs = [b.fresh("acc") for _ in inits]
    res = b.fresh("red")
    types = ", ".join(["f32"] * len(inits))
    if inits:
        b.line(f"{res}:{len(inits)} = scf.for {j} = {tid} to {b.ix(length)} step "
               f"{b.ix(threads)} iter_args({', '.join(f'{a} = {i}' for a, i in zip(accs, inits, strict=True))}) -> ({types}) {{")  # noqa: E501
    else:
        b.line(f"scf.for {j} = {tid} to {b.ix(length)} step {b.ix(threads)} {{")
    with b.nested():
        new = body_fn(j, accs)
        if inits:
            b.line(f"scf.yield {', '.join(new)} : {types}")
    b.line("}")
    return [f"{res}#{i}" for i in range(len(inits))]


def _all_reduce(ctx: KernelContext, op: str, value: str) -> str:
    return ctx.body.op(f"gpu.all_reduce {op} {value} {{}} : (f32) -> f32")


def row_kernel(ctx: KernelContext, group: KernelGroup, node: Node) -> GeneratedKernel:
    """Softmax, LayerNormalization or a Reduce* anchor with its epilogue (see module doc)."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    rows = Rows(ctx, shape, row_axes(ctx, node))
    layout = resident_layout(ctx, group, rows)
    if layout is not None:
        return resident_row_kernel(ctx, group, node, rows, layout)
    threads = _threads(rows.length)
    b = ctx.body
    row = b.op("gpu.block_id x")
    tid = b.op("gpu.thread_id x")
    row_idx = b.delinearize(row, tuple(shape[i] for i in rows.kept))
    ev = Evaluator(ctx, group)

    def load(j: Index) -> tuple[str, list[Index], Index]:
        idx, linear = rows.point(row, row_idx, j)
        return to_f32(ctx, x, ctx.load(x, linear)), idx, linear

    if node.op == "Softmax":
        _softmax(ctx, ev, group, node, rows, tid, threads, load)
    elif node.op == "LayerNormalization":
        _layer_norm(ctx, ev, group, node, rows, tid, threads, load)
    else:
        _reduce(ctx, ev, group, node, rows, row, row_idx, tid, threads, load)
    return ctx.finish((max(rows.rows, 1), 1, 1), (threads, 1, 1))


def _softmax(ctx: KernelContext, ev: Evaluator, group: KernelGroup, node: Node, rows: Rows,
             tid: str, threads: int, load: RowLoad) -> None:
    b = ctx.body
    out = node.outputs[0]
    neg_inf = b.const(float("-inf"), "f32")

    def running_max(j: str, accs: list[str]) -> list[str]:
        v, _, _ = load(j)
        return [b.op(f"arith.maximumf {accs[0]}, {v} : f32")]

    (mx,) = _loop(ctx, tid, threads, rows.length, [neg_inf], running_max)
    row_max = _all_reduce(ctx, "maximumf", mx)

    def sum_exp(j: str, accs: list[str]) -> list[str]:
        v, _, _ = load(j)
        d = b.op(f"arith.subf {v}, {row_max} : f32")
        e = b.op(f"math.exp {d} : f32")
        return [b.op(f"arith.addf {accs[0]}, {e} : f32")]

    (s,) = _loop(ctx, tid, threads, rows.length, [b.const(0.0, "f32")], sum_exp)
    total = _all_reduce(ctx, "add", s)
    inv = b.op(f"arith.divf {b.const(1.0, 'f32')}, {total} : f32")

    def write(j: str, accs: list[str]) -> list[str]:
        v, idx, linear = load(j)
        d = b.op(f"arith.subf {v}, {row_max} : f32")
        e = b.op(f"math.exp {d} : f32")
        p = b.op(f"arith.mulf {e}, {inv} : f32")
        store_epilogue(ctx, ev, group, out, idx, linear, from_f32(ctx, out, p))
        return []

    _loop(ctx, tid, threads, rows.length, [], write)


def _layer_norm(ctx: KernelContext, ev: Evaluator, group: KernelGroup, node: Node, rows: Rows,
                tid: str, threads: int, load: RowLoad) -> None:
    b = ctx.body
    out = node.outputs[0]
    scale = node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    inv_n = b.const(1.0 / rows.length, "f32")
    norm_shape = tuple(rows.shape[a] for a in rows.axes)

    def add(j: str, accs: list[str]) -> list[str]:
        v, _, _ = load(j)
        return [b.op(f"arith.addf {accs[0]}, {v} : f32")]

    (s,) = _loop(ctx, tid, threads, rows.length, [b.const(0.0, "f32")], add)
    mean = b.op(f"arith.mulf {_all_reduce(ctx, 'add', s)}, {inv_n} : f32")

    def add_sq(j: str, accs: list[str]) -> list[str]:
        v, _, _ = load(j)
        d = b.op(f"arith.subf {v}, {mean} : f32")
        return [b.op(f"math.fma {d}, {d}, {accs[0]} : f32")]

    (sq,) = _loop(ctx, tid, threads, rows.length, [b.const(0.0, "f32")], add_sq)
    var = b.op(f"arith.mulf {_all_reduce(ctx, 'add', sq)}, {inv_n} : f32")
    eps = b.const(float(node.attrs["epsilon"]), "f32")
    rstd = b.op(f"math.rsqrt {b.op(f'arith.addf {var}, {eps} : f32')} : f32")

    def param(name: str, j: Index) -> str:
        elem = b.delinearize(j, norm_shape)
        sub = broadcast_index(elem, norm_shape, ctx.shape(name))
        return to_f32(ctx, name, ev.value(name, sub))

    def write(j: str, accs: list[str]) -> list[str]:
        with ev.scope():
            v, idx, linear = load(j)
            d = b.op(f"arith.subf {v}, {mean} : f32")
            y = b.op(f"arith.mulf {d}, {rstd} : f32")
            y = b.op(f"arith.mulf {y}, {param(scale, j)} : f32")
            if bias is not None:
                y = b.op(f"arith.addf {y}, {param(bias, j)} : f32")
            store_epilogue(ctx, ev, group, out, idx, linear, from_f32(ctx, out, y))
        return []

    _loop(ctx, tid, threads, rows.length, [], write)


def _reduce(ctx: KernelContext, ev: Evaluator, group: KernelGroup, node: Node, rows: Rows,
            row: str, row_idx: list[Index], tid: str, threads: int, load: RowLoad) -> None:
    b = ctx.body
    out = node.outputs[0]
    is_max = node.op == "ReduceMax"
    init = b.const(float("-inf") if is_max else 0.0, "f32")

    def step(j: str, accs: list[str]) -> list[str]:
        v, _, _ = load(j)
        op = "arith.maximumf" if is_max else "arith.addf"
        return [b.op(f"{op} {accs[0]}, {v} : f32")]

    (part,) = _loop(ctx, tid, threads, rows.length, [init], step)
    total = _all_reduce(ctx, "maximumf" if is_max else "add", part)
    if node.op == "ReduceMean":
        total = b.op(f"arith.mulf {total}, {b.const(1.0 / rows.length, 'f32')} : f32")
    first = b.op(f"arith.cmpi eq, {tid}, {b.ix(0)} : index")
    b.line(f"scf.if {first} {{")
    with b.nested():
        out_shape = ctx.shape(out)
        keep = len(out_shape) == len(rows.shape)
        idx = rows.full_index(row_idx, [0] * len(rows.axes)) if keep else list(row_idx)
        store_epilogue(ctx, ev, group, out, idx, row, from_f32(ctx, out, total))
    b.line("}")
