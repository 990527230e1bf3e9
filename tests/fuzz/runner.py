"""The fuzzer: inputs, the oracle, worker processes and the findings folder.

An input is (target, data): target 'mlir' (text through `compile_source` to host-llvm or
cpu-obj), 'bundle' (bytes through `read_bundle`) or 'kernel' (Python source through
`nova.kernel(...).mlir`). Each input runs in a forked child with a time limit and a memory
limit. The oracle: success or a NovaError (a diagnostic) is fine; any other exception is an
internal error, a child killed by a signal is a crash, one over the time limit a hang; each is a
finding, saved under tests/fuzz/findings/ (replayed by tests/fuzz/test_fuzz.py).

    python -m tests.fuzz.runner [N] [SEED] [--jobs J] [--timeout S]
"""

from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import os
import random
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import load_script
from tests.fuzz.kernels import HEADER, SEEDS
from tests.fuzz.mutate import BYTE_MUTATIONS, MLIR_MUTATIONS, PY_MUTATIONS

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = Path(__file__).resolve().parent / "findings"
SOURCES = sorted([*ROOT.glob("tests/corpus/*.mlir"), *ROOT.glob("tests/filecheck/**/*.mlir")])
BUNDLE_SOURCES = ("two-launches.mlir", "printf.mlir", "scf-host-device.mlir")
SUFFIX = {"mlir": ".mlir", "bundle": ".nova", "kernel": ".py"}
TIMEOUT_S = 20.0
MEMORY_LIMIT = 4 << 30  # bytes of address space for a child (a blow-up becomes a MemoryError)


@dataclass
class Input:
    target: str  # 'mlir' | 'bundle' | 'kernel'
    data: bytes
    note: str  # where it came from (source, mutations), for the report


@dataclass
class Outcome:
    status: str  # 'ok' | 'diagnostic' | 'internal' | 'signal' | 'hang' | 'python'
    detail: str = ""

    @property
    def is_finding(self) -> bool:
        return self.status in ("internal", "signal", "hang")


# --- running one input (in the child) -------------------------------------------------------

def _stage(data: bytes) -> str:
    """The last stage for an MLIR input: half go to host-llvm, half to cpu-obj (by content, so a
    saved finding replays the same way)."""
    return "cpu-obj" if hashlib.sha1(data).digest()[0] & 1 else "host-llvm"


def _run_mlir(data: bytes) -> None:
    from nova.compiler.driver import compile_source
    from nova.compiler.stages import CompileOptions

    compile_source(data.decode("utf-8"), "fuzz.mlir",
                   CompileOptions(emit=_stage(data), ptx=False, cubin=False))


def _run_bundle(data: bytes) -> None:
    from nova.bundle.reader import read_bundle

    read_bundle(data, name="fuzz.nova")


def _run_kernel(data: bytes) -> str | None:
    """None when the kernel compiled or was rejected; 'python' when the mutated module is not
    valid Python or fails on import outside Nova (the user's error, not a finding)."""
    import nova

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz_kernel.py"
        path.write_bytes(data)
        if not _is_python(data.decode("utf-8")):
            return "python"
        try:
            module = load_script(path, "fuzz_kernel")
        except Exception as exc:
            from nova.errors import NovaError

            # AttributeError: `nova.nope` (a module's __getattr__ must raise it; hasattr needs it).
            if isinstance(exc, NovaError | AttributeError) or not _raised_in_nova(exc):
                return "python"
            raise
        kern = getattr(module, "k", None)
        if not hasattr(kern, "mlir"):
            return "python"
        kern.mlir(nova.float32[:], nova.float32[:], nova.int32)
    return None


def _raised_in_nova(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and f"{os.sep}nova{os.sep}" in frames[-1].filename


def run_one(target: str, data: bytes) -> Outcome:
    """Run one input in this process and classify how it ended."""
    from nova import config
    from nova.errors import NovaError

    try:
        with config.scoped(cache_enabled=False):
            if target == "mlir":
                _run_mlir(data)
            elif target == "bundle":
                _run_bundle(data)
            elif _run_kernel(data) == "python":
                return Outcome("python")
    except UnicodeDecodeError:
        return Outcome("python")
    except NovaError as exc:
        return Outcome("diagnostic", str(exc)[:200])
    except RecursionError:
        return Outcome("internal", "RecursionError\n" + traceback.format_exc(limit=-8))
    except Exception as exc:
        return Outcome("internal", f"{type(exc).__name__}: {exc}"[:300] + "\n"
                       + traceback.format_exc(limit=-8))
    return Outcome("ok")


# --- forked children ------------------------------------------------------------------------

@dataclass
class _Child:
    pid: int
    fd: int
    item: Input
    started: float
    log: str  # the child's stderr (LLVM's messages and faulthandler's traceback on a crash)
    chunks: list[bytes] = field(default_factory=list)


def _spawn(item: Input) -> _Child:
    read, write = os.pipe()
    log_fd, log = tempfile.mkstemp(prefix="nova-fuzz-", suffix=".log")
    pid = os.fork()
    if pid == 0:  # the child: one input, the outcome as JSON on the pipe, then _exit
        try:
            os.close(read)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(log_fd, 2)
            faulthandler.enable(file=sys.__stderr__ or 2)
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            outcome = run_one(item.target, item.data)
            os.write(write, json.dumps([outcome.status, outcome.detail]).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.close(log_fd)
    return _Child(pid, read, item, time.monotonic(), log)


def _log_tail(child: _Child) -> str:
    try:
        data = Path(child.log).read_bytes()
        os.unlink(child.log)
    except OSError:
        return ""
    if len(data) > 2000:
        data = data[:1000] + b"\n...\n" + data[-1000:]
    text = data.decode("utf-8", "replace")
    return "\n" + text if text.strip() else ""


def _finish(child: _Child) -> Outcome:
    _, status = os.waitpid(child.pid, 0)
    os.close(child.fd)
    log = _log_tail(child)
    if os.WIFSIGNALED(status):
        return Outcome("signal", signal.Signals(os.WTERMSIG(status)).name + log)
    try:
        state, detail = json.loads(b"".join(child.chunks))
    except ValueError:
        return Outcome("signal", f"child exited with status {os.WEXITSTATUS(status)} and no "
                       f"outcome (os._exit or abort in native code?){log}")
    return Outcome(state, detail)


def run_all(items: Iterator[Input], jobs: int = 2,
            timeout: float = TIMEOUT_S) -> Iterator[tuple[Input, Outcome]]:
    """Run every input in a forked child, `jobs` at a time; yield (input, outcome) as they end."""
    _warm_up()
    running: dict[int, _Child] = {}
    pending = iter(items)
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            item = next(pending, None)
            if item is None:
                exhausted = True
                break
            child = _spawn(item)
            running[child.fd] = child
        if not running:
            break
        now = time.monotonic()
        wait = max(0.0, min(c.started + timeout for c in running.values()) - now)
        ready, _, _ = select.select(list(running), [], [], wait)
        for fd in ready:
            child = running[fd]
            chunk = os.read(fd, 65536)
            if chunk:
                child.chunks.append(chunk)
                continue
            del running[fd]
            yield child.item, _finish(child)
        now = time.monotonic()
        for fd, child in list(running.items()):
            if now - child.started > timeout:
                os.kill(child.pid, signal.SIGKILL)
                os.waitpid(child.pid, 0)
                os.close(fd)
                _log_tail(child)
                del running[fd]
                yield child.item, Outcome("hang", f"no outcome after {timeout:.0f} s")


def _warm_up() -> None:
    """Import what the children use once, in the parent, so each fork starts warm."""
    run_one("mlir", b"func.func @main() {\n  return\n}\n")
    run_one("kernel", (HEADER + SEEDS["axpy"]).encode())


# --- inputs ---------------------------------------------------------------------------------

def _bundles() -> list[bytes]:
    from nova import config
    from nova.compiler.driver import compile_source
    from nova.compiler.stages import CompileOptions

    out = []
    with config.scoped(cache_enabled=False):
        for name in BUNDLE_SOURCES:
            text = (ROOT / "tests" / "corpus" / name).read_text()
            out.append(compile_source(text, name, CompileOptions(ptx=False, cubin=False)).bundle)
    return out


def _mutate_text(text: str, rnd: random.Random, mutations: dict) -> tuple[str, list[str]]:
    kinds = []
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        if len(text) < 3:
            break
        kind = rnd.choice(sorted(mutations))
        text = mutations[kind](text, rnd)
        kinds.append(kind)
    return text, kinds


def _mutate_bundle(data: bytes, rnd: random.Random) -> tuple[bytes, list[str]]:
    from nova.bundle.writer import seal_bundle
    from nova.errors import NovaError

    kinds = []
    for _ in range(rnd.choice((1, 1, 2))):
        if len(data) < 2:
            break
        kind = rnd.choice(sorted(BYTE_MUTATIONS))
        data = BYTE_MUTATIONS[kind](data, rnd)
        kinds.append(kind)
    if rnd.random() < 0.6:  # resealed: the edit reaches the structural checks past the seal
        try:
            data = seal_bundle(data)
            kinds.append("resealed")
        except (NovaError, ValueError, IndexError):
            pass
    return data, kinds


def _is_python(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError):
            return False
    return True


def _valid_python_mutant(text: str, rnd: random.Random) -> tuple[str, list[str]]:
    """A mutant of `text` that is still valid Python (most random edits are not, and those only
    exercise CPython's parser), after at most 10 tries; else the last one."""
    for _ in range(10):
        mutant, kinds = _mutate_text(text, rnd, PY_MUTATIONS)
        if _is_python(mutant):
            break
    return mutant, kinds


def generate(seed: int, count: int,
             targets: tuple[str, ...] = ("mlir", "mlir", "mlir", "bundle", "kernel")
             ) -> Iterator[Input]:
    """A deterministic stream of `count` mutated inputs (3/5 MLIR, 1/5 bundles, 1/5 kernels)."""
    rnd = random.Random(seed)
    bundles = _bundles() if "bundle" in targets else []
    texts = {p: p.read_text() for p in SOURCES}
    for _ in range(count):
        target = rnd.choice(targets)
        if target == "mlir":
            path = rnd.choice(SOURCES)
            text, kinds = _mutate_text(texts[path], rnd, MLIR_MUTATIONS)
            yield Input("mlir", text.encode("utf-8", "surrogatepass"),
                        f"{path.relative_to(ROOT)} {'+'.join(kinds)}")
        elif target == "bundle":
            index = rnd.randrange(len(bundles))
            data, kinds = _mutate_bundle(bundles[index], rnd)
            yield Input("bundle", data, f"{BUNDLE_SOURCES[index]} {'+'.join(kinds)}")
        else:
            name = rnd.choice(sorted(SEEDS))
            text, kinds = _valid_python_mutant(SEEDS[name], rnd)
            yield Input("kernel", (HEADER + text).encode(), f"kernel {name} {'+'.join(kinds)}")


# --- findings -------------------------------------------------------------------------------

def save_finding(item: Input, outcome: Outcome, folder: Path = FINDINGS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(item.data).hexdigest()[:12]
    path = folder / f"{item.target}-{outcome.status}-{digest}{SUFFIX[item.target]}"
    path.write_bytes(item.data)
    path.with_suffix(path.suffix + ".txt").write_text(
        f"{item.note}\n{outcome.status}: {outcome.detail}\n")
    return path


def saved_findings(folder: Path = FINDINGS) -> list[tuple[str, Path]]:
    """(target, path) for every saved finding input."""
    by_suffix = {suffix: target for target, suffix in SUFFIX.items()}
    return [(by_suffix[p.suffix], p) for p in sorted(folder.glob("*"))
            if p.suffix in by_suffix]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("count", nargs="?", type=int, default=10_000)
    parser.add_argument("seed", nargs="?", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    parser.add_argument("--no-save", action="store_true", help="do not save findings")
    args = parser.parse_args(argv)
    start = time.monotonic()
    counts = {s: 0 for s in ("ok", "diagnostic", "python", "internal", "signal", "hang")}
    done = 0
    for item, outcome in run_all(generate(args.seed, args.count), args.jobs, args.timeout):
        done += 1
        counts[outcome.status] += 1
        if outcome.is_finding:
            where = "" if args.no_save else f" -> {save_finding(item, outcome)}"
            print(f"FINDING {outcome.status} ({item.note}){where}\n  "
                  f"{outcome.detail.splitlines()[0] if outcome.detail else ''}", flush=True)
        if done % 1000 == 0:
            print(f"  {done} inputs, {time.monotonic() - start:.0f} s", flush=True)
    elapsed = time.monotonic() - start
    print(f"fuzz: seed {args.seed}: {done} inputs ({counts['ok']} ok, {counts['diagnostic']} "
          f"diagnostics, {counts['python']} invalid python), {counts['internal']} internal "
          f"errors, {counts['signal']} signals, {counts['hang']} hangs, {elapsed:.0f} s "
          f"on {args.jobs} jobs")
    return 1 if counts["internal"] or counts["signal"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
