"""The kernel ABI of every device target: how a kernel signature becomes manifest records.

A ranked memref argument expands to allocated ptr, aligned ptr, offset, sizes..., strides...;
scalars pass by value, index as i64; a 1-D vector passes by value as one LLVM `<N x T>` parameter,
whose size and alignment are LLVM's for the x86-64 data layout the host's stack slot and the CPU
device's parameter block use, which NVPTX's layout agrees with (nova.abi describes the contract).
The NVPTX, CPU-device and host lowerings all describe and check kernels through this module, so
the three agree by construction.

`check_kernel_signature(kernel)` rejects, at the kernel's location (an outlined kernel carries
its gpu.launch's), every argument type no target can pass; both device lowerings call it before
emitting anything, so no unsupported kernel argument surfaces as an unlocated error.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm
from llvmlite import ir
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import attr, location_of, symbol_name
from nova.bundle.format import KernelParam, TypeSpec
from nova.errors import UnsupportedError

KERNEL_ARG_TYPES = ("index, iN, f16, bf16, f32, f64, ranked memrefs of those, 1-D vectors of "
                    "those (except i1)")
"""What a kernel argument may be, for messages."""

HOST_DATA_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
"""x86-64's LLVM data layout (nova.backends.x86's target machine): the layout of the host's stack
slot a vector parameter is passed from and of the CPU device's parameter block."""


class KernelArgumentError(UnsupportedError):
    """A kernel argument type that no device target passes (located by the caller)."""


def dtype_name(ty: Attribute) -> str:
    """The manifest dtype of a scalar type ('i32', 'index', 'f32', ...); KernelArgumentError
    (unlocated) for anything else."""
    if isinstance(ty, IndexType):
        return "index"
    if isinstance(ty, IntegerType):
        return f"i{ty.width.data}"
    names = {Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "f32", Float64Type: "f64"}
    for cls, name in names.items():
        if isinstance(ty, cls):
            return name
    raise KernelArgumentError(f"type '{ty}' cannot be a kernel argument (supported: "
                              f"{KERNEL_ARG_TYPES})")


def _vector_spec(ty: VectorType) -> TypeSpec:
    """The TypeSpec of a vector kernel argument; KernelArgumentError for vectors the lowering does
    not support (n-D, scalable, wide integers) and for i1 vectors, whose in-memory form LLVM
    bit-packs (a host `<N x i1>` slot is not what a device reads lane by lane)."""
    try:
        T.vector_type(ty)
    except UnsupportedError as err:
        raise KernelArgumentError(f"type '{ty}' cannot be a kernel argument: {err.message}") \
            from None
    elem = ty.element_type
    if isinstance(elem, IntegerType) and elem.width.data == 1:
        raise KernelArgumentError(
            f"type '{ty}' cannot be a kernel argument: vectors of i1 are bit-packed in memory; "
            "pass a vector of i8 (arith.extui on the host, arith.trunci in the kernel)")
    return TypeSpec("vector", dtype_name(elem), str(ty), (ty.get_shape()[0],))


def type_spec(ty: Attribute) -> TypeSpec:
    """The manifest TypeSpec of a kernel/entry argument type."""
    if isinstance(ty, MemRefType):
        shape = tuple(-1 if T.is_dynamic(d) else d for d in ty.get_shape())
        try:
            dtype = dtype_name(ty.element_type)
        except KernelArgumentError:
            raise KernelArgumentError(f"type '{ty}' cannot be a kernel argument (supported: "
                                      f"{KERNEL_ARG_TYPES})") from None
        return TypeSpec("memref", dtype, str(ty), shape)
    if isinstance(ty, VectorType):
        return _vector_spec(ty)
    return TypeSpec("scalar", dtype_name(ty), str(ty))


def check_kernel_signature(kernel: Operation) -> None:
    """Raise a located KernelArgumentError when an argument of `kernel` (a gpu.func) cannot be
    passed to a kernel; the location is the kernel's, which outlining copies from its
    gpu.launch."""
    ftype = attr(kernel, "function_type")
    assert isinstance(ftype, FunctionType)
    for index, ty in enumerate(ftype.inputs.data):
        try:
            type_spec(ty)
        except KernelArgumentError as err:
            raise KernelArgumentError(f"kernel @{symbol_name(kernel)} argument #{index}: "
                                      f"{err.message}", location_of(kernel)) from None


@functools.cache
def _host_data() -> llvm.TargetData:
    return llvm.create_target_data(HOST_DATA_LAYOUT)


def param_size_align(llty: ir.Type) -> tuple[int, int]:
    """Bytes and alignment of one expanded kernel parameter: a vector's from LLVM's x86-64 data
    layout (`<3 x i32>`: 16 and 16), a pointer's 8, a scalar's its size in bytes."""
    if isinstance(llty, ir.VectorType):
        return llty.get_abi_size(_host_data()), llty.get_abi_alignment(_host_data())
    size = 8 if isinstance(llty, ir.PointerType) else T.element_size_llvm(llty)
    return size, size


def kernel_params(ftype: FunctionType, address_space: T.AddressSpaceFn) -> tuple[KernelParam, ...]:
    """The expanded kernel parameters of a kernel signature (nova.abi's layout)."""
    params: list[KernelParam] = []
    for index, ty in enumerate(ftype.inputs.data):
        for llty in T.expanded_param_types(ty, address_space):
            size, align = param_size_align(llty)
            params.append(KernelParam(str(llty), size, index, align))
    return tuple(params)
