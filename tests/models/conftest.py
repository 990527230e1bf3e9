"""Fixtures for nova.models tests: `device` runs a test on the cpu device (always) and on cuda
(marked `gpu`, skipped without a usable GPU), like tests/runtime."""

from __future__ import annotations

import os

import pytest

from nova.runtime.selection import cuda_status

# pytest-xdist already runs one test process per CPU: compile workers (nova.compiler.parallel,
# auto on machines with 4+ CPUs) in each would oversubscribe the machine. The tests of the
# parallel compile set NOVA_COMPILE_JOBS themselves.
os.environ.setdefault("NOVA_COMPILE_JOBS", "1")

_CUDA = cuda_status()

DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}"),
    ]),
]


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> str:
    return request.param
