"""The `device` parametrisation of the test directories' conftests (tests/kernel, lz4, models,
runtime): cpu always, cuda marked `gpu` and skipped, with the reason, where no CUDA device is
usable. A module of its own name, not conftest: every test directory has a conftest.py, so
`from conftest import ...` would depend on which one was imported last."""

from __future__ import annotations

import pytest

from nova.runtime.selection import cuda_status

CUDA = cuda_status()
CUDA_REASON = f"no usable CUDA device: {CUDA.reason}"

DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu,
                                           pytest.mark.skipif(not CUDA.usable,
                                                              reason=CUDA_REASON)]),
]
