"""The fused attention kernel (flash-attention style) of a `FusedAttention` group:
`O = softmax(Q K^T * scale [+ mask]) V` per batch (all batch dims, e.g. batch x heads), the
scores never stored in global memory.

A block owns a tile of query rows and walks the keys in tiles of BN with the online softmax:
per row a running max `m` and sum `l`; each key tile's scores S give `m' = max(m, max S)`,
`P = exp(S - m')`, `alpha = exp(m - m')`, `l' = l * alpha + sum P`, `O' = O * alpha + P V`;
after the last tile `O / l` is stored (through the group's epilogue, in the layout `out_perm`
asks for). Accumulation is fp32 whatever the storage type. Key positions past the end (a
sequence length that the tile does not divide) score -inf; query rows past the end are computed
on zeros and not stored. Q, K, V and the mask are read through the group's prologue (the head
split of a QKV GEMM output is index arithmetic in the tile loaders).

Three variants (the pass records which, passes/attention.py):

- **mma** (fp16 with tensor cores, the default there): FlashAttention-2 style with
  `nvgpu.mma.sync` / `nvgpu.ldmatrix`, scores and softmax in registers; codegen/attention_mma.py.
- **wmma** (fp16 with tensor cores, `attention="fused-wmma"`): 4 warps, 16 query rows each
  (BM = 64), BN = 32. Q, K, V tiles in shared memory as f16; S = Q K^T and O += P V with
  `gpu.subgroup_mma_*` (16x16x16, f32 accumulators). Fragments have an opaque layout, so the
  softmax runs on S stored to shared memory (two lanes per row, partners combined with a
  shuffle), P goes back as f16, and the per-row rescale of the O fragments is an element-wise
  product with a fragment loaded from a 16x16 tile holding `alpha` of row r in every column of
  row r (accumulator fragments loaded from memory share the accumulator's layout).
- **simt** (CUDA cores: fp32, bf16, or no tensor cores): 8 warps, 4 query rows each (BM = 32),
  BN = 32 (lane = key for S, lane = output column for P V); K and V tiles share one f32 buffer;
  row max and sum by warp reductions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nova.models.codegen.context import GeneratedKernel, KernelContext
from nova.models.codegen.matmul import _and, _guarded
from nova.models.codegen.pointwise import Evaluator, store_epilogue
from nova.models.codegen.strided import Strided, strided_view
from nova.models.codegen.text import Index, broadcast_index
from nova.models.graph import Node
from nova.models.passes.fusion import KernelGroup

NEG_INIT = -1e30
"""Initial running max: finite, so a tile whose keys are all masked (-inf) rescales by
exp(0) = 1 instead of exp(-inf + inf) = NaN."""

SHARED_LIMIT = 48 * 1024
"""Static shared memory per block."""

VEC = 8
"""f16 elements of one 16-byte vector load."""


@dataclass
class Problem:
    """The shapes of one fused attention node and how to read its operands."""

    batch: tuple[int, ...]
    sq: int
    sk: int
    d: int
    dv: int
    scale: float
    q: str
    k: str
    v: str
    mask: str | None
    trans_k: bool
    trans_v: bool
    out: str
    perm: list[int] | None


def problem_of(ctx: KernelContext, node: Node) -> Problem:
    q, k, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 and node.inputs[3] else None
    qs = ctx.shape(q)
    trans_v = bool(node.attrs.get("trans_v", 0))
    vs = ctx.shape(v)
    ks = ctx.shape(k)
    trans_k = bool(node.attrs.get("trans_k", 1))
    perm = node.attrs.get("out_perm")
    return Problem(tuple(int(x) for x in node.attrs["batch"]), qs[-2],
                   ks[-2] if trans_k else ks[-1], qs[-1], vs[-2] if trans_v else vs[-1],
                   float(node.attrs["scale"]), q, k, v, mask, trans_k, trans_v,
                   node.outputs[0], list(perm) if perm else None)


class Operands:
    """Element loads of Q, K, V, the mask (f32, through the prologue) and the output store."""

    def __init__(self, ctx: KernelContext, group: KernelGroup, p: Problem,
                 bidx: list[Index]) -> None:
        self.ctx, self.p, self.bidx = ctx, p, bidx
        self.ev = Evaluator(ctx, group)
        self.group = group

    def _value(self, name: str, idx: list[Index], shape: tuple[int, ...]) -> str:
        with self.ev.scope():
            return self.ev.value(name, broadcast_index(idx, shape, self.ctx.shape(name)))

    def _guard(self, conds: list[tuple[Index, int, int]]) -> str | None:
        """`index < bound` for each (index, bound, tile) the tile does not divide."""
        b = self.ctx.body
        return _and(self.ctx, [b.lt(i, n) for i, n, tile in conds if n % tile])

    def q(self, row: Index, col: Index, tile: int) -> str:
        p = self.p
        return _guarded(self.ctx, self._guard([(row, p.sq, tile)]), lambda: self._value(
            p.q, [*self.bidx, row, col], (*p.batch, p.sq, p.d)))

    def k(self, key: Index, col: Index, tile: int) -> str:
        p = self.p
        idx, shape = ([key, col], (p.sk, p.d)) if p.trans_k else ([col, key], (p.d, p.sk))
        return _guarded(self.ctx, self._guard([(key, p.sk, tile)]), lambda: self._value(
            p.k, [*self.bidx, *idx], (*p.batch, *shape)))

    def v(self, key: Index, col: Index, tile: int) -> str:
        p = self.p
        idx, shape = ([col, key], (p.dv, p.sk)) if p.trans_v else ([key, col], (p.sk, p.dv))
        return _guarded(self.ctx, self._guard([(key, p.sk, tile)]), lambda: self._value(
            p.v, [*self.bidx, *idx], (*p.batch, *shape)))

    def score(self, s: str, row: Index, key: Index, tiles: tuple[int, int]) -> str:
        """`s * scale [+ mask]`, or -inf past the last key."""
        b, p = self.ctx.body, self.p
        s = b.op(f"arith.mulf {s}, {b.const(p.scale, 'f32')} : f32")
        if p.mask is not None:
            mask = p.mask
            m = _guarded(self.ctx, self._guard([(row, p.sq, tiles[0]), (key, p.sk, tiles[1])]),
                         lambda: self._value(mask, [*self.bidx, row, key],
                                             (*p.batch, p.sq, p.sk)))
            s = b.op(f"arith.addf {s}, {m} : f32")
        if p.sk % tiles[1]:
            s = b.op(f"arith.select {b.lt(key, p.sk)}, {s}, "
                     f"{b.const(float('-inf'), 'f32')} : f32")
        return s

    def view(self, which: str) -> tuple[str, tuple[int, ...], Strided] | None:
        """For a vector tile load of operand `which` (q, k or v) along its head dim: (tensor,
        logical shape, strided view) when the operand is f16 at a 16-byte aligned offset with
        contiguous head-dim elements and 16-byte aligned other strides, else None."""
        p = self.p
        name, shape, flip = {"q": (p.q, (p.sq, p.d), False), "k": (p.k, (p.sk, p.d), not p.trans_k),
                             "v": (p.v, (p.sk, p.dv), p.trans_v)}[which]
        if flip or self.ctx.type_of(name).dtype != "float16" or shape[1] % VEC:
            return None
        view = strided_view(self.ctx, self.ev.members, name)
        if view is None or self.ctx.type_of(view[0]).dtype != "float16":
            return None
        _, offset, strides = view
        if strides[-1] != 1 or offset % VEC or any(st % VEC for st in strides[:-1]):
            return None
        return name, (*p.batch, *shape), view

    def vector_or_zero(self, view: tuple[str, tuple[int, ...], Strided], row: Index, col: Index,
                       r_max: int, rows: int) -> str:
        """`vector(view, row, col)` of a tile of `rows` rows, zeros for a row at or past `r_max`
        (only where the tile does not divide r_max: the rows past a sequence's end)."""
        b = self.ctx.body
        if r_max % rows == 0:
            return self.vector(view, row, col)
        vty = f"vector<{VEC}xf16>"
        value = b.fresh("vt")
        b.line(f"{value} = scf.if {b.lt(row, r_max)} -> ({vty}) {{")
        with b.nested():
            b.line(f"scf.yield {self.vector(view, row, col)} : {vty}")
        b.line("} else {")
        with b.nested():
            zero = b.op(f"vector.broadcast {b.const(0.0, 'f16')} : f16 to {vty}")
            b.line(f"scf.yield {zero} : {vty}")
        b.line("}")
        return value

    def vector(self, view: tuple[str, tuple[int, ...], Strided], row: Index, col: Index) -> str:
        """The 8 f16 elements (row, col..col+7) of a `view` operand of this batch entry."""
        b = self.ctx.body
        name, shape, (base, offset, strides) = view
        idx = broadcast_index([*self.bidx, row, col], shape, self.ctx.shape(name))
        linear: Index = offset
        for i, st in zip(idx, strides, strict=True):
            linear = b.add(linear, b.mul(i, st))
        ref, ty = self.ctx.buffer(base)
        return b.op(f"vector.load {ref}[{b.ix(linear)}] : {ty}, vector<{VEC}xf16>")

    def store(self, row: Index, col: Index, value: str) -> None:
        """Store output element (row, col) of this batch through the epilogue, guarded."""
        b, p, ctx = self.ctx.body, self.p, self.ctx
        conds = [b.lt(row, p.sq)] + ([b.lt(col, p.dv)] if p.dv % 32 else [])
        b.line(f"scf.if {_and(ctx, conds)} {{")
        with b.nested():
            logical = [*self.bidx, row, col]
            idx = [logical[i] for i in p.perm] if p.perm else logical
            linear = b.linear(idx, ctx.shape(p.out))
            store_epilogue(ctx, self.ev, self.group, p.out, idx, linear, value)
        b.line("}")


def attention_kernel(ctx: KernelContext, group: KernelGroup, node: Node) -> GeneratedKernel:
    """The kernel of a FusedAttention group (variant per the node's `tensor_cores`)."""
    p = problem_of(ctx, node)
    if int(node.attrs.get("tensor_cores", 0)):
        if node.attrs.get("variant", "wmma") == "mma":
            from nova.models.codegen.attention_mma import mma_kernel  # it builds on this module

            bm, bn = (int(x) for x in node.attrs["tile"])
            return mma_kernel(ctx, group, p, bm, bn)
        return _wmma_kernel(ctx, group, p)
    return _simt_kernel(ctx, group, p)


def _block_origin(ctx: KernelContext, p: Problem, bm: int) -> tuple[list[Index], Index]:
    """(batch multi-index, first query row) of this block: block x = batch * row tiles + tile."""
    b = ctx.body
    tiles = -(-p.sq // bm)
    bid = b.op("gpu.block_id x")
    bz, tile = b.div(bid, tiles), b.rem(bid, tiles)
    bidx = b.delinearize(bz, p.batch) if p.batch else []
    return bidx, b.mul(tile, bm)


def _grid(p: Problem, bm: int) -> tuple[int, int, int]:
    return (-(-p.sq // bm) * max(1, math.prod(p.batch)), 1, 1)


def _max(ctx: KernelContext, a: str, c: str) -> str:
    return ctx.body.op(f"arith.maxnumf {a}, {c} : f32")


def _exp(ctx: KernelContext, x: str) -> str:
    return ctx.body.op(f"math.exp {x} : f32")


# ---- CUDA cores -------------------------------------------------------------------------------

S_WARPS, S_ROWS, S_BN = 8, 4, 32
S_BM = S_WARPS * S_ROWS


def _simt_kernel(ctx: KernelContext, group: KernelGroup, p: Problem) -> GeneratedKernel:
    b = ctx.body
    threads = 32 * S_WARPS
    cols = -(-p.dv // 32)  # output columns per lane
    width = max(p.d, p.dv) + 1  # K/V rows padded: lanes read K rows without bank conflicts
    q_sh = ctx.shared("att_q", S_BM * p.d)
    kv_sh = ctx.shared("att_kv", S_BN * width + 32 * cols)
    p_sh = ctx.shared("att_p", S_BM * S_BN)
    q_ty = f"memref<{S_BM * p.d}xf32, #gpu.address_space<workgroup>>"
    kv_ty = f"memref<{S_BN * width + 32 * cols}xf32, #gpu.address_space<workgroup>>"
    p_ty = f"memref<{S_BM * S_BN}xf32, #gpu.address_space<workgroup>>"
    tid = b.op("gpu.thread_id x")
    warp, lane = b.div(tid, 32), b.rem(tid, 32)
    bidx, q0 = _block_origin(ctx, p, S_BM)
    ops = Operands(ctx, group, p, bidx)
    _fill(ctx, tid, threads, S_BM, p.d, lambda r, c: ops.q(b.add(q0, r), c, S_BM),
          lambda r, c, v: b.line(f"memref.store {v}, {q_sh}[{b.ix(b.add(b.mul(r, p.d), c))}] "
                                 f": {q_ty}"))
    rows = [b.add(b.mul(warp, S_ROWS), r) for r in range(S_ROWS)]  # block-local query rows
    zero, neg = b.const(0.0, "f32"), b.const(NEG_INIT, "f32")
    n_acc = S_ROWS * cols
    f32s = ", ".join(["f32"] * (2 * S_ROWS + n_acc))
    kt, state, res = b.fresh("kt"), [b.fresh("st") for _ in range(2 * S_ROWS + n_acc)], \
        b.fresh("res")
    init = [neg] * S_ROWS + [zero] * S_ROWS + [zero] * n_acc
    b.line(f"{res}:{len(state)} = scf.for {kt} = {b.ix(0)} to "
           f"{ctx.opaque(-(-p.sk // S_BN) * S_BN)} step {b.ix(S_BN)} iter_args("
           f"{', '.join(f'{s} = {i}' for s, i in zip(state, init, strict=True))}) -> ({f32s}) {{")
    with b.nested():
        m_old, l_old, acc = state[:S_ROWS], state[S_ROWS:2 * S_ROWS], state[2 * S_ROWS:]
        b.line("gpu.barrier")
        _fill(ctx, tid, threads, S_BN, p.d, lambda r, c: ops.k(b.add(kt, r), c, S_BN),
              lambda r, c, v: b.line(f"memref.store {v}, {kv_sh}["
                                     f"{b.ix(b.add(b.mul(r, width), c))}] : {kv_ty}"))
        b.line("gpu.barrier")
        dots = _simt_dots(ctx, p, q_sh, q_ty, kv_sh, kv_ty, rows, lane, width)
        m_new, l_new, alphas = [], [], []
        for r in range(S_ROWS):
            s = ops.score(dots[r], b.add(q0, rows[r]), b.add(kt, lane), (S_BM, S_BN))
            tile_max = b.op(f"gpu.subgroup_reduce maxnumf {s} : (f32) -> f32")
            mn = _max(ctx, m_old[r], tile_max)
            pr = _exp(ctx, b.op(f"arith.subf {s}, {mn} : f32"))
            alpha = _exp(ctx, b.op(f"arith.subf {m_old[r]}, {mn} : f32"))
            total = b.op(f"gpu.subgroup_reduce add {pr} : (f32) -> f32")
            l_new.append(b.op(f"math.fma {l_old[r]}, {alpha}, {total} : f32"))
            m_new.append(mn)
            alphas.append(alpha)
            at = b.add(b.mul(rows[r], S_BN), lane)
            b.line(f"memref.store {pr}, {p_sh}[{b.ix(at)}] : {p_ty}")
        b.line("gpu.barrier")
        _fill(ctx, tid, threads, S_BN, p.dv, lambda r, c: ops.v(b.add(kt, r), c, S_BN),
              lambda r, c, v: b.line(f"memref.store {v}, {kv_sh}["
                                     f"{b.ix(b.add(b.mul(r, width), c))}] : {kv_ty}"))
        b.line("gpu.barrier")
        scaled = [b.op(f"arith.mulf {acc[r * cols + c]}, {alphas[r]} : f32")
                  for r in range(S_ROWS) for c in range(cols)]
        new_acc = _simt_pv(ctx, p_sh, p_ty, kv_sh, kv_ty, rows, lane, width, cols, scaled)
        b.line(f"scf.yield {', '.join(m_new + l_new + new_acc)} : {f32s}")
    b.line("}")
    for r in range(S_ROWS):
        inv = b.op(f"arith.divf {b.const(1.0, 'f32')}, {res}#{S_ROWS + r} : f32")
        for c in range(cols):
            value = b.op(f"arith.mulf {res}#{2 * S_ROWS + r * cols + c}, {inv} : f32")
            ops.store(b.add(q0, rows[r]), b.add(lane, 32 * c), value)
    return ctx.finish(_grid(p, S_BM), (threads, 1, 1))


def _simt_dots(ctx: KernelContext, p: Problem, q_sh: str, q_ty: str, kv_sh: str, kv_ty: str,
               rows: list[Index], lane: Index, width: int) -> list[str]:
    """Per row r: dot(Q[rows[r], :], K[lane, :]) from the shared tiles."""
    b = ctx.body
    d, part = b.fresh("d"), [b.fresh("dot") for _ in rows]
    res = b.fresh("dots")
    f32s = ", ".join(["f32"] * len(rows))
    zero = b.const(0.0, "f32")
    b.line(f"{res}:{len(rows)} = scf.for {d} = {b.ix(0)} to {b.ix(p.d)} step {b.ix(1)} "
           f"iter_args({', '.join(f'{x} = {zero}' for x in part)}) -> ({f32s}) {{")
    with b.nested():
        kv = b.op(f"memref.load {kv_sh}[{b.ix(b.add(b.mul(lane, width), d))}] : {kv_ty}")
        new = []
        for r, row in enumerate(rows):
            qv = b.op(f"memref.load {q_sh}[{b.ix(b.add(b.mul(row, p.d), d))}] : {q_ty}")
            new.append(b.op(f"math.fma {qv}, {kv}, {part[r]} : f32"))
        b.line(f"scf.yield {', '.join(new)} : {f32s}")
    b.line("}")
    return [f"{res}#{r}" for r in range(len(rows))]


def _simt_pv(ctx: KernelContext, p_sh: str, p_ty: str, kv_sh: str, kv_ty: str,
             rows: list[Index], lane: Index, width: int, cols: int,
             acc: list[str]) -> list[str]:
    """acc[r][c] += sum_j P[rows[r], j] * V[j, lane + 32 c] over the key tile."""
    b = ctx.body
    j, part = b.fresh("j"), [b.fresh("o") for _ in acc]
    res = b.fresh("pv")
    f32s = ", ".join(["f32"] * len(acc))
    b.line(f"{res}:{len(acc)} = scf.for {j} = {b.ix(0)} to {b.ix(S_BN)} step {b.ix(1)} "
           f"iter_args({', '.join(f'{x} = {a}' for x, a in zip(part, acc, strict=True))}) -> "
           f"({f32s}) {{")
    with b.nested():
        vs = [b.op(f"memref.load {kv_sh}[{b.ix(b.add(b.mul(j, width), b.add(lane, 32 * c)))}]"
                   f" : {kv_ty}") for c in range(cols)]
        new = []
        for r, row in enumerate(rows):
            pr = b.op(f"memref.load {p_sh}[{b.ix(b.add(b.mul(row, S_BN), j))}] : {p_ty}")
            new += [b.op(f"math.fma {pr}, {vs[c]}, {part[r * cols + c]} : f32")
                    for c in range(cols)]
        b.line(f"scf.yield {', '.join(new)} : {f32s}")
    b.line("}")
    return [f"{res}#{i}" for i in range(len(acc))]


def _fill(ctx: KernelContext, tid: str, threads: int, rows: int, cols: int,
          load: object, store: object) -> None:
    """Copy a rows x cols tile: element e = tid + threads * t is (e / cols, e % cols);
    `load(r, c)` gives the value, `store(r, c, value)` puts it in shared memory."""
    b = ctx.body
    assert callable(load) and callable(store)
    total = rows * cols
    t = b.fresh("t")
    b.line(f"scf.for {t} = {b.ix(0)} to {b.ix(-(-total // threads))} step {b.ix(1)} {{")
    with b.nested():
        e = b.add(b.mul(t, threads), tid)
        inside = b.lt(e, total) if total % threads else None
        if inside is not None:
            b.line(f"scf.if {inside} {{")
            b.depth += 1
        r, c = b.div(e, cols), b.rem(e, cols)
        store(r, c, load(r, c))
        if inside is not None:
            b.depth -= 1
            b.line("}")
    b.line("}")


# ---- tensor cores -----------------------------------------------------------------------------

W_WARPS, W_BN = 4, 32
W_BM = 16 * W_WARPS
A_TY = '!gpu.mma_matrix<16x16xf16, "AOp">'
B_TY = '!gpu.mma_matrix<16x16xf16, "BOp">'
C_TY = '!gpu.mma_matrix<16x16xf32, "COp">'


def _pads(p: Problem) -> tuple[int, int]:
    """Row padding (f16 tiles, f32 tiles) in elements: 8 halves / 4 floats (16 bytes, keeps
    WMMA's 32-byte fragment alignment) against bank conflicts, when it fits SHARED_LIMIT."""
    def size(ph: int, pf: int) -> int:
        halves = W_BM * (p.d + ph) + W_BN * (p.d + ph) + W_BN * (p.dv + ph) + W_BM * (W_BN + ph)
        return 2 * halves + 4 * (W_BM * (W_BN + pf) + W_BM)
    return (8, 4) if size(8, 4) <= SHARED_LIMIT else (0, 0)


def _wmma_kernel(ctx: KernelContext, group: KernelGroup, p: Problem) -> GeneratedKernel:
    b = ctx.body
    threads = 32 * W_WARPS
    ph, pf = _pads(p)
    lq, lv, ls, lp = p.d + ph, p.dv + ph, W_BN + pf, W_BN + ph
    q_sh, q_ty = ctx.shared_global("att_q", (W_BM, lq), "f16")
    k_sh, k_ty = ctx.shared_global("att_k", (W_BN, lq), "f16")
    v_sh, v_ty = ctx.shared_global("att_v", (W_BN, lv), "f16")
    s_sh, s_ty = ctx.shared_global("att_s", (W_BM, ls), "f32")
    p_sh, p_ty = ctx.shared_global("att_p", (W_BM, lp), "f16")
    inv_sh = ctx.shared("att_inv", W_BM)
    inv_ty = f"memref<{W_BM}xf32, #gpu.address_space<workgroup>>"
    tid = b.op("gpu.thread_id x")
    warp, lane = b.div(tid, 32), b.rem(tid, 32)
    wrow = b.mul(warp, 16)
    bidx, q0 = _block_origin(ctx, p, W_BM)
    ops = Operands(ctx, group, p, bidx)

    def half_store(sh: str, ty: str) -> object:
        def store(r: Index, c: Index, v: str) -> None:
            h = b.op(f"arith.truncf {v} : f32 to f16")
            b.line(f"memref.store {h}, {sh}[{b.ix(r)}, {b.ix(c)}] : {ty}")
        return store

    _tile(ctx, ops, "q", tid, (W_BM, p.d, q0, p.sq), (q_sh, q_ty),
          lambda r, c: ops.q(b.add(q0, r), c, W_BM), half_store(q_sh, q_ty))
    b.line("gpu.barrier")
    q_frags = [b.op(f"gpu.subgroup_mma_load_matrix {q_sh}[{b.ix(wrow)}, {b.ix(16 * i)}] "
                    f"{{leadDimension = {lq} : index}} : {q_ty} -> {A_TY}")
               for i in range(p.d // 16)]
    zero_c = b.op(f"gpu.subgroup_mma_constant_matrix {b.const(0.0, 'f32')} : {C_TY}")
    n_o = p.dv // 16
    kt, m_old, l_old = b.fresh("kt"), b.fresh("m"), b.fresh("l")
    o_old = [b.fresh("o") for _ in range(n_o)]
    res = b.fresh("res")
    types = ", ".join(["f32", "f32"] + [C_TY] * n_o)
    inits = [f"{m_old} = {b.const(NEG_INIT, 'f32')}", f"{l_old} = {b.const(0.0, 'f32')}",
             *(f"{o} = {zero_c}" for o in o_old)]
    b.line(f"{res}:{2 + n_o} = scf.for {kt} = {b.ix(0)} to "
           f"{ctx.opaque(-(-p.sk // W_BN) * W_BN)} step {b.ix(W_BN)} iter_args("
           f"{', '.join(inits)}) -> ({types}) {{")
    with b.nested():
        b.line("gpu.barrier")
        _tile(ctx, ops, "k", tid, (W_BN, p.d, kt, p.sk), (k_sh, k_ty),
              lambda r, c: ops.k(b.add(kt, r), c, W_BN), half_store(k_sh, k_ty))
        _tile(ctx, ops, "v", tid, (W_BN, p.dv, kt, p.sk), (v_sh, v_ty),
              lambda r, c: ops.v(b.add(kt, r), c, W_BN), half_store(v_sh, v_ty))
        b.line("gpu.barrier")
        for jn in range(W_BN // 16):
            acc = zero_c
            for i, qf in enumerate(q_frags):
                # B = K^T: element (d, key) of the tile is k_sh[key][d] (column-major)
                kf = b.op(f"gpu.subgroup_mma_load_matrix {k_sh}[{b.ix(16 * jn)}, "
                          f"{b.ix(16 * i)}] {{leadDimension = {lq} : index, transpose}} : "
                          f"{k_ty} -> {B_TY}")
                acc = b.op(f"gpu.subgroup_mma_compute {qf}, {kf}, {acc} {{b_transpose}} : "
                           f"{A_TY}, {B_TY} -> {C_TY}")  # PTX: layouts must match the loads
            b.line(f"gpu.subgroup_mma_store_matrix {acc}, {s_sh}[{b.ix(wrow)}, "
                   f"{b.ix(16 * jn)}] {{leadDimension = {ls} : index}} : {C_TY}, {s_ty}")
        b.line("gpu.barrier")
        m_new, l_new = _wmma_softmax(ctx, ops, p, (s_sh, s_ty, p_sh, p_ty), wrow, lane, q0, kt,
                                     (m_old, l_old))
        b.line("gpu.barrier")
        alpha = b.op(f"gpu.subgroup_mma_load_matrix {s_sh}[{b.ix(wrow)}, {b.ix(0)}] "
                     f"{{leadDimension = {ls} : index}} : {s_ty} -> {C_TY}")
        o_new = [b.op(f"gpu.subgroup_mma_elementwise  mulf {o}, {alpha} : ({C_TY}, {C_TY}) -> "
                      f"{C_TY}") for o in o_old]
        for jn in range(W_BN // 16):
            pf_ = b.op(f"gpu.subgroup_mma_load_matrix {p_sh}[{b.ix(wrow)}, {b.ix(16 * jn)}] "
                       f"{{leadDimension = {lp} : index}} : {p_ty} -> {A_TY}")
            for c in range(n_o):
                vf = b.op(f"gpu.subgroup_mma_load_matrix {v_sh}[{b.ix(16 * jn)}, "
                          f"{b.ix(16 * c)}] {{leadDimension = {lv} : index}} : {v_ty} -> "
                          f"{B_TY}")
                o_new[c] = b.op(f"gpu.subgroup_mma_compute {pf_}, {vf}, {o_new[c]} : {A_TY}, "
                                f"{B_TY} -> {C_TY}")
        b.line(f"scf.yield {', '.join([m_new, l_new, *o_new])} : {types}")
    b.line("}")
    _wmma_store(ctx, ops, p, res, (s_sh, s_ty, ls), (inv_sh, inv_ty), wrow, lane, q0)
    return ctx.finish(_grid(p, W_BM), (threads, 1, 1))


def _tile(ctx: KernelContext, ops: Operands, which: str, tid: str,
          dims: tuple[int, int, Index, int], tile: tuple[str, str], load: object,
          store: object) -> None:
    """Fill an f16 tile of `dims` = (rows, cols, first global row, global rows): 16-byte vector
    loads when the operand is a suitable strided view (Operands.view), else element by
    element through the prologue."""
    b = ctx.body
    rows, cols, r0, r_max = dims
    view = ops.view(which)
    if view is None:
        _fill(ctx, tid, 32 * W_WARPS, rows, cols, load, store)
        return
    sh, ty = tile
    vty = f"vector<{VEC}xf16>"

    def vector_load(r: Index, c: Index) -> str:
        return ops.vector_or_zero(view, b.add(r0, r), c, r_max, rows)

    def vector_store(r: Index, c: Index, value: str) -> None:
        b.line(f"vector.store {value}, {sh}[{b.ix(r)}, {b.ix(b.mul(c, VEC))}] : {ty}, {vty}")

    _fill(ctx, tid, 32 * W_WARPS, rows, cols // VEC,
          lambda r, c: vector_load(r, b.mul(c, VEC)), vector_store)


def _shuffle_xor(ctx: KernelContext, value: str, offset: int) -> str:
    b = ctx.body
    out = b.fresh("sh")
    b.line(f"{out}:2 = gpu.shuffle xor {value}, {b.const(offset, 'i32')}, "
           f"{b.const(32, 'i32')} : f32")
    return f"{out}#0"


def _wmma_softmax(ctx: KernelContext, ops: Operands, p: Problem, tiles: tuple[str, ...],
                  wrow: Index, lane: Index, q0: Index, kt: str,
                  state: tuple[str, str]) -> tuple[str, str]:
    """Online-softmax step of this warp's 16 rows: lane owns row lane % 16, columns
    16 * (lane / 16) + [0, 16); P (f16) to p_sh, alpha over the lane's columns of s_sh."""
    b = ctx.body
    s_sh, s_ty, p_sh, p_ty = tiles
    m_old, l_old = state
    row = b.add(wrow, b.rem(lane, 16))
    c0 = b.mul(b.div(lane, 16), 16)
    grow = b.add(q0, row)
    scores = []
    for c in range(16):
        col = b.add(c0, c)
        raw = b.op(f"memref.load {s_sh}[{b.ix(row)}, {b.ix(col)}] : {s_ty}")
        scores.append(ops.score(raw, grow, b.add(kt, col), (W_BM, W_BN)))
    tile_max = scores[0]
    for s in scores[1:]:
        tile_max = _max(ctx, tile_max, s)
    tile_max = _max(ctx, tile_max, _shuffle_xor(ctx, tile_max, 16))
    m_new = _max(ctx, m_old, tile_max)
    total = b.const(0.0, "f32")
    for c, s in enumerate(scores):
        pr = _exp(ctx, b.op(f"arith.subf {s}, {m_new} : f32"))
        total = b.op(f"arith.addf {total}, {pr} : f32")
        h = b.op(f"arith.truncf {pr} : f32 to f16")
        b.line(f"memref.store {h}, {p_sh}[{b.ix(row)}, {b.ix(b.add(c0, c))}] : {p_ty}")
    total = b.op(f"arith.addf {total}, {_shuffle_xor(ctx, total, 16)} : f32")
    alpha = _exp(ctx, b.op(f"arith.subf {m_old}, {m_new} : f32"))
    for c in range(16):
        b.line(f"memref.store {alpha}, {s_sh}[{b.ix(row)}, {b.ix(b.add(c0, c))}] : {s_ty}")
    return m_new, b.op(f"math.fma {l_old}, {alpha}, {total} : f32")


def _wmma_store(ctx: KernelContext, ops: Operands, p: Problem, res: str,
                s_tile: tuple[str, str, int], inv: tuple[str, str], wrow: Index, lane: Index,
                q0: Index) -> None:
    """O / l to the output: fragments staged through s_sh 32 columns at a time, lane = column."""
    b = ctx.body
    s_sh, s_ty, ls = s_tile
    inv_sh, inv_ty = inv
    n_o = p.dv // 16
    first = b.op(f"arith.cmpi ult, {b.ix(lane)}, {b.ix(16)} : index")
    b.line(f"scf.if {first} {{")
    with b.nested():
        recip = b.op(f"arith.divf {b.const(1.0, 'f32')}, {res}#1 : f32")
        b.line(f"memref.store {recip}, {inv_sh}[{b.ix(b.add(wrow, lane))}] : {inv_ty}")
    b.line("}")
    for pair in range(0, n_o, 2):
        b.line("gpu.barrier")
        for c in range(pair, min(pair + 2, n_o)):
            b.line(f"gpu.subgroup_mma_store_matrix {res}#{2 + c}, {s_sh}[{b.ix(wrow)}, "
                   f"{b.ix(16 * (c - pair))}] {{leadDimension = {ls} : index}} : {C_TY}, {s_ty}")
        b.line("gpu.barrier")
        col = b.add(lane, 32 * (pair // 2))
        for r in range(16):
            row = b.add(wrow, r)
            value = b.op(f"memref.load {s_sh}[{b.ix(row)}, {b.ix(lane)}] : {s_ty}")
            scale = b.op(f"memref.load {inv_sh}[{b.ix(row)}] : {inv_ty}")
            value = b.op(f"arith.mulf {value}, {scale} : f32")
            ops.store(b.add(q0, row), col, value)
