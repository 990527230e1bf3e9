"""MLIR builtin types -> llvmlite IR types, as every Nova LLVM target lowers them.

The mapping (MLIR's LLVM lowering conventions, so descriptors match the runtime ABI):

* ``index`` -> ``i64``; ``iN`` -> ``iN`` (signless; signedness lives in the ops);
* ``f16``/``bf16``/``f32``/``f64`` -> ``half``/``bfloat``/``float``/``double``;
* ranked ``memref<d0 x ... x T>`` (rank R >= 1) -> ``{ptr, ptr, i64, [R x i64], [R x i64]}``
  (allocated pointer, aligned pointer, offset, sizes, strides, in elements); rank 0 ->
  ``{ptr, ptr, i64}``. Pointers are opaque and carry the target's address space for the memref's
  memory space (`Target.pointer_address_space`);
* unranked ``memref<*xT>`` -> ``{i64, ptr}`` (rank, pointer to a ranked descriptor);
* ``vector<N x T>`` (1-D, fixed size, T an integer of at most 64 bits, index or a float) ->
  ``<N x T'>``; n-D vectors in registers are flat row-major ``<d0*d1*.. x T'>``
  (register_vector_type); scalable vectors, and vectors as memref elements, are rejected
  (`vector_type`);
* ``!gpu.async.token`` -> ``ptr`` (the host target's tokens are stream handles);
* ``!gpu.mma_matrix<16x16xT, "AOp"|"BOp"|"COp">`` depends on the device target
  (`mma_fragment_type`): NVPTX, upstream's WMMA registers of one lane; CPU, the whole tile;
* function arguments: a ranked memref *expands* to its fields (ptr, ptr, i64, sizes..., strides...),
  as kernel parameters do (nova.abi); results are returned as one value (a struct when
  there are several).

Static facts of a memref type (shape, strides, offset) are exposed here so lowering code can use
constants instead of descriptor loads where the type already knows them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from llvmlite import ir
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    UnrankedMemRefType,
    VectorType,
)
from xdsl.dialects.llvm import LLVMStructType
from xdsl.ir import Attribute

from nova.errors import UnsupportedError

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
INDEX = I64
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()



class BFloatType(ir.Type):
    """LLVM's `bfloat` (llvmlite 0.50 has no bfloat type). Constants print in LLVM's `0xR` form,
    rounded to nearest-even from the float32 value."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BFloatType)

    def __hash__(self) -> int:
        return hash(BFloatType)

    def format_constant(self, value: float) -> str:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:  # NaN: keep it quiet
            return f"0xR{(bits >> 16) | 0x40:04X}"
        bits += 0x7FFF + ((bits >> 16) & 1)
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BF16 = BFloatType()

AddressSpaceFn = Callable[[Attribute], int]
"""Maps a memref type to the LLVM address space of its pointers (a Target hook)."""

SUPPORTED_TYPES = ("index, iN, f16, bf16, f32, f64, vector<NxT> (1-D), memref (ranked/unranked), "
                   "function")


def is_dynamic(dim: int | None) -> bool:
    """True for a dynamic size/stride/offset (`?`) in a memref type."""
    return dim is None or dim == DYNAMIC_INDEX or dim < 0


MAX_INTEGER_BITS = 1 << 16
"""The widest integer type the LLVM lowering accepts. The parser already refuses MLIR's limit
(16777215 bits); LLVM stops at 2^23 bits (wider ones were an unlocated "invalid LLVM IR" error)
and the code it generates for arithmetic grows with the width (an i1000000 multiply takes
seconds to compile). Nova's own programs use at most 128 bits."""


def scalar_type(ty: Attribute) -> ir.Type:
    """The LLVM type of a scalar MLIR type; raises UnsupportedError for anything else."""
    if isinstance(ty, IndexType):
        return INDEX
    if isinstance(ty, IntegerType):
        if ty.width.data > MAX_INTEGER_BITS:
            raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering: integers "
                                   f"are limited to {MAX_INTEGER_BITS} bits")
        return ir.IntType(ty.width.data)
    if isinstance(ty, Float32Type):
        return F32
    if isinstance(ty, Float64Type):
        return F64
    if isinstance(ty, Float16Type):
        return F16
    if isinstance(ty, BFloat16Type):
        return BF16
    if isinstance(ty, VectorType):
        raise UnsupportedError(f"type '{ty}' is not supported here: vectors are supported as "
                               "SSA values (function arguments and results, block arguments), "
                               "not as memref elements")
    raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering "
                           f"(supported: {SUPPORTED_TYPES})")


def vector_type(ty: VectorType) -> ir.VectorType:
    """The LLVM type `<N x T>` of a 1-D fixed-size MLIR vector; raises UnsupportedError for
    n-D and scalable vectors and for elements other than integers up to 64 bits, index and
    floats (wider integers would need library calls on the device targets)."""
    shape = ty.get_shape()
    if any(ty.get_scalable_dims()):
        raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering: scalable "
                               "vectors are not supported (only 1-D fixed-size vectors)")
    if len(shape) != 1:
        raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering: only 1-D "
                               f"vectors are supported, this one has rank {len(shape)}")
    elem = ty.element_type
    if isinstance(elem, IntegerType) and elem.width.data > 64:
        raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering: vector "
                               "elements are integers up to 64 bits, index or floats")
    if not isinstance(elem, IntegerType | IndexType) and not is_float(elem):
        raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering: vector "
                               "elements are integers up to 64 bits, index or floats")
    return ir.VectorType(scalar_type(elem), shape[0])


def register_vector_type(ty: VectorType) -> ir.VectorType:
    """The LLVM type of an n-D fixed-size MLIR vector held in registers: the flat row-major
    `<d0 * d1 * ... x T>` (element (i, j) of a vector<RxCxT> is lane i * C + j). Element-wise
    arith/math ops work on it unchanged; the vector ops that see n-D shapes check for it
    (ops_vector.check_rank). Upstream lowers n-D vectors to arrays of 1-D vectors instead; the
    two agree wherever the value stays in registers, which is all Nova allows (n-D vectors are
    no kernel arguments or memref elements)."""
    if any(ty.get_scalable_dims()):
        return vector_type(ty)  # raises
    count = 1
    for dim in ty.get_shape():
        count *= dim
    return vector_type(VectorType(ty.element_type, [count]))  # element checks


def lanes(ty: ir.Type) -> int | None:
    """The lane count of an LLVM vector type (None for scalars)."""
    return ty.count if isinstance(ty, ir.VectorType) else None


def element_of(ty: ir.Type) -> ir.Type:
    """The element type of an LLVM vector type, or the type itself for a scalar."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def like(ty: ir.Type, elem: ir.Type) -> ir.Type:
    """`elem`, as a vector of as many lanes as `ty` has when `ty` is a vector (the type of a
    comparison, cast or widening of a value of type `ty`)."""
    return ir.VectorType(elem, ty.count) if isinstance(ty, ir.VectorType) else elem


def is_float(ty: Attribute) -> bool:
    """True for an MLIR floating-point type."""
    return isinstance(ty, Float16Type | BFloat16Type | Float32Type | Float64Type)


def memref_struct(rank: int, address_space: int = 0) -> ir.LiteralStructType:
    """The descriptor struct of a ranked memref of `rank` (MLIR's layout)."""
    ptr = ir.PointerType(addrspace=address_space)
    if rank == 0:
        return ir.LiteralStructType([ptr, ptr, INDEX])
    arr = ir.ArrayType(INDEX, rank)
    return ir.LiteralStructType([ptr, ptr, INDEX, arr, arr])


UNRANKED_STRUCT = ir.LiteralStructType([INDEX, PTR])


def lower_type(ty: Attribute, address_space: AddressSpaceFn) -> ir.Type:
    """The LLVM type of an SSA value of MLIR type `ty` (a memref becomes its descriptor struct)."""
    if isinstance(ty, MemRefType):
        return memref_struct(ty.get_num_dims(), address_space(ty))
    if isinstance(ty, UnrankedMemRefType):
        return UNRANKED_STRUCT
    if isinstance(ty, VectorType):
        return register_vector_type(ty) if ty.get_num_dims() > 1 else vector_type(ty)
    if getattr(ty, "name", "") == "gpu.async.token":
        return PTR  # the host target's tokens are stream handles
    if getattr(ty, "name", "") == "nvgpu.device.async.token":
        return I32  # carries no data (nova.backends.llvm.async_copy_common.bind_token)
    if getattr(ty, "name", "") == "gpu.mma_matrix":
        return mma_fragment_type(ty, _target_name(address_space))
    if isinstance(ty, LLVMStructType):
        return ir.LiteralStructType([lower_type(t, address_space) for t in ty.types.data])
    return scalar_type(ty)


MMA_TILE = 16
"""Rows and columns of the one fragment shape the backends lower (m16n16k16)."""


def _target_name(address_space: AddressSpaceFn) -> str:
    """The target whose `ModuleEmitter.address_space` this is ('' when not an emitter's): the
    one type whose lowering differs between device targets (mma fragments) needs it, and the
    address-space hook is what lower_type's callers already pass."""
    emitter = getattr(address_space, "__self__", None)
    return str(getattr(getattr(emitter, "target", None), "name", ""))


def mma_fragment_type(ty: Attribute, target: str) -> ir.Type:
    """The LLVM type of a 16x16 `!gpu.mma_matrix` value on `target`.

    NVPTX ('nvptx'): what one lane holds, as upstream's NVVM lowering (and the
    llvm.nvvm.wmma.m16n16k16 intrinsics) type it: f16 A/B -> 8 x <2 x half>, f16 C ->
    4 x <2 x half>, f32 C -> 8 x float, as a literal struct. CPU ('cpu'): every lane holds the
    whole tile row-major as <256 x T> (see cpu_mma), so element-wise ops are vector ops."""
    shape = tuple(ty.get_shape())  # type: ignore[attr-defined]
    elem = scalar_type(ty.element_type)  # type: ignore[attr-defined]
    if shape != (MMA_TILE, MMA_TILE) or not isinstance(elem, ir.HalfType | ir.FloatType):
        raise UnsupportedError(f"type '{ty}' is not supported by the LLVM lowering (only "
                               "16x16 f16/f32 fragments)")
    if target == "cpu":
        return ir.VectorType(elem, MMA_TILE * MMA_TILE)
    if target != "nvptx":
        raise UnsupportedError(f"type '{ty}' is only supported in device code")
    if isinstance(elem, ir.FloatType):
        return ir.LiteralStructType([F32] * 8)
    registers = 4 if ty.kind == "COp" else 8  # type: ignore[attr-defined]
    return ir.LiteralStructType([ir.VectorType(F16, 2)] * registers)


def expanded_param_types(ty: Attribute, address_space: AddressSpaceFn) -> list[ir.Type]:
    """LLVM parameter types for one function/kernel argument of MLIR type `ty` (memref expanded)."""
    if isinstance(ty, MemRefType):
        ptr = ir.PointerType(addrspace=address_space(ty))
        rank = ty.get_num_dims()
        return [ptr, ptr, INDEX] + [INDEX] * (2 * rank)
    if isinstance(ty, UnrankedMemRefType):
        return [INDEX, PTR]
    return [lower_type(ty, address_space)]


def result_type(results: Sequence[Attribute], address_space: AddressSpaceFn) -> ir.Type:
    """The LLVM return type for MLIR results: void, the single type, or a struct of them."""
    if not results:
        return VOID
    if len(results) == 1:
        return lower_type(results[0], address_space)
    return ir.LiteralStructType([lower_type(r, address_space) for r in results])


def function_type(ftype: FunctionType, address_space: AddressSpaceFn) -> ir.FunctionType:
    """The LLVM function type of an MLIR function (memref params expanded)."""
    params: list[ir.Type] = []
    for ty in ftype.inputs.data:
        params += expanded_param_types(ty, address_space)
    return ir.FunctionType(result_type(ftype.outputs.data, address_space), params)


def static_strides(ty: MemRefType) -> list[int | None]:
    """Per-dimension strides known from the type (None where dynamic)."""
    shape = ty.get_shape()
    if isinstance(ty.layout, NoneAttr):
        strides: list[int | None] = []
        running: int | None = 1
        for dim in reversed(shape):
            strides.append(running)
            running = None if running is None or is_dynamic(dim) else running * dim
        return list(reversed(strides))
    got = ty.layout.get_strides()
    if got is None:
        raise UnsupportedError(f"memref layout '{ty.layout}' is not strided; only identity and "
                               "strided<...> layouts are supported")
    return [None if is_dynamic(s) else s for s in got]


def static_offset(ty: MemRefType) -> int | None:
    """The offset known from the type (None where dynamic)."""
    if isinstance(ty.layout, NoneAttr):
        return 0
    off = ty.layout.get_offset()
    return None if off is None or is_dynamic(off) else off


def static_sizes(ty: MemRefType) -> list[int | None]:
    """Per-dimension sizes known from the type (None where dynamic)."""
    return [None if is_dynamic(d) else d for d in ty.get_shape()]


def element_size(ty: Attribute) -> int:
    """Size in bytes of a scalar element type as stored in memory (i1 takes a byte)."""
    return element_size_llvm(scalar_type(ty))


def memory_space_name(ty: MemRefType | UnrankedMemRefType) -> str | int | None:
    """The memory space of a memref: None (default), an int, or a gpu address-space keyword
    ('global', 'workgroup', 'private') read from a `#gpu.address_space<...>` attribute."""
    space = ty.memory_space
    if isinstance(space, NoneAttr):
        return None
    if isinstance(space, IntegerAttr):
        return int(space.value.data)
    data = getattr(space, "data", None)
    if data is None:
        data = getattr(space, "value", None)
    text = str(getattr(data, "value", data) if data is not None else space)
    for key in ("workgroup", "private", "global"):
        if key in text:
            return key
    raise UnsupportedError(f"memory space '{space}' is not supported "
                           "(supported: none, integers, "
                           "#gpu.address_space<global|workgroup|private>)")


def element_size_llvm(llty: ir.Type) -> int:
    """Size in bytes of a scalar LLVM type."""
    if isinstance(llty, ir.IntType):
        return max(1, (llty.width + 7) // 8)
    if isinstance(llty, ir.DoubleType):
        return 8
    if isinstance(llty, ir.FloatType):
        return 4
    return 2
