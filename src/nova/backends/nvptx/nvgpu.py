"""The `nvgpu` asynchronous copies on NVPTX: the `cp.async` intrinsics, as upstream's
`--convert-nvgpu-to-nvvm` followed by the NVVM-to-LLVM translation emits them.

- `device_async_copy` -> `llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}(dst, src)`
  (PTX `cp.async.ca/cg.shared.global [dst], [src], bytes`): `.cg` (L2 only) with `bypassL1`,
  which the verifier allows for 16-byte copies only, else `.ca`. With srcElements, the `.s`
  variant takes the source size in bytes (srcElements * bits / 8 as i32): PTX reads that many
  bytes and zero-fills the rest. The destination is a shared (addrspace 3) pointer; a generic
  source pointer is cast to global (addrspace 1), as upstream does.
- `device_async_create_group` -> `llvm.nvvm.cp.async.commit.group()`.
- `device_async_wait` -> `llvm.nvvm.cp.async.wait.group(numGroups)`.

Tokens lower to a constant (they carry no data). The CPU device's lowering is
`nova.backends.cpu.nvgpu`.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.async_copy_common import bind_token, copy_operands
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler
from nova.ir.dialects.nvgpu import DeviceAsyncWaitOp

GLOBAL, SHARED = 1, 3


def _copy(fe: FunctionEmitter, op: Operation) -> None:
    c = copy_operands(fe, op)
    b = fe.builder
    dst, src = c.dst, c.src
    if dst.type.addrspace != SHARED:
        dst = b.addrspacecast(dst, ir.PointerType(addrspace=SHARED))
    if src.type.addrspace != GLOBAL:
        src = b.addrspacecast(src, ir.PointerType(addrspace=GLOBAL))
    cache = "cg" if c.bypass_l1 else "ca"
    name = f"llvm.nvvm.cp.async.{cache}.shared.global.{c.bytes}"
    args: list[ir.Value] = [dst, src]
    if c.src_elements is not None:
        name += ".s"
        bits = b.mul(b.trunc(c.src_elements, T.I32), ir.Constant(T.I32, c.bits))
        args.append(b.lshr(bits, ir.Constant(T.I32, 3)))
    fn = fe.module.declare(name, ir.FunctionType(T.VOID, [a.type for a in args]))
    b.call(fn, args)
    bind_token(fe, op)


def _create_group(fe: FunctionEmitter, op: Operation) -> None:
    fn = fe.module.declare("llvm.nvvm.cp.async.commit.group", ir.FunctionType(T.VOID, []))
    fe.builder.call(fn, [])
    bind_token(fe, op)


def _wait(fe: FunctionEmitter, op: Operation) -> None:
    assert isinstance(op, DeviceAsyncWaitOp)
    fn = fe.module.declare("llvm.nvvm.cp.async.wait.group", ir.FunctionType(T.VOID, [T.I32]))
    fe.builder.call(fn, [ir.Constant(T.I32, op.groups)])


HANDLERS: dict[str, Handler] = {
    "nvgpu.device_async_copy": _copy,
    "nvgpu.device_async_create_group": _create_group,
    "nvgpu.device_async_wait": _wait,
}
"""nvgpu op name -> NVPTX handler."""
