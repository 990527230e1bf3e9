"""bench/python_mma.py: its tensor-core matmul kernel is correct in every pipeline (cp.async
stages, register staging) on the CPU device and on CUDA, its configurations parse and reject
what the kernel cannot tile, and its check rejects what a no-op or partial kernel leaves (C
starts as NaN)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

import nova
from nova.runtime.selection import cuda_status, get_device


def _run(python_mma: ModuleType, device: nova.Device, m: int, n: int, k: int,
         config: str) -> tuple[bool, float]:
    cfg = python_mma.Config.parse(config)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.full(m * n, np.nan, np.float32)
    kern = python_mma.make_kernel(m, n, k, cfg)
    kern.launch(c, a.reshape(-1), b.reshape(-1), grid=cfg.grid(m, n), block=cfg.threads,
                shared_bytes=cfg.shared_bytes, device=device)
    return python_mma.check(c.reshape(m, n), a.astype(np.float64) @ b.astype(np.float64))


def test_check_rejects_unwritten_and_wrong_results(python_mma: ModuleType) -> None:
    want = np.arange(12.0).reshape(3, 4)
    assert python_mma.check(want.astype(np.float32), want)[0]
    nan = np.full((3, 4), np.nan, np.float32)
    assert not python_mma.check(nan, want)[0]                      # a no-op kernel
    partial = want.astype(np.float32)
    partial[2, 3] = np.nan
    assert not python_mma.check(partial, want)[0]                  # one tile never written
    assert not python_mma.check(np.zeros((3, 4), np.float32), want)[0]


def test_sizes_must_fit_the_tiles(python_mma: ModuleType) -> None:
    with pytest.raises(ValueError, match="multiples of"):
        python_mma.make_mma_matmul(100, 128, 32, python_mma.Config.parse("128x128x32s3"))


def test_configurations(python_mma: ModuleType) -> None:
    cfg = python_mma.Config.parse("128x256x64s4g8")
    assert (cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.group) == (128, 256, 64, 4, 8)
    assert str(cfg) == "128x256x64s4g8" and cfg.threads == 256
    assert cfg.shared_bytes == 2 * 4 * (128 * 72 + 64 * 264) > 48 * 1024
    regs = python_mma.Config.parse("128x128x32r")
    assert regs.stages == 0 and regs.buffers == 2 and str(regs) == "128x128x32r"
    for bad in ("128x128", "96x128x32s3", "128x128x24s3", "128x128x32s1", "128x128x32s0",
                "128x128x32s9", "128x256x64s5", "128x128x32q"):
        with pytest.raises(ValueError):
            python_mma.Config.parse(bad)


def test_wgmma_configurations(python_mma: ModuleType) -> None:
    cfg = python_mma.Config.parse("128x256x64s4g8w")
    assert cfg.wgmma and str(cfg) == "128x256x64s4g8w" and cfg.threads == 256
    assert cfg.shared_bytes == 2 * 4 * (128 + 256) * 64
    for bad in ("128x256x32s4w", "96x256x64s4w", "128x320x64s3w", "128x256x64s2w",
                "256x256x64s4w", "192x64x64s3w"):
        with pytest.raises(ValueError):
            python_mma.Config.parse(bad)


@pytest.mark.parametrize("config", ["128x256x64s4g2w", "64x128x64s3w"])
def test_wgmma_kernel_on_cpu(python_mma: ModuleType, config: str) -> None:
    """More K steps than stages (one step with stages - 2 = 1 tile ahead), grouped order."""
    ok, err = _run(python_mma, get_device("cpu"), 384, 256, 320, config)
    assert ok, err


def test_cpu_check_size(python_mma: ModuleType) -> None:
    configs = [python_mma.Config.parse(c) for c in ("128x256x32s4", "128x128x64s3")]
    assert python_mma.cpu_size(128, configs) == 256
    assert python_mma.cpu_size(4096, configs) == 256


@pytest.mark.slow
@pytest.mark.parametrize("config", ["128x128x32s3g2", "128x128x32r"])
def test_kernel_on_cpu(python_mma: ModuleType, config: str) -> None:
    """More K steps than stages, a grouped order over 3x2 blocks (groups of 2 block rows and of
    the 1 left over), m, n and k all different."""
    ok, err = _run(python_mma, get_device("cpu"), 384, 256, 192, config)
    assert ok, err


def test_kernel_fewer_k_steps_than_stages_on_cpu(python_mma: ModuleType) -> None:
    """One K step and four stages: the prologue's empty groups keep the waits exact."""
    ok, err = _run(python_mma, get_device("cpu"), 128, 128, 32, "128x128x32s4")
    assert ok, err


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")
@pytest.mark.parametrize("config", ["128x256x32s4g8", "128x256x64s3g8", "128x128x32s4g8",
                                    "128x128x64s3", "128x128x32r", "128x256x64s4g8w",
                                    "128x128x64s4g8w", "64x128x64s3w"])
def test_kernels_on_cuda(python_mma: ModuleType, config: str) -> None:
    device = get_device("cuda")
    if config.endswith("w") and device.properties.compute_capability != (9, 0):
        pytest.skip(f"wgmma needs compute capability 9.0, this GPU is {device.arch}")
    ok, err = _run(python_mma, get_device("cuda"), 512, 768, 640, config)
    assert ok, err
