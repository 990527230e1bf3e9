"""bench/soak.py (issue 12, "No leaks"): its quick mode passes on the cpu device, a sabotaged
shape fails its check, and a reintroduced leak (the api1 bug: returned memrefs never freed) fails
the memory check. The gpu-marked copy runs the quick mode on cuda."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from nova.runtime.executor import EntryFunction
from nova.runtime.selection import cuda_status

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


@pytest.fixture
def soak(load_script: Callable[..., ModuleType]) -> ModuleType:
    """bench/soak.py as a module, loaded anew for each test."""
    return load_script(SOAK, "nova_bench_soak", keep=True)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SOAK), *args], capture_output=True, text=True,
                          timeout=600)


def test_quick_soak_passes_on_cpu(soak: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = _run("--device", "cpu", "--quick", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["shape"] for r in rows] == list(soak.SHAPES)
    assert all(r["ok"] and r["flat"] and r["bad_calls"] == 0 for r in rows)
    assert "all shapes flat and correct" in done.stdout


@pytest.mark.parametrize("shape", ["scalars", "memref numpy", "memref buffer", "returned heap",
                                   "returned device", "async tokens", "graph replay",
                                   "python kernel"])
def test_sabotaged_shape_fails_its_check(soak: ModuleType, shape: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    status = soak.main(["--device", "cpu", "--calls", "20", "--warmup", "2", "--shapes", shape,
                        "--sabotage", shape])
    text = capsys.readouterr().out
    assert status == 1, text
    assert f"FAILED: {shape}" in text


def test_reintroduced_leak_fails_the_memory_check(soak: ModuleType,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Returned memrefs copied and never freed again (the api1 bug): 64 KiB per call, so 200
    calls leak 12.5 MiB, far above the 1 MiB limit, on any machine load."""
    monkeypatch.setattr(soak, "N", 16384)
    monkeypatch.setattr(EntryFunction, "_take_owners", lambda self, plan, abi: {})
    status = soak.main(["--device", "cpu", "--calls", "200", "--warmup", "10", "--shapes",
                        "returned heap"])
    text = capsys.readouterr().out
    assert status == 1, text
    assert "FAILED: returned heap" in text


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_status().usable, reason=f"no usable CUDA device: "
                    f"{cuda_status().reason}")
def test_quick_soak_passes_on_cuda(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = _run("--device", "cuda", "--quick", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert all(r["ok"] and r["flat"] for r in rows)
