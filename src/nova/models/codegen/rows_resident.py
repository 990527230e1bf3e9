"""Row kernels whose rows stay in registers: Softmax, LayerNormalization and ReduceMean/Sum/Max
over trailing axes, rows of up to 16384 elements.

The kernel's shape follows the row length:
- **up to 1024 elements: a warp per row**, 8 rows per 256-thread block. Reductions are warp
  shuffles (`gpu.subgroup_reduce`): no shared memory, no barrier.
- **longer: a block per row** (128 to 1024 threads, up to 16 elements each), `gpu.all_reduce`.

Each thread loads its elements once, in vector chunks of 16 bytes where the row length allows
(8 fp16 / 4 fp32; chunk c of thread t covers elements (c * threads + t) * lanes ..: neighbouring
threads read neighbouring 16-byte pieces, so every access is coalesced), keeps them in registers
as f32, reduces thread-locally and then across the row's threads, and writes each result once
through the group's epilogue with vector stores. Global traffic is one read and one write per
element (the strided fallback in rows.py reads a Softmax / LayerNorm row three times). A chunk
that may run past the row's end is guarded (the row length need not be a multiple of the
vector or the thread count). In a block's last warps past the last row, the row index is
clamped, so every lane still takes part in the warp's shuffles, and the stores are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nova.models.codegen.context import (
    GeneratedKernel,
    KernelContext,
    from_f32,
    to_f32,
    vector_lanes,
)
from nova.models.codegen.pointwise import Evaluator, epilogue_value, store_epilogue
from nova.models.codegen.row_shape import Rows
from nova.models.codegen.text import Body, Index, broadcast_index
from nova.models.graph import Node
from nova.models.passes.fusion import KernelGroup

WARP = 32
WARP_ROW_MAX = 1024
"""Longest row a warp handles (32 f32 registers per lane)."""
THREAD_ELEMS = 16
"""Elements per thread a block-per-row kernel aims for (its thread count grows to 1024 first)."""
ROW_MAX = 1024 * THREAD_ELEMS
WARPS_PER_BLOCK = 8


@dataclass(frozen=True)
class Layout:
    """How one row kernel maps rows to threads."""

    threads: int
    """Threads sharing a row (32: a warp per row)."""
    rows_per_block: int
    lanes: int
    """Elements per vector access (a divisor of the row length)."""
    chunks: int
    """Vector accesses per thread."""

    @property
    def warp(self) -> bool:
        return self.threads == WARP


@dataclass
class _Chunk:
    """One thread's vector of a row, in registers."""

    pos: Index
    """Position of its first element in the row."""
    linear: Index
    """Linear index of its first element in the tensor."""
    valid: str | None
    """i1: the chunk lies inside the row (None: statically always)."""
    values: list[str]
    """The elements as f32."""


def resident_layout(ctx: KernelContext, group: KernelGroup, rows: Rows) -> Layout | None:
    """The register-resident layout for `rows`, or None when the fallback must run (reduced
    axes not trailing, or rows longer than ROW_MAX)."""
    if not rows.trailing or rows.rows == 0 or not 0 < rows.length <= ROW_MAX or \
            group.anchor is None:
        return None
    dtypes = [ctx.type_of(group.anchor.inputs[0]).dtype, ctx.type_of(group.root).dtype]
    lanes = vector_lanes(dtypes, rows.length)
    if rows.length <= WARP_ROW_MAX:
        threads, per_block = WARP, min(WARPS_PER_BLOCK, rows.rows)
    else:
        threads, per_block = 128, 1
        while threads < 1024 and threads * THREAD_ELEMS < rows.length:
            threads *= 2
    return Layout(threads, per_block, lanes, -(-rows.length // (threads * lanes)))


def resident_row_kernel(ctx: KernelContext, group: KernelGroup, node: Node, rows: Rows,
                        layout: Layout) -> GeneratedKernel:
    """Softmax, LayerNormalization or Reduce* with its epilogue (see the module doc)."""
    b = ctx.body
    tid = b.op("gpu.thread_id x")
    bid = b.op("gpu.block_id x")
    ok: str | None = None
    if layout.warp:
        lane: Index = b.rem(tid, WARP)
        row: Index = b.add(b.mul(bid, layout.rows_per_block), b.div(tid, WARP))
        if rows.rows % layout.rows_per_block:
            ok = b.lt(row, rows.rows)
            row = b.op(f"arith.minui {row}, {b.ix(rows.rows - 1)} : index")
    else:
        lane, row = tid, bid
    k = _RowKernel(ctx, group, node, rows, layout, row, ok)
    k.chunks = [k.load_chunk(lane, c) for c in range(layout.chunks)]
    if node.op == "Softmax":
        k.softmax()
    elif node.op == "LayerNormalization":
        k.layer_norm()
    else:
        k.reduce(lane)
    blocks = -(-rows.rows // layout.rows_per_block)
    return ctx.finish((blocks, 1, 1), (layout.threads * layout.rows_per_block, 1, 1))


AnchorValue = Callable[[_Chunk, int, list[Index]], str]
"""(chunk, lane, element index in the row's reduced dims) -> the anchor's f32 value there."""


class _RowKernel:
    """Emission state of one register-resident row kernel."""

    def __init__(self, ctx: KernelContext, group: KernelGroup, node: Node, rows: Rows,
                 layout: Layout, row: Index, ok: str | None) -> None:
        self.ctx, self.group, self.node, self.rows, self.layout = ctx, group, node, rows, layout
        self.b: Body = ctx.body
        self.row, self.ok = row, ok
        self.row_idx = self.b.delinearize(row, tuple(rows.shape[i] for i in rows.kept))
        self.row_start = self.b.mul(row, rows.length)
        self.tagged = layout.lanes > 1 and rows.elem_shape[-1] % layout.lanes == 0
        self.ev = Evaluator(ctx, group, layout.lanes if self.tagged else 1)
        self.chunks: list[_Chunk] = []

    # ---- loading and reducing ------------------------------------------------------------

    def load_chunk(self, lane: Index, c: int) -> _Chunk:
        b, lanes, x = self.b, self.layout.lanes, self.node.inputs[0]
        vectors = self.rows.length // lanes
        vec_id = b.add(c * self.layout.threads, lane)
        pos = b.mul(vec_id, lanes)
        linear = b.add(self.row_start, pos)
        valid = None if (c + 1) * self.layout.threads <= vectors else b.lt(vec_id, vectors)

        def load() -> list[str]:
            if lanes == 1:
                return [to_f32(self.ctx, x, self.ctx.load(x, linear))]
            vec = self.ctx.load_vector(x, linear, lanes)
            return [to_f32(self.ctx, x, self.ctx.extract(x, vec, i, lanes))
                    for i in range(lanes)]

        if valid is None:
            return _Chunk(pos, linear, None, load())
        zero = b.const(0.0, "f32")
        return _Chunk(pos, linear, valid, _guarded(b, valid, load, [zero] * lanes))

    def local(self, kind: str, values: list[list[str]]) -> str:
        """This thread's partial `kind` (add / maximumf) over per-chunk `values`; chunks past
        the row's end contribute the identity."""
        b = self.b
        identity = b.const(float("-inf") if kind == "maximumf" else 0.0, "f32")
        op = "arith.maximumf" if kind == "maximumf" else "arith.addf"
        acc: str | None = None
        for chunk, vals in zip(self.chunks, values, strict=True):
            part = vals[0]
            for v in vals[1:]:
                part = b.op(f"{op} {part}, {v} : f32")
            if chunk.valid is not None:
                part = b.op(f"arith.select {chunk.valid}, {part}, {identity} : f32")
            acc = part if acc is None else b.op(f"{op} {acc}, {part} : f32")
        assert acc is not None
        return acc

    def combine(self, kind: str, value: str) -> str:
        """The row's total of the threads' partials."""
        if self.layout.warp:
            return self.b.op(f"gpu.subgroup_reduce {kind} {value} : (f32) -> f32")
        return self.b.op(f"gpu.all_reduce {kind} {value} {{}} : (f32) -> f32")

    def row_total(self, kind: str, values: list[list[str]]) -> str:
        return self.combine(kind, self.local(kind, values))

    # ---- the ops -------------------------------------------------------------------------

    def softmax(self) -> None:
        b = self.b
        row_max = self.row_total("maximumf", [c.values for c in self.chunks])
        exps = [[b.op(f"math.exp {b.op(f'arith.subf {v}, {row_max} : f32')} : f32")
                 for v in c.values] for c in self.chunks]
        total = self.row_total("add", exps)
        inv = b.op(f"arith.divf {b.const(1.0, 'f32')}, {total} : f32")
        by_chunk = {id(c): e for c, e in zip(self.chunks, exps, strict=True)}
        self.write(lambda c, i, _elem: b.op(f"arith.mulf {by_chunk[id(c)][i]}, {inv} : f32"))

    def layer_norm(self) -> None:
        b, node = self.b, self.node
        inv_n = b.const(1.0 / self.rows.length, "f32")
        mean = b.op(f"arith.mulf {self.row_total('add', [c.values for c in self.chunks])}, "
                    f"{inv_n} : f32")
        diffs = [[b.op(f"arith.subf {v}, {mean} : f32") for v in c.values] for c in self.chunks]
        squares = [[b.op(f"arith.mulf {d}, {d} : f32") for d in ds] for ds in diffs]
        var = b.op(f"arith.mulf {self.row_total('add', squares)}, {inv_n} : f32")
        eps = b.const(float(node.attrs["epsilon"]), "f32")
        rstd = b.op(f"math.rsqrt {b.op(f'arith.addf {var}, {eps} : f32')} : f32")
        scale = node.inputs[1]
        bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
        by_chunk = {id(c): d for c, d in zip(self.chunks, diffs, strict=True)}

        def value(chunk: _Chunk, i: int, elem: list[Index]) -> str:
            y = b.op(f"arith.mulf {by_chunk[id(chunk)][i]}, {rstd} : f32")
            y = b.op(f"arith.mulf {y}, {self.param(scale, elem)} : f32")
            if bias is not None:
                y = b.op(f"arith.addf {y}, {self.param(bias, elem)} : f32")
            return y

        self.write(value)

    def param(self, name: str, elem: list[Index]) -> str:
        """LayerNorm's scale or bias at element `elem` of the normalised dims (broadcast)."""
        shape = self.rows.elem_shape
        sub = broadcast_index(elem, shape, self.ctx.shape(name))
        return to_f32(self.ctx, name, self.ev.value(name, sub))

    def reduce(self, lane: Index) -> None:
        b, node = self.b, self.node
        kind = "maximumf" if node.op == "ReduceMax" else "add"
        total = self.row_total(kind, [c.values for c in self.chunks])
        if node.op == "ReduceMean":
            total = b.op(f"arith.mulf {total}, {b.const(1.0 / self.rows.length, 'f32')} : f32")
        first = b.op(f"arith.cmpi eq, {b.ix(lane)}, {b.ix(0)} : index")
        if self.ok is not None:
            first = b.op(f"arith.andi {first}, {self.ok} : i1")
        out = node.outputs[0]
        b.line(f"scf.if {first} {{")
        with b.nested():
            keep = len(self.ctx.shape(out)) == len(self.rows.shape)
            idx = self.rows.full_index(self.row_idx, [0] * len(self.rows.axes)) if keep \
                else list(self.row_idx)
            store_epilogue(self.ctx, self.ev, self.group, out, idx, self.row,
                           from_f32(self.ctx, out, total))
        b.line("}")

    # ---- writing -------------------------------------------------------------------------

    def write(self, anchor_value: AnchorValue) -> None:
        """Store every chunk's anchor values through the epilogue (one vector store each)."""
        b, rows, ev = self.b, self.rows, self.ev
        out = self.node.outputs[0]
        lanes = self.layout.lanes
        for chunk in self.chunks:
            cond = chunk.valid
            if self.ok is not None:
                cond = self.ok if cond is None else b.op(f"arith.andi {cond}, {self.ok} : i1")
            if cond is not None:
                b.line(f"scf.if {cond} {{")
                b.depth += 1
            with ev.scope():
                start = b.delinearize(chunk.pos, rows.elem_shape)
                if self.tagged:
                    ev.set_chunk(rows.full_index(self.row_idx, start), chunk.linear, rows.shape)
                results = []
                for i in range(lanes):
                    if self.tagged:
                        elem = [*start[:-1], ev.lane_index(start[-1], i)]
                    else:
                        elem = b.delinearize(b.add(chunk.pos, i), rows.elem_shape)
                    idx = rows.full_index(self.row_idx, elem)
                    value = from_f32(self.ctx, out, anchor_value(chunk, i, elem))
                    results.append(epilogue_value(self.ctx, ev, self.group, out, idx,
                                                  b.add(chunk.linear, i), value,
                                                  fresh_scope=False))
                self.ctx.store_lanes(self.group.root, chunk.linear, results)
            if cond is not None:
                b.depth -= 1
                b.line("}")


def _guarded(b: Body, cond: str, compute: Callable[[], list[str]], fill: list[str]) \
        -> list[str]:
    """`compute()` where `cond` holds, else `fill` (f32 values), as one scf.if."""
    res = b.fresh("ld")
    types = ", ".join(["f32"] * len(fill))
    b.line(f"{res}:{len(fill)} = scf.if {cond} -> ({types}) {{")
    with b.nested():
        values = compute()
        b.line(f"scf.yield {', '.join(values)} : {types}")
    b.line("} else {")
    with b.nested():
        b.line(f"scf.yield {', '.join(fill)} : {types}")
    b.line("}")
    return [f"{res}#{i}" for i in range(len(fill))]
