"""Compile the device modules of a program in worker processes, beside the host code.

A producer that knows its text's layout (nova.models: one `gpu.module` per kernel) hands the
driver a `SplitSource`: each device module as a text of its own, and the host part with every
module reduced to a stub (its kernel's signature, an empty body). Both keep the line numbers of
the whole text, so every diagnostic points where it points in a serial compile. The driver then
sends each module to a worker (`compile_device_module`: parse, verify, device LLVM, PTX, ptxas,
or the CPU device's LLVM and object: the same stage functions as the serial path), parses and
lowers the host part meanwhile, and collects the images in the modules' text order before the
`embed` stage, so the bundle is byte-identical to a serial compile and independent of the number
of workers or of which finishes first.

Why processes: the work is Python (xDSL's parser and verifier, the LLVM IR emitter) and holds the
GIL. Why fork: a forked worker starts in milliseconds, needs no importable `__main__` (spawn and
forkserver re-import the user's script) and inherits what the parent imported; the child only
parses, calls LLVM and runs ptxas, never the CUDA driver or another thread's state. The pool is
started once per process (`prestart` lets a caller fork it before it needs it, so the workers'
imports overlap the caller's own work) and reused, also by compilations in other threads.
Workers ignore SIGINT (an interrupt reaches the parent, which stops the pool and re-raises it)
and are killed by Linux when the thread that forked them ends (PR_SET_PDEATHSIG), so a killed
compiler leaves no orphan holding its pipes.

Failures are never reported from the worker: a module whose worker raised (or died) is compiled
again in this process, which raises exactly the located NovaError a serial compile raises.

NOVA_COMPILE_JOBS: `1` compiles serially; `N` >= 2 uses up to N workers whenever a split source
is given; unset, `0` or `auto` uses one worker per CPU (at most MAX_AUTO_JOBS) when the machine
has at least MIN_AUTO_CPUS CPUs and the device modules hold at least MIN_AUTO_BYTES of text (on
fewer cores the workers' own imports cost more than they save).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from nova import config
from nova.errors import NovaError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from concurrent.futures import Future, ProcessPoolExecutor
    from typing import Any

    from nova.compiler.stages import Compilation, CompileOptions

MIN_AUTO_CPUS = 4
MIN_AUTO_BYTES = 32 << 10
MAX_AUTO_JOBS = 8
_ENV = "NOVA_COMPILE_JOBS"
WORKER_IMPORTS = ("nova.ir.parser", "nova.backends.device", "nova.backends.nvptx.ptx")
"""What every worker imports as it starts (the parser, the device lowering, the PTX emitter;
the CPU-device target is imported on first use)."""


class CompileJobsError(NovaError):
    """NOVA_COMPILE_JOBS is not a number of workers."""


@dataclass(frozen=True)
class ModuleSource:
    """One device module as a text of its own: it parses to a `builtin.module` holding exactly
    the `gpu.module @name`, with the line numbers the module has in the whole text."""

    name: str
    text: str


@dataclass(frozen=True)
class SplitSource:
    """A program split for parallel compilation (see the module doc). `host` is the whole text
    with each device module's body replaced by stubs of its kernels (same lines); `modules` are
    the device modules in text order."""

    host: str
    modules: tuple[ModuleSource, ...]

    @property
    def device_bytes(self) -> int:
        return sum(len(m.text) for m in self.modules)


@dataclass
class ModuleResult:
    """What a worker returns for one device module: the stage outputs for that module and the
    wall time (s) of each of its stages."""

    name: str
    kernels: tuple[Any, ...] = ()
    device_llvm: str | None = None
    ptx: str | None = None
    cubin: bytes | None = None
    cpu_llvm: str | None = None
    cpu_object: bytes | None = None
    timings: dict[str, float] = field(default_factory=dict)
    failed: bool = False


def split_text(text: str, spans: Sequence[tuple[str, int, int]]) -> SplitSource | None:
    """`text` split for the workers, given where its device modules are: (name, first line,
    last line) of each top-level `gpu.module`, 0-based line indices, in text order. The text's
    first line must open the container module (`module attributes {gpu.container_module} {`,
    nothing else on it), and every `gpu.func` signature must be one line ending in `{` (the
    host part keeps it in place, with `gpu.return` as its body, so that the launches' kernel
    signatures verify). None when that does not hold: the caller then compiles serially."""
    lines = text.split("\n")
    if not (lines[0].startswith("module") and lines[0].endswith("{")):
        return None
    host = list(lines)
    sources = []
    previous = 0
    for name, first, last in spans:
        if not previous < first < last < len(lines):  # in order, apart, inside the text
            return None
        previous = last
        module = lines[first:last + 1]
        if not module[0].lstrip().startswith(f"gpu.module @{name} ") \
                or module[-1].strip() != "}":
            return None
        stub = [module[0], *[""] * (len(module) - 2), module[-1]]
        headers = [i for i, line in enumerate(module) if line.lstrip().startswith("gpu.func @")]
        for i, end in zip(headers, [*headers[1:], len(module) - 1], strict=True):
            if not module[i].endswith("{") or end - i < 3:
                return None
            indent = module[i][:len(module[i]) - len(module[i].lstrip())]
            stub[i:i + 3] = [module[i], f"{indent}  gpu.return", f"{indent}}}"]
        host[first:last + 1] = stub
        sources.append(ModuleSource(name, "\n".join([lines[0], *[""] * (first - 1), *module,
                                                       "}", ""])))
    return SplitSource("\n".join(host), tuple(sources))


def jobs(split: SplitSource) -> int:
    """How many workers compile `split` (1: serially in this process)."""
    return _jobs(split.device_bytes, len(split.modules))


def _jobs(device_bytes: int, modules: int) -> int:
    setting = os.environ.get(_ENV, "").strip().lower()
    if not hasattr(os, "fork"):
        return 1
    if setting in ("", "0", "auto"):
        cpus = cpu_count()
        if cpus < MIN_AUTO_CPUS or device_bytes < MIN_AUTO_BYTES:
            return 1
        return max(1, min(cpus, MAX_AUTO_JOBS, modules))
    try:
        wanted = int(setting)
    except ValueError:
        raise CompileJobsError(f"{_ENV} must be 'auto' or a number of workers (1: serial), "
                               f"got {setting!r}") from None
    if wanted < 0:
        raise CompileJobsError(f"{_ENV} must not be negative, got {wanted}")
    return 1 if wanted <= 1 else min(wanted, max(1, modules))


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ---- the worker side ----------------------------------------------------------------------------

def _worker_init(parent: int) -> None:
    """Runs first in every worker: end with the parent, ignore SIGINT (the parent handles an
    interrupt) and import what every module needs, so that it overlaps whatever the parent does
    meanwhile."""
    import importlib
    import signal

    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in WORKER_IMPORTS:
        importlib.import_module(name)


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this worker when the thread that forked it ends (the parent killed or
    crashed: an orphan would otherwise wait for tasks forever, holding the parent's inherited
    file descriptors, such as the pipe a caller reads its output from)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown has to do
        return
    if os.getppid() != parent:  # the parent died before the request
        os._exit(1)


def _ready() -> int:
    return os.getpid()


def compile_device_module(module: ModuleSource, filename: str,
                          options: CompileOptions) -> ModuleResult:
    """Run the device stages the options enable on one module's text: what a worker does, and
    what this process does again for a module whose worker failed (raising its error)."""
    from nova.compiler import stages as st

    c = st.Compilation(module.text, filename, options)
    result = ModuleResult(module.name)
    steps = [("parse", st._parse), ("outline", st._outline)]
    if options.ptx:
        steps += [("device-llvm", st._device_llvm), ("ptx", st._ptx)]
        if options.cubin:
            steps.append(("cubin", _assemble))
    if options.cpu_image:
        steps += [("cpu-llvm", st._cpu_llvm), ("cpu-obj", st._cpu_obj)]
    for name, run in steps:
        start = time.perf_counter()
        run(c)
        result.timings[name] = time.perf_counter() - start
        if name == "outline" and list(c.device_modules) != [module.name]:
            raise st.CompileOptionsError(
                f"split source: the text of device module '{module.name}' holds "
                f"{', '.join(c.device_modules) or 'no gpu.module'}")
    result.kernels = c.kernels.get(module.name, ())
    result.device_llvm = c.device_llvm.get(module.name)
    result.ptx = c.ptx.get(module.name)
    result.cubin = c.cubin.get(module.name)
    result.cpu_llvm = c.cpu_llvm.get(module.name)
    result.cpu_object = c.cpu_objects.get(module.name)
    return result


def _assemble(c: Compilation) -> None:
    from nova.backends.nvptx.ptx import assemble_cubin

    for name, ptx in c.ptx.items():
        c.cubin[name] = assemble_cubin(ptx, c.options.arch, c.options.opt_level)


def _work(module: ModuleSource, filename: str, options: CompileOptions,
          settings: config.Config) -> ModuleResult:
    """The pool's task, under the sending process's configuration (the lowerings read some
    settings, e.g. NOVA_CPU_ARCH, and the worker was forked with an older one). Never raises:
    the parent recompiles a failed module to raise its error."""
    try:
        with config.using(settings):
            return compile_device_module(module, filename, options)
    except Exception:
        return ModuleResult(module.name, failed=True)


# ---- the pool -----------------------------------------------------------------------------------

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()
_pool_pid = 0
_pool_size = 0


def _get_pool(workers: int) -> ProcessPoolExecutor:
    """This process's pool of at least `workers` forked workers (started now if needed)."""
    with _pool_lock:  # compilations in several threads share the pool
        return _get_pool_locked(workers)


def _get_pool_locked(workers: int) -> ProcessPoolExecutor:
    global _pool, _pool_pid, _pool_size
    if _pool is not None and _pool_pid == os.getpid() and _pool_size >= workers:
        return _pool
    if _pool is not None and _pool_pid == os.getpid():  # too small: its workers end once the
        _pool.shutdown(wait=False)                       # tasks sent to it are done
    import multiprocessing
    import warnings
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_init, initargs=(os.getpid(),))
    try:
        with warnings.catch_warnings():  # Python 3.12 warns about fork() in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            pool.submit(_ready)  # fork start: every worker is forked at the first submission
    except BaseException:
        _terminate(pool)
        raise
    _pool, _pool_pid, _pool_size = pool, os.getpid(), workers
    return pool


def prestart(expected_bytes: int) -> None:
    """Fork the worker pool now, for a caller that will soon compile a split source of about
    `expected_bytes` of device-module text: the workers' imports then overlap the caller's own
    work (nova.models lowers the graph meanwhile). No-op when that would compile serially."""
    workers = _jobs(expected_bytes, MAX_AUTO_JOBS)
    if workers > 1:
        try:
            _get_pool(workers)
        except OSError:  # no process could be forked now: the compile will try again
            shutdown()


def shutdown() -> None:
    """Stop this process's pool (its workers exit); the next parallel compile forks a new one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None and _pool_pid == os.getpid():
        _terminate(pool)


def _terminate(pool: ProcessPoolExecutor) -> None:
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


@dataclass
class Pending:
    """The worker tasks of one compilation, in text order."""

    split: SplitSource
    futures: list[Future[ModuleResult]]
    started: float


def submit(split: SplitSource, filename: str, options: CompileOptions,
           workers: int) -> Pending | None:
    """Send every module to the pool, largest first (the longest task starts first). None when
    no pool can be had (fork failed; a broken pool is replaced once): compile serially."""
    from concurrent.futures.process import BrokenProcessPool

    order = sorted(range(len(split.modules)), key=lambda i: -len(split.modules[i].text))
    for _attempt in range(2):
        start = time.perf_counter()
        try:
            pool = _get_pool(workers)
            settings = config.get()
            by_index = {i: pool.submit(_work, split.modules[i], filename, options, settings)
                        for i in order}
        except (BrokenProcessPool, OSError):  # a worker died since the last compile, or no
            shutdown()                        # process could be forked
            continue
        return Pending(split, [by_index[i] for i in range(len(split.modules))], start)
    return None


def collect(c: Compilation, pending: Pending) -> None:
    """Wait for the workers and store their outputs in `c` in text order; a module whose worker
    failed is compiled here (raising its error). The wall time of the parallel part becomes the
    `modules` timing, the workers' stage times (summed) `<stage> (workers)`."""
    results = []
    try:
        for module, future in zip(pending.split.modules, pending.futures, strict=True):
            results.append(_result(module, future, c))
    except BaseException as exc:
        abandon(pending, exc)
        raise
    bg = c.background_timings
    bg["modules"] = time.perf_counter() - pending.started
    bg["slowest module"] = max((sum(r.timings.values()) for r in results), default=0.0)
    for r in results:
        for stage, seconds in r.timings.items():
            bg[f"{stage} (workers)"] = bg.get(f"{stage} (workers)", 0.0) + seconds
        _store(c, r)


def cancel(pending: Pending) -> None:
    """Drop the tasks not started yet (a compilation that fails or is interrupted)."""
    for future in pending.futures:
        future.cancel()


def abandon(pending: Pending, error: BaseException) -> None:
    """A compilation ends with `error` while its modules are in the workers: drop the tasks not
    started; for anything but a NovaError (an interrupt, a broken pool) stop the workers too,
    so that nothing keeps compiling for a program nobody waits for."""
    cancel(pending)
    if not isinstance(error, NovaError):
        shutdown()


def _result(module: ModuleSource, future: Future[ModuleResult], c: Compilation) -> ModuleResult:
    from concurrent.futures import CancelledError
    from concurrent.futures.process import BrokenProcessPool

    try:
        result = future.result()
    except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh later
        shutdown()
        result = ModuleResult(module.name, failed=True)
    except CancelledError:  # another thread stopped the pool (an interrupt there)
        result = ModuleResult(module.name, failed=True)
    if result.failed:  # compile it here: the serial path's error, located as there
        result = compile_device_module(module, c.filename, c.options)
    return result


def _store(c: Compilation, r: ModuleResult) -> None:
    c.kernels[r.name] = r.kernels
    for table, text in ((c.device_llvm, r.device_llvm), (c.ptx, r.ptx),
                        (c.cpu_llvm, r.cpu_llvm)):
        if text is not None:
            table[r.name] = text
    if r.cpu_object is not None:
        c.cpu_objects[r.name] = r.cpu_object
    if r.ptx is not None and c.options.cubin:
        c.cubin[r.name] = r.cubin
