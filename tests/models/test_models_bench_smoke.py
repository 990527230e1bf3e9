"""bench/models.py runs end to end (small shapes, cpu device, a fraction of a second per runner)
and its Nova outputs pass the script's own check against PyTorch eager."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "models.py"


def test_bench_models_quick_cpu(load_script: Callable[..., ModuleType], tmp_path: Path) -> None:
    bench = load_script(BENCH, "bench_models")
    rows = bench.rows(quick=True)
    result = bench.run_row(rows["mlp-b1"], "fp32", "cpu", seconds=0.01)
    assert result["nova ok"], result
    assert isinstance(result["nova"], float) and isinstance(result["nova graph"], float)
    assert isinstance(result["eager"], float)
    assert result["gemm"] == "nova x3"  # auto on the cpu device: generated kernels
    forced = bench.run_row(rows["mlp-b1"], "fp32", "cpu", seconds=0.01, gemm="library")
    assert forced["nova ok"] and forced["gemm"] == "numpy x3", forced
    conv = bench.run_row(rows["conv-b32"], "fp32", "cpu", seconds=0.01, conv="library")
    assert conv["nova ok"] and conv["conv"] == "numpy x1" and conv["gemm"] == "-", conv
    text = bench.table([result, forced, conv])
    assert "| mlp-b1 | fp32 |" in text and "numpy x3" in text
    assert "| conv-b32 | fp32 | 2 | - | numpy x1 |" in text
