"""Memref descriptors in host LLVM IR: reading, building, expanding and type-erasing them.

A ranked memref is MLIR's descriptor `{ptr allocated, ptr aligned, i64 offset, [R x i64] sizes,
[R x i64] strides}` (the size/stride arrays are absent for rank 0 when the core's type mapping
says so: every helper here reads the struct it is given rather than assuming). An unranked memref
is `{i64 rank, ptr descriptor}` where the descriptor is a stack copy of the ranked one. These
helpers serve kernel parameter arrays, entry wrappers, runtime memory calls and runner utilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from nova.backends.llvm.host_abi import I64, PTR

UNRANKED = ir.LiteralStructType([I64, PTR])
"""`memref<*xT>` lowered: (rank, pointer to a ranked descriptor)."""

ALLOCATED, ALIGNED, OFFSET, SIZES, STRIDES = range(5)


def descriptor_type(rank: int) -> ir.LiteralStructType:
    """The ranked descriptor struct of a memref of `rank` dimensions."""
    if rank == 0:
        return ir.LiteralStructType([PTR, PTR, I64])
    array = ir.ArrayType(I64, rank)
    return ir.LiteralStructType([PTR, PTR, I64, array, array])


def rank_of(desc_type: ir.Type) -> int:
    """The rank a descriptor struct type encodes."""
    if not isinstance(desc_type, ir.LiteralStructType) or len(desc_type.elements) not in (3, 5):
        raise TypeError(f"not a memref descriptor type: {desc_type}")
    if len(desc_type.elements) == 3:
        return 0
    return desc_type.elements[SIZES].count


@dataclass(frozen=True)
class Descriptor:
    """The fields of one ranked descriptor as SSA values (sizes/strides one value per dimension)."""

    allocated: ir.Value
    aligned: ir.Value
    offset: ir.Value
    sizes: tuple[ir.Value, ...]
    strides: tuple[ir.Value, ...]

    @property
    def rank(self) -> int:
        return len(self.sizes)

    def expanded(self) -> list[ir.Value]:
        """The kernel-parameter expansion: allocated, aligned, offset, sizes..., strides..."""
        return [self.allocated, self.aligned, self.offset, *self.sizes, *self.strides]


def unpack(builder: ir.IRBuilder, desc: ir.Value) -> Descriptor:
    """Read every field of a descriptor struct value."""
    rank = rank_of(desc.type)
    sizes = tuple(builder.extract_value(desc, [SIZES, i]) for i in range(rank))
    strides = tuple(builder.extract_value(desc, [STRIDES, i]) for i in range(rank))
    return Descriptor(
        builder.extract_value(desc, ALLOCATED),
        builder.extract_value(desc, ALIGNED),
        builder.extract_value(desc, OFFSET),
        sizes,
        strides,
    )


def pack(builder: ir.IRBuilder, fields: Descriptor, desc_type: ir.Type | None = None) -> ir.Value:
    """Build a descriptor struct value from its fields."""
    typ = desc_type if desc_type is not None else descriptor_type(fields.rank)
    value: ir.Value = ir.Constant(typ, ir.Undefined)
    value = builder.insert_value(value, fields.allocated, ALLOCATED)
    value = builder.insert_value(value, fields.aligned, ALIGNED)
    value = builder.insert_value(value, fields.offset, OFFSET)
    for i, size in enumerate(fields.sizes):
        value = builder.insert_value(value, size, [SIZES, i])
    for i, stride in enumerate(fields.strides):
        value = builder.insert_value(value, stride, [STRIDES, i])
    return value


def identity_strides(builder: ir.IRBuilder, sizes: Sequence[ir.Value]) -> tuple[ir.Value, ...]:
    """Row-major strides for `sizes` (the identity layout)."""
    strides: list[ir.Value] = []
    running: ir.Value = ir.Constant(I64, 1)
    for size in reversed(sizes):
        strides.append(running)
        running = _mul(builder, running, size)
    return tuple(reversed(strides))


def element_count(builder: ir.IRBuilder, sizes: Sequence[ir.Value]) -> ir.Value:
    """The product of `sizes` (1 for rank 0)."""
    count: ir.Value = ir.Constant(I64, 1)
    for size in sizes:
        count = _mul(builder, count, size)
    return count


def data_pointer(builder: ir.IRBuilder, fields: Descriptor, element_bytes: int) -> ir.Value:
    """`aligned + offset * element_bytes`: the address of the first element."""
    byte_offset = _mul(builder, fields.offset, ir.Constant(I64, element_bytes))
    return builder.gep(fields.aligned, [byte_offset], source_etype=ir.IntType(8))


def gep(builder: ir.IRBuilder, base: ir.Value, etype: ir.Type,
        indices: list[ir.Value]) -> ir.Value:
    """getelementptr over `etype` at `base`. llvmlite types alloca results as typed pointers;
    for those it derives the result type itself (giving a pointer the next store accepts)."""
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


def to_unranked(builder: ir.IRBuilder, desc: ir.Value) -> ir.Value:
    """`memref.cast` to unranked: `{rank, pointer to a stack copy of the descriptor}`."""
    slot = entry_alloca(builder, desc.type, name="desc.copy")
    builder.store(desc, slot)
    value: ir.Value = ir.Constant(UNRANKED, ir.Undefined)
    value = builder.insert_value(value, ir.Constant(I64, rank_of(desc.type)), 0)
    return builder.insert_value(value, slot, 1)


def from_unranked(builder: ir.IRBuilder, unranked: ir.Value, desc_type: ir.Type) -> ir.Value:
    """`memref.cast` from unranked to a ranked type: load the pointed-to descriptor."""
    pointer = builder.extract_value(unranked, 1)
    return builder.load(pointer, typ=desc_type)


def unranked_parts(builder: ir.IRBuilder, unranked: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(rank, descriptor pointer) of an unranked memref value."""
    return builder.extract_value(unranked, 0), builder.extract_value(unranked, 1)


def _mul(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """a*b, folded when both are constants (keeps the IR of static shapes free of noise)."""
    if isinstance(a, ir.Constant) and isinstance(b, ir.Constant):
        return ir.Constant(I64, int(a.constant) * int(b.constant))
    if isinstance(a, ir.Constant) and a.constant == 1:
        return b
    if isinstance(b, ir.Constant) and b.constant == 1:
        return a
    return builder.mul(a, b)
