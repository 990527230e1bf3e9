"""The async benchmarks run end to end on the cpu device with tiny sizes (they never assert
their numbers; this only keeps the scripts working without a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from async_programs import bundle

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCH / script), "--device", "cpu", *args],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(autouse=True)
def _compiler() -> None:
    bundle()  # fails when a compiler module is missing


def test_launch_overhead_runs_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "lo.json"
    text = _run("launch_overhead.py", "--kernels", "8", "--calls", "5", "--repeats", "1",
                "--host-launches", "20", "--json", str(out))
    record = json.loads(out.read_text())
    names = [row["name"] for row in record["rows"]]
    assert any("graph replay" in n for n in names) and any("entry call" in n for n in names)
    assert all("min_us" in row for row in record["rows"]), text  # nothing failed
    assert "us/kernel" in text
    host = [row for row in record["rows"] if row["section"] == "host"]
    assert len(host) == 5 and all(row["note"].startswith("verified") for row in host), host


def test_launch_overhead_host_section_alone() -> None:
    """`--host-only`: Nova's launch cost against the native no-op driver, checked launches."""
    text = _run("launch_overhead.py", "--host-only", "--host-launches", "30", "--repeats", "2")
    rows = [line for line in text.splitlines() if line.startswith("host     ")]
    assert len(rows) == 5, text
    assert all("verified" in row for row in rows), text
    assert "90 launches reached the driver" in text  # 30 per loop, a warm-up and 2 repeats
    assert any("its Python call" in row for row in rows), text


def test_launch_host_ab_runs() -> None:
    """bench/launch_host_ab.py: the native and Python calls of the same launches, alternated,
    every launch verified at the fake driver."""
    done = subprocess.run([sys.executable, str(BENCH / "launch_host_ab.py"), "--launches", "50",
                           "--rounds", "2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines()
            if line.startswith(("prepared", "cached", "launcher"))]
    assert len(rows) == 5 and "every launch verified" in done.stdout, done.stdout


def test_overlap_runs_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "ov.json"
    text = _run("overlap.py", "--total-mib", "4", "--chunk-mib", "1", "--repeats", "1",
                "--json", str(out))
    record = json.loads(out.read_text())
    rows = {row["name"]: row for row in record["rows"]}
    assert rows["serial (1 slot)"]["note"] == "results correct"
    assert rows["nova.Pipeline (3 slots)"]["note"] == "results correct", text
    assert record["total_bytes"] == 4 << 20


def test_launch_overhead_host_section_notes_a_missing_harness(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """Without tests/runtime (or cuda-bindings) the host section notes its error and the rest
    of the benchmark goes on."""
    monkeypatch.syspath_prepend(str(BENCH))
    import launch_overhead

    monkeypatch.setattr(launch_overhead, "TESTS_RUNTIME", tmp_path / "missing")
    monkeypatch.setitem(sys.modules, "fake_cuda", None)  # (this run has tests/runtime on path)
    res = launch_overhead.Results()
    launch_overhead.bench_host_cost(res, 10, 1)
    assert [row["note"].split(":")[0] for row in res.rows] == ["error"]
    assert "ModuleNotFoundError" in res.rows[0]["note"]
