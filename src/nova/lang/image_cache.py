"""The compiled images of a kernel signature and their disk cache, without the compiler.

Entries live under `config.cache_dir/kernels/<key[:2]>/<key>.img` (a JSON line holding the
kernel's manifest entry and the images' sizes, then the images' bytes (`encode`), behind a
SHA-256 digest: a torn or corrupt entry reads as a miss and is removed). Two kinds of keys name
them (docs/python-kernels.md, "The disk cache"):

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
    return config.get().cache_path("kernels", key[:2], f"{key}.img")


_MAGIC = b"nova-kernel-images/1\n"
_BLOBS = ("ptx", "cubin", "cpu_object")


def encode(images: CompiledImages) -> bytes:
    """The entry: a magic line, one JSON line (the manifest entry, the cubin's arch and the
    byte length of each image, null for none), then the images' bytes back to back. The images
    are not base64 text inside the JSON: reading an entry parses a few hundred bytes of JSON and
    slices the rest (and loads no binascii)."""
    blobs = [None if images.ptx is None else images.ptx.encode(), images.cubin,
             images.cpu_object]
    header = {"kernel": as_dict(images.kernel), "cubin_arch": images.cubin_arch,
              **{name: None if blob is None else len(blob)
                 for name, blob in zip(_BLOBS, blobs, strict=True)}}
    return b"".join([_MAGIC, json.dumps(header).encode(), b"\n",
                     *(blob for blob in blobs if blob is not None)])


def decode(data: bytes) -> CompiledImages:
    """`encode`'s inverse; ValueError, KeyError or TypeError for anything else."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a kernel image cache entry")
    end = data.index(b"\n", len(_MAGIC))
    raw = json.loads(data[len(_MAGIC):end])
    k = raw["kernel"]
    kernel = Kernel(k["name"], tuple(TypeSpec(a["kind"], a["dtype"], a["mlir"], tuple(a["shape"]))
                                     for a in k["args"]),
                    tuple(KernelParam(**p) for p in k["params"]), k["static_shared_bytes"],
                    k["uses_barriers"])
    blobs: list[bytes | None] = []
    at = end + 1
    for name in _BLOBS:
        size = raw[name]
        if size is None:
            blobs.append(None)
            continue
        if type(size) is not int or size < 0 or at + size > len(data):
            raise ValueError(f"entry truncated or malformed at {name}")
        blobs.append(data[at:at + size])
        at += size
    if at != len(data):
        raise ValueError("trailing bytes after the images")
    ptx = None if blobs[0] is None else blobs[0].decode()
    return CompiledImages(kernel, ptx, blobs[1], raw["cubin_arch"], blobs[2])


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
