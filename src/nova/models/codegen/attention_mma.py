"""The **mma** variant of the fused attention kernel (fp16 on tensor cores, FlashAttention-2
style): `nvgpu.ldmatrix` + `nvgpu.mma.sync` m16n8k16, whose register layouts are known
(nova.ir.dialects.nvgpu_mma), so the scores never leave registers.

A block of W warps owns BM = 16 W query rows; warp w owns rows 16w .. 16w + 15. Per lane
(`g = lane / 4`, `t = lane % 4`) every 16x8 accumulator fragment holds rows g and g + 8,
columns 2t and 2t + 1. The kernel:

- stages the block's Q tile in shared memory once and keeps the warp's Q fragments (d / 16
  ldmatrix.x4, A operands) in registers for the whole key loop;
- walks the keys in tiles of BN, K and V tiles double-buffered in shared memory (plain 16-byte
  vector loads are fetched into registers before the tile's math and stored to the other
  buffer after it, one block barrier per tile; operands that are no suitable strided view
  are loaded element by element after the math);
- S = Q K^T: per 8-key block, d / 16 mma.sync with B fragments from K rows (ldmatrix.x4: two
  16-column halves of the head dim at once, x2 when d is no multiple of 32);
- the online softmax on the S fragments in registers, in base 2 (`x log2 e`, exp2): each lane
  holds 2 rows' values; the row max over the quad of 4 lanes holding a row by 2 shuffles (xor
  1, 2); the row sum stays per lane (a partial over the lane's columns) and is combined across
  the quad once at the end;
- P = exp2(S - m) converted to f16 in registers is directly the A operand of O += P V: the
  accumulator layout of two neighbouring 8-key blocks is the m16n8k16 A layout of their 16 keys
  (registers: block 2j rows g / g + 8, then block 2j + 1), as in FlashAttention-2; V fragments
  by ldmatrix.x4.trans (two 8-column blocks at once);
- O is rescaled in registers by alpha = exp2(m_old - m_new) of each row;
- at the end O / l goes through the group's epilogue (out_perm layout), rows past the end not
  stored.

Shared memory is one f16 buffer of rows of `max(d, dv) + 8` halves (the 16-byte pad makes the
8 row addresses of every ldmatrix phase fall in distinct bank groups): two K buffers, then two
V buffers; the Q tile is staged at its start before the loop (it is read once). Tiles (BM, BN)
come from the node (passes/attention.py: `attention="fused-mma-BMxBN"`); when the
double-buffered tiles do not fit SHARED_LIMIT the kernel takes BN = 32 (`plan_tiles`). Masks,
the scale, ragged lengths (-inf keys, zero-filled rows, unstored query rows) and the
prologue/epilogue work as in the other variants (codegen/attention.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nova.models.codegen.attention import (
    NEG_INIT,
    SHARED_LIMIT,
    VEC,
    Operands,
    Problem,
    _block_origin,
    _fill,
    _grid,
    _max,
    _shuffle_xor,
)
from nova.models.codegen.context import GeneratedKernel, KernelContext
from nova.models.codegen.matmul import _guarded
from nova.models.codegen.text import Index
from nova.models.passes.fusion import KernelGroup

LOG2E = 1.4426950408889634
PAD = 8
"""Halves of padding per shared row (16 bytes)."""
A_TY = "vector<4x2xf16>"
B_TY = "vector<2x2xf16>"
C_TY = "vector<2x2xf32>"


@dataclass(frozen=True)
class Tiles:
    """The kernel's tiling: query rows per block, keys per tile, row width (halves)."""

    bm: int
    bn: int
    width: int

    @property
    def rows(self) -> int:
        """Rows of the shared buffer: 2 K buffers then 2 V buffers of BN rows (the Q tile is
        staged at the start)."""
        return max(self.bm, 4 * self.bn)

    @property
    def bytes(self) -> int:
        return 2 * self.rows * self.width


def plan_tiles(p: Problem, bm: int, bn: int) -> Tiles:
    """The asked (bm, bn), or BN 32 when its buffers exceed SHARED_LIMIT (head dims above 80
    with BN 64; BM <= 128 and head dims <= 128 always fit BN 32)."""
    tiles = Tiles(bm, bn, max(p.d, p.dv) + PAD)
    return tiles if tiles.bytes <= SHARED_LIMIT else Tiles(bm, 32, tiles.width)


class _Kernel:
    """State of one kernel being generated: problem, tiling, lane coordinates, the buffer."""

    def __init__(self, ctx: KernelContext, group: KernelGroup, p: Problem, tiles: Tiles) -> None:
        self.ctx, self.p, self.t = ctx, p, tiles
        b = ctx.body
        self.threads = 2 * tiles.bm  # 32 lanes per 16 rows
        self.tid = b.op("gpu.thread_id x")
        warp, self.lane = b.div(self.tid, 32), b.rem(self.tid, 32)
        self.wrow: Index = b.mul(warp, 16)
        self.g, self.quad = b.div(self.lane, 4), b.rem(self.lane, 4)
        self.bidx, self.q0 = _block_origin(ctx, p, tiles.bm)
        self.ops = Operands(ctx, group, p, self.bidx)
        self.buf, self.ty = ctx.shared_global("att_buf", (tiles.rows, tiles.width), "f16", 128)

    # ---- shared tiles -------------------------------------------------------------------

    def fetch(self, which: str, rows: int, cols: int, r0: Index, r_max: int) \
            -> list[tuple[Index, Index, str]] | None:
        """The 16-byte vectors of a rows x cols tile of operand `which` starting at global row
        r0 (this thread's share: (tile row, column, value)), or None when the operand is no
        vector view (then `put` loads it element by element)."""
        view = self.ops.view(which)
        if view is None:
            return None
        b = self.ctx.body
        chunks = rows * cols // VEC
        out = []
        for step in range(-(-chunks // self.threads)):
            e: Index = b.add(self.tid, step * self.threads)
            if (step + 1) * self.threads > chunks:  # a partial last round: repeat the last
                e = b.op(f"arith.minui {b.ix(e)}, {b.ix(chunks - 1)} : index")
            r, c = b.div(e, cols // VEC), b.mul(b.rem(e, cols // VEC), VEC)
            out.append((r, c, self.ops.vector_or_zero(view, b.add(r0, r), c, r_max, rows)))
        return out


    def put(self, which: str, fetched: list[tuple[Index, Index, str]] | None,
            dims: tuple[int, int, Index], dst_row: Index) -> None:
        """Store a fetched tile at buffer row `dst_row`, or (None) load and store it element by
        element; dims = (rows, cols, first global row)."""
        b = self.ctx.body
        if fetched is not None:
            for r, c, value in fetched:
                b.line(f"vector.store {value}, {self.buf}[{b.ix(b.add(dst_row, r))}, "
                       f"{b.ix(c)}] : {self.ty}, vector<{VEC}xf16>")
            return
        rows, cols, r0 = dims
        tile = self.t.bm if which == "q" else self.t.bn
        load: Callable[[Index, Index], str] = {
            "q": lambda r, c: self.ops.q(b.add(r0, r), c, tile),
            "k": lambda r, c: self.ops.k(b.add(r0, r), c, tile),
            "v": lambda r, c: self.ops.v(b.add(r0, r), c, tile)}[which]

        def store(r: Index, c: Index, value: str) -> None:
            h = b.op(f"arith.truncf {value} : f32 to f16")
            b.line(f"memref.store {h}, {self.buf}[{b.ix(b.add(dst_row, r))}, {b.ix(c)}] : "
                   f"{self.ty}")
        _fill(self.ctx, self.tid, self.threads, rows, cols, load, store)

    def load_kv(self, r0: Index) -> tuple[object, object]:
        p, bn = self.p, self.t.bn
        return self.fetch("k", bn, p.d, r0, p.sk), self.fetch("v", bn, p.dv, r0, p.sk)

    def put_kv(self, fetched: tuple[object, object], r0: Index, stage: Index) -> None:
        p, bn = self.p, self.t.bn
        b = self.ctx.body
        k, v = fetched
        self.put("k", k, (bn, p.d, r0), b.mul(stage, bn))  # type: ignore[arg-type]
        self.put("v", v, (bn, p.dv, r0), b.add(2 * bn, b.mul(stage, bn)))  # type: ignore[arg-type]

    # ---- fragments ------------------------------------------------------------------------

    def ldmatrix(self, row: Index, col: Index, tiles: int, trans: bool) -> str:
        b = self.ctx.body
        ty = {4: A_TY, 2: B_TY}[tiles]
        return b.op(f"nvgpu.ldmatrix {self.buf}[{b.ix(row)}, {b.ix(col)}] {{numTiles = "
                    f"{tiles} : i32, transpose = {'true' if trans else 'false'}}} : {self.ty} "
                    f"-> {ty}")

    def halves(self, frag: str) -> tuple[str, str]:
        """Registers 0-1 and 2-3 of an x4 fragment, as two B operands."""
        b = self.ctx.body
        flat = b.op(f"vector.shape_cast {frag} : {A_TY} to vector<8xf16>")
        out = []
        for lanes in ("0, 1, 2, 3", "4, 5, 6, 7"):
            part = b.op(f"vector.shuffle {flat}, {flat} [{lanes}] : vector<8xf16>, "
                        "vector<8xf16>")
            out.append(b.op(f"vector.shape_cast {part} : vector<4xf16> to {B_TY}"))
        return out[0], out[1]

    def mma(self, a: str, bop: str, c: str) -> str:
        return self.ctx.body.op(f"nvgpu.mma.sync({a}, {bop}, {c}) {{mmaShape = [16, 8, 16]}} : "
                                f"({A_TY}, {B_TY}, {C_TY}) -> {C_TY}")

    def q_fragments(self) -> list[str]:
        b = self.ctx.body
        row = b.add(self.wrow, b.rem(self.lane, 16))
        col = b.mul(b.div(self.lane, 16), 8)
        return [self.ldmatrix(row, b.add(col, 16 * kb), 4, False) for kb in range(self.p.d // 16)]

    def scores(self, q: list[str], kst: Index) -> list[str]:
        """S = Q K^T of this warp's rows and the tile's keys: one C fragment per 8 keys."""
        b, p = self.ctx.body, self.p
        zero = b.const(0.0, "f32")
        zero_c = b.op(f"vector.broadcast {zero} : f32 to {C_TY}")
        l8, q8 = b.rem(self.lane, 8), b.div(self.lane, 8)
        out = []
        for nb in range(self.t.bn // 8):
            row = b.add(b.add(kst, 8 * nb), l8)
            acc = zero_c
            if p.d % 32 == 0:
                for kb in range(0, p.d // 16, 2):
                    frag = self.ldmatrix(row, b.add(b.mul(q8, 8), 16 * kb), 4, False)
                    lo, hi = self.halves(frag)
                    acc = self.mma(q[kb + 1], hi, self.mma(q[kb], lo, acc))
            else:
                col8 = b.mul(b.rem(q8, 2), 8)
                for kb in range(p.d // 16):
                    acc = self.mma(q[kb], self.ldmatrix(row, b.add(col8, 16 * kb), 2, False), acc)
            out.append(acc)
        return out

    # ---- softmax and P V ------------------------------------------------------------------

    def log2_scores(self, s_frags: list[str], kt: Index) -> list[list[str]]:
        """Per fragment, its 4 elements (row g / g + 8, column 2t / 2t + 1) as
        `(s * scale [+ mask]) * log2 e`, -inf past the last key."""
        b, p = self.ctx.body, self.p
        factor = b.const(p.scale * LOG2E, "f32")
        log2e = b.const(LOG2E, "f32")
        ninf = b.const(float("-inf"), "f32")
        out = []
        for nb, frag in enumerate(s_frags):
            elems = []
            for i in range(2):
                row = b.add(self.q0, b.add(self.wrow, b.add(self.g, 8 * i)))
                for h in range(2):
                    key = b.add(kt, b.add(8 * nb + h, b.mul(self.quad, 2)))
                    s = b.op(f"vector.extract {frag}[{i}, {h}] : f32 from {C_TY}")
                    if p.mask is not None:
                        m = self.mask_value(p.mask, row, key)
                        scaled = b.op(f"arith.mulf {s}, {b.const(p.scale, 'f32')} : f32")
                        s = b.op(f"arith.mulf {b.op(f'arith.addf {scaled}, {m} : f32')}, "
                                 f"{log2e} : f32")
                    else:
                        s = b.op(f"arith.mulf {s}, {factor} : f32")
                    if p.sk % self.t.bn:
                        s = b.op(f"arith.select {b.lt(key, p.sk)}, {s}, {ninf} : f32")
                    elems.append(s)
            out.append(elems)
        return out

    def mask_value(self, mask: str, row: Index, key: Index) -> str:
        """mask[row, key] (f32, through the prologue), 0 outside the problem."""
        p, ops = self.p, self.ops
        guard = ops._guard([(row, p.sq, self.t.bm), (key, p.sk, self.t.bn)])
        return _guarded(self.ctx, guard, lambda: ops._value(mask, [*self.bidx, row, key],
                                                            (*p.batch, p.sq, p.sk)))

    def quad_max(self, value: str) -> str:
        for offset in (1, 2):
            value = _max(self.ctx, value, _shuffle_xor(self.ctx, value, offset))
        return value

    def quad_sum(self, value: str) -> str:
        b = self.ctx.body
        for offset in (1, 2):
            value = b.op(f"arith.addf {value}, {_shuffle_xor(self.ctx, value, offset)} : f32")
        return value

    def exp2_diff(self, x: str, y: str) -> str:
        """2^(x - y), x <= y: `fastmath<afn>`, so NVPTX uses `ex2.approx.ftz` (one instruction;
        the softmax tolerates its ~2 ulp, as FlashAttention's exp2f does)."""
        b = self.ctx.body
        return b.op(f"math.exp2 {b.op(f'arith.subf {x}, {y} : f32')} fastmath<afn> : f32")

    def softmax(self, x: list[list[str]], m_old: list[str], l_old: list[str]) \
            -> tuple[list[str], list[str], list[str], list[list[str]]]:
        """(m_new, l_new, alpha, P) for rows g and g + 8: P = exp2(x - m_new) per element,
        l_new = l_old alpha + this lane's columns of P."""
        b = self.ctx.body
        m_new, l_new, alpha = [], [], []
        for i in range(2):
            row = [e[2 * i + h] for e in x for h in range(2)]
            tile_max = row[0]
            for v in row[1:]:
                tile_max = _max(self.ctx, tile_max, v)
            m_new.append(_max(self.ctx, m_old[i], self.quad_max(tile_max)))
            alpha.append(self.exp2_diff(m_old[i], m_new[i]))
        probs = [[self.exp2_diff(v, m_new[k // 2]) for k, v in enumerate(e)] for e in x]
        for i in range(2):
            total = l_old[i]
            total = b.op(f"arith.mulf {total}, {alpha[i]} : f32")
            for e in probs:
                for h in range(2):
                    total = b.op(f"arith.addf {total}, {e[2 * i + h]} : f32")
            l_new.append(total)
        return m_new, l_new, alpha, probs

    def pv(self, probs: list[list[str]], o: list[str], vst: Index) -> list[str]:
        """O += P V over the tile's keys: P (f16) of 8-key blocks 2j, 2j + 1 is the A operand
        of keys 16j .. 16j + 15; V fragments by ldmatrix.x4.trans."""
        b = self.ctx.body
        l16, q16 = b.rem(self.lane, 16), b.div(self.lane, 16)
        col = b.mul(q16, 8)
        o = list(o)
        for j in range(self.t.bn // 16):
            halves = [b.op(f"arith.truncf {v} : f32 to f16")
                      for v in (*probs[2 * j], *probs[2 * j + 1])]
            a = b.op(f"vector.from_elements {', '.join(halves)} : {A_TY}")
            row = b.add(b.add(vst, 16 * j), l16)
            for nb in range(0, self.p.dv // 8, 2):
                lo, hi = self.halves(self.ldmatrix(row, b.add(col, 8 * nb), 4, True))
                o[nb] = self.mma(a, lo, o[nb])
                o[nb + 1] = self.mma(a, hi, o[nb + 1])
        return o

    def rescale(self, o: list[str], alpha: list[str]) -> list[str]:
        b = self.ctx.body
        scale = b.op(f"vector.from_elements {alpha[0]}, {alpha[0]}, {alpha[1]}, {alpha[1]} : "
                     f"{C_TY}")
        return [b.op(f"arith.mulf {frag}, {scale} : {C_TY}") for frag in o]

    def store(self, o: list[str], total: list[str]) -> None:
        b = self.ctx.body
        one = b.const(1.0, "f32")
        inv = [b.op(f"arith.divf {one}, {self.quad_sum(t)} : f32") for t in total]
        for nb, frag in enumerate(o):
            for i in range(2):
                row = b.add(self.q0, b.add(self.wrow, b.add(self.g, 8 * i)))
                for h in range(2):
                    v = b.op(f"vector.extract {frag}[{i}, {h}] : f32 from {C_TY}")
                    value = b.op(f"arith.mulf {v}, {inv[i]} : f32")
                    col = b.add(8 * nb + h, b.mul(self.quad, 2))
                    self.ops.store(row, col, value)


def mma_kernel(ctx: KernelContext, group: KernelGroup, p: Problem, bm: int, bn: int) \
        -> GeneratedKernel:
    """The FlashAttention-2 style kernel of a FusedAttention group (module docstring)."""
    tiles = plan_tiles(p, bm, bn)
    k = _Kernel(ctx, group, p, tiles)
    b = ctx.body
    bn = tiles.bn
    k.put("q", k.fetch("q", tiles.bm, p.d, k.q0, p.sq), (tiles.bm, p.d, k.q0), 0)
    b.line("gpu.barrier")
    q = k.q_fragments()
    b.line("gpu.barrier")  # the Q tile's rows are the K/V buffers' from here on
    n_tiles = -(-p.sk // bn)
    k.put_kv(k.load_kv(0), 0, 0)
    b.line("gpu.barrier")
    n_o = p.dv // 8
    kt, res = b.fresh("kt"), b.fresh("res")
    state = [b.fresh("st") for _ in range(4 + n_o)]
    zero = b.const(0.0, "f32")
    zero_c = b.op(f"vector.broadcast {zero} : f32 to {C_TY}")
    neg = b.const(NEG_INIT, "f32")
    init = [neg, neg, zero, zero] + [zero_c] * n_o
    types = ", ".join(["f32"] * 4 + [C_TY] * n_o)
    b.line(f"{res}:{len(state)} = scf.for {kt} = {b.ix(0)} to {ctx.opaque(n_tiles * bn)} "
           f"step {b.ix(bn)} iter_args("
           f"{', '.join(f'{s} = {i}' for s, i in zip(state, init, strict=True))}) -> "
           f"({types}) {{")
    with b.nested():
        stage = b.rem(b.div(kt, bn), 2)
        # the next tile (the last one again after the end: in bounds, never read) is fetched
        # into registers before this tile's math and stored to the other buffer after it
        nxt = b.op(f"arith.minui {b.ix(b.add(kt, bn))}, {b.ix((n_tiles - 1) * bn)} : index")
        fetched = k.load_kv(nxt)
        kst = b.mul(stage, bn)
        x = k.log2_scores(k.scores(q, kst), kt)
        m_new, l_new, alpha, probs = k.softmax(x, state[0:2], state[2:4])
        o = k.pv(probs, k.rescale(state[4:], alpha), b.add(2 * bn, kst))
        k.put_kv(fetched, nxt, b.op(f"arith.subi {b.ix(1)}, {b.ix(stage)} : index"))
        b.line("gpu.barrier")
        b.line(f"scf.yield {', '.join([*m_new, *l_new, *o])} : {types}")
    b.line("}")
    k.store([f"{res}#{4 + j}" for j in range(n_o)], [f"{res}#2", f"{res}#3"])
    return ctx.finish(_grid(p, tiles.bm), (k.threads, 1, 1))
