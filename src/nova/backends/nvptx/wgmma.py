"""Hopper warpgroup MMA (`nova.ir.dialects.nvvm_wgmma`) on NVPTX.

- `nvvm.wgmma.fence.aligned`, `.commit.group.sync.aligned`, `.wait.group.sync.aligned N` ->
  LLVM's `llvm.nvvm.wgmma.fence.sync.aligned`, `...commit_group.sync.aligned`,
  `...wait_group.sync.aligned(i64 N)` (PTX `wgmma.fence/commit_group/wait_group`).
- `nvvm.fence.proxy` (async kinds) -> `llvm.nvvm.fence.proxy.async[.global|.shared_cta]`.
- `nvvm.wgmma.mma_async` -> inline PTX, as upstream's NVVM-to-LLVM translation does (LLVM has no
  intrinsic for it): `wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<t>.<t> {d0, ..}, descA,
  descB, p, scaleA, scaleB, transA, transB;` with the N / 2 accumulator registers as `=f`
  outputs tied to the inputs (`0`, `1`, ...), the descriptors as `l` operands and the scale-d
  predicate set from an immediate (`setp.ne.b32 p, 1 or 0, 0`).

Modules using these ops need PTX target `sm_90a` (ptxas rejects wgmma on plain sm_90); the
compile driver picks it (nova.backends.nvptx.arch).
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler
from nova.backends.llvm.wgmma_common import check, check_fence, transposed
from nova.errors import UnsupportedError
from nova.ir.dialects.nvvm_wgmma import WGMMAScaleIn, WGMMAScaleOut, WgmmaWaitGroupOp


def check_arch(fe: FunctionEmitter, op: Operation) -> None:
    """A located UnsupportedError unless the target is sm_90 / sm_90a (compute capability 9.0,
    compiled for sm_90a): wgmma exists nowhere else."""
    arch = str(getattr(fe.target, "arch", ""))
    if arch not in ("sm_90", "sm_90a"):
        raise UnsupportedError(f"{op.name} needs a compute capability 9.0 (Hopper, sm_90a) "
                               f"GPU; the target is {arch}", fe.location(op))


def _void_intrinsic(name: str, *args: ir.Value) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        check_arch(fe, op)
        fn = fe.module.declare(name, ir.FunctionType(ir.VoidType(), [a.type for a in args]))
        fe.builder.call(fn, list(args))
    return handler


def lower_wait(fe: FunctionEmitter, op: Operation) -> None:
    assert isinstance(op, WgmmaWaitGroupOp)
    check_arch(fe, op)
    fn = fe.module.declare("llvm.nvvm.wgmma.wait_group.sync.aligned",
                           ir.FunctionType(ir.VoidType(), [T.I64]))
    fe.builder.call(fn, [ir.Constant(T.I64, op.pending)])


def mma_async_asm(n: int, type_ab: str, scale_d: bool, scale_a: int, scale_b: int,
                  trans_a: bool, trans_b: bool) -> tuple[str, str]:
    """(PTX template, LLVM constraint string) of one m64n<n>k16 f32 mma_async."""
    regs = n // 2
    outs = ", ".join(f"${i}" for i in range(regs))
    asm = ("{ .reg .pred p; "
           f"setp.ne.b32 p, {int(scale_d)}, 0; "
           f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{type_ab}.{type_ab} {{{outs}}}, "
           f"${2 * regs}, ${2 * regs + 1}, p, {scale_a}, {scale_b}, {int(trans_a)}, "
           f"{int(trans_b)}; }}")
    constraints = ",".join([*(["=f"] * regs), *(str(i) for i in range(regs)), "l", "l"])
    return asm, constraints


def lower_mma_async(fe: FunctionEmitter, op: Operation) -> None:
    mma = check(fe, op)
    check_arch(fe, op)
    b = fe.builder
    acc = fe.lookup(mma.inouts)
    desc_a, desc_b = fe.lookup(mma.descriptorA), fe.lookup(mma.descriptorB)
    regs = mma.n // 2
    trans_a, trans_b = transposed(mma)
    asm, constraints = mma_async_asm(
        mma.n, mma.types[0].value, WGMMAScaleOut(mma.scaleD.data) == WGMMAScaleOut.ONE,
        -1 if WGMMAScaleIn(mma.scaleA.data) == WGMMAScaleIn.NEG else 1,
        -1 if WGMMAScaleIn(mma.scaleB.data) == WGMMAScaleIn.NEG else 1, trans_a, trans_b)
    struct = ir.LiteralStructType([T.F32] * regs)
    fnty = ir.FunctionType(struct, [*([T.F32] * regs), T.I64, T.I64])
    inline = ir.InlineAsm(fnty, asm, constraints, side_effect=True)
    ins = [b.extract_value(acc, i) for i in range(regs)]
    fe.bind(mma.res, b.call(inline, [*ins, desc_a, desc_b]))


def lower_fence_proxy(fe: FunctionEmitter, op: Operation) -> None:
    """`llvm.nvvm.fence.proxy.async[.global|.shared_cta]` (PTX `fence.proxy.async...`)."""
    fence = check_fence(fe, op)
    check_arch(fe, op)
    suffix = {"async": "", "async.global": ".global", "async.shared": ".shared_cta"}
    fn = fe.module.declare(f"llvm.nvvm.fence.proxy.async{suffix[fence.proxy.value]}",
                           ir.FunctionType(ir.VoidType(), []))
    fe.builder.call(fn, [])


HANDLERS: dict[str, Handler] = {
    "nvvm.fence.proxy": lower_fence_proxy,
    "nvvm.wgmma.fence.aligned": _void_intrinsic("llvm.nvvm.wgmma.fence.sync.aligned"),
    "nvvm.wgmma.commit.group.sync.aligned":
        _void_intrinsic("llvm.nvvm.wgmma.commit_group.sync.aligned"),
    "nvvm.wgmma.wait.group.sync.aligned": lower_wait,
    "nvvm.wgmma.mma_async": lower_mma_async,
}
"""nvvm wgmma op name -> NVPTX handler."""
