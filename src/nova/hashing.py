"""SHA-256 without OpenSSL's start-up cost, for the cold-start paths.

`hashlib.sha256` is OpenSSL's: importing hashlib loads libcrypto, about 2 ms of every fresh
process that only hashes a few kilobytes (a cache key, a cache entry's digest). `sha256` returns
CPython's built-in implementation (the `_sha2`/`_sha256` module, no shared library) unless hashlib
is already loaded or the caller announces more than `LARGE` bytes, where OpenSSL's faster code pays
for its start-up. Both compute the same digests.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from typing import Any

LARGE = 1 << 20
"""Inputs above this size (in bytes) are hashed by OpenSSL."""

_builtin: Any = None


def sha256(data: bytes | bytearray | memoryview = b"", *, size_hint: int = 0) -> Any:
    """A SHA-256 hash object (`update`, `digest`, `hexdigest`) over `data`; `size_hint` is the
    total number of bytes the caller will feed it, when more than `data`."""
    global _builtin
    if "hashlib" not in sys.modules and max(len(data), size_hint) <= LARGE:
        if _builtin is None:
            _builtin = _load_builtin()
        if _builtin is not None:
            return _builtin(data)
    import hashlib

    return hashlib.sha256(data)


def _load_builtin() -> Any:
    """CPython's own SHA-256 constructor (`_sha2` from 3.12, `_sha256` before), or None."""
    try:
        module = __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256")
    except ImportError:
        return None
    return getattr(module, "sha256", None)
