"""Compile one kernel signature: Python -> gpu.module (xDSL) -> PTX/cubin or x86-64 object.

`build_module(src, sig, symbol)` runs the translator; `compile_images(module_op, device, arch)`
lowers the gpu.module through the compile driver's stage table (device-llvm, ptx and cubin for cuda;
cpu-llvm and cpu-obj for the cpu device), like any MLIR program's device modules. Results are cached
on disk by `nova.lang.image_cache` under the MLIR key (the SHA-256 of the printed MLIR, the
target, arch and bounds-check option, and the compiler fingerprint); `KernelFunction` looks a
signature up by its source key first (`nova.lang.fingerprint`), which needs none of this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from nova import config
from nova.compiler.driver import compile_module
from nova.compiler.stages import CompileOptions
from nova.ir.parser import print_mlir
from nova.ir.verify import verify_located
from nova.lang import image_cache
from nova.lang import types as T
from nova.lang.image_cache import CompiledImages
from nova.lang.source import FunctionSource
from nova.lang.translate import Translator

if TYPE_CHECKING:
    from nova.ir.gpu import GPUModuleOp


def build_module(src: FunctionSource, sig: tuple[T.NovaType, ...], symbol: str,
                 module_name: str = "nova_kernels") -> ModuleOp:
    """The builtin.module holding one gpu.module with the kernel `symbol` for `sig`, verified
    (a failure is a translator bug; the error points at the Python line that produced the op)."""

    module = Translator(src, sig, symbol, module_name).build()
    verify_located(module)
    return module


def gpu_module_of(module: ModuleOp) -> GPUModuleOp:
    """The gpu.module of a kernel module (build_module makes exactly one, first)."""
    return cast("GPUModuleOp", next(iter(module.body.block.ops)))


def print_module(module: ModuleOp) -> str:

    return print_mlir(module)


def _cache_key(mlir_text: str, target: str, arch: str, check_bounds: bool = False) -> str:
    return image_cache.mlir_key(mlir_text, target, arch, check_bounds)


def lower(module: ModuleOp, target: str, arch: str, check_bounds: bool = False
          ) -> CompiledImages:
    """Lower the (single) gpu.module of `module` for 'cpu' or 'cuda' without caching
    (`check_bounds`: every array access checked, docs/debugging.md). The module goes through
    the compile driver's stage table (nova.compiler.driver.compile_module, entering after
    'outline'), so NOVA_DUMP_DIR, NOVA_OVERRIDE_DIR and the stage timings apply to Python
    kernels as to MLIR programs."""

    gpu = target != "cpu"
    options = CompileOptions(arch=arch, emit="cubin" if gpu else "cpu-obj", ptx=gpu, cubin=gpu,
                             cpu_image=not gpu, check_bounds=check_bounds)
    result = compile_module(module, f"<kernel {_kernel_name(module)}>", options, after="outline")
    c = result.compilation
    assert c is not None
    (name,) = c.device_modules
    (kernel,) = c.kernels[name]
    if not gpu:
        return CompiledImages(kernel, cpu_object=c.cpu_objects[name])
    cubin = c.cubin.get(name)
    return CompiledImages(kernel, ptx=c.ptx[name], cubin=cubin,
                          cubin_arch=arch if cubin is not None else None)


def _kernel_name(module: ModuleOp) -> str:
    for op in gpu_module_of(module).walk():
        if op.name == "gpu.func":
            return _symbol(op)
    return "?"


def _symbol(op: Operation) -> str:
    attr = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return str(getattr(attr, "data", attr))


def compile_images(module: ModuleOp, mlir_text: str, target: str, arch: str,
                   check_bounds: bool = False) -> CompiledImages:
    """`lower`, through the on-disk cache (config.cache_enabled)."""
    use_cache = config.get().cache_enabled
    key = _cache_key(mlir_text, target, arch, check_bounds) if use_cache else ""
    if use_cache:
        hit = image_cache.get(key)
        if hit is not None:
            return hit
    images = lower(module, target, arch, check_bounds)
    if use_cache:
        image_cache.put(key, images)
    return images


__all__ = ["CompiledImages", "build_module", "compile_images", "gpu_module_of", "lower",
           "print_module"]
