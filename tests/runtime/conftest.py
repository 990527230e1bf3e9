"""Shared runtime-test fixtures.

`device` is parametrised over "cpu" (always) and "cuda" (marked `gpu`; skipped with the reason when
no CUDA device is usable), so every test written against it runs on both devices.
"""

from __future__ import annotations

import pytest

from nova.runtime.device import Device
from nova.runtime.selection import cuda_status, get_device

_CUDA = cuda_status()

DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}"),
    ]),
]


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> Device:
    """A device of each kind; its pool limit is reset after the test."""
    dev = get_device(request.param)
    yield dev
    dev.synchronize()
    dev.pool.limit = None


@pytest.fixture
def cpu_device() -> Device:
    return get_device("cpu")


@pytest.fixture
def cuda_device() -> Device:
    if not _CUDA.usable:
        pytest.skip(f"no usable CUDA device: {_CUDA.reason}")
    return get_device("cuda")
