"""Device-module lowering: one `gpu.module` -> an LLVM module for a device target, plus the
manifest description of its kernels.

`lower_device_module(gpu_module, DeviceTarget.NVPTX, arch)` lowers every gpu.func / func.func /
memref.global of the module with the shared emitter core and the NVPTX target
(nova.backends.nvptx.target); `DeviceTarget.CPU` delegates to the CPU device target
(nova.backends.cpu.target.lower_cpu_module). Both return a `DeviceLowering` whose kernels
describe the expanded parameter layout of `nova.backends.kernel_abi`, which also checks every
kernel signature (located) before anything is emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from llvmlite import ir
from xdsl.dialects.builtin import (
    FunctionType,
    MemRefType,
)
from xdsl.ir import Attribute, Operation

from nova.backends.kernel_abi import check_kernel_signature, kernel_params, type_spec
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import ModuleEmitter, attr, display_name, location_of, symbol_name
from nova.backends.nvptx.target import (
    WARP_SIZE,
    NvptxTarget,
    define_libdevice,
    is_kernel,
    known_block_size,
)
from nova.bundle.format import Kernel
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
        # imported here: a compile for the GPU alone (a compile worker) need not load the CPU
        # target (~0.1 s of imports)
        from nova.backends.cpu.target import lower_cpu_module

        cpu = lower_cpu_module(gpu_module, check_bounds=check_bounds)
        return DeviceLowering(cpu.llvm_module, tuple(cpu.kernels))

    nv = NvptxTarget(arch, check_bounds)
    me = ModuleEmitter(nv, symbol_name(gpu_module))
    ops = module_ops(gpu_module)
    for op in ops:
        if op.name not in ("gpu.func", "func.func", "memref.global"):
            raise UnsupportedError(
                f"op '{display_name(op)}' in a gpu.module is not supported by the NVPTX target "
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
