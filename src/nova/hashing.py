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


_SCALARS = (str, int, float, bool, type(None))


def canonical(value: Any) -> str:
    """One text per value of plain data (dicts with str keys, lists, tuples, str, int, float, bool,
    None; subclasses of str, int and float as their plain values), for hashing into cache keys:
    `repr` of the scalars, dicts with their keys sorted, tuples written as lists (as JSON reads
    them). What `json.dumps(value, sort_keys=True)` was used for, without importing json on a cached
    kernel's first call (its encoder's import compiles three regular expressions: 2-3 ms). TypeError
    for anything else."""
    cls = type(value)
    if cls in _SCALARS:
        return repr(value)
    if cls is list or cls is tuple:
        return "[" + ",".join(map(canonical, value)) + "]"
    if cls is dict:
        for key in value:
            if type(key) is not str:
                raise TypeError(f"canonical: dict key {key!r} is not a str")
        return "{" + ",".join(f"{key!r}:{canonical(value[key])}"
                              for key in sorted(value)) + "}"
    if isinstance(value, str | int | float):  # StrEnums and the like: their plain value
        base = str if isinstance(value, str) else bool if isinstance(value, bool) else \
            int if isinstance(value, int) else float
        return base.__repr__(value)
    raise TypeError(f"canonical: cannot describe a {cls.__name__}")
