"""Device-module lowering: one `gpu.module` -> an LLVM module for a device target, plus the
manifest description of its kernels.

`lower_device_module(gpu_module, DeviceTarget.NVPTX, arch)` lowers every gpu.func / func.func /
memref.global of the module with the shared emitter core and the NVPTX target
(nova.backends.llvm.nvptx_target); `DeviceTarget.CPU` delegates to the CPU device target
(nova.backends.llvm.cpu_target.lower_cpu_module). Both return a `DeviceLowering` whose kernels
describe the expanded parameter layout of nova.runtime.abi (a ranked memref argument expands
to allocated ptr, aligned ptr, offset, sizes..., strides...; scalars pass by value, index as i64;
a 1-D vector passes by value as one LLVM `<N x T>` parameter, whose size and alignment are
LLVM's for the x86-64 data layout the host's stack slot and the CPU device's parameter block
use, which NVPTX's layout agrees with).

`check_kernel_signature(kernel)` rejects, at the kernel's location (an outlined kernel carries
its gpu.launch's), every argument type no target can pass; both device lowerings call it before
emitting anything, so no unsupported kernel argument surfaces as an unlocated error.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum

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
from nova.backends.llvm.emitter import ModuleEmitter, attr, location_of, symbol_name
from nova.bundle.format import Kernel, KernelParam, TypeSpec
from nova.errors import UnsupportedError


class DeviceTarget(StrEnum):
    """The device a gpu.module is compiled for."""

    NVPTX = "nvptx"
    CPU = "cpu"


@dataclass(frozen=True)
class DeviceLowering:
    """The LLVM module of one gpu.module and the manifest entries of its kernels."""

    llvm_module: ir.Module
    kernels: tuple[Kernel, ...]


BARRIER_OPS = frozenset({"gpu.barrier", "gpu.shuffle", "gpu.all_reduce", "gpu.subgroup_reduce"})
"""Ops that need all threads of a block (or warp) to run in lockstep."""


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
    """The expanded kernel parameters of a kernel signature (abi.py's layout)."""
    params: list[KernelParam] = []
    for index, ty in enumerate(ftype.inputs.data):
        for llty in T.expanded_param_types(ty, address_space):
            size, align = param_size_align(llty)
            params.append(KernelParam(str(llty), size, index, align))
    return tuple(params)


def _walk_calls(op: Operation, funcs: dict[str, Operation]) -> list[Operation]:
    """`op` and every function it reaches through func.call (within the module)."""
    seen = {symbol_name(op)}
    order = [op]
    todo = [op]
    while todo:
        current = todo.pop()
        for inner in current.walk():
            if inner.name == "func.call":
                callee = attr(inner, "callee")
                name = callee.root_reference.data  # type: ignore[union-attr]
                if name in funcs and name not in seen:
                    seen.add(name)
                    order.append(funcs[name])
                    todo.append(funcs[name])
    return order


def kernel_metadata(kernel: Operation, funcs: dict[str, Operation],
                    globals_: dict[str, Operation], address_space: T.AddressSpaceFn) -> Kernel:
    """The manifest `Kernel` of a gpu.func kernel: args, expanded params, static shared bytes
    (workgroup attributions + workgroup-space globals it reaches), whether it synchronizes."""
    ftype = attr(kernel, "function_type")
    assert isinstance(ftype, FunctionType)
    reached = _walk_calls(kernel, funcs)
    shared = 0
    n_in = len(ftype.inputs.data)
    n_wg = int(getattr(getattr(attr(kernel, "workgroup_attributions"), "value", None),
                       "data", 0) or 0)
    entry = kernel.regions[0].blocks[0]
    for arg in list(entry.args)[n_in:n_in + n_wg]:
        shared += _bytes(arg.type)
    used_globals: set[str] = set()
    uses_barriers = False
    from nova.backends.llvm.nvptx_target import WARP_SIZE, known_block_size

    for fn in reached:
        known = known_block_size(fn)
        one_warp = known is not None and known[0] * known[1] * known[2] <= WARP_SIZE
        for inner in fn.walk():
            if inner.name in BARRIER_OPS:
                uses_barriers = True
            if inner.name == "gpu.all_reduce" and not one_warp:
                shared += (WARP_SIZE + 1) * T.element_size(inner.operands[0].type)
            if inner.name == "memref.get_global":
                used_globals.add(attr(inner, "name").root_reference.data)  # type: ignore[union-attr]
    for name in sorted(used_globals):
        gop = globals_.get(name)
        if gop is not None:
            gty = attr(gop, "type")
            if isinstance(gty, MemRefType) and address_space(gty) == 3:
                shared += _bytes(gty)
    return Kernel(symbol_name(kernel), tuple(type_spec(t) for t in ftype.inputs.data),
                  kernel_params(ftype, address_space), shared, uses_barriers)


def _bytes(ty: Attribute) -> int:
    if not isinstance(ty, MemRefType):
        return 0
    count = 1
    for d in ty.get_shape():
        count *= d
    return count * T.element_size(ty.element_type)


def module_ops(gpu_module: Operation) -> list[Operation]:
    """The symbol ops inside a gpu.module body."""
    ops: list[Operation] = []
    for region in gpu_module.regions:
        for block in region.blocks:
            ops += [op for op in block.ops if op.name != "gpu.module_end"]
    return ops


def lower_device_module(gpu_module: Operation, target: DeviceTarget | str,
                        arch: str = "sm_90", check_bounds: bool = False) -> DeviceLowering:
    """Lower one gpu.module for `target` (see the module docstring); `check_bounds` checks
    every memref access against its memref's sizes (a failure is reported like cf.assert)."""
    target = DeviceTarget(target)
    if target is DeviceTarget.CPU:
        from nova.backends.llvm.cpu_target import lower_cpu_module

        cpu = lower_cpu_module(gpu_module, check_bounds=check_bounds)
        return DeviceLowering(cpu.llvm_module, tuple(cpu.kernels))
    from nova.backends.llvm.nvptx_target import NvptxTarget, define_libdevice, is_kernel

    nv = NvptxTarget(arch, check_bounds)
    me = ModuleEmitter(nv, symbol_name(gpu_module))
    ops = module_ops(gpu_module)
    for op in ops:
        if op.name not in ("gpu.func", "func.func", "memref.global"):
            raise UnsupportedError(
                f"op '{op.name}' in a gpu.module is not supported by the NVPTX target "
                "(supported: gpu.func, func.func, memref.global)", location_of(op))
    for op in ops:
        if is_kernel(op):
            check_kernel_signature(op)
    me.emit_symbols(ops)
    for op in ops:
        declared = op.name == "func.func" and not (op.regions and op.regions[0].blocks)
        if declared and not define_libdevice(me, op):
            raise UnsupportedError(
                    f"device function @{symbol_name(op)} is declared but not defined; the "
                    "NVPTX target links nothing but its own module (libdevice __nv_* math "
                    "functions excepted)", location_of(op))
    funcs = {symbol_name(op): op for op in ops if op.name in ("gpu.func", "func.func")}
    globals_ = {symbol_name(op): op for op in ops if op.name == "memref.global"}
    kernels = tuple(kernel_metadata(op, funcs, globals_, nv.pointer_address_space)
                    for op in ops if is_kernel(op))
    return DeviceLowering(me.module, kernels)
