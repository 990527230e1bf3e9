"""The model cache: a compiled specialisation on disk, keyed by the graph and the settings, so
compiling a model that was compiled before costs a key and two file reads instead of the pass
pipeline, the code generation and the MLIR compiler.

What decides a specialisation, and so the key (SHA-256 of one JSON document):

- the graph: name, inputs, outputs, tensor types, every node (op, inputs, outputs, attributes,
  name) and every weight's dtype, shape and digest: SHA-256 over its size and the SHA-256 of
  each 1 MiB chunk of its bytes (the chunks hashed in threads, one per CPU up to 8: OpenSSL
  releases the GIL, and the weights are the bulk of the key's cost);
- the bindings of the symbolic dims, the dtype and every resolved compile setting (GEMM/conv
  policy and library, attention mode, tensor cores, the driver's CompileOptions);
- the sources of nova.models, and what keys Nova's bundle cache (nova.compiler.cache: the
  compiler's sources, xDSL/llvmlite/ptxas, the CPU target, codegen settings).

An entry is two files under `<cache_dir>/models/<key[:2]>/`: `<key>.nova`, the bundle, written by
`write_digested` (SHA-256 checked on read; the runtime checks the bundle's seal again at load),
and `<key>.weights`: `b"NOVAMC2\\0"`, the chunk size and count, the CRC-32 of each 1 MiB chunk of
the payload, then a `.nova.weights` payload (nova.models.weights_section: the device-ready
weights in `@forward` order and the model signature). A lookup maps the weights file (the
weights are read-only views of the mapping, no copy) and checks the chunks in threads. CRC-32
rather than SHA-256 for the weights: they are megabytes, the check is against torn or damaged
files (both files are written atomically, weights first), and zlib's CRC runs ~3x faster than
SHA-256 here. A missing, torn or corrupt entry is a miss, never an error. At
most MAX_ENTRIES entries are kept (the least recently written are removed).
"""

from __future__ import annotations

import json
import os
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from nova import config
from nova.hashing import sha256
from nova.models.graph import Graph
from nova.models.weights_section import decode, encode
from nova.runtime.digested import read_digested, remove, write_digested

WEIGHTS_MAGIC = b"NOVAMC2\0"
_PARALLEL_BYTES = 4 << 20
"""Weights above this many bytes in all are hashed (and checked at lookup) in threads."""
CHUNK_BYTES = 1 << 20
"""Weights are hashed, and cache files CRC-checked, in chunks of this size (in threads)."""
HASH_THREADS = 8
MAX_ENTRIES = 64
"""Entries kept (the least recently written go first): each holds a model's weights."""


@dataclass
class Entry:
    """A cached specialisation: the bundle, its weights (device-ready, `@forward` order) and the
    model signature the manifest records (docs/models.md, "Manifest")."""

    bundle: bytes
    weights: dict[str, np.ndarray]
    signature: dict[str, Any]


def enabled() -> bool:
    """Whether compilations may use the cache: as the bundle cache, not with NOVA_CACHE=0 or
    when NOVA_DUMP_DIR / NOVA_OVERRIDE_DIR ask for (or replace) the compiler's stages."""
    cfg = config.get()
    return cfg.cache_enabled and cfg.dump_dir is None and cfg.override_dir is None


def model_key(graph: Graph, bindings: dict[str, int], dtype: str,
              settings: dict[str, Any]) -> str:
    """The SHA-256 key of one specialisation (see the module doc)."""
    from nova.compiler.cache import codegen_settings, environment_fingerprint, source_fingerprint

    document = {
        "graph": _graph_document(graph),
        "weights": _weight_digests(graph),
        "bindings": sorted(bindings.items()),
        "dtype": dtype,
        "settings": settings,
        "models": source_fingerprint(("models",)),
        **environment_fingerprint(),
        **codegen_settings(),
    }
    text = json.dumps(document, sort_keys=True, default=_json_value)
    return sha256(text.encode()).hexdigest()


def _graph_document(graph: Graph) -> dict[str, Any]:
    return {
        "name": graph.name,
        "inputs": list(graph.inputs),
        "outputs": list(graph.outputs),
        "types": {name: [t.dtype, list(t.shape)] for name, t in graph.types.items()},
        "nodes": [[n.op, list(n.inputs), list(n.outputs), n.attrs, n.name]
                  for n in graph.nodes],
    }


def _json_value(value: Any) -> Any:
    """Attribute values JSON does not know: arrays by dtype, shape and digest, NumPy scalars as
    Python numbers, anything else by its repr (deterministic for the attribute types ops use)."""
    if isinstance(value, np.ndarray):
        return _array_digest(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)


def _array_digest(value: np.ndarray) -> list[Any]:
    data = np.ascontiguousarray(value)
    view = data.reshape(-1).view(np.uint8).data
    return [data.dtype.str, list(data.shape), _combine(len(view), [_chunk_digest(c)
                                                                  for c in _chunks(view)])]


def _chunks(view: memoryview) -> list[memoryview]:
    return [view[i:i + CHUNK_BYTES] for i in range(0, max(len(view), 1), CHUNK_BYTES)]


def _chunk_digest(chunk: memoryview) -> bytes:
    return bytes(sha256(chunk, size_hint=len(chunk)).digest())


def _combine(nbytes: int, digests: list[bytes]) -> str:
    """An array's digest: SHA-256 of its size and its chunks' SHA-256 digests (in order), so
    that chunks hash in parallel and any changed byte still changes the digest."""
    return sha256(nbytes.to_bytes(8, "little") + b"".join(digests)).hexdigest()


def _weight_digests(graph: Graph) -> list[list[Any]]:
    """Every weight's [name, dtype, shape, digest]; the chunks of all weights are hashed in
    threads (OpenSSL's SHA-256 releases the GIL), one per CPU up to HASH_THREADS, when the
    weights hold more than _PARALLEL_BYTES."""
    items = list(graph.weights.items())
    arrays = [np.ascontiguousarray(v) for _, v in items]
    views = [a.reshape(-1).view(np.uint8).data for a in arrays]
    chunks = [_chunks(v) for v in views]
    flat = [c for cs in chunks for c in cs]
    threads = min(HASH_THREADS, _cpus(), len(flat))
    if sum(len(v) for v in views) <= _PARALLEL_BYTES or threads < 2:
        digests = [_chunk_digest(c) for c in flat]
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="nova-model-key") as pool:
            digests = list(pool.map(_chunk_digest, flat))
    out, at = [], 0
    for (name, _), a, v, cs in zip(items, arrays, views, chunks, strict=True):
        out.append([name, a.dtype.str, list(a.shape), _combine(len(v), digests[at:at + len(cs)])])
        at += len(cs)
    return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _paths(key: str) -> tuple[str, str]:
    base = config.get().cache_path("models", key[:2], key)
    return f"{base}.nova", f"{base}.weights"


def get(key: str) -> Entry | None:
    """The entry for `key`, or None (missing, unreadable, torn or corrupt: the files of a
    damaged entry are removed). The weights file is mapped, not read: the weights are read-only
    views of the mapping, and its CRC-32 chunks are checked in threads."""
    flush(key)
    bundle_path, weights_path = _paths(key)
    bundle = read_digested(bundle_path)
    if bundle is None:
        return None
    raw = _map(weights_path)
    if raw is None:
        return None
    payload = _checked_payload(raw)
    if payload is None:
        remove(weights_path)
        return None
    section = decode(payload, weights_path)
    return Entry(bundle, section.weights, section.model)


def _map(path: str) -> memoryview | None:
    import mmap

    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return memoryview(b"")
            return memoryview(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None


def _checked_payload(raw: memoryview) -> memoryview | None:
    """The payload of a weights file whose header and every chunk's CRC-32 match, else None.
    Layout: WEIGHTS_MAGIC, u32 chunk size, u32 chunk count, the chunks' CRC-32s, the payload."""
    head = len(WEIGHTS_MAGIC) + 8
    if len(raw) < head or bytes(raw[:len(WEIGHTS_MAGIC)]) != WEIGHTS_MAGIC:
        return None
    chunk, count = struct.unpack_from("<II", raw, len(WEIGHTS_MAGIC))
    crcs = raw[head:head + 4 * count]
    payload = raw[head + 4 * count:]
    if chunk == 0 or len(crcs) != 4 * count or count != _chunk_count(len(payload), chunk):
        return None
    return payload if bytes(crcs) == _crcs(payload, chunk) else None


def _chunk_count(nbytes: int, chunk: int) -> int:
    return max(1, -(-nbytes // chunk))


def _crcs(payload: memoryview | bytes | bytearray, chunk: int) -> bytes:
    """The little-endian CRC-32 of each `chunk` bytes of `payload` (threads when large: zlib
    releases the GIL)."""
    view = memoryview(payload)
    parts = [view[i:i + chunk] for i in range(0, _chunk_count(len(view), chunk) * chunk, chunk)]
    threads = min(HASH_THREADS, _cpus(), len(parts))
    if len(view) <= _PARALLEL_BYTES or threads < 2:
        values = [zlib.crc32(p) for p in parts]
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="nova-model-crc") as pool:
            values = list(pool.map(zlib.crc32, parts))
    return struct.pack(f"<{len(values)}I", *values)


_writes: dict[str, threading.Thread] = {}
_writes_lock = threading.Lock()


def put_soon(key: str, entry: Entry) -> None:
    """`put` in a background thread, so that a compilation returns without waiting for its
    tens of megabytes to be written. The thread is not a daemon (the interpreter waits for it at
    exit), and a `get` of the same key in this process waits for it first, so a second compile
    here still finds the entry."""
    def write() -> None:
        try:
            put(key, entry)
        finally:
            with _writes_lock:
                if _writes.get(key) is thread:
                    del _writes[key]

    thread = threading.Thread(target=write, name="nova-model-store")
    with _writes_lock:
        _writes[key] = thread
    thread.start()


def flush(key: str | None = None) -> None:
    """Wait until the background writes of `key` (None: every key) are done."""
    with _writes_lock:
        pending = [t for k, t in _writes.items() if key is None or k == key]
    for thread in pending:
        thread.join()


def put(key: str, entry: Entry) -> None:
    """Store `entry` (the weights file first, so a reader that finds the bundle finds both);
    a cache that cannot be written is skipped."""
    bundle_path, weights_path = _paths(key)
    payload = encode(entry.weights, entry.signature)
    crcs = _crcs(payload, CHUNK_BYTES)
    try:
        _write_atomic(weights_path, (WEIGHTS_MAGIC + struct.pack(
            "<II", CHUNK_BYTES, len(crcs) // 4) + crcs, payload))
        write_digested(bundle_path, entry.bundle)
        _prune()
    except OSError:
        return


def _prune() -> None:
    """Keep the newest MAX_ENTRIES entries (by the weights file's modification time)."""
    import glob

    weights = glob.glob(config.get().cache_path("models", "*", "*.weights"))
    if len(weights) <= MAX_ENTRIES:
        return
    weights.sort(key=lambda p: os.stat(p).st_mtime_ns)
    for stale in weights[:len(weights) - MAX_ENTRIES]:
        remove(stale)
        remove(stale.removesuffix(".weights") + ".nova")


def _write_atomic(path: str, parts: tuple[bytes | bytearray, ...]) -> None:
    """Write the concatenation of `parts` to `path` atomically (a temporary file renamed)."""
    import tempfile

    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.writelines(parts)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
