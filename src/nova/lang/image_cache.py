"""The compiled images of a kernel signature and their disk cache, without the compiler.

Entries live under `config.cache_dir/kernels/<key[:2]>/<key>.json` (JSON holding the kernel's
manifest entry and base64 images, behind a SHA-256 digest: a torn or corrupt entry reads as a
miss and is removed). Two kinds of keys name them (docs/python-kernels.md, "The disk cache"):

- the *source key* (`nova.lang.fingerprint.source_key`): computed from the kernel's Python source
  and what it references, before anything is translated, so a warm cache answers without
  importing xDSL, the passes or the backends;
- the *MLIR key* (`mlir_key`): the SHA-256 of the generated MLIR, for kernels whose source key
  cannot be computed (they reference values the fingerprint cannot describe soundly) and as a
  second level behind the source key (a comment edited in a kernel changes its source key, yet
  its MLIR and images stay the same).

This module imports neither xDSL nor llvmlite: `nova.lang.compiler` (which does) is imported only
when a signature must be built or lowered.
"""

from __future__ import annotations

import binascii
import contextlib
import json
from collections.abc import Callable

from nova import config
from nova.bundle.format import Kernel, KernelParam, TypeSpec
from nova.compiler.cache import (
    codegen_settings,
    environment_fingerprint,
    read_digested,
    write_digested,
)
from nova.hashing import sha256
from nova.records import Record, as_dict
from nova.runtime.digested import remove


class CompiledImages(Record):
    """The device images of one compiled signature and its kernel's manifest entry."""

    __match_args__ = ("kernel", "ptx", "cubin", "cubin_arch", "cpu_object")
    _fields = __match_args__

    kernel: Kernel
    ptx: str | None
    cubin: bytes | None
    cubin_arch: str | None
    cpu_object: bytes | None

    def __init__(self, kernel: Kernel, ptx: str | None = None, cubin: bytes | None = None,
                 cubin_arch: str | None = None, cpu_object: bytes | None = None) -> None:
        object.__setattr__(self, "kernel", kernel)
        object.__setattr__(self, "ptx", ptx)
        object.__setattr__(self, "cubin", cubin)
        object.__setattr__(self, "cubin_arch", cubin_arch)
        object.__setattr__(self, "cpu_object", cpu_object)


def mlir_key(mlir_text: str, target: str, arch: str, check_bounds: bool = False) -> str:
    """The cache key of a kernel signature by its generated MLIR (which captures the kernel's
    source, its device functions, the constants it read and the signature)."""
    payload = json.dumps({"kind": "python-kernel", "mlir": mlir_text, "target": target,
                          "arch": arch, "check_bounds": check_bounds,
                          **environment_fingerprint(), **codegen_settings()}, sort_keys=True)
    return sha256(payload.encode()).hexdigest()


def _path(key: str) -> str:
    return config.get().cache_path("kernels", key[:2], f"{key}.json")


def _b64(data: bytes | None) -> str | None:
    # binascii is what base64.b64encode/b64decode call (the base64 module costs a cold start more)
    return None if data is None else binascii.b2a_base64(data, newline=False).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else binascii.a2b_base64(text)


def encode(images: CompiledImages) -> bytes:
    raw = {"kernel": as_dict(images.kernel), "ptx": images.ptx, "cubin": _b64(images.cubin),
           "cubin_arch": images.cubin_arch, "cpu_object": _b64(images.cpu_object)}
    return json.dumps(raw).encode()


def decode(data: bytes) -> CompiledImages:
    raw = json.loads(data)
    k = raw["kernel"]
    kernel = Kernel(k["name"], tuple(TypeSpec(a["kind"], a["dtype"], a["mlir"], tuple(a["shape"]))
                                     for a in k["args"]),
                    tuple(KernelParam(**p) for p in k["params"]), k["static_shared_bytes"],
                    k["uses_barriers"])
    return CompiledImages(kernel, raw["ptx"], _unb64(raw["cubin"]), raw["cubin_arch"],
                          _unb64(raw["cpu_object"]))


def get(key: str) -> CompiledImages | None:
    """The cached images of `key`, or None (missing, unreadable, corrupt: removed)."""
    path = _path(key)
    data = read_digested(path)
    if data is None:
        return None
    try:
        return decode(data)
    except (ValueError, KeyError, TypeError):
        remove(path)
        return None


def put(key: str, images: CompiledImages) -> None:
    """Store `images` under `key`; an unwritable cache only costs recompilation."""
    with contextlib.suppress(OSError):
        write_digested(_path(key), encode(images))


def through_source_key(source_key: Callable[[], str | None],
                       build: Callable[[], CompiledImages]) -> CompiledImages:
    """The images under the source key `source_key()` (None: the kernel has none), else
    `build()` (translate and lower, through the MLIR-keyed cache) stored under it. The source
    key is skipped when the cache is off and when NOVA_DUMP_DIR or NOVA_OVERRIDE_DIR ask the
    compiler to run its stages."""
    cfg = config.get()
    use = cfg.cache_enabled and cfg.dump_dir is None and cfg.override_dir is None
    key = source_key() if use else None
    if key is not None:
        hit = get(key)
        if hit is not None:
            return hit
    images = build()
    if key is not None:
        put(key, images)
    return images
