"""The model cache: a compiled specialisation on disk, keyed by the graph and the settings, so
compiling a model that was compiled before costs a key and two file reads instead of the pass
pipeline, the code generation and the MLIR compiler.

What decides a specialisation, and so the key (SHA-256 of one JSON document):

- the graph: name, inputs, outputs, tensor types, every node (op, inputs, outputs, attributes,
  name) and every weight's dtype, shape and SHA-256 of its bytes (hashed in two threads: OpenSSL
  releases the GIL, and the weights are the bulk of the key's cost);
- the bindings of the symbolic dims, the dtype and every resolved compile setting (GEMM/conv
  policy and library, attention mode, tensor cores, the driver's CompileOptions);
- the sources of nova.models, and what keys Nova's bundle cache (nova.compiler.cache: the
  compiler's sources, xDSL/llvmlite/ptxas, the CPU target, codegen settings).

An entry is two files under `<cache_dir>/models/<key[:2]>/`: `<key>.nova`, the bundle, written by
`write_digested` (SHA-256 checked on read; the runtime checks the bundle's seal again at load),
and `<key>.weights`: `b"NOVAMC1\\0"`, the CRC-32 of the rest, then a `.nova.weights` payload
(nova.models.weights_section: the device-ready weights in `@forward` order and the model
signature). CRC-32 rather than SHA-256 for the weights: they are megabytes, the check is against
torn or damaged files (both files are written atomically, weights first), and zlib's CRC runs
~3x faster than SHA-256 here. A missing, torn or corrupt entry is a miss, never an error. At
most MAX_ENTRIES entries are kept (the least recently written are removed).
"""

from __future__ import annotations

import json
import os
import struct
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

WEIGHTS_MAGIC = b"NOVAMC1\0"
_PARALLEL_BYTES = 4 << 20
"""Weights above this many bytes in all are hashed in two threads."""
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
    return [data.dtype.str, list(data.shape),
            sha256(data.reshape(-1).view(np.uint8).data, size_hint=data.nbytes).hexdigest()]


def _weight_digests(graph: Graph) -> list[list[Any]]:
    items = list(graph.weights.items())
    arrays = [np.asarray(v) for _, v in items]
    if sum(a.nbytes for a in arrays) <= _PARALLEL_BYTES:
        digests = [_array_digest(a) for a in arrays]
    else:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="nova-model-key") as pool:
            digests = list(pool.map(_array_digest, arrays))
    return [[name, *digest] for (name, _), digest in zip(items, digests, strict=True)]


def _paths(key: str) -> tuple[str, str]:
    base = config.get().cache_path("models", key[:2], key)
    return f"{base}.nova", f"{base}.weights"


def get(key: str) -> Entry | None:
    """The entry for `key`, or None (missing, unreadable, torn or corrupt: the files of a
    damaged entry are removed)."""
    bundle_path, weights_path = _paths(key)
    bundle = read_digested(bundle_path)
    if bundle is None:
        return None
    try:
        with open(weights_path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head = len(WEIGHTS_MAGIC) + 8
    payload = memoryview(raw)[head:]
    if (raw[:len(WEIGHTS_MAGIC)] != WEIGHTS_MAGIC
            or struct.unpack_from("<I", raw, len(WEIGHTS_MAGIC))[0] != zlib.crc32(payload)):
        remove(weights_path)
        return None
    section = decode(payload, weights_path)
    return Entry(bundle, section.weights, section.model)


def put(key: str, entry: Entry) -> None:
    """Store `entry` (the weights file first, so a reader that finds the bundle finds both);
    a cache that cannot be written is skipped."""
    bundle_path, weights_path = _paths(key)
    payload = encode(entry.weights, entry.signature)
    try:
        _write_atomic(weights_path, WEIGHTS_MAGIC + struct.pack("<II", zlib.crc32(payload), 0)
                      + payload)
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


def _write_atomic(path: str, data: bytes) -> None:
    import tempfile

    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
