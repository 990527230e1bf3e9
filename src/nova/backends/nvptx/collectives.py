"""Warp and block collectives for NVPTX: gpu.shuffle, gpu.all_reduce, gpu.subgroup_reduce.

Shuffles use `llvm.nvvm.shfl.sync.{bfly,up,down,idx}.i32p`, which also return the `valid`
predicate. The member mask is every lane of the calling warp that exists (all 32 unless the block
size is not a multiple of 32 and this is the last warp; a constant when the block size is known),
computed from the thread id rather than `activemask`, so it does not depend on how converged
the warp happens to be, and never names lanes that do not exist. The `c`
operand follows MLIR's NVVM lowering for xor/down/idx (clamp = width - 1) and CUDA's segmented
encoding for up (`(32 - width) << 8`, i.e. shuffles stay within each `width`-lane segment).
Values wider than 32 bits are shuffled as two halves; narrower ones (i1/i8/i16/f16/bf16) are
widened to i32 and narrowed back.

Reductions never assume identity elements: a warp reduces with `shfl.down` whose clamp is the
number of existing lanes, combining only where the predicate says the source lane exists, so
lane 0 (or the cluster leader) ends with the exact result for any lane count; the result is then
broadcast with `shfl.idx`. `gpu.all_reduce` on more than one warp writes each warp's partial to
a 33-slot shared array, reduces the partials in warp 0, and publishes the total in slot 32
(two barriers; safe to repeat in loops). Any block size <= 1024 and any 3-D shape works.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text, int_attr
from nova.backends.llvm.ops_arith import icmp
from nova.backends.llvm.target import Handler
from nova.backends.nvptx.target import (
    WARP_SIZE,
    barrier,
    block_size,
    known_block_size,
    linear_thread_id,
    sreg,
)

Combine = Callable[[ir.Value, ir.Value], ir.Value]
MODES = {"xor": "bfly", "up": "up", "down": "down", "idx": "idx"}


def _c32(value: int) -> ir.Constant:
    return ir.Constant(T.I32, value)


def _shfl32(fe: FunctionEmitter, mode: str, value: ir.Value, b_op: ir.Value, c_op: ir.Value,
            mask: ir.Value) -> tuple[ir.Value, ir.Value]:
    pair = ir.LiteralStructType([T.I32, T.I1])
    fn = fe.module.declare(f"llvm.nvvm.shfl.sync.{mode}.i32p",
                           ir.FunctionType(pair, [T.I32, T.I32, T.I32, T.I32]))
    res = fe.builder.call(fn, [mask, value, b_op, c_op])
    return fe.builder.extract_value(res, 0), fe.builder.extract_value(res, 1)


def shuffle(fe: FunctionEmitter, mode: str, value: ir.Value, b_op: ir.Value, c_op: ir.Value,
            mask: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Shuffle a scalar of any width (split/extended to i32 lanes). Returns (value, valid)."""
    b = fe.builder
    ty = value.type
    bits = T.element_size_llvm(ty) * 8 if not isinstance(ty, ir.IntType) else ty.width
    as_int = value if isinstance(ty, ir.IntType) else b.bitcast(value, ir.IntType(bits))
    if bits == 32:
        out, valid = _shfl32(fe, mode, as_int, b_op, c_op, mask)
    elif bits < 32:
        out, valid = _shfl32(fe, mode, b.zext(as_int, T.I32), b_op, c_op, mask)
        out = b.trunc(out, ir.IntType(bits))
    elif bits == 64:
        lo = b.trunc(as_int, T.I32)
        hi = b.trunc(b.lshr(as_int, ir.Constant(T.I64, 32)), T.I32)
        lo2, valid = _shfl32(fe, mode, lo, b_op, c_op, mask)
        hi2, _ = _shfl32(fe, mode, hi, b_op, c_op, mask)
        out = b.or_(b.zext(lo2, T.I64), b.shl(b.zext(hi2, T.I64), ir.Constant(T.I64, 32)))
    else:
        raise fe.unsupported_type("gpu.shuffle", ty)
    if not isinstance(ty, ir.IntType):
        out = b.bitcast(out, ty)
    return out, valid


def lower_shuffle(fe: FunctionEmitter, op: Operation) -> None:
    value, offset, width = fe.operands(op)
    mode = enum_text(attr(op, "mode")) or ""
    if mode not in MODES:
        raise fe.error(op, f"unknown shuffle mode {mode!r}")
    b = fe.builder
    up = mode == "up"
    # PTX: for .up the source lane j = lane - offset is valid when j >= maxLane, and maxLane is
    # the clamp (c[4:0]) when no segment mask is set; clamp 0 gives "j >= 0". CUDA's segmented
    # encoding ((32 - width) << 8) is only right for power-of-two widths (e.g. width 13 would
    # mark lane 3 <- lane 0 invalid), and upstream's `32 - width` clamp rejects most lanes, so
    # .up uses clamp 0. The other modes use clamp width - 1 (source lane <= width - 1).
    # In every mode a lane at or beyond `width` gets valid = false, as MLIR defines the op and
    # as the CPU device computes it (PTX alone would accept e.g. lane 20 xor 16 at width 16).
    c_op = _c32(0) if up else b.sub(width, _c32(1))
    mask = _lane_mask(fe, _lanes_in_warp(fe, linear_thread_id(fe), block_size(fe)))
    out, valid = shuffle(fe, MODES[mode], value, offset, c_op, mask)
    lane = sreg(fe, "laneid")
    valid = b.and_(valid, b.icmp_unsigned("<", lane, width))
    fe.bind(op.results[0], out)
    fe.bind(op.results[1], valid)


def combiner(fe: FunctionEmitter, op: Operation, kind: str | None) -> Combine:
    """The binary combine of a reduction: a named kind, or the op's region (gpu.yield)."""
    b = fe.builder
    if kind is None:
        region = op.regions[0]
        if len(region.blocks) != 1:
            raise fe.unsupported(op, "reduction regions with several blocks")
        block = region.blocks[0]

        def custom(x: ir.Value, y: ir.Value) -> ir.Value:
            term = fe.emit_inline(block, [x, y])
            if term.name not in ("gpu.yield", "scf.yield"):
                raise fe.error(term, f"reduction region must end in gpu.yield, not {term.name}")
            return fe.lookup(term.operands[0])
        return custom
    is_float = op.operands[0].type is not None and T.is_float(op.operands[0].type)
    if kind == "add":
        return b.fadd if is_float else b.add
    if kind == "mul":
        return b.fmul if is_float else b.mul
    if kind in ("and", "or", "xor"):
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[kind]
    if kind in ("minsi", "minui", "maxsi", "maxui"):
        pred = {"minsi": "slt", "minui": "ult", "maxsi": "sgt", "maxui": "ugt"}[kind]
        return lambda x, y: b.select(icmp(b, pred, x, y), x, y)
    intrinsic = {"minnumf": "llvm.minnum", "maxnumf": "llvm.maxnum",
                 "minimumf": "llvm.minimum", "maximumf": "llvm.maximum"}.get(kind)
    if intrinsic is None:
        raise fe.error(op, f"unknown reduction {kind!r}")
    return lambda x, y: b.call(fe.module.intrinsic(intrinsic, x.type, 2), [x, y])


def reduce_down(fe: FunctionEmitter, value: ir.Value, lanes: ir.Value, offsets: list[int],
                combine: Combine, mask: ir.Value) -> ir.Value:
    """Tree reduction toward lower lanes: at each offset, combine with lane+offset when that
    lane exists (lane + offset <= lanes - 1). The lowest lane of each group gets the total."""
    b = fe.builder
    c_op = b.sub(lanes, _c32(1))
    for off in offsets:
        other, valid = shuffle(fe, "down", value, _c32(off), c_op, mask)
        value = b.select(valid, combine(value, other), value)
    return value


def broadcast(fe: FunctionEmitter, value: ir.Value, src_lane: ir.Value,
              mask: ir.Value) -> ir.Value:
    out, _ = shuffle(fe, "idx", value, src_lane, _c32(WARP_SIZE - 1), mask)
    return out


def _lanes_in_warp(fe: FunctionEmitter, tid: ir.Value, nthreads: ir.Value) -> ir.Value:
    """min(32, nthreads - warp_start) for the calling thread's warp (i32)."""
    b = fe.builder
    warp_start = b.and_(tid, _c32(~(WARP_SIZE - 1)))
    left = b.sub(nthreads, warp_start)
    return b.select(b.icmp_unsigned("<", left, _c32(WARP_SIZE)), left, _c32(WARP_SIZE))


def _lane_mask(fe: FunctionEmitter, lanes: ir.Value) -> ir.Value:
    """Bit mask of lanes [0, lanes) (lanes in 1..32)."""
    b = fe.builder
    return b.lshr(_c32(-1), b.sub(_c32(32), lanes))


def lower_all_reduce(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    value = fe.lookup(op.operands[0])
    kind = enum_text(attr(op, "op"))
    combine = combiner(fe, op, kind)
    tid = linear_thread_id(fe)
    nthreads = block_size(fe)
    lanes = _lanes_in_warp(fe, tid, nthreads)
    mask = _lane_mask(fe, lanes)
    offsets = [16, 8, 4, 2, 1]
    partial = reduce_down(fe, value, lanes, offsets, combine, mask)
    known = known_block_size(fe.func_op)
    if known is not None and known[0] * known[1] * known[2] <= WARP_SIZE:
        fe.bind(op.results[0], broadcast(fe, partial, _c32(0), mask))
        return
    ty = value.type
    arr = ir.ArrayType(ty, WARP_SIZE + 1)
    gv = ir.GlobalVariable(fe.module.module, arr, fe.module.module.get_unique_name(
        "__nova_all_reduce"), addrspace=3)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(arr, ir.Undefined)
    gv.align = 8
    lane = b.and_(tid, _c32(WARP_SIZE - 1))
    warp = b.lshr(tid, _c32(5))
    base = M.opaque(b, gv)

    def slot(index: ir.Value) -> ir.Value:
        return b.gep(base, [_c32(0), index], inbounds=True, source_etype=arr)

    is_lane0 = b.icmp_unsigned("==", lane, _c32(0))
    with b.if_then(is_lane0):
        b.store(partial, slot(warp))
    barrier(fe)
    nwarps = b.lshr(b.add(nthreads, _c32(WARP_SIZE - 1)), _c32(5))
    with b.if_then(b.icmp_unsigned("==", warp, _c32(0))):
        mine = b.load(slot(b.select(b.icmp_unsigned("<", lane, nwarps), lane, _c32(0))), typ=ty)
        total = reduce_down(fe, mine, nwarps, offsets, combine, mask)
        with b.if_then(is_lane0):
            b.store(total, slot(_c32(WARP_SIZE)))
    barrier(fe)
    fe.bind(op.results[0], b.load(slot(_c32(WARP_SIZE)), typ=ty))


def lower_subgroup_reduce(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    value = fe.lookup(op.operands[0])
    combine = combiner(fe, op, enum_text(attr(op, "op")))
    size = int_attr(op, "cluster_size") or WARP_SIZE
    stride = int_attr(op, "cluster_stride") or 1
    if size & (size - 1) or size * stride > WARP_SIZE:
        raise fe.error(op, f"cluster size {size} with stride {stride} does not fit a 32-lane "
                           "subgroup as powers of two")
    tid = linear_thread_id(fe)
    lanes = _lanes_in_warp(fe, tid, block_size(fe))
    mask = _lane_mask(fe, lanes)
    offsets = []
    off = stride * size // 2
    while off >= stride:
        offsets.append(off)
        off //= 2
    partial = reduce_down(fe, value, lanes, offsets, combine, mask)
    lane = b.and_(tid, _c32(WARP_SIZE - 1))
    leader = b.and_(lane, _c32(~(stride * (size - 1)) & 0xFFFFFFFF))
    fe.bind(op.results[0], broadcast(fe, partial, leader, mask))


HANDLERS: dict[str, Handler] = {
    "gpu.shuffle": lower_shuffle,
    "gpu.all_reduce": lower_all_reduce,
    "gpu.subgroup_reduce": lower_subgroup_reduce,
}
