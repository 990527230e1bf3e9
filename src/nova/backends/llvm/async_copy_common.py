"""What the NVPTX and CPU lowerings of the `nvgpu` asynchronous copies share: the operands of a
`nvgpu.device_async_copy` as LLVM values, after the checks the verifier leaves to the lowering
(one located error text for both devices), and under `check_bounds` the run-time check that a
copy's first and last element lie inside both memrefs.

The verifier (nova.ir.dialects.nvgpu) already holds upstream's rules (shared destination, equal
element types, 4/8/16 bytes); upstream accepts any source memory space and casts the pointer to
global, which is undefined for shared or private memory, so the lowering rejects those here.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import MemRefType, NoneAttr
from xdsl.ir import Operation

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.ops_memref import check_indices
from nova.errors import LoweringError
from nova.ir.dialects.nvgpu import DeviceAsyncCopyOp, element_bits, type_text
from nova.ir.gpu.base import AddressSpace, address_space_of


@dataclass(frozen=True)
class CopyOperands:
    """One `device_async_copy` lowered: element pointers, sizes, the optional source count."""

    dst: ir.Value
    src: ir.Value
    elements: int             # dstElements
    element_type: ir.Type     # the LLVM element type
    bits: int                 # bits per element
    src_elements: ir.Value | None  # srcElements (index), None when absent
    bypass_l1: bool

    @property
    def bytes(self) -> int:
        return self.elements * self.bits // 8


def _check_source(fe: FunctionEmitter, op: DeviceAsyncCopyOp, ty: MemRefType) -> None:
    space = ty.memory_space
    if isinstance(space, NoneAttr) or address_space_of(space) == AddressSpace.GLOBAL:
        return
    raise LoweringError(f"'{op.name}' reads global memory: its source must be a memref in the "
                        f"default or global memory space, got {type_text(ty)}", fe.location(op))


def _check_bounds(fe: FunctionEmitter, op: DeviceAsyncCopyOp, memref_index: int,
                  desc: M.MemRefDescriptor, indices: list[ir.Value]) -> None:
    """Under `check_bounds`: the copy's first and last element (innermost index + count - 1)
    must lie inside the memref (the failure names the op, the memref and the bad index)."""
    check_indices(fe, op, memref_index, desc, indices)
    if op.elements > 1 and indices:
        last = fe.builder.add(indices[-1], ir.Constant(indices[-1].type, op.elements - 1))
        check_indices(fe, op, memref_index, desc, [*indices[:-1], last])


def copy_operands(fe: FunctionEmitter, op: Operation) -> CopyOperands:
    """The pointers and sizes of a `nvgpu.device_async_copy` (located errors for what cannot
    be lowered)."""
    assert isinstance(op, DeviceAsyncCopyOp)
    src_ty, dst_ty = op.src.type, op.dst.type
    assert isinstance(src_ty, MemRefType) and isinstance(dst_ty, MemRefType)
    _check_source(fe, op, src_ty)
    bits = element_bits(dst_ty.element_type)
    if bits is None or bits % 8:
        raise LoweringError(f"'{op.name}' of {dst_ty.element_type} elements is not supported "
                            "(elements of whole bytes only)", fe.location(op))
    b = fe.builder
    dst_desc, src_desc = fe.lookup_memref(op.dst), fe.lookup_memref(op.src)
    dst_idx = [fe.lookup(v) for v in op.dstIndices]
    src_idx = [fe.lookup(v) for v in op.srcIndices]
    if fe.target.check_bounds:
        _check_bounds(fe, op, 0, dst_desc, dst_idx)
        _check_bounds(fe, op, 1 + len(dst_idx), src_desc, src_idx)
    dst = dst_desc.element_pointer(b, dst_idx)
    src = src_desc.element_pointer(b, src_idx)
    count = None if op.srcElements is None else fe.lookup(op.srcElements)
    return CopyOperands(dst, src, op.elements, T.scalar_type(dst_ty.element_type), bits, count,
                        op.bypassL1 is not None)


def bind_token(fe: FunctionEmitter, op: Operation) -> None:
    """Tokens carry no data: bind the op's token result to a constant of its lowered type."""
    for res in op.results:
        fe.bind(res, ir.Constant(fe.lower_type(res.type), 0))
