"""scripts/gpu_sanitize.py, the helper of scripts/gpu-sanitize.sh (issue 12 item 5): its log
summary counts compute-sanitizer's errors per process and names the kernels, a refused device or
missing summary is not read as "0 errors", and its probe kernels run (here on the cpu device; the
planted faults are for the sanitizer on the GPU machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_sanitize.py"

MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at add1_kernel+0x70
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f1c00000000 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1d3a] in libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at add1_kernel+0x70
=========     by thread (1,0,0) in block (0,0,0)
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" \
on CUDA API call to cuStreamSynchronize.
=========
========= ERROR SUMMARY: 3 errors
"""
RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at race_kernel+0x40
=========     and Read access at race_kernel+0x60 [256 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"


@pytest.fixture
def sanitize(load_script: Callable[..., ModuleType]) -> ModuleType:
    return load_script(SCRIPT, "nova_gpu_sanitize")


def test_memcheck_errors_are_counted_with_their_kernels(sanitize: ModuleType,
                                                        tmp_path: Path) -> None:
    (tmp_path / "memcheck.101.log").write_text(MEMCHECK)
    (tmp_path / "memcheck.102.log").write_text(CLEAN)
    processes, errors, headlines, refused = sanitize.summarize("memcheck", tmp_path)
    assert (processes, errors, refused) == (2, 3, [])
    assert headlines["Invalid __global__ write of size 4 bytes in add1_kernel"] == 2
    assert any(line.startswith("Program hit CUDA_ERROR_LAUNCH_FAILED") for line in headlines)


def test_racecheck_hazards_are_errors(sanitize: ModuleType, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "racecheck.7.log").write_text(RACECHECK)
    assert sanitize.summary("racecheck", tmp_path) == 1
    out = capsys.readouterr().out
    assert "1 errors" in out and "Race reported between Write access at race_kernel" in out


def test_clean_logs_pass(sanitize: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "memcheck.1.log").write_text(CLEAN)
    assert sanitize.summary("memcheck", tmp_path) == 0


@pytest.mark.parametrize("text", ["", "========= Error: Device not supported\n" + CLEAN])
def test_no_summary_or_a_refused_device_is_not_a_pass(sanitize: ModuleType, text: str,
                                                       tmp_path: Path) -> None:
    """An empty log directory, a log without a summary (the tool never ran the process) and a
    refused device must not read as 0 errors."""
    if text:
        (tmp_path / "memcheck.1.log").write_text(text)
    else:
        (tmp_path / "memcheck.1.log").write_text("========= COMPUTE-SANITIZER\n")
    assert sanitize.summary("memcheck", tmp_path) == 2


@pytest.mark.parametrize("mode", ["clean", "race", "oob"])
def test_probe_kernels_run_on_the_cpu_device(mode: str, tmp_path: Path) -> None:
    env = {**os.environ, "NOVA_DEVICE": "cpu", "PYTHONPATH": str(ROOT / "src"),
           "NOVA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(SCRIPT), "probe", mode], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    if mode == "clean":
        assert "result right" in done.stdout
    if mode == "oob":  # the cpu device reports the planted store as the GPU would
        assert "KernelFault" in done.stdout and "out-of-bounds" in done.stdout


def test_unknown_arguments_print_the_usage(sanitize: ModuleType,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert sanitize.main(["probe"]) == 2
    assert "probe MODE" in capsys.readouterr().err


def test_shell_script_is_valid_bash() -> None:
    done = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu-sanitize.sh")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
