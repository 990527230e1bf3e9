"""Fixtures of the Python-kernel tests: `device` runs each test on cpu (always) and cuda (marked
`gpu`, skipped with the reason when no CUDA device is usable; tests/device_params.py). Kernels
compile into a per-session temporary cache directory so a stale user cache never hides a
compiler change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from device_params import DEVICE_PARAMS
from nova import config
from nova.runtime.device import Device
from nova.runtime.selection import get_device


@pytest.fixture(scope="session")
def _kernel_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("nova-cache")


@pytest.fixture(autouse=True)
def _kernel_cache(_kernel_cache_dir):
    with config.scoped(cache_dir=_kernel_cache_dir):
        yield


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> Device:
    dev = get_device(request.param)
    yield dev
    dev.synchronize()


@pytest.fixture(scope="session")
def python_mma(load_script: Callable[..., ModuleType]) -> ModuleType:
    """bench/python_mma.py loaded as a module (its kernels, configurations and check), for the
    tests of its WMMA and wgmma matmul kernels."""
    return load_script(Path(__file__).resolve().parents[2] / "bench" / "python_mma.py",
                       "bench_python_mma")
