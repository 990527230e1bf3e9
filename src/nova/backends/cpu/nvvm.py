"""Lowering of Nova's basic `nvvm` ops (`nova.ir.dialects.nvvm`) on the CPU device.

The NVPTX lowering of the same ops is `nova.backends.nvptx.nvvm`.

CPU device (`CPU_HANDLERS`): the ops map onto what the gpu.* ops do there (`gpu_ops`):
register reads come from the thread/block contexts, `nvvm.barrier0` is the block barrier,
`nvvm.bar.warp.sync` the warp barrier (every existing lane of the warp; the mask is not
checked), `match.sync any` one slot exchange after which each lane compares every slot, and
`shfl.sync`/`vote.sync` exchange through the per-thread slots with warp barriers, as
`gpu.shuffle` does, so a kernel using them runs on fibers (`CPU_FIBER_OPS`). `shfl.sync`
follows PTX's definition exactly: with `c` = segment mask (bits 8-12) | clamp (bits 0-4),
minLane = lane & segmask, maxLane = minLane | (clamp & ~segmask), the source lane j is
lane ^ b (bfly), lane - b (up), lane + b (down) or minLane | (b & ~segmask) (idx), and a lane
whose j fails the clamp test (j > maxLane; up: j < maxLane) or names a lane that does not exist
(partial last warp) gets its own value back. The member mask is not checked on the CPU device
(every existing lane of the warp takes part); votes count the lanes that are both in `mask`
and exist. `clock`/`clock64` read the cycle counter; `globaltimer` has no CPU lowering.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.cpu import fibers as cf
from nova.backends.cpu import gpu_ops as cpu
from nova.backends.cpu.fibers import I64, State
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text
from nova.backends.llvm.target import Handler

I32 = T.I32

def _bind_i32(fe: FunctionEmitter, op: Operation, value: ir.Value) -> None:
    fe.bind(op.results[0], fe.builder.trunc(value, I32))


def _cpu_dim_sreg(register: str, dim: int) -> Handler:
    """`%tid.x` etc.: the gpu.* index value of the CPU device, as i32."""
    return lambda fe, op: _bind_i32(fe, op, cpu.index_field(fe, register, dim))


def _cycles(fe: FunctionEmitter) -> ir.Value:
    fn = fe.module.declare("llvm.readcyclecounter", ir.FunctionType(I64, []))
    return fe.builder.call(fn, [])


def _cpu_lane(fe: FunctionEmitter) -> ir.Value:
    _, lane, _, _ = cpu._lane_info(fe)
    return lane


def _cpu_scalar_sregs() -> dict[str, Handler]:
    def clock64(fe: FunctionEmitter, op: Operation) -> None:
        fe.bind(op.results[0], _cycles(fe))

    return {
        "nvvm.read.ptx.sreg.laneid": lambda fe, op: _bind_i32(fe, op, _cpu_lane(fe)),
        "nvvm.read.ptx.sreg.warpsize": lambda fe, op: fe.bind(op.results[0],
                                                              ir.Constant(I32, cf.WARP_SIZE)),
        "nvvm.read.ptx.sreg.clock": lambda fe, op: _bind_i32(fe, op, _cycles(fe)),
        "nvvm.read.ptx.sreg.clock64": clock64,
    }


def _ptx_source_lane(b: ir.IRBuilder, kind: str, lane: ir.Value, offset: ir.Value,
                     c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(source lane j, pval) of PTX `shfl.sync` for `lane` (all i64; see the docstring)."""
    clamp = b.and_(c, I64(0x1F))
    segmask = b.and_(b.lshr(c, I64(8)), I64(0x1F))
    not_seg = b.xor(segmask, I64(0x1F))
    min_lane = b.and_(lane, segmask)
    max_lane = b.or_(min_lane, b.and_(clamp, not_seg))
    sources: dict[str, Callable[[], ir.Value]] = {
        "bfly": lambda: b.xor(lane, offset),
        "up": lambda: b.sub(lane, offset),
        "down": lambda: b.add(lane, offset),
        "idx": lambda: b.or_(min_lane, b.and_(b.and_(offset, I64(0x1F)), not_seg)),
    }
    j = sources[kind]()
    if kind == "up":
        return j, b.icmp_signed(">=", j, max_lane)
    return j, b.icmp_signed("<=", j, max_lane)


def _cpu_shfl(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    _, value, offset, c = fe.operands(op)
    kind = enum_text(attr(op, "kind")) or ""
    linear, lane, base, lanes = cpu._lane_info(fe)
    b.store(value, cpu._slot(fe, linear))
    cpu._wait(fe, State.WAIT_WARP)
    j, ok = _ptx_source_lane(b, kind, lane, b.sext(offset, I64), b.zext(c, I64))
    ok = b.and_(ok, b.and_(b.icmp_signed(">=", j, I64(0)), b.icmp_signed("<", j, lanes)))
    src = b.select(ok, j, lane)
    result = b.load(cpu._slot(fe, b.add(base, src)), typ=value.type)
    cpu._wait(fe, State.WAIT_WARP)
    fe.bind(op.results[0], result)


def _cpu_ballot(fe: FunctionEmitter, mask: ir.Value, pred: ir.Value) -> ir.Value:
    """The i64 ballot of `pred` over the existing lanes of the warp that are in `mask`."""
    b = fe.builder
    linear, _, base, lanes = cpu._lane_info(fe)
    b.store(b.zext(pred, I64), cpu._slot(fe, linear))
    cpu._wait(fe, State.WAIT_WARP)
    acc = fe.alloca(I64)
    b.store(I64(0), acc)

    def step(b: ir.IRBuilder, i: ir.Value) -> None:
        bit = b.shl(b.load(cpu._slot(fe, b.add(base, i)), typ=I64), i)
        b.store(b.or_(b.load(acc, typ=I64), bit), acc)

    cf.counted_loop(b, lanes, step, "ballot")
    votes = b.and_(b.load(acc, typ=I64), b.zext(mask, I64))
    cpu._wait(fe, State.WAIT_WARP)
    return votes


def _cpu_match_any(fe: FunctionEmitter, op: Operation) -> None:
    """The lanes (of `mask`, existing) whose value equals the caller's: one exchange through
    the slots, then each lane compares every slot."""
    b = fe.builder
    mask, value = fe.operands(op)
    linear, _, base, lanes = cpu._lane_info(fe)
    b.store(value, cpu._slot(fe, linear))
    cpu._wait(fe, State.WAIT_WARP)
    acc = fe.alloca(I64)
    b.store(I64(0), acc)

    def step(b: ir.IRBuilder, i: ir.Value) -> None:
        other = b.load(cpu._slot(fe, b.add(base, i)), typ=value.type)
        bit = b.shl(b.zext(b.icmp_unsigned("==", other, value), I64), i)
        b.store(b.or_(b.load(acc, typ=I64), bit), acc)

    cf.counted_loop(b, lanes, step, "match")
    same = b.and_(b.load(acc, typ=I64), b.zext(mask, I64))
    cpu._wait(fe, State.WAIT_WARP)
    fe.bind(op.results[0], b.trunc(same, I32))


def _existing_lanes(fe: FunctionEmitter) -> ir.Value:
    """Bit i set for each lane i that exists in the calling warp (i64)."""
    b = fe.builder
    _, _, _, lanes = cpu._lane_info(fe)
    return b.sub(b.shl(I64(1), lanes), I64(1))


def _cpu_vote(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    mask, pred = fe.operands(op)
    kind = enum_text(attr(op, "kind")) or ""
    votes = _cpu_ballot(fe, mask, pred)
    if kind == "ballot":
        fe.bind(op.results[0], b.trunc(votes, I32))
        return
    members = b.and_(b.zext(mask, I64), _existing_lanes(fe))
    none = b.icmp_unsigned("==", votes, I64(0))
    every = b.icmp_unsigned("==", votes, members)
    result = {"any": lambda: b.not_(none), "all": lambda: every,
              "uni": lambda: b.or_(none, every)}[kind]()
    fe.bind(op.results[0], result)


CPU_HANDLERS: dict[str, Handler] = {
    **{f"nvvm.read.ptx.sreg.{reg}.{dim}": _cpu_dim_sreg(reg, i)
       for reg in ("tid", "ntid", "ctaid", "nctaid") for i, dim in enumerate("xyz")},
    **_cpu_scalar_sregs(),
    "nvvm.barrier0": cpu.lower_barrier,
    "nvvm.bar.warp.sync": cpu.lower_warp_barrier,
    "nvvm.match.sync": _cpu_match_any,
    "nvvm.shfl.sync": _cpu_shfl,
    "nvvm.vote.sync": _cpu_vote,
}
"""nvvm op name -> CPU device handler (no `globaltimer`: no CPU lowering)."""

CPU_FIBER_OPS = frozenset({"nvvm.barrier0", "nvvm.bar.warp.sync", "nvvm.match.sync",
                           "nvvm.shfl.sync", "nvvm.vote.sync"})
"""nvvm ops that make a CPU device kernel run its threads as fibers (they wait for others)."""
