"""Shared runtime-test fixtures.

`device` is parametrised over "cpu" (always) and "cuda" (marked `gpu`; skipped with the reason when
no CUDA device is usable), so every test written against it runs on both devices.
"""

from __future__ import annotations

import pytest

from device_params import DEVICE_PARAMS
from nova.runtime.device import Device
from nova.runtime.selection import get_device


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> Device:
    """A device of each kind; its pool limit is reset after the test."""
    dev = get_device(request.param)
    yield dev
    dev.synchronize()
    dev.pool.limit = None

