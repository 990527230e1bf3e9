"""The compile cache: finished .nova bytes on disk, keyed by everything that determines them.

The key is a SHA-256 over the source text, its file name, the compile options, Nova's version plus
a fingerprint of the compiler's own sources (so an edited compiler never returns stale bundles),
the xDSL and llvmlite versions, and the ptxas in use. Entries are written atomically and carry a
digest of their contents, so a torn or corrupted entry reads as a miss. Nothing here imports xDSL
or llvmlite: a cache hit costs a few stat() calls and one file read.
"""

from __future__ import annotations

import os
import sys
from functools import cache

from nova.hashing import sha256
from nova.runtime.digested import read_digested, write_digested

TYPE_CHECKING = False  # pathlib is not imported at run time (a cache hit's cold start)
if TYPE_CHECKING:
    from pathlib import Path

# Compiler-side packages whose sources decide a bundle's bytes (the runtime's do not).
_COMPILER_PARTS = ("compiler", "lang", "ir", "passes", "backends", "bundle", "abi", "errors")


def _dist_version(package: str) -> str:
    """A package's installed version, read from the name of its dist-info directory beside it,
    without importing it. The folder is the first sys.path entry holding `<package>/` or
    `<package>.py`, as `importlib.util.find_spec` finds a top-level package (two stat calls per
    entry, one listing of the folder found: no import of importlib.util, a cold start's);
    anything else (an import hook, an editable install without the dist-info beside it) asks
    importlib."""
    for entry in sys.path:
        base = os.path.join(entry or ".", package)
        if os.path.isdir(base) or os.path.isfile(f"{base}.py"):
            found = _dist_info_version(_listing(entry or "."), package)
            if found is not None:
                return found
            break
    return _dist_version_by_importlib(package)


def _dist_info_version(names: frozenset[str], package: str) -> str | None:
    """The version in the name of `package`'s dist-info folder among `names` (the first in
    sorted order if there are several), or None."""
    prefix = f"{package}-"
    first = min((n for n in names if n.startswith(prefix) and n.endswith(".dist-info")),
                default=None)  # no sort of the whole folder: this runs on every cold start
    return None if first is None else first.removesuffix(".dist-info").split("-", 1)[1]


@cache
def _listing(folder: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def _dist_version_by_importlib(package: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return "absent"
    site = os.path.dirname(os.path.dirname(spec.origin))
    found = _dist_info_version(_listing(site), package)
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _python_files(folder: str, relative: str, out: list[str]) -> None:
    """Append "<path relative to the nova package>:<size>:<mtime_ns>;" for every *.py file
    under `folder`, recursively, in pathlib's order (by path components: each folder's entries
    by name, a subfolder's files where its name sorts). os.scandir rather than pathlib's rglob,
    and no sort of the whole list afterwards: this runs on every cold start, and each file's
    stat() is its only system call (through the folder's descriptor: no path walk)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=_name)
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):  # as rglob: no symlinked folders
                if name != "__pycache__":  # bytecode only: ~130 entries not to look at
                    _python_files(f"{folder}/{name}", f"{relative}/{name}", out)
            elif name.endswith(".py"):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                out.append(f"{relative}/{name}:{stat.st_size}:{stat.st_mtime_ns};")
    finally:
        os.close(fd)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


@cache
def _compiler_fingerprint() -> str:
    """Hash of (path, size, mtime) of every compiler source file: changes whenever one is edited."""
    return source_fingerprint(_COMPILER_PARTS)


@cache
def source_fingerprint(parts: tuple[str, ...]) -> str:
    """Hash of (path, size, mtime) of every *.py file of `parts` (packages or modules of nova,
    e.g. ("compiler", "errors")): changes whenever one of them is edited. nova.models keys its
    model cache on its own sources this way."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the nova package
    lines: list[str] = []
    for part in parts:
        path = os.path.join(root, part)
        if part.endswith(".py"):
            try:
                stat = os.stat(path)
            except OSError:
                continue
            lines.append(f"{part}:{stat.st_size}:{stat.st_mtime_ns};")
        else:
            _python_files(path, part, lines)
    return sha256("".join(lines).encode()).hexdigest()


def environment_fingerprint() -> dict[str, str]:
    """The parts of the cache key that describe the compiler and the CPU-device target, not
    the input."""
    from nova import config

    cfg = config.get()
    return {**_tool_fingerprint(), "cpu_arch": cfg.cpu_arch, "cpu_regions": str(cfg.cpu_regions),
            "cpu": config.host_cpu_id() if cfg.cpu_arch == "native" else ""}


@cache
def _tool_fingerprint() -> dict[str, str]:
    import nova

    return {
        "nova": nova.__version__,
        "compiler": _compiler_fingerprint(),
        "xdsl": _dist_version("xdsl"),
        "llvmlite": _dist_version("llvmlite"),
        "ptxas": _which("ptxas"),
    }


def _which(program: str) -> str:
    """`shutil.which(program) or ""`, without importing shutil (cold start of cache hits)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return ""


def codegen_settings() -> dict[str, object]:
    """The configuration (not compile options) that changes generated code: the CPU device's
    fiber stack size per GPU thread (NOVA_CPU_STACK_KIB) is compiled into CPU objects."""
    from nova import config

    return {"cpu_stack_kib": config.get().cpu_stack_kib}


def cache_key(text: str, filename: str, options: dict[str, object]) -> str:
    """The SHA-256 key of one compilation."""
    import json  # a cached kernel's first call imports this module but no json

    payload = json.dumps(
        {"text": text, "filename": filename, "options": options, **environment_fingerprint(),
         **codegen_settings()},
        sort_keys=True, default=str,
    )
    return sha256(payload.encode()).hexdigest()


__all__ = ["BundleCache", "cache_key", "codegen_settings", "environment_fingerprint",
           "read_digested", "source_fingerprint", "write_digested"]


class BundleCache:
    """A directory of cached bundles: `<dir>/bundles/<key[:2]>/<key>.nova`, holding at most
    `max_entries` (the least recently written go first)."""

    def __init__(self, directory: str | os.PathLike[str], max_entries: int = 512) -> None:
        self._root = os.path.join(os.fspath(directory), "bundles")  # no pathlib for a hit
        self.max_entries = max_entries

    @property
    def directory(self) -> Path:
        """`<dir>/bundles`."""
        from pathlib import Path

        return Path(self._root)

    def _path(self, key: str) -> str:
        return os.path.join(self._root, key[:2], f"{key}.nova")

    def get(self, key: str) -> bytes | None:
        """The cached bytes for `key`, or None (missing, unreadable or corrupt entries)."""
        return read_digested(self._path(key))

    def put(self, key: str, data: bytes) -> None:
        """Store `data` atomically; a cache that cannot be written is silently skipped."""
        try:
            write_digested(self._path(key), data)
            self._prune()
        except OSError:
            return

    def _prune(self) -> None:
        entries = list(self.directory.glob("*/*.nova"))
        if len(entries) <= self.max_entries:
            return
        by_age = sorted(entries, key=lambda p: p.stat().st_mtime_ns)
        for stale in by_age[:len(entries) - self.max_entries]:
            stale.unlink(missing_ok=True)
