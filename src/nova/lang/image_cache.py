"""The compiled images of a kernel signature and their disk cache, without the compiler.

Entries live under `config.cache_dir/kernels/<key[:2]>/<key>.img` (a magic line, then one
`marshal` record of the kernel's manifest entry and the images' bytes (`encode`), behind a
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
import marshal
from collections.abc import Callable

from nova import config
from nova.bundle.kernel_entry import Kernel, KernelParam, TypeSpec
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
    import json  # the miss path's: a cached kernel's first call imports no json

    payload = json.dumps({"kind": "python-kernel", "mlir": mlir_text, "target": target,
                          "arch": arch, "check_bounds": check_bounds,
                          **environment_fingerprint(), **codegen_settings()}, sort_keys=True)
    return sha256(payload.encode()).hexdigest()


def _path(key: str) -> str:
    return config.get().cache_path("kernels", key[:2], f"{key}.img")


_MAGIC = b"nova-kernel-images/2\n"
_BLOBS = ("ptx", "cubin", "cpu_object")


def encode(images: CompiledImages) -> bytes:
    """The entry: a magic line, the length of the rest (8 bytes, little-endian), then one `marshal`
    record: a dict of the manifest entry (as plain dicts, lists and scalars), the cubin's arch and
    the images' bytes (None for none). marshal rather than JSON: it is built into the interpreter,
    where importing `json` (its encoder compiles three regular expressions) cost a cached kernel's
    first call 2-3 ms, and it carries the images as bytes (no base64). The entry is behind a SHA-256
    digest and holds executable objects, so it is trusted as the objects are; an entry a Python
    version cannot read (marshal's format is Python's) reads as a miss."""
    header = {"kernel": as_dict(images.kernel), "cubin_arch": images.cubin_arch,
              "ptx": None if images.ptx is None else images.ptx.encode(),
              "cubin": images.cubin, "cpu_object": images.cpu_object}
    record = marshal.dumps(header, 4)
    return b"".join([_MAGIC, len(record).to_bytes(8, "little"), record])


def decode(data: bytes) -> CompiledImages:
    """`encode`'s inverse; ValueError, KeyError or TypeError for anything else."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a kernel image cache entry")
    start = len(_MAGIC) + 8
    if len(data) < start or int.from_bytes(data[len(_MAGIC):start], "little") != len(data) - start:
        raise ValueError("entry truncated, or trailing bytes after it")
    try:
        raw = marshal.loads(memoryview(data)[start:])
    except EOFError as exc:
        raise ValueError("entry truncated") from exc
    if type(raw) is not dict:
        raise ValueError("malformed entry")
    k = raw["kernel"]
    kernel = Kernel(k["name"], tuple(TypeSpec(a["kind"], a["dtype"], a["mlir"], tuple(a["shape"]))
                                     for a in k["args"]),
                    tuple(KernelParam(**p) for p in k["params"]), k["static_shared_bytes"],
                    k["uses_barriers"])
    blobs = [raw[name] for name in _BLOBS]
    for name, blob in zip(_BLOBS, blobs, strict=True):
        if blob is not None and type(blob) is not bytes:
            raise ValueError(f"entry malformed at {name}")
    arch = raw["cubin_arch"]
    if arch is not None and type(arch) is not str:
        raise ValueError("entry malformed at cubin_arch")
    ptx = None if blobs[0] is None else blobs[0].decode()
    return CompiledImages(kernel, ptx, blobs[1], arch, blobs[2])


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
