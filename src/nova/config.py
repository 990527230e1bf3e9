"""The one place Nova reads its environment (NOVA_* variables), as a typed, scoped snapshot."""

from __future__ import annotations

import contextlib
import os

from nova.records import Record

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class Config(Record):
    """Nova's settings. `device` is 'cuda', 'cpu' or '' (auto: cuda when usable, else cpu).

    A frozen Record (nova.records): its module is on every cold-start path, so it does not import
    pathlib (3-4 ms with urllib.parse and ipaddress) either: `cache_dir` is kept as given (the
    default and NOVA_CACHE_DIR as strings) and made a Path when read; `cache_path` joins paths
    under it without pathlib, for the cache lookups of cold starts."""

    _cache_dir: str | os.PathLike[str]

    __match_args__ = ("device", "dump_dir", "override_dir", "cache_dir", "cache_enabled", "arch",
                      "cpu_workers", "cpu_stack_kib", "cpu_arch", "cpu_regions", "check_bounds",
                      "debug", "poison_memory", "trusted_keys", "auto_graphs")
    _fields = __match_args__
    device: str
    dump_dir: Path | None
    override_dir: Path | None  # NOVA_OVERRIDE_DIR: hand-edited stage outputs
    cache_enabled: bool
    arch: str
    cpu_workers: int  # 0: one worker thread per core
    cpu_stack_kib: int  # fiber stack per GPU thread of CPU-device kernels with barriers
    # NOVA_CPU_ARCH: CPU-device kernels are compiled for this machine's CPU ('native', AVX2/
    # AVX-512/FMA where present) or for baseline x86-64 ('generic', objects that load anywhere)
    cpu_arch: str
    # NOVA_CPU_REGIONS=0: run every barrier kernel as fibers (no barrier-region splitting);
    # for comparisons and debugging (docs/cpu-device.md)
    cpu_regions: bool
    check_bounds: bool  # NOVA_CHECK_BOUNDS: the default of the check_bounds option
    debug: bool  # NOVA_DEBUG: CLIs print tracebacks of internal errors
    poison_memory: bool  # NOVA_POISON: cpu device fills fresh allocations with 0xCD
    # NOVA_TRUSTED_KEYS: PEM public keys (paths, os.pathsep-separated); when any is given, only
    # bundles signed by one of them load (nova.load's trusted_keys overrides it)
    trusted_keys: tuple[Path, ...]
    # NOVA_AUTO_GRAPHS: replay repeated identical calls of replayable entries as recorded graphs
    # (nova.runtime.autograph); None: the device's default (cuda on, cpu off)
    auto_graphs: bool | None

    def __init__(self, device: str = "", dump_dir: Path | None = None,
                 override_dir: Path | None = None,
                 cache_dir: str | os.PathLike[str] | None = None,
                 cache_enabled: bool = True, arch: str = "sm_90", cpu_workers: int = 0,
                 cpu_stack_kib: int = 64, cpu_arch: str = "native", cpu_regions: bool = True,
                 check_bounds: bool = False, debug: bool = False, poison_memory: bool = False,
                 trusted_keys: tuple[Path, ...] = (), auto_graphs: bool | None = None) -> None:
        values = (device, dump_dir, override_dir,
                  _default_cache_dir() if cache_dir is None else cache_dir, cache_enabled, arch,
                  cpu_workers, cpu_stack_kib, cpu_arch, cpu_regions, check_bounds, debug,
                  poison_memory, trusted_keys, auto_graphs)
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, "_cache_dir" if name == "cache_dir" else name, value)

    @property
    def cache_dir(self) -> Path:
        """Where Nova's caches live (NOVA_CACHE_DIR, default ~/.cache/nova)."""
        from pathlib import Path

        return Path(self._cache_dir)

    def cache_path(self, *parts: str) -> str:
        """`str(self.cache_dir.joinpath(*parts))` without pathlib."""
        return os.path.join(os.fspath(self._cache_dir), *parts)

    @staticmethod
    def from_environ(environ: dict[str, str] | None = None) -> Config:
        env = os.environ if environ is None else environ
        base = Config()
        dump = env.get("NOVA_DUMP_DIR")
        cache = env.get("NOVA_CACHE_DIR")
        override = env.get("NOVA_OVERRIDE_DIR")
        keys = [p for p in env.get("NOVA_TRUSTED_KEYS", "").split(os.pathsep) if p.strip()]
        return Config(
            device=env.get("NOVA_DEVICE", base.device).strip().lower(),
            dump_dir=_paths(dump)[0] if dump else None,
            override_dir=_paths(override)[0] if override else None,
            cache_dir=cache if cache else base._cache_dir,
            cache_enabled=env.get("NOVA_CACHE", "1") not in ("0", "off", "false"),
            arch=env.get("NOVA_ARCH", base.arch),
            cpu_workers=int(env.get("NOVA_CPU_WORKERS", "0") or 0),
            cpu_stack_kib=int(env.get("NOVA_CPU_STACK_KIB", "64") or 64),
            cpu_arch=env.get("NOVA_CPU_ARCH", base.cpu_arch).strip().lower() or base.cpu_arch,
            cpu_regions=env.get("NOVA_CPU_REGIONS", "1") not in ("0", "off", "false"),
            check_bounds=env.get("NOVA_CHECK_BOUNDS", "0") not in ("0", "", "off", "false"),
            debug=env.get("NOVA_DEBUG", "0") not in ("0", "", "off", "false"),
            poison_memory=env.get("NOVA_POISON", "0") not in ("0", "", "off", "false"),
            trusted_keys=tuple(_paths(*keys)) if keys else (),
            auto_graphs=_switch(env.get("NOVA_AUTO_GRAPHS", "")),
        )


def _switch(value: str) -> bool | None:
    """An on/off variable: None when unset or empty (the default applies); any other spelling
    than 0/off/false/no (and their capitals) is on."""
    value = value.strip().lower()
    if not value:
        return None
    return value not in ("0", "off", "false", "no")


def _default_cache_dir() -> str:
    """~/.cache/nova (`Path.home()` is `os.path.expanduser("~")`)."""
    return os.path.join(os.path.expanduser("~"), ".cache", "nova")


def _paths(*values: str) -> list[Path]:
    from pathlib import Path  # only for settings the cold-start paths do not read

    return [Path(v) for v in values]


_current: Config | None = None


def get() -> Config:
    """The active configuration (read from the environment on first use)."""
    global _current
    if _current is None:
        _current = Config.from_environ()
    return _current


@contextlib.contextmanager
def scoped(**changes: object) -> Iterator[Config]:
    """Temporarily override settings (tests use this instead of touching os.environ)."""
    global _current
    previous = get()
    unknown = set(changes) - set(Config._fields)
    if unknown:
        raise TypeError(f"unknown config fields: {sorted(unknown)}")
    _current = previous._replace(**changes)
    try:
        yield _current
    finally:
        _current = previous


@contextlib.contextmanager
def using(settings: Config) -> Iterator[Config]:
    """Make `settings` the active configuration for a while (a compile worker takes on the
    configuration of the process that sent it a task)."""
    global _current
    previous = _current
    _current = settings
    try:
        yield settings
    finally:
        _current = previous


def reload() -> Config:
    """Re-read the environment (after a test or tool changed it)."""
    global _current
    _current = None
    return get()


_host_cpu_id: str | None = None
_first_cpu: tuple[str, ...] | None = None


def first_cpu_lines() -> tuple[str, ...]:
    """The lines of /proc/cpuinfo's first processor, () where the file is missing. Read once per
    process: `host_cpu_id` and the cpu device's properties both ask on a cached kernel's first
    call. The file repeats the fields for every core and the kernel writes it as it is read
    (sampling each core's clock), so only the first block is read."""
    global _first_cpu
    if _first_cpu is None:
        data = b""
        try:
            with open("/proc/cpuinfo", "rb", buffering=0) as f:
                while b"\n\n" not in data:
                    chunk = f.read(8192)
                    if not chunk:
                        break
                    data += chunk
        except OSError:
            pass
        first = data.split(b"\n\n", 1)[0]
        _first_cpu = tuple(first.decode("utf-8", "replace").splitlines())
    return _first_cpu


def host_cpu_id() -> str:
    """A cheap identity of this machine's CPU: a digest of /proc/cpuinfo's model name and
    feature flags (the processor name where that file is missing). CPU-device objects are
    compiled for the host CPU, so caches keyed by it never hand one machine's object (or its
    feature list) to another."""
    global _host_cpu_id
    if _host_cpu_id is None:
        from nova.hashing import sha256

        first = first_cpu_lines()
        lines = [ln for ln in first if ln.startswith(("model name", "flags"))][:2]
        if not first:  # no /proc/cpuinfo
            import platform

            lines = [platform.processor()]
        _host_cpu_id = sha256("\n".join(lines).encode()).hexdigest()[:16]
    return _host_cpu_id
