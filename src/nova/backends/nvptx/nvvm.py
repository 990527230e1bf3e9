"""Lowering of Nova's basic `nvvm` ops (`nova.ir.dialects.nvvm`) on NVPTX.

Each op is the NVVM intrinsic MLIR's NVVM-to-LLVM translation emits:
`llvm.nvvm.read.ptx.sreg.<register>`, `llvm.nvvm.barrier.cta.sync.aligned.all(0)` (as
`gpu.barrier`), `llvm.nvvm.bar.warp.sync(mask)`, `llvm.nvvm.match.any.sync.i32/i64`,
`llvm.nvvm.shfl.sync.<kind>` (through the shared shuffle helper of
`nova.backends.nvptx.collectives`, operands passed through unchanged) and
`llvm.nvvm.vote.<kind>.sync`. The CPU device's lowering of the same ops is
`nova.backends.cpu.nvvm`.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text
from nova.backends.llvm.target import Handler
from nova.backends.nvptx import collectives as nvptx_collectives
from nova.backends.nvptx.target import barrier
from nova.ir.dialects.nvvm import SREG_REGISTERS

I32 = T.I32


def _nvptx_sreg(register: str, width: int) -> Handler:
    """Read `%<register>` through its `llvm.nvvm.read.ptx.sreg.*` intrinsic."""
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        ty = ir.IntType(width)
        fn = fe.module.declare(f"llvm.nvvm.read.ptx.sreg.{register}", ir.FunctionType(ty, []))
        fe.bind(op.results[0], fe.builder.call(fn, []))
    return handler


def _nvptx_barrier0(fe: FunctionEmitter, op: Operation) -> None:
    barrier(fe)


def _nvptx_bar_warp_sync(fe: FunctionEmitter, op: Operation) -> None:
    (mask,) = fe.operands(op)
    fn = fe.module.declare("llvm.nvvm.bar.warp.sync", ir.FunctionType(ir.VoidType(), [I32]))
    fe.builder.call(fn, [mask])


def _nvptx_match_any(fe: FunctionEmitter, op: Operation) -> None:
    mask, value = fe.operands(op)
    width = value.type.width
    fn = fe.module.declare(f"llvm.nvvm.match.any.sync.i{width}",
                           ir.FunctionType(I32, [I32, value.type]))
    fe.bind(op.results[0], fe.builder.call(fn, [mask, value]))


def _nvptx_shfl(fe: FunctionEmitter, op: Operation) -> None:
    mask, value, offset, c = fe.operands(op)
    kind = enum_text(attr(op, "kind")) or ""
    out, _ = nvptx_collectives.shuffle(fe, kind, value, offset, c, mask)
    fe.bind(op.results[0], out)


def _nvptx_vote(fe: FunctionEmitter, op: Operation) -> None:
    mask, pred = fe.operands(op)
    kind = enum_text(attr(op, "kind")) or ""
    ret = I32 if kind == "ballot" else T.I1
    fn = fe.module.declare(f"llvm.nvvm.vote.{kind}.sync",
                           ir.FunctionType(ret, [I32, T.I1]))
    fe.bind(op.results[0], fe.builder.call(fn, [mask, pred]))


NVPTX_HANDLERS: dict[str, Handler] = {
    **{f"nvvm.read.ptx.sreg.{r}": _nvptx_sreg(r, w) for r, w in SREG_REGISTERS},
    "nvvm.barrier0": _nvptx_barrier0,
    "nvvm.bar.warp.sync": _nvptx_bar_warp_sync,
    "nvvm.match.sync": _nvptx_match_any,
    "nvvm.shfl.sync": _nvptx_shfl,
    "nvvm.vote.sync": _nvptx_vote,
}
"""nvvm op name -> NVPTX handler."""
