"""Compile one kernel signature: Python -> gpu.module (xDSL) -> PTX/cubin or x86-64 object.

`build_module(src, sig, symbol)` runs the translator; `compile_images(module_op, device, arch)`
lowers the gpu.module through the compile driver's stage table (device-llvm, ptx and cubin for cuda;
cpu-llvm and cpu-obj for the cpu device), like any MLIR program's device modules. Results are cached
on disk under `config.cache_dir/kernels`: the key is the SHA-256 of the printed MLIR (which captures
the kernel's source, its device functions, the constants it read and the signature), the target,
arch and bounds-check option, and the compiler fingerprint of `nova.compiler.cache`
(Nova/xDSL/llvmlite versions and compiler sources). Entries carry a digest; a torn or corrupt entry
reads as a miss.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from nova import config
from nova.bundle.format import Kernel, KernelParam, TypeSpec
from nova.compiler.cache import environment_fingerprint, read_digested, write_digested
from nova.compiler.driver import compile_module
from nova.compiler.stages import CompileOptions
from nova.ir.parser import print_mlir
from nova.ir.verify import verify_located
from nova.lang import types as T
from nova.lang.source import FunctionSource
from nova.lang.translate import Translator

if TYPE_CHECKING:
    from nova.ir.gpu import GPUModuleOp


@dataclass(frozen=True)
class CompiledImages:
    """The device images of one compiled signature and its kernel's manifest entry."""

    kernel: Kernel
    ptx: str | None = None
    cubin: bytes | None = None
    cubin_arch: str | None = None
    cpu_object: bytes | None = None


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

    payload = json.dumps({"kind": "python-kernel", "mlir": mlir_text, "target": target,
                          "arch": arch, "check_bounds": check_bounds,
                          **environment_fingerprint()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _cache_path(key: str) -> Path:
    return config.get().cache_dir / "kernels" / key[:2] / f"{key}.json"


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _encode(images: CompiledImages) -> bytes:
    raw = {"kernel": asdict(images.kernel), "ptx": images.ptx, "cubin": _b64(images.cubin),
           "cubin_arch": images.cubin_arch, "cpu_object": _b64(images.cpu_object)}
    return json.dumps(raw).encode()


def _decode(data: bytes) -> CompiledImages:
    raw = json.loads(data)
    k = raw["kernel"]
    kernel = Kernel(k["name"], tuple(TypeSpec(a["kind"], a["dtype"], a["mlir"], tuple(a["shape"]))
                                     for a in k["args"]),
                    tuple(KernelParam(**p) for p in k["params"]), k["static_shared_bytes"],
                    k["uses_barriers"])
    return CompiledImages(kernel, raw["ptx"], _unb64(raw["cubin"]), raw["cubin_arch"],
                          _unb64(raw["cpu_object"]))


def _cache_get(key: str) -> CompiledImages | None:
    path = _cache_path(key)
    data = read_digested(path)
    if data is None:
        return None
    try:
        return _decode(data)
    except (ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return None


def _cache_put(key: str, images: CompiledImages) -> None:
    path = _cache_path(key)
    data = _encode(images)
    with contextlib.suppress(OSError):  # an unwritable cache only costs recompilation
        write_digested(path, data)


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
        hit = _cache_get(key)
        if hit is not None:
            return hit
    images = lower(module, target, arch, check_bounds)
    if use_cache:
        _cache_put(key, images)
    return images
