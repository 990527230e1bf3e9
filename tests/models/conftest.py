"""Fixtures for nova.models tests: `device` runs a test on the cpu device (always) and on cuda
(marked `gpu`, skipped without a usable GPU), like tests/runtime."""

from __future__ import annotations

import os

import pytest

from device_params import DEVICE_PARAMS

# pytest-xdist already runs one test process per CPU: compile workers (nova.compiler.parallel,
# auto on machines with 4+ CPUs) in each would oversubscribe the machine. The tests of the
# parallel compile set NOVA_COMPILE_JOBS themselves.
os.environ.setdefault("NOVA_COMPILE_JOBS", "1")


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> str:
    return request.param
