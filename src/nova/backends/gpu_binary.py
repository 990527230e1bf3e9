"""`gpu.binary` -> the device images of a bundle: a module of pre-compiled device code (as
upstream's `gpu-module-to-binary` produces) embedded and launched like a compiled gpu.module.

Which object: the one `#gpu.select_object<N>` names, else the first with an `#nvvm.target`.
Its format gives the CUDA image: `assembly` is PTX (assembled by ptxas when present, else JIT-
compiled by the driver, as for Nova's own PTX), `bin` a cubin and `fatbin` a fatbinary (both
loaded as they are); `offload` (LLVM bitcode) is refused with a located error.

The kernels' manifest records come from the program's `gpu.launch_func @binary::@kernel` ops:
a binary carries no signatures, so every launch of one kernel must pass the same operand types,
which give the kernel's arguments and expanded parameters (a memref is its descriptor's fields,
upstream's default calling convention, which Nova's kernels share: docs/abi.md).

The CPU device cannot run NVVM code: each kernel of a binary gets a CPU entry that fails the
launch with a message saying so (`KernelFault`), so a program whose host code runs on the CPU
device reports the problem at the launch rather than failing to load. A binary offers no object
for the CPU: upstream has no CPU target attribute for gpu.object.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Operation

from nova.backends.cpu import fibers as cf
from nova.backends.cpu.target import DATA_LAYOUT, TRIPLE
from nova.backends.kernel_abi import kernel_params, type_spec
from nova.backends.llvm import types as T
from nova.backends.nvptx.target import ADDRESS_SPACES
from nova.backends.x86 import emit_object
from nova.bundle.format import Kernel
from nova.errors import LoweringError, UnsupportedError
from nova.ir.gpu.binary_ops import BinaryOp, NVVMTargetAttr, ObjectAttr
from nova.ir.locations import nearest_location


@dataclass(frozen=True)
class BinaryImages:
    """What a gpu.binary contributes to a bundle (one of ptx/cubin is set)."""

    name: str
    kernels: tuple[Kernel, ...]
    ptx: str | None
    cubin: bytes | None
    cpu_object: bytes | None


def binary_images(module: ModuleOp, binary: BinaryOp, cpu: bool,
                  opt_level: int = 2) -> BinaryImages:
    """The images and kernel records of `binary` (the CPU entries when `cpu`)."""
    name = binary.sym_name.data
    obj = select_object(binary)
    data = obj.data
    fmt = obj.format.data
    if fmt == "offload":
        raise UnsupportedError(f"gpu.binary @{name}: an object of format 'offload' (LLVM "
                               "bitcode) is not supported; produce PTX or a cubin "
                               "(gpu-module-to-binary format=isa, bin or fatbin)",
                               nearest_location(binary))
    kernels = launch_signatures(module, name)
    ptx = data.decode("utf-8", errors="replace") if fmt == "assembly" else None
    cubin = None if fmt == "assembly" else data
    cpu_object = cpu_stub_object(name, [k.name for k in kernels], opt_level) if cpu else None
    return BinaryImages(name, kernels, ptx, cubin, cpu_object)


def select_object(binary: BinaryOp) -> ObjectAttr:
    """The object the binary's handler selects (by index), else its first NVVM object."""
    objects = [o for o in binary.objects.data if isinstance(o, ObjectAttr)]
    index = binary.selected_index()
    where = nearest_location(binary)
    if index is not None:
        if not 0 <= index < len(objects):
            raise LoweringError(f"gpu.binary @{binary.sym_name.data}: #gpu.select_object<{index}>"
                                f" but the binary has {len(objects)} object(s)", where)
        chosen = objects[index]
    else:
        found = next((o for o in objects if isinstance(o.target, NVVMTargetAttr)), None)
        if found is None:
            raise UnsupportedError(f"gpu.binary @{binary.sym_name.data} has no object for an "
                                   "#nvvm.target (Nova runs NVVM objects only)", where)
        chosen = found
    if not isinstance(chosen.target, NVVMTargetAttr):
        raise UnsupportedError(f"gpu.binary @{binary.sym_name.data}: the selected object's "
                               f"target {chosen.target} is not an #nvvm.target", where)
    return chosen


def _nvptx_space(ty: Attribute) -> int:
    if isinstance(ty, MemRefType):
        space = T.memory_space_name(ty)
        if isinstance(space, int):
            return space
        if space is not None:
            return ADDRESS_SPACES[space]
    return 0


def launch_signatures(module: ModuleOp, name: str) -> tuple[Kernel, ...]:
    """One Kernel record per kernel of binary `name` that the program launches, from its
    launches' operand types (which must agree)."""
    seen: dict[str, tuple[tuple[Attribute, ...], Operation]] = {}
    for op in module.walk():
        kernel = op.properties.get("kernel") if op.name == "gpu.launch_func" else None
        if not isinstance(kernel, SymbolRefAttr) or kernel.root_reference.data != name:
            continue
        if len(kernel.nested_references.data) != 1:
            continue
        kernel_name = kernel.nested_references.data[0].data
        types = tuple(v.type for v in op.kernelOperands)  # type: ignore[attr-defined]
        earlier = seen.get(kernel_name)
        if earlier is not None and earlier[0] != types:
            raise LoweringError(
                f"gpu.launch_func of @{name}::@{kernel_name} passes ({_types(types)}) but an "
                f"earlier launch passes ({_types(earlier[0])}); a gpu.binary carries no kernel "
                "signatures, so every launch of a kernel must pass the same types",
                nearest_location(op))
        seen.setdefault(kernel_name, (types, op))
    records = []
    for kernel_name, (types, _op) in seen.items():
        ftype = FunctionType.from_lists(list(types), [])
        records.append(Kernel(kernel_name, tuple(type_spec(t) for t in types),
                              kernel_params(ftype, _nvptx_space)))
    return tuple(records)


def _types(types: tuple[Attribute, ...]) -> str:
    return ", ".join(str(t) for t in types)


def cpu_stub_object(binary: str, kernels: list[str], opt_level: int) -> bytes:
    """An x86-64 object with a CPU entry `i32 k(ptr params, ptr launch)` per kernel that writes
    why the kernel cannot run into launch->error and returns 1 (a failed launch)."""
    module = ir.Module(name=f"gpu_binary_{binary}")
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    for kernel in kernels:
        fn = ir.Function(module, ir.FunctionType(cf.I32, [cf.PTR, cf.PTR]), kernel)
        _params, launch = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        text = (f"kernel @{kernel} comes from gpu.binary @{binary}, which holds pre-compiled "
                "NVVM code (PTX/cubin) only: the CPU device cannot run it (run on --device "
                "cuda, or compile the gpu.module itself for both devices)")
        err = cf.field(b, cf.LAUNCH_CTX, launch, cf.L.ERROR, 0)
        b.call(cf.libc(module, "snprintf"), [err, cf.I64(cf.ERROR_BYTES),
                                              cf.cstring(module, "%s"), cf.cstring(module, text)])
        b.ret(cf.I32(1))
    return emit_object(str(module), opt_level=opt_level)
