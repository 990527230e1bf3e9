"""Benchmarks that cannot lie (issue 12 item 6): each bench script that runs on the cpu device
verifies what it times, and with every kernel replaced by a no-op it reports `CHECK FAILED` and
exits 1 without writing a result file (bench/checks.py). bench/soak.py has its own sabotage
test (tests/runtime/test_soak_bench.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

# Every kernel launch on the cpu device becomes a no-op, then the script runs as __main__.
SABOTAGE = """
import os, runpy, sys
from nova.runtime.cpu import module
if os.environ.get("NOVA_TEST_SABOTAGE") == "1":
    module.BlockRun.run = lambda self: None
script = sys.argv[1]
sys.path.insert(0, os.path.dirname(script))
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""

SCRIPTS = {
    "bounds_check.py": ["--reps", "1"],
    "cpu_device.py": ["--sizes", "4096", "65536", "--repeat", "1", "--no-peers", "--in-process"],
    "memory_flat.py": ["--device", "cpu", "--calls", "20", "--warmup", "2", "--n", "64"],
    "overlap.py": ["--device", "cpu", "--total-mib", "2", "--chunk-mib", "1", "--repeats", "1"],
    "python_kernels.py": ["--device", "cpu", "--n", "4096", "--matmul", "32", "--repeat", "1",
                          "--launches", "10"],
}


def _run(script: str, args: list[str], tmp_path: Path,
         sabotage: bool) -> subprocess.CompletedProcess[str]:
    writes_json = script in ("memory_flat.py", "overlap.py")
    extra = ["--json", str(tmp_path / "out.json")] if writes_json else []
    env = {"NOVA_TEST_SABOTAGE": "1" if sabotage else "0", "NOVA_DEVICE": "cpu",
           "PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", SABOTAGE, str(BENCH / script), *args, *extra],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_no_op_kernel_fails_the_benchmark(script: str, tmp_path: Path) -> None:
    before = sorted((BENCH / "results").iterdir())
    run = _run(script, SCRIPTS[script], tmp_path, sabotage=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "CHECK FAILED" in run.stderr
    assert "Traceback" not in run.stderr
    assert sorted((BENCH / "results").iterdir()) == before  # no result file for wrong results


def test_the_checks_pass_without_sabotage(tmp_path: Path) -> None:
    """The check is not simply always failing: the real kernels pass it."""
    run = _run("bounds_check.py", ["--reps", "1"], tmp_path, sabotage=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CHECK FAILED" not in run.stderr


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
