"""Compile one kernel signature: Python -> gpu.module (xDSL) -> PTX/cubin or x86-64 object.

`build_module(src, sig, symbol)` runs the translator; `compile_images(module_op, device, arch)`
lowers the gpu.module with the device pipeline (`nova.backends.device.lower_device_module`, then
`nova.backends.nvptx` or `nova.backends.x86`). Results are cached on disk under
`config.cache_dir/kernels`: the key is the SHA-256 of the printed MLIR (which captures the
kernel's source, its device functions, the constants it read and the signature), the target,
arch and bounds-check option, and the compiler fingerprint of `nova.driver_cache`
(Nova/xDSL/llvmlite versions and compiler sources). Entries carry a digest; a torn or corrupt
entry reads as a miss.
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

from nova import config
from nova.bundle.format import Kernel, KernelParam, TypeSpec
from nova.driver_cache import read_digested, write_digested
from nova.frontend.kernel import types as T
from nova.frontend.kernel.source import FunctionSource

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
    from nova.frontend.kernel.translate import Translator
    from nova.ir.verify import verify_located

    module = Translator(src, sig, symbol, module_name).build()
    verify_located(module)
    return module


def gpu_module_of(module: ModuleOp) -> GPUModuleOp:
    """The gpu.module of a kernel module (build_module makes exactly one, first)."""
    return cast("GPUModuleOp", next(iter(module.body.block.ops)))


def print_module(module: ModuleOp) -> str:
    from nova.frontend.mlir_text import print_mlir

    return print_mlir(module)


def _cache_key(mlir_text: str, target: str, arch: str, check_bounds: bool = False) -> str:
    from nova.driver_cache import environment_fingerprint

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
    (`check_bounds`: every array access checked, docs/debugging.md)."""
    from nova.backends.device import DeviceTarget, lower_device_module

    gm = gpu_module_of(module)
    if target == "cpu":
        from nova.backends.x86 import emit_object

        low = lower_device_module(gm, DeviceTarget.CPU, check_bounds=check_bounds)
        return CompiledImages(low.kernels[0], cpu_object=emit_object(str(low.llvm_module)))
    from nova.backends.nvptx import assemble_cubin, emit_ptx

    low = lower_device_module(gm, DeviceTarget.NVPTX, arch, check_bounds)
    ptx = emit_ptx(str(low.llvm_module), arch)
    cubin = assemble_cubin(ptx, arch)
    return CompiledImages(low.kernels[0], ptx=ptx, cubin=cubin,
                          cubin_arch=arch if cubin is not None else None)


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
