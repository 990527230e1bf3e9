"""The `nvgpu` asynchronous copies on the CPU device: the copy happens at once.

`device_async_copy` loads the `dstElements` source elements and stores them to the
destination before the thread goes on (one vector load and store); with srcElements only the
first min(srcElements, dstElements) are read, the rest are stored as zeros, as PTX's zero-fill.
Since every copy has landed when its op returns, `device_async_create_group` and
`device_async_wait` have nothing left to do: they emit no code. Programs stay correct exactly
when they are on the GPU: a thread that waits for its copies and then passes a barrier sees
every thread's copies; the CPU device gives the same results (it only cannot show a missing
wait). The NVPTX lowering is `nova.backends.nvptx.nvgpu`.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.async_copy_common import CopyOperands, bind_token, copy_operands
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler


def _zero_filled(fe: FunctionEmitter, c: CopyOperands, count: ir.Value) -> ir.Value:
    """The copied vector when only `count` (index) source elements are read: element i is
    src[i] for i < count, else zero; elements past `count` are never loaded."""
    b = fe.builder
    vec_ty = ir.VectorType(c.element_type, c.elements)
    slot = fe.alloca(vec_ty)
    b.store(ir.Constant(vec_ty, None), slot)
    for i in range(c.elements):
        index = ir.Constant(T.INDEX, i)
        with b.if_then(b.icmp_signed("<", index, count)):
            value = b.load(b.gep(c.src, [index], source_etype=c.element_type),
                           typ=c.element_type)
            old = b.load(slot, typ=vec_ty)
            b.store(b.insert_element(old, value, ir.Constant(T.I32, i)), slot)
    return b.load(slot, typ=vec_ty)


def _copy(fe: FunctionEmitter, op: Operation) -> None:
    c = copy_operands(fe, op)
    b = fe.builder
    vec_ty = ir.VectorType(c.element_type, c.elements)
    align = c.bits // 8
    if c.src_elements is None:
        value = b.load(c.src, typ=vec_ty, align=align)
    else:
        value = _zero_filled(fe, c, c.src_elements)
    b.store(value, c.dst, align=align)
    bind_token(fe, op)


HANDLERS: dict[str, Handler] = {
    "nvgpu.device_async_copy": _copy,
    "nvgpu.device_async_create_group": bind_token,
    "nvgpu.device_async_wait": lambda fe, op: None,
}
"""nvgpu op name -> CPU device handler."""
