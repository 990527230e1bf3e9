"""Build and run the native C++ peers of bench/peers/ (shared by bench/launch_overhead.py and
bench/memory_flat.py).

A peer is one .cu file of host code calling the CUDA driver API (bench/peers/launch_loop.cu),
compiled with nvcc on the GPU machine: it shows what a native program pays for the same driver
calls Nova's compiled code makes, in the same run. Benchmark-only: Nova itself never runs a C
compiler. A peer prints one number per line (microseconds per unit, one line per repeat),
verifies what it computed, and exits 3 when the result is wrong (`WrongResult` here: a failed
check, whichever bench runs it) or 1 when a driver call fails (stderr names it).

With NOVA_TEST_SABOTAGE=1 in the environment (tests/unit/test_bench_checks.py's switch), `run`
passes the peer `noop`: it skips every kernel launch, so its verification must fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

PEERS = Path(__file__).resolve().parent / "peers"

WRONG_EXIT = 3
"""The peers' exit status for wrong results (bench/peers/launch_loop.cu)."""


class WrongResult(Exception):
    """A peer ran but computed something else (fails the benchmark even for optional peers)."""


class PeerUnavailable(RuntimeError):
    """No nvcc on PATH: the native peers cannot be built on this machine."""


_built: dict[str, Path] = {}
_build_dir: tempfile.TemporaryDirectory[str] | None = None


def build(name: str) -> Path:
    """bench/peers/<name>.cu compiled with nvcc -O2 into a temporary directory that lives as long
    as the process (built once per process). Raises PeerUnavailable without nvcc, RuntimeError
    with nvcc's messages when the build fails."""
    global _build_dir
    if name in _built:
        return _built[name]
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise PeerUnavailable("nvcc not found on PATH")
    if _build_dir is None:
        _build_dir = tempfile.TemporaryDirectory(prefix="nova-peers-")
    exe = Path(_build_dir.name) / name
    # link against the toolkit's libcuda stub (machines often lack the libcuda.so dev symlink);
    # the loader binds the driver's libcuda.so.1 at run time
    root = toolkit_root(nvcc)
    stubs = [f"-L{d}" for d in (root / "lib64" / "stubs",
                                root / "targets" / "x86_64-linux" / "lib" / "stubs")
             if d.is_dir()]
    done = subprocess.run([nvcc, "-O2", "-o", str(exe), str(PEERS / f"{name}.cu"), *stubs,
                           "-lcuda"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed to build bench/peers/{name}.cu (exit "
                           f"{done.returncode}): {_tail(done.stderr or done.stdout)}")
    _built[name] = exe
    return exe


def toolkit_root(nvcc: str) -> Path:
    """The CUDA toolkit nvcc belongs to: the first of nvcc's grandparent directory (symlinks
    resolved), $CUDA_HOME, $CUDA_PATH and /usr/local/cuda that has include/cuda.h (nvcc may be
    a wrapper script elsewhere); nvcc's grandparent when none has."""
    first = Path(nvcc).resolve().parent.parent
    candidates = [first, *(Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH")
                           if os.environ.get(v)), Path("/usr/local/cuda")]
    return next((c for c in candidates if (c / "include" / "cuda.h").is_file()), first)


def run(name: str, *args: str, timeout: float = 300) -> list[float]:
    """Build the peer `name` (once) and run it with `args`; the numbers it printed, one a line.
    Raises WrongResult when it says its result was wrong, RuntimeError when it fails otherwise
    (its stderr in the message)."""
    exe = build(name)
    if os.environ.get("NOVA_TEST_SABOTAGE") == "1":
        args = (*args, "noop")
    done = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode == WRONG_EXIT:
        raise WrongResult(_tail(done.stderr) or f"{name} exited {WRONG_EXIT} (wrong result)")
    if done.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} exited {done.returncode}: "
                           f"{_tail(done.stderr)}")
    try:
        return [float(line) for line in done.stdout.split()]
    except ValueError:
        raise RuntimeError(f"{name} printed something other than numbers: "
                           f"{_tail(done.stdout)}") from None


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])
