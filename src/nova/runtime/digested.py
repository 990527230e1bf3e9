"""Files behind their SHA-256: the on-disk form of every Nova cache entry.

`write_digested` writes atomically (a temporary file renamed over the target), so a reader sees
the old entry or the whole new one; `read_digested` returns None for a missing, unreadable, torn
or corrupt file (and removes the latter two), so a damaged entry is a cache miss, never an error.
Used by the compile cache (`nova.compiler.cache`), the Python-kernel image cache and the cached
native runtime objects of the cpu device.
"""

from __future__ import annotations

import contextlib
import os

from nova.hashing import sha256

TYPE_CHECKING = False  # neither typing nor pathlib is imported at run time (cold start)
if TYPE_CHECKING:
    from typing import TypeAlias

    PathLike: TypeAlias = "str | os.PathLike[str]"

_DIGEST = 32


def read_digested(path: PathLike) -> bytes | None:
    """The payload of a cache file written by `write_digested`, or None when it is missing or
    unreadable; a torn or corrupt file (its SHA-256 prefix does not match) is deleted."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    digest, data = raw[:_DIGEST], raw[_DIGEST:]
    if len(raw) < _DIGEST or sha256(data).digest() != digest:
        remove(path)
        return None
    return data


def remove(path: PathLike) -> None:
    """Delete a cache file that may already be gone (`Path.unlink(missing_ok=True)`)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def write_digested(path: PathLike, data: bytes) -> None:
    """Write `data` behind its SHA-256 atomically (a temporary file renamed over `path`, removed
    again if the write fails), so readers see the old entry or the whole new one. Raises
    OSError; callers that treat the cache as optional catch it."""
    import tempfile

    folder = os.path.dirname(os.fspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(sha256(data).digest() + data)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
