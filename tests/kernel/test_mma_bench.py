"""bench/python_mma.py: its tensor-core matmul kernels are correct (64x32 on the CPU device at
the smallest size, both on CUDA), and its check rejects what a no-op or partial kernel leaves
(C starts as NaN)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import nova
from nova.runtime.selection import cuda_status, get_device

BENCH = Path(__file__).resolve().parents[2] / "bench" / "python_mma.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_python_mma", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_python_mma"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["bench_python_mma"]
    return module


def _run(bench: ModuleType, device: nova.Device, size: int, tile: str) -> tuple[bool, float]:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    c = np.full(size * size, np.nan, np.float32)
    kern = bench.make_mma_matmul(size, size, size, tile)
    kern.launch(c, a.reshape(-1), b.reshape(-1), grid=(size // bench.BN, size // bench.BM),
                block=bench.threads_of(tile), device=device)
    return bench.check(c.reshape(size, size), a.astype(np.float64) @ b.astype(np.float64))


def test_check_rejects_unwritten_and_wrong_results(bench: ModuleType) -> None:
    want = np.arange(12.0).reshape(3, 4)
    assert bench.check(want.astype(np.float32), want)[0]
    nan = np.full((3, 4), np.nan, np.float32)
    assert not bench.check(nan, want)[0]                      # a no-op kernel
    partial = want.astype(np.float32)
    partial[2, 3] = np.nan
    assert not bench.check(partial, want)[0]                  # one tile never written
    assert not bench.check(np.zeros((3, 4), np.float32), want)[0]


def test_sizes_must_fit_the_tiles(bench: ModuleType) -> None:
    with pytest.raises(ValueError, match="multiples of"):
        bench.make_mma_matmul(100, 128, 32)


@pytest.mark.slow
def test_kernel_on_cpu(bench: ModuleType) -> None:
    ok, err = _run(bench, get_device("cpu"), 128, "64x32")
    assert ok, err


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")
@pytest.mark.parametrize("tile", ["64x32", "64x64"])
def test_kernels_on_cuda(bench: ModuleType, tile: str) -> None:
    ok, err = _run(bench, get_device("cuda"), 512, tile)
    assert ok, err
