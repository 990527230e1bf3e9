"""Memref descriptors as SSA values, and strided address computation.

Inside a function the emitter keeps a memref as a `MemRefDescriptor`: a Python record of its field
values (allocated/aligned pointers, offset, sizes, strides). Fields the type knows statically are
LLVM constants, so indexing a `memref<4x8xf32>` folds to constants before LLVM even runs, and a
descriptor is never spilled to memory. `pack` builds the `{ptr, ptr, i64, [R x i64], [R x i64]}`
struct only where one must cross a boundary (a returned value, a struct store), and `unpack`
takes one apart again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from llvmlite import ir
from llvmlite.ir import instructions as ir_instructions
from xdsl.dialects.builtin import MemRefType

from nova.backends.llvm.types import (
    INDEX,
    memref_struct,
    scalar_type,
    static_offset,
    static_sizes,
    static_strides,
)


def const_index(value: int) -> ir.Constant:
    """An i64 constant."""
    return ir.Constant(INDEX, value)


@dataclass
class MemRefDescriptor:
    """The fields of a ranked memref value. `ty` is its MLIR type (element type, static facts)."""

    ty: MemRefType
    allocated: ir.Value
    aligned: ir.Value
    offset: ir.Value
    sizes: list[ir.Value] = field(default_factory=list)
    strides: list[ir.Value] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_type(self) -> ir.Type:
        return scalar_type(self.ty.element_type)

    @property
    def address_space(self) -> int:
        return self.aligned.type.addrspace

    def with_type(self, ty: MemRefType) -> MemRefDescriptor:
        """The same fields viewed as type `ty` (its static facts substituted as constants)."""
        return specialize(replace(self, ty=ty))

    def pack(self, builder: ir.IRBuilder) -> ir.Value:
        """Build the descriptor struct value (insertvalue chain)."""
        st = memref_struct(self.rank, self.address_space)
        value: ir.Value = ir.Constant(st, ir.Undefined)
        value = builder.insert_value(value, self.allocated, 0)
        value = builder.insert_value(value, self.aligned, 1)
        value = builder.insert_value(value, self.offset, 2)
        for i, size in enumerate(self.sizes):
            value = builder.insert_value(value, size, [3, i])
        for i, stride in enumerate(self.strides):
            value = builder.insert_value(value, stride, [4, i])
        return value

    def flatten(self) -> list[ir.Value]:
        """The expanded-argument form: allocated, aligned, offset, sizes..., strides..."""
        return [self.allocated, self.aligned, self.offset, *self.sizes, *self.strides]

    def element_pointer(self, builder: ir.IRBuilder, indices: list[ir.Value]) -> ir.Value:
        """Address of element `indices` (i64 values): aligned + offset + sum(index_i * stride_i)."""
        linear = linear_index(builder, self.offset, indices, self.strides)
        return builder.gep(self.aligned, [linear], inbounds=True, source_etype=self.element_type)


def opaque(builder: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    """`pointer` as an opaque `ptr` value. llvmlite types globals as typed pointers
    (`[N x T] addrspace(k)*`) and then rejects stores of `T` through GEPs of them; a no-op
    bitcast to `ptr addrspace(k)` gives a value its type checks accept (LLVM folds it)."""
    ty = pointer.type
    if isinstance(ty, ir.PointerType) and not ty.is_opaque:
        # IRBuilder.bitcast returns its operand when the types compare equal (typed and opaque
        # pointers of one address space do), so the instruction is built directly.
        cast = ir_instructions.CastInstr(builder.block, "bitcast", pointer,
                                         ir.PointerType(addrspace=ty.addrspace))
        builder._insert(cast)  # IRBuilder has no public insert for a prebuilt instruction
        return cast
    return pointer


def linear_index(builder: ir.IRBuilder, offset: ir.Value, indices: list[ir.Value],
                 strides: list[ir.Value]) -> ir.Value:
    """offset + sum(indices[i] * strides[i]), folding constants (and skipping zero terms and
    unit strides) so static cases stay small before optimization."""
    const_total = 0
    total: ir.Value | None = None
    terms: list[ir.Value] = [offset] + [
        index if _is_const(stride, 1) else
        const_index(int(index.constant) * int(stride.constant))
        if isinstance(index, ir.Constant) and isinstance(stride, ir.Constant) else
        index if _is_const(stride, 1) else
        const_index(0) if _is_const(index, 0) or _is_const(stride, 0) else
        builder.mul(index, stride)
        for index, stride in zip(indices, strides, strict=True)]
    for term in terms:
        if isinstance(term, ir.Constant):
            const_total += int(term.constant)
        else:
            total = term if total is None else builder.add(total, term)
    if total is None:
        return const_index(const_total)
    return builder.add(total, const_index(const_total)) if const_total else total


def _is_const(value: ir.Value, number: int) -> bool:
    return isinstance(value, ir.Constant) and value.constant == number


def specialize(desc: MemRefDescriptor) -> MemRefDescriptor:
    """Replace fields that `desc.ty` knows statically by constants."""
    ty = desc.ty
    off = static_offset(ty)
    sizes = [const_index(s) if s is not None else v
             for s, v in zip(static_sizes(ty), desc.sizes, strict=True)]
    strides = [const_index(s) if s is not None else v
               for s, v in zip(static_strides(ty), desc.strides, strict=True)]
    return MemRefDescriptor(ty, desc.allocated, desc.aligned,
                            const_index(off) if off is not None else desc.offset, sizes, strides)


def from_fields(ty: MemRefType, fields: list[ir.Value]) -> MemRefDescriptor:
    """A descriptor from expanded fields (allocated, aligned, offset, sizes..., strides...)."""
    rank = ty.get_num_dims()
    if len(fields) != 3 + 2 * rank:
        raise ValueError(f"memref of rank {rank} needs {3 + 2 * rank} fields, got {len(fields)}")
    return specialize(MemRefDescriptor(ty, fields[0], fields[1], fields[2],
                                       list(fields[3:3 + rank]), list(fields[3 + rank:])))


def unpack(builder: ir.IRBuilder, ty: MemRefType, struct: ir.Value) -> MemRefDescriptor:
    """Take a descriptor struct value apart (static fields become constants, not extracts)."""
    sizes_known = static_sizes(ty)
    strides_known = static_strides(ty)
    off = static_offset(ty)
    fields = [builder.extract_value(struct, 0), builder.extract_value(struct, 1),
              const_index(off) if off is not None else builder.extract_value(struct, 2)]
    fields += [const_index(s) if s is not None else builder.extract_value(struct, [3, i])
               for i, s in enumerate(sizes_known)]
    fields += [const_index(s) if s is not None else builder.extract_value(struct, [4, i])
               for i, s in enumerate(strides_known)]
    return from_fields(ty, fields)


def identity_descriptor(builder: ir.IRBuilder, ty: MemRefType, base: ir.Value,
                        sizes: list[ir.Value]) -> MemRefDescriptor:
    """Descriptor of a freshly allocated contiguous buffer at `base` with the given sizes
    (row-major strides; static ones fold to constants)."""
    strides = contiguous_strides(builder, sizes)
    return specialize(MemRefDescriptor(ty, base, base, const_index(0), list(sizes), strides))


def contiguous_strides(builder: ir.IRBuilder, sizes: list[ir.Value]) -> list[ir.Value]:
    """Row-major strides for `sizes` (constants fold, others multiply)."""
    strides: list[ir.Value] = []
    running: ir.Value = const_index(1)
    for i in reversed(range(len(sizes))):
        strides.append(running)
        running = _mul_folded(builder, running, sizes[i])
    return list(reversed(strides))


def num_elements(builder: ir.IRBuilder, sizes: list[ir.Value]) -> ir.Value:
    """Product of sizes (constant-folded where possible)."""
    total: ir.Value = const_index(1)
    for size in sizes:
        total = _mul_folded(builder, total, size)
    return total


def _mul_folded(builder: ir.IRBuilder, acc: ir.Value, size: ir.Value) -> ir.Value:
    """`acc * size` for running size products: folded when both are constants, `size` itself
    when `acc` is the constant 1, else a `mul` instruction."""
    if isinstance(acc, ir.Constant) and isinstance(size, ir.Constant):
        return const_index(int(acc.constant) * int(size.constant))
    if _is_const(acc, 1):
        return size
    return builder.mul(acc, size)
