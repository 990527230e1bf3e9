"""Tiled GEMM kernels: MatMul (batched, broadcast batch dims, transposes, alpha) and Conv 2-D as an
implicit GEMM (the im2col matrix is never built: the B-tile loader gathers input pixels).

Each block computes a 64x64 output tile with 256 threads (16x16, 4x4 outputs per thread, strided
by 16 so a warp's shared-memory reads and global stores are contiguous). K advances in steps of
16: A and B tiles are staged in shared memory (fp32, whatever the storage type, so fp16/bf16
accumulate in fp32), one barrier after loading and one after use. The epilogue (bias,
activation, residual, scale) runs on the accumulators before the only global store.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from nova.models.codegen.context import GeneratedKernel, KernelContext, from_f32, to_f32
from nova.models.codegen.pointwise import Evaluator, store_epilogue
from nova.models.codegen.text import Index, broadcast_index
from nova.models.graph import Node
from nova.models.ops.nn import conv_params
from nova.models.passes.fusion import KernelGroup
from nova.models.passes.rewrite import gemv_rows

SMALL_TILE = (64, 64, 16, 4)   # BM, BN, BK, outputs per thread along m and n
BIG_TILE = (128, 128, 8, 8)
THREADS = 256

LoadFn = Callable[[Index, Index, Index], str]  # (batch, row, col) -> f32 value
StoreFn = Callable[[Index, Index, Index, str], None]  # (batch, m, n, f32 value)


def _and(ctx: KernelContext, conds: list[str]) -> str | None:
    b = ctx.body
    if not conds:
        return None
    acc = conds[0]
    for c in conds[1:]:
        acc = b.op(f"arith.andi {acc}, {c} : i1")
    return acc


def _guarded(ctx: KernelContext, cond: str | None, load: Callable[[], str]) -> str:
    """`load()` when `cond` holds (or always when None), else 0.0."""
    b = ctx.body
    if cond is None:
        return load()
    result = b.fresh("g")
    b.line(f"{result} = scf.if {cond} -> (f32) {{")
    with b.nested():
        b.line(f"scf.yield {load()} : f32")
    b.line("} else {")
    with b.nested():
        b.line(f"scf.yield {b.const(0.0, 'f32')} : f32")
    b.line("}")
    return result


def tiled_gemm(ctx: KernelContext, m: int, n: int, k: int, batches: int, load_a: LoadFn,
               load_b: LoadFn, a_k_fast: bool, b_n_fast: bool, store: StoreFn,
               staged: bool = False) -> GeneratedKernel:
    """C[batch, m, n] = sum_k A(batch, m, k) * B(batch, k, n); see the module doc.

    `a_k_fast`/`b_n_fast`: whether consecutive k (for A) / n (for B) are adjacent in memory, so
    the tile loaders let consecutive threads read consecutive addresses. `staged`: write the
    accumulators to shared memory and run one copy of the epilogue in a loop, instead of 16
    inlined copies (for epilogues with transcendental functions, whose 16 inlined copies made
    the cubin ~20x larger and ptxas seconds slower).

    Tiles: 128x128x8 with 8x8 outputs per thread when both M and N are at least 128 and the
    epilogue is not staged (twice the FMAs per shared-memory load of the 64x64x16 tile with
    4x4 per thread, used otherwise); 256 threads as 16x16 either way."""
    b = ctx.body
    tbm, tbn, tbk, per = BIG_TILE if m >= 128 and n >= 128 and not staged else SMALL_TILE
    a_sh = ctx.shared("tile_a", tbk * tbm)
    b_sh = ctx.shared("tile_b", tbk * tbn)
    tid = b.op("gpu.thread_id x")
    bx = b.op("gpu.block_id x")
    by = b.op("gpu.block_id y")
    bz: Index = b.op("gpu.block_id z") if batches > 1 else 0
    tx, ty = b.rem(tid, 16), b.div(tid, 16)
    m0, n0 = b.mul(by, tbm), b.mul(bx, tbn)
    zero = b.const(0.0, "f32")
    f32s = ", ".join(["f32"] * per * per)
    k_pad = -(-k // tbk) * tbk
    k0 = b.fresh("k")
    accs = [b.fresh("acc") for _ in range(per * per)]
    res = b.fresh("res")
    b.line(f"{res}:{per * per} = scf.for {k0} = {b.ix(0)} to {ctx.opaque(k_pad)} step {b.ix(tbk)} "
           f"iter_args({', '.join(f'{a} = {zero}' for a in accs)}) -> ({f32s}) {{")
    with b.nested():
        for r in range(tbm * tbk // THREADS):
            e = b.add(tid, THREADS * r)
            # A tile: tbm x tbk, stored k-major in shared memory
            am, ak = (b.div(e, tbk), b.rem(e, tbk)) if a_k_fast else (b.rem(e, tbm), b.div(e, tbm))
            gm, gk = b.add(m0, am), b.add(k0, ak)
            conds = ([b.lt(gm, m)] if m % tbm else []) + ([b.lt(gk, k)] if k % tbk else [])
            va = _guarded(ctx, _and(ctx, conds), partial(load_a, bz, gm, gk))
            b.line(f"memref.store {va}, {a_sh}[{b.ix(b.add(b.mul(ak, tbm), am))}] : "
                   f"memref<{tbk * tbm}xf32, #gpu.address_space<workgroup>>")
            # B tile: tbk x tbn
            bn_, bk = (b.rem(e, tbn), b.div(e, tbn)) if b_n_fast else (b.div(e, tbk), b.rem(e, tbk))
            gk2, gn = b.add(k0, bk), b.add(n0, bn_)
            conds = ([b.lt(gk2, k)] if k % tbk else []) + ([b.lt(gn, n)] if n % tbn else [])
            vb = _guarded(ctx, _and(ctx, conds), partial(load_b, bz, gk2, gn))
            b.line(f"memref.store {vb}, {b_sh}[{b.ix(b.add(b.mul(bk, tbn), bn_))}] : "
                   f"memref<{tbk * tbn}xf32, #gpu.address_space<workgroup>>")
        b.line("gpu.barrier")
        kk = b.fresh("kk")
        inner = [b.fresh("acc") for _ in range(per * per)]
        out = b.fresh("part")
        b.line(f"{out}:{per * per} = scf.for {kk} = {b.ix(0)} to {b.ix(tbk)} step {b.ix(1)} "
               f"iter_args({', '.join(f'{i} = {a}' for i, a in zip(inner, accs, strict=True))})"
               f" -> ({f32s}) {{")
        with b.nested():
            row = b.mul(kk, tbm)
            a_vals = [b.op(f"memref.load {a_sh}[{b.ix(b.add(row, b.add(ty, 16 * i)))}] : "
                           f"memref<{tbk * tbm}xf32, #gpu.address_space<workgroup>>")
                      for i in range(per)]
            row_b = b.mul(kk, tbn)
            b_vals = [b.op(f"memref.load {b_sh}[{b.ix(b.add(row_b, b.add(tx, 16 * j)))}] : "
                           f"memref<{tbk * tbn}xf32, #gpu.address_space<workgroup>>")
                      for j in range(per)]
            new = [b.op(f"math.fma {a_vals[i]}, {b_vals[j]}, {inner[i * per + j]} : f32")
                   for i in range(per) for j in range(per)]
            b.line(f"scf.yield {', '.join(new)} : {f32s}")
        b.line("}")
        b.line("gpu.barrier")
        b.line(f"scf.yield {', '.join(f'{out}#{i}' for i in range(per * per))} : {f32s}")
    b.line("}")
    if staged:
        _staged_store(ctx, res, tx, ty, tid, m0, n0, m, n, bz, store, (tbm, tbn, per))
        return ctx.finish((-(-n // tbn), -(-m // tbm), batches), (THREADS, 1, 1))
    for i in range(per):
        for j in range(per):
            gm, gn = b.add(m0, b.add(ty, 16 * i)), b.add(n0, b.add(tx, 16 * j))
            _guarded_store(ctx, store, bz, gm, gn, f"{res}#{i * per + j}", (m, n), (tbm, tbn))
    grid = (-(-n // tbn), -(-m // tbm), batches)
    return ctx.finish(grid, (THREADS, 1, 1))


def _guarded_store(ctx: KernelContext, store: StoreFn, bz: Index, gm: Index, gn: Index,
                   value: str, shape: tuple[int, int], tile: tuple[int, int]) -> None:
    """Store one output element through the epilogue, guarded by `gm < m` / `gn < n` only along
    the dimensions the tile does not divide (a full tile needs no test)."""
    b = ctx.body
    (m, n), (tile_m, tile_n) = shape, tile
    conds = ([b.lt(gm, m)] if m % tile_m else []) + ([b.lt(gn, n)] if n % tile_n else [])
    cond = _and(ctx, conds)
    if cond is None:
        store(bz, gm, gn, value)
        return
    b.line(f"scf.if {cond} {{")
    with b.nested():
        store(bz, gm, gn, value)
    b.line("}")


def _staged_store(ctx: KernelContext, res: str, tx: Index, ty: Index, tid: str, m0: Index,
                  n0: Index, m: int, n: int, bz: Index, store: StoreFn,
                  tile: tuple[int, int, int]) -> None:
    b = ctx.body
    tbm, tbn, per = tile
    c_sh = ctx.shared("tile_c", tbm * tbn)
    c_ty = f"memref<{tbm * tbn}xf32, #gpu.address_space<workgroup>>"
    for i in range(per):
        for j in range(per):
            at = b.add(b.mul(b.add(ty, 16 * i), tbn), b.add(tx, 16 * j))
            b.line(f"memref.store {res}#{i * per + j}, {c_sh}[{b.ix(at)}] : {c_ty}")
    b.line("gpu.barrier")
    r = b.fresh("r")
    b.line(f"scf.for {r} = {b.ix(0)} to {ctx.opaque(tbm * tbn // THREADS)} step {b.ix(1)} {{")
    with b.nested():
        e = b.add(b.mul(r, THREADS), tid)
        lm, ln = b.div(e, tbn), b.rem(e, tbn)
        gm, gn = b.add(m0, lm), b.add(n0, ln)
        value = b.op(f"memref.load {c_sh}[{b.ix(e)}] : {c_ty}")
        _guarded_store(ctx, store, bz, gm, gn, value, (m, n), (tbm, tbn))
    b.line("}")


HEAVY = frozenset({"Gelu", "Erf", "Tanh", "Exp", "Sigmoid", "Silu", "Log", "Pow", "Sqrt"})


def _heavy(group: KernelGroup) -> bool:
    """Whether the epilogue calls transcendental functions (then it is emitted once)."""
    return any(node.op in HEAVY for node in group.nodes)


def _batch_offset(ctx: KernelContext, bz: Index, out_batch: tuple[int, ...],
                  in_batch: tuple[int, ...], matrix: int) -> Index:
    """Element offset of batch `bz` (row-major over `out_batch`) in an operand whose batch dims
    `in_batch` broadcast to it."""
    b = ctx.body
    if math.prod(in_batch) == 1:
        return 0
    if in_batch == out_batch:
        return b.mul(bz, matrix)
    idx = b.delinearize(bz, out_batch)
    sub = broadcast_index(idx, out_batch, in_batch)
    return b.mul(b.linear(sub, in_batch), matrix)


def matmul_kernel(ctx: KernelContext, group: KernelGroup, node: Node) -> GeneratedKernel:
    """A MatMul anchor (see nova.models.ops.nn) with its epilogue."""
    b = ctx.body
    a_name, b_name = node.inputs
    a_shape, b_shape = ctx.shape(a_name), ctx.shape(b_name)
    out = node.outputs[0]
    out_shape = ctx.shape(out)
    ta, tb = int(node.attrs.get("trans_a", 0)), int(node.attrs.get("trans_b", 0))
    alpha = float(node.attrs.get("alpha", 1.0))
    m, n = out_shape[-2], out_shape[-1]
    k = a_shape[-2] if ta else a_shape[-1]
    out_batch = out_shape[:-2]
    batches = math.prod(out_batch)
    ev = Evaluator(ctx, group)

    def through_prologue(name: str, shape: tuple[int, ...], bz: Index, row: Index,
                         col: Index) -> str:
        """An operand element computed by the group's prologue (index maps of a buffer)."""
        batch = b.delinearize(bz, out_batch) if out_batch else []
        idx = [*broadcast_index(batch, out_batch, shape[:-2]), row, col]
        with ev.scope():
            return to_f32(ctx, name, ev.value(name, idx))

    def load_a(bz: Index, gm: Index, gk: Index) -> str:
        if a_name in ev.members:
            return through_prologue(a_name, a_shape, bz, *((gk, gm) if ta else (gm, gk)))
        off = _batch_offset(ctx, bz, out_batch, a_shape[:-2], m * k)
        inner = b.add(b.mul(gk, m), gm) if ta else b.add(b.mul(gm, k), gk)
        return to_f32(ctx, a_name, ctx.load(a_name, b.add(off, inner)))

    def load_b(bz: Index, gk: Index, gn: Index) -> str:
        if b_name in ev.members:
            return through_prologue(b_name, b_shape, bz, *((gn, gk) if tb else (gk, gn)))
        off = _batch_offset(ctx, bz, out_batch, b_shape[:-2], k * n)
        inner = b.add(b.mul(gn, k), gk) if tb else b.add(b.mul(gk, n), gn)
        return to_f32(ctx, b_name, ctx.load(b_name, b.add(off, inner)))

    def store(bz: Index, gm: Index, gn: Index, value: str) -> None:
        if alpha != 1.0:
            value = b.op(f"arith.mulf {value}, {b.const(alpha, 'f32')} : f32")
        value = from_f32(ctx, out, value)
        idx = [*(b.delinearize(bz, out_batch) if out_batch else []), gm, gn]
        linear = b.add(b.mul(bz, m * n), b.add(b.mul(gm, n), gn))
        store_epilogue(ctx, ev, group, out, idx, linear, value)

    if _use_tensor_cores(ctx, a_name, b_name):
        def vec_a(bz: Index, gm: Index, gk: Index) -> str:
            ref, ty = ctx.buffer(a_name)
            off = _batch_offset(ctx, bz, out_batch, a_shape[:-2], m * k)
            at = b.add(off, b.add(b.mul(gm, k), gk))
            return b.op(f"vector.load {ref}[{b.ix(at)}] : {ty}, vector<{VEC}xf16>")

        def vec_b(bz: Index, gk: Index, gn: Index) -> str:
            ref, ty = ctx.buffer(b_name)
            off = _batch_offset(ctx, bz, out_batch, b_shape[:-2], k * n)
            at = b.add(off, b.add(b.mul(gk, n), gn))
            return b.op(f"vector.load {ref}[{b.ix(at)}] : {ty}, vector<{VEC}xf16>")

        return wmma_gemm(ctx, m, n, k, batches, load_a, load_b, not ta, not tb, store,
                         vec_a if not ta and k % VEC == 0 and a_name not in ev.members
                         else None,
                         vec_b if not tb and n % VEC == 0 and b_name not in ev.members
                         else None)
    return tiled_gemm(ctx, m, n, k, batches, load_a, load_b, not ta, not tb, store,
                      staged=_heavy(group))


def conv_kernel(ctx: KernelContext, group: KernelGroup, node: Node) -> GeneratedKernel:
    """A Conv anchor as an implicit GEMM per group: M = out channels of the group, N = batch *
    out pixels, K = in channels of the group * kernel window."""
    b = ctx.body
    x_name, w_name = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    nb, c, h, w = ctx.shape(x_name)
    co, ci, kh, kw = ctx.shape(w_name)
    out = node.outputs[0]
    _, _, oh, ow = ctx.shape(out)
    groups = int(node.attrs.get("group", 1))
    (sh, sw), (pt, pl, _pb, _pr), (dh, dw) = conv_params(node, (kh, kw))
    m, n, k = co // groups, nb * oh * ow, ci * kh * kw
    padded = any(node.attrs.get("pads") or [0])
    ev = Evaluator(ctx, group)

    def load_a(g: Index, gm: Index, gk: Index) -> str:
        row = b.add(b.mul(g, m), gm)
        return to_f32(ctx, w_name, ctx.load(w_name, b.add(b.mul(row, k), gk)))

    def load_b(g: Index, gk: Index, gn: Index) -> str:
        cin = b.add(b.mul(g, ci), b.div(gk, kh * kw))
        rest = b.rem(gk, kh * kw)
        ki, kj = b.div(rest, kw), b.rem(rest, kw)
        img, pix = b.div(gn, oh * ow), b.rem(gn, oh * ow)
        oy, ox = b.div(pix, ow), b.rem(pix, ow)
        iy = _signed_offset(ctx, b.add(b.mul(oy, sh), b.mul(ki, dh)), pt)
        ix = _signed_offset(ctx, b.add(b.mul(ox, sw), b.mul(kj, dw)), pl)

        def load() -> str:
            lin = b.linear([img, cin, iy, ix], (nb, c, h, w))
            return to_f32(ctx, x_name, ctx.load(x_name, lin))

        if not padded:
            return load()
        conds = []
        for v, size in ((iy, h), (ix, w)):
            if isinstance(v, int):
                continue
            conds.append(b.op(f"arith.cmpi sge, {v}, {b.ix(0)} : index"))
            conds.append(b.op(f"arith.cmpi slt, {v}, {b.ix(size)} : index"))
        return _guarded(ctx, _and(ctx, conds), load)

    def store(g: Index, gm: Index, gn: Index, value: str) -> None:
        cout = b.add(b.mul(g, m), gm)
        if bias is not None:
            bv = to_f32(ctx, bias, ctx.load(bias, cout))
            value = b.op(f"arith.addf {value}, {bv} : f32")
        value = from_f32(ctx, out, value)
        img, pix = b.div(gn, oh * ow), b.rem(gn, oh * ow)
        idx = [img, cout, b.div(pix, ow), b.rem(pix, ow)]
        linear = b.add(b.mul(b.add(b.mul(img, co), cout), oh * ow), pix)
        store_epilogue(ctx, ev, group, out, idx, linear, value)

    if _use_tensor_cores(ctx, x_name, w_name):
        return wmma_gemm(ctx, m, n, k, groups, load_a, load_b, True, True, store)
    return tiled_gemm(ctx, m, n, k, groups, load_a, load_b, True, True, store,
                      staged=_heavy(group))


VEC = 8  # f16 lanes of a 16-byte load


def _vector_tile(ctx: KernelContext, tid: str, rows: int, cols: int, r0: Index, c0: Index,
                 r_max: int, c_max: int, tile: str, tile_ty: str,
                 load: Callable[[Index, Index], str]) -> None:
    """Fill a rows x cols f16 tile (row-major in shared memory) with 16-byte vector loads;
    `load(row, col)` gives the vector at global (row, col..col+7). c_max % 8 == 0, so a vector
    is entirely inside or outside the matrix."""
    b = ctx.body
    per_row = cols // VEC
    vty = f"vector<{VEC}xf16>"
    for r in range(rows * per_row // W_THREADS):
        e = b.add(tid, W_THREADS * r)
        lr, lc = b.div(e, per_row), b.mul(b.rem(e, per_row), VEC)
        gr, gc = b.add(r0, lr), b.add(c0, lc)
        conds = ([b.lt(gr, r_max)] if r_max % rows else []) + ([b.lt(gc, c_max)]
                                                               if c_max % cols else [])
        cond = _and(ctx, conds)
        if cond is None:
            value = load(gr, gc)
        else:
            value = b.fresh("vt")
            b.line(f"{value} = scf.if {cond} -> ({vty}) {{")
            with b.nested():
                b.line(f"scf.yield {load(gr, gc)} : {vty}")
            b.line("} else {")
            with b.nested():
                zero = b.op(f"vector.broadcast {b.const(0.0, 'f16')} : f16 to {vty}")
                b.line(f"scf.yield {zero} : {vty}")
            b.line("}")
        b.line(f"vector.store {value}, {tile}[{b.ix(lr)}, {b.ix(lc)}] : {tile_ty}, {vty}")


def _use_tensor_cores(ctx: KernelContext, a: str, b: str) -> bool:
    """fp16 operands run on tensor cores (WMMA f16 x f16 -> f32); other dtypes on CUDA cores."""
    return ctx.tensor_cores and ctx.type_of(a).dtype == "float16" and \
        ctx.type_of(b).dtype == "float16"


def _signed_offset(ctx: KernelContext, value: Index, pad: int) -> Index:
    b = ctx.body
    if pad == 0:
        return value
    if isinstance(value, int):
        return value - pad
    return b.op(f"arith.subi {value}, {b.ix(pad)} : index")


WARPS = 8


def small_m_rows(ctx: KernelContext, node: Node) -> int | None:
    """Total rows of A when `node` runs as the GEMV kernel (see passes.rewrite.gemv_rows)."""
    return gemv_rows(ctx.graph, node)


def small_m_kernel(ctx: KernelContext, group: KernelGroup, node: Node, rows: int) \
        -> GeneratedKernel:
    """C[r, n] = alpha * sum_k A[r, k] * B[n, k] for few rows r (batch-1 Linear layers): one warp
    per output column n, lanes striding over K with 16-byte vector loads of B's row (read once,
    coalesced: the kernel runs at memory bandwidth), A's rows read alongside (they stay in L1),
    fp32 accumulation per lane, a warp reduction, then the epilogue and store by lane 0."""
    b = ctx.body
    a_name, b_name = node.inputs
    out = node.outputs[0]
    out_shape = ctx.shape(out)
    n_cols, k = out_shape[-1], ctx.shape(a_name)[-1]
    alpha = float(node.attrs.get("alpha", 1.0))
    a_dtype, b_dtype = ctx.type_of(a_name).dtype, ctx.type_of(b_name).dtype
    vec = 16 // max(1, np_itemsize(b_dtype))
    if k % vec or k % (16 // max(1, np_itemsize(a_dtype))) or a_dtype != b_dtype:
        vec = 1
    ev = Evaluator(ctx, group)
    tid = b.op("gpu.thread_id x")
    warp, lane = b.div(tid, 32), b.rem(tid, 32)
    col = b.add(b.mul(b.op("gpu.block_id x"), WARPS), warp)
    b.line(f"scf.if {b.lt(col, n_cols)} {{")
    with b.nested():
        a_ref, a_ty = ctx.buffer(a_name)
        b_ref, b_ty = ctx.buffer(b_name)
        st = a_ty.split("x")[-1].rstrip(">")
        vty = f"vector<{vec}x{st}>" if vec > 1 else st
        fty = f"vector<{vec}xf32>" if vec > 1 else "f32"
        zero = b.const(0.0, "f32")
        init = b.op(f"vector.broadcast {zero} : f32 to {fty}") if vec > 1 else zero
        kk = b.fresh("k")
        accs = [b.fresh("acc") for _ in range(rows)]
        res = b.fresh("dot")
        types = ", ".join([fty] * rows)
        start = b.mul(lane, vec)
        b.line(f"{res}:{rows} = scf.for {kk} = {b.ix(start)} to {ctx.opaque(k)} step "
               f"{b.ix(32 * vec)} iter_args({', '.join(f'{a} = {init}' for a in accs)}) -> "
               f"({types}) {{")
        with b.nested():
            w = _vload(ctx, b_ref, b_ty, b.add(b.mul(col, k), kk), vty, fty, st)
            new = []
            for r in range(rows):
                x = _vload(ctx, a_ref, a_ty, b.add(r * k, kk), vty, fty, st)
                new.append(b.op(f"math.fma {x}, {w}, {accs[r]} : {fty}"))
            b.line(f"scf.yield {', '.join(new)} : {types}")
        b.line("}")
        sums = []
        for r in range(rows):
            part = f"{res}#{r}"
            if vec > 1:
                part = b.op(f"vector.reduction <add>, {part} : {fty} into f32")
            sums.append(b.op(f"gpu.subgroup_reduce add {part} : (f32) -> f32"))
        first = b.op(f"arith.cmpi eq, {b.ix(lane)}, {b.ix(0)} : index")
        b.line(f"scf.if {first} {{")
        with b.nested():
            for r, total in enumerate(sums):
                value = total
                if alpha != 1.0:
                    value = b.op(f"arith.mulf {value}, {b.const(alpha, 'f32')} : f32")
                value = from_f32(ctx, out, value)
                idx = [*b.delinearize(r, out_shape[:-1]), col]
                store_epilogue(ctx, ev, group, out, idx, b.add(r * n_cols, col), value)
        b.line("}")
    b.line("}")
    return ctx.finish((-(-n_cols // WARPS), 1, 1), (32 * WARPS, 1, 1))


def np_itemsize(dtype: str) -> int:
    from nova.models.graph import numpy_dtype

    return numpy_dtype(dtype).itemsize


def _vload(ctx: KernelContext, ref: str, mem_ty: str, linear: Index, vty: str, fty: str,
           st: str) -> str:
    """A (vector) load converted to f32 lanes."""
    b = ctx.body
    if vty == st:
        raw = b.op(f"memref.load {ref}[{b.ix(linear)}] : {mem_ty}")
    else:
        raw = b.op(f"vector.load {ref}[{b.ix(linear)}] : {mem_ty}, {vty}")
    if st == "f32":
        return raw
    if st in ("f16", "bf16"):
        return b.op(f"arith.extf {raw} : {vty} to {fty}")
    if st == "f64":
        return b.op(f"arith.truncf {raw} : {vty} to {fty}")
    return b.op(f"arith.sitofp {raw} : {vty} to {fty}")


# ---- tensor cores (fp16 inputs): WMMA 16x16x16, fp32 accumulation -----------------------------

W_BM = W_BN = 64
W_BK = 32
W_THREADS = 128  # 4 warps in 2x2, each 32x32 = 2x2 fragments
A_LD, B_LD, C_LD = W_BK + 8, W_BN + 8, W_BN + 4  # padded leading dims (fewer bank conflicts)


def wmma_gemm(ctx: KernelContext, m: int, n: int, k: int, batches: int, load_a: LoadFn,
              load_b: LoadFn, a_k_fast: bool, b_n_fast: bool, store: StoreFn,
              vec_a: LoadFn | None = None, vec_b: LoadFn | None = None) -> GeneratedKernel:
    """The same contract as `tiled_gemm`, on tensor cores: A/B tiles staged in shared memory as
    f16 (64x32 and 32x64), each warp multiplies 2x2 fragments per 16-deep step with
    gpu.subgroup_mma_compute into fp32 accumulators, and the 64x64 result goes through shared
    memory so every thread can apply the epilogue element by element before the global store.
    `vec_a`/`vec_b`: loaders of 8 consecutive f16 along the tile's inner dimension (k for A, n for
    B) as one 16-byte `vector<8xf16>`, when the layout allows; tiles then take 2 vector loads per
    thread instead of 16 scalar loads with conversions."""
    b = ctx.body
    a_v, a_2d = ctx.shared_global("wa", (W_BM, A_LD), "f16")
    b_v, b_2d = ctx.shared_global("wb", (W_BK, B_LD), "f16")
    c_v, c_2d = ctx.shared_global("wc", (W_BM, C_LD), "f32")
    tid = b.op("gpu.thread_id x")
    bx, by = b.op("gpu.block_id x"), b.op("gpu.block_id y")
    bz: Index = b.op("gpu.block_id z") if batches > 1 else 0
    warp = b.div(tid, 32)
    wm, wn = b.mul(b.div(warp, 2), 32), b.mul(b.rem(warp, 2), 32)
    m0, n0 = b.mul(by, W_BM), b.mul(bx, W_BN)
    cty = '!gpu.mma_matrix<16x16xf32, "COp">'
    zero = b.const(0.0, "f32")
    init = b.op(f"gpu.subgroup_mma_constant_matrix {zero} : {cty}")
    k_pad = -(-k // W_BK) * W_BK
    k0 = b.fresh("k")
    accs = [b.fresh("acc") for _ in range(4)]
    res = b.fresh("res")
    ctys = ", ".join([cty] * 4)
    b.line(f"{res}:4 = scf.for {k0} = {b.ix(0)} to {ctx.opaque(k_pad)} step {b.ix(W_BK)} "
           f"iter_args({', '.join(f'{a} = {init}' for a in accs)}) -> ({ctys}) {{")
    with b.nested():
        if vec_a is not None:
            _vector_tile(ctx, tid, W_BM, W_BK, m0, k0, m, k, a_v, a_2d,
                         lambda row, col: vec_a(bz, row, col))
        else:
            for r in range(W_BM * W_BK // W_THREADS):
                e = b.add(tid, W_THREADS * r)
                am, ak = (b.div(e, W_BK), b.rem(e, W_BK)) if a_k_fast else (b.rem(e, W_BM),
                                                                             b.div(e, W_BM))
                gm, gk = b.add(m0, am), b.add(k0, ak)
                conds = ([b.lt(gm, m)] if m % W_BM else []) + ([b.lt(gk, k)] if k % W_BK
                                                               else [])
                va = _guarded(ctx, _and(ctx, conds), partial(load_a, bz, gm, gk))
                ha = b.op(f"arith.truncf {va} : f32 to f16")
                b.line(f"memref.store {ha}, {a_v}[{b.ix(am)}, {b.ix(ak)}] : {a_2d}")
        if vec_b is not None:
            _vector_tile(ctx, tid, W_BK, W_BN, k0, n0, k, n, b_v, b_2d,
                         lambda row, col: vec_b(bz, row, col))
        else:
            for r in range(W_BK * W_BN // W_THREADS):
                e = b.add(tid, W_THREADS * r)
                bn_, bk = (b.rem(e, W_BN), b.div(e, W_BN)) if b_n_fast else (b.div(e, W_BK),
                                                                              b.rem(e, W_BK))
                gk2, gn = b.add(k0, bk), b.add(n0, bn_)
                conds = ([b.lt(gk2, k)] if k % W_BK else []) + ([b.lt(gn, n)] if n % W_BN
                                                                else [])
                vb = _guarded(ctx, _and(ctx, conds),
                              partial(load_b, bz, gk2, gn))
                hb = b.op(f"arith.truncf {vb} : f32 to f16")
                b.line(f"memref.store {hb}, {b_v}[{b.ix(bk)}, {b.ix(bn_)}] : {b_2d}")
        b.line("gpu.barrier")
        cur = list(accs)
        for kk in range(0, W_BK, 16):
            a_frags = [b.op(f"gpu.subgroup_mma_load_matrix {a_v}[{b.ix(b.add(wm, 16 * i))}, "
                            f"{b.ix(kk)}] {{leadDimension = {A_LD} : index}} : {a_2d} -> "
                            '!gpu.mma_matrix<16x16xf16, "AOp">') for i in range(2)]
            b_frags = [b.op(f"gpu.subgroup_mma_load_matrix {b_v}[{b.ix(kk)}, "
                            f"{b.ix(b.add(wn, 16 * j))}] {{leadDimension = {B_LD} : index}} : "
                            f'{b_2d} -> !gpu.mma_matrix<16x16xf16, "BOp">') for j in range(2)]
            cur = [b.op(f"gpu.subgroup_mma_compute {a_frags[i]}, {b_frags[j]}, "
                        f"{cur[2 * i + j]} : !gpu.mma_matrix<16x16xf16, \"AOp\">, "
                        f'!gpu.mma_matrix<16x16xf16, "BOp"> -> {cty}')
                   for i in range(2) for j in range(2)]
        b.line("gpu.barrier")
        b.line(f"scf.yield {', '.join(cur)} : {ctys}")
    b.line("}")
    for i in range(2):
        for j in range(2):
            b.line(f"gpu.subgroup_mma_store_matrix {res}#{2 * i + j}, {c_v}"
                   f"[{b.ix(b.add(wm, 16 * i))}, {b.ix(b.add(wn, 16 * j))}] "
                   f"{{leadDimension = {C_LD} : index}} : {cty}, {c_2d}")
    b.line("gpu.barrier")
    step = b.fresh("r")
    b.line(f"scf.for {step} = {b.ix(0)} to {b.ix(W_BM * W_BN // W_THREADS)} step {b.ix(1)} {{")
    with b.nested():
        # elements tid, tid + 128, ...: consecutive threads store consecutive columns
        e = b.add(b.mul(step, W_THREADS), tid)
        lm, ln = b.div(e, W_BN), b.rem(e, W_BN)
        gm, gn = b.add(m0, lm), b.add(n0, ln)
        value = b.op(f"memref.load {c_v}[{b.ix(lm)}, {b.ix(ln)}] : {c_2d}")
        _guarded_store(ctx, store, bz, gm, gn, value, (m, n), (W_BM, W_BN))
    b.line("}")
    grid = (-(-n // W_BN), -(-m // W_BM), batches)
    return ctx.finish(grid, (W_THREADS, 1, 1))
