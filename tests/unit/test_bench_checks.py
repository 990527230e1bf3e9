"""Benchmarks that cannot lie (issue 12 item 6): every bench script that times something verifies
what it times, and with every kernel replaced by a no-op it fails loudly (exit 1, a failed check
printed, no result file written). tests/runtime/test_soak_bench.py does the same for
bench/soak.py, which has its own sabotage switch.

The sabotage reaches every process a script starts (several time fresh processes): a
`sitecustomize` module on PYTHONPATH replaces the cpu device's block runner (BlockRun.run, which
runs every kernel launch: compiled entries, Python kernels, the device layer) with a no-op when
NOVA_TEST_SABOTAGE=1; the same variable makes bench/native_peer.py run the native C++ peers with
`noop` (no kernel launched), which only run on cuda: the gpu tests at the end check that
bench/memory_flat.py's native rows then fail it. Every script in bench/ is either listed here or
named in NOT_TIMED with the reason, so a new script cannot go unchecked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nova.runtime.selection import cuda_status

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

SITECUSTOMIZE = """\
import os
if os.environ.get("NOVA_TEST_SABOTAGE") == "1":
    from nova.runtime.cpu import module
    module.BlockRun.run = lambda self: None
"""

# script -> (arguments, what its failure prints); OUT in the arguments is a file in tmp_path.
SCRIPTS: dict[str, tuple[list[str], str]] = {
    "bounds_check.py": (["--reps", "1"], "CHECK FAILED"),
    "cpu_device.py": (["--sizes", "4096", "65536", "--repeat", "1", "--no-peers",
                       "--in-process"], "CHECK FAILED"),
    "memory_flat.py": (["--device", "cpu", "--calls", "20", "--warmup", "2", "--n", "64",
                        "--json", "OUT"], "CHECK FAILED"),
    "overlap.py": (["--device", "cpu", "--total-mib", "2", "--chunk-mib", "1", "--repeats", "1",
                    "--json", "OUT"], "CHECK FAILED"),
    "python_kernels.py": (["--device", "cpu", "--n", "4096", "--matmul", "32", "--repeat", "1",
                           "--launches", "10"], "CHECK FAILED"),
    "launch_overhead.py": (["--device", "cpu", "--kernels", "5", "--calls", "5", "--repeats",
                            "1", "--host-launches", "20", "--json", "OUT"], "CHECK FAILED"),
    "cpu_load_latency.py": (["--runs", "1", "--calls", "5", "--json", "OUT"], "CHECK FAILED"),
    "compile_time.py": (["--runs", "1", "--json", "OUT", "--model-runs", "1", "--model-quick",
                         "--model-rows", "fp32-cpu"], "CHECK FAILED"),
    "module_load.py": (["--device", "cpu", "--runs", "1", "--reloads", "1", "--kernels", "2",
                        "--json", "OUT"], "CHECK FAILED"),
    "ncu_kernel_time.py": (["--child", "--device", "cpu"], "CHECK FAILED"),
    "lz4.py": (["--device", "cpu", "--pages", "2", "--classes", "mixed", "--variants", "",
                "--decompress-warps", "", "--repeats", "1", "--json", "OUT"],
               "verification: FAILED"),
    "lz4_pipeline.py": (["--device", "cpu", "--pages", "2", "--slots", "2", "--pages-per-slot",
                         "4", "--repeats", "1", "--json", "OUT"], "verification: FAILED"),
    "python_mma.py": (["--device", "cpu", "--size", "128", "--repeat", "1", "--configs",
                       "128x128x32s3g8,128x128x32r", "--out", "OUT"], "CHECK FAILED"),
    "models.py": (["--device", "cpu", "--quick", "--rows", "mlp-b1", "--dtypes", "fp32",
                   "--seconds", "0.01", "--peers", "eager", "--out", "OUT"], "CHECK FAILED"),
    "row_kernels.py": (["--device", "cpu", "--quick", "--rows", "layernorm", "--dtype", "fp32",
                        "--seconds", "0.01", "--out", "OUT"], "CHECK FAILED"),
    # its kernel script and tools run from --src: the sabotage's directory, nova linked in
    "cold_start.py": (["--runs", "1", "--phases", "--src", "SAB"], "CHECK FAILED"),
}

NOT_TIMED = {
    "checks.py": "the shared check helpers",
    "native_peer.py": "builds and runs the native peers of launch_overhead.py and memory_flat.py "
                      "(tests/unit/test_native_peer.py; the gpu tests below)",
    "compile_time_model.py": "compile_time.py's encoder rows (checked with it)",
    "launch_host_ab.py": "times launches on the fake cuda device, which the cpu sabotage does "
                         "not reach; it checks every launch at the native fake driver's counter "
                         "(tests/runtime/test_async_bench_smoke.py runs it)",
    "soak.py": "own sabotage switch and tests (tests/runtime/test_soak_bench.py)",
}


def _run(script: str, tmp_path: Path, sabotage: bool, arguments: list[str] | None = None,
         gpu: bool = False) -> subprocess.CompletedProcess[str]:
    """Run a bench script (its SCRIPTS arguments unless `arguments`); `gpu` keeps the caller's
    PATH (nvcc) and CUDA library settings."""
    sab = tmp_path / "sab"
    sab.mkdir(exist_ok=True)
    (sab / "sitecustomize.py").write_text(SITECUSTOMIZE)
    if not (sab / "nova").exists():
        (sab / "nova").symlink_to(ROOT / "src" / "nova")
    out = tmp_path / "out"
    args = [{"OUT": str(out), "SAB": str(sab)}.get(a, a)
            for a in (SCRIPTS[script][0] if arguments is None else arguments)]
    env = {"NOVA_TEST_SABOTAGE": "1" if sabotage else "0", "NOVA_DEVICE": "cpu",
           "PYTHONPATH": f"{sab}{os.pathsep}{ROOT / 'src'}", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path), "NOVA_CACHE_DIR": str(tmp_path / "cache")}
    if gpu:
        env["NOVA_DEVICE"] = "cuda"
        env.update({k: v for k, v in os.environ.items()
                    if k in ("PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
                             "CUDA_VISIBLE_DEVICES")})
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)


def test_every_bench_script_is_checked() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts == set(SCRIPTS) | set(NOT_TIMED), "list every bench script in SCRIPTS"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_no_op_kernel_fails_the_benchmark(script: str, tmp_path: Path) -> None:
    before = sorted((BENCH / "results").iterdir())
    run = _run(script, tmp_path, sabotage=True)
    text = run.stdout + run.stderr
    assert run.returncode == 1, text
    assert SCRIPTS[script][1] in text
    assert "Traceback" not in run.stderr or script == "models.py", run.stderr
    assert not (tmp_path / "out").exists()  # no result file for wrong results
    assert sorted((BENCH / "results").iterdir()) == before


@pytest.mark.parametrize("script", ["launch_overhead.py", "cpu_load_latency.py",
                                    "compile_time.py", "module_load.py", "ncu_kernel_time.py",
                                    "lz4.py", "lz4_pipeline.py", "python_mma.py", "models.py",
                                    "bounds_check.py"])
def test_the_checks_pass_without_sabotage(script: str, tmp_path: Path) -> None:
    """The checks are not simply always failing: the real kernels pass them."""
    run = _run(script, tmp_path, sabotage=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CHECK FAILED" not in run.stderr and "FAILED" not in run.stdout


def test_checks_module(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import checks
    finally:
        sys.path.remove(str(BENCH))
    assert checks.record("fine", True) and checks.finish() == 0
    assert not checks.record("wrong sum", False)
    assert checks.finish() == 1
    assert "CHECK FAILED: wrong sum" in capsys.readouterr().err


_CUDA = cuda_status()
NATIVE_MODES = ("step", "alloc_step", "scratch_step", "alloc_only_step", "alloc_step graph",
                "scratch_step graph")
"""memory_flat's native rows on cuda, where Nova's automatic graphs are on by default: the four
chain modes op by op, and the two that Nova replays, as native graphs."""


@pytest.mark.gpu
@pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}")
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found: no native peers")
@pytest.mark.parametrize("sabotage", [True, False], ids=["sabotaged", "real"])
def test_memory_flat_native_peer_rows(sabotage: bool, tmp_path: Path) -> None:
    """On cuda, bench/memory_flat.py's native peer rows are verified: with the peer's kernels
    skipped (sabotage reaches only the native peer here: Nova's cuda kernels still run) exactly
    its six rows fail the benchmark; without, they pass and the native ratios are printed."""
    run = _run("memory_flat.py", tmp_path, sabotage, gpu=True, arguments=[
        "--device", "cuda", "--calls", "50", "--warmup", "5", "--n", "1000", "--json", "OUT"])
    text = run.stdout + run.stderr
    failed = [line for line in run.stderr.splitlines() if line.startswith("CHECK FAILED")]
    if sabotage:
        assert run.returncode == 1, text
        assert [line.split(":")[1].strip() for line in failed] == [
            f"cuda native C++ {mode}" for mode in NATIVE_MODES], text
        assert all("WRONG" in line for line in failed), text
        assert not (tmp_path / "out").exists()
    else:
        assert run.returncode == 0 and not failed, text
        assert run.stdout.count("verified by the peer: x counts 55 calls") == 6, text
        assert "native: alloc_step / step = " in run.stdout, text
        assert "nova / native: alloc_step / step " in run.stdout, text
        assert "as graphs: alloc_step and scratch_step each one CUDA graph" in run.stdout, text
