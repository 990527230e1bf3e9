"""Small pointer helpers of the host lowering: entry-block stack slots, typed-safe GEPs, and the
first-element address of a memref descriptor.

Memref descriptors themselves are the core's (`nova.backends.llvm.memref.MemRefDescriptor`); these
helpers only add what host code needs around ABI calls (parameter arrays, copy/fill addresses).
"""

from __future__ import annotations

from llvmlite import ir

from nova.backends.host.abi import I64, PTR
from nova.backends.llvm.memref import MemRefDescriptor


def gep(builder: ir.IRBuilder, base: ir.Value, etype: ir.Type,
        indices: list[ir.Value]) -> ir.Value:
    """getelementptr over `etype` at `base`. llvmlite may type a pointer (e.g. an alloca); for
    those it derives the result type itself (giving a pointer the next store accepts)."""
    if not getattr(base.type, "is_opaque", True):
        return builder.gep(base, indices)
    return builder.gep(base, indices, source_etype=etype)


def entry_alloca(builder: ir.IRBuilder, typ: ir.Type, name: str = "") -> ir.Instruction:
    """A stack slot in the function's entry block, so that loops do not grow the stack."""
    entry = builder.function.entry_basic_block
    with builder.goto_block(entry):
        first = entry.instructions[0] if entry.instructions else None
        if first is not None:
            builder.position_before(first)
        slot = builder.alloca(typ, name=name)
    slot.type = PTR  # print and check it as the opaque `ptr` it is (llvmlite types allocas)
    return slot


def data_pointer(builder: ir.IRBuilder, desc: MemRefDescriptor, element_bytes: int) -> ir.Value:
    """`aligned + offset * element_bytes`: the address of a memref's first element."""
    offset = desc.offset
    if isinstance(offset, ir.Constant) and offset.constant == 0:
        return desc.aligned
    byte_offset = builder.mul(offset, ir.Constant(I64, element_bytes))
    return builder.gep(desc.aligned, [byte_offset], source_etype=ir.IntType(8))
