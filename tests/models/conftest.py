"""Fixtures for nova.models tests: `device` runs a test on the cpu device (always) and on cuda
(marked `gpu`, skipped without a usable GPU), like tests/runtime."""

from __future__ import annotations

import numpy as np
import pytest

from nova.runtime.device import cuda_status

_CUDA = cuda_status()

DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}"),
    ]),
]

TOLERANCE = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 2e-2}
"""Relative L2 error allowed against a float32/float64 reference (the issue's bounds)."""


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """Relative L2 error of `got` against `want` (computed in float64)."""
    got64 = np.asarray(got).astype(np.float64)
    want64 = np.asarray(want).astype(np.float64)
    assert got64.shape == want64.shape, (got64.shape, want64.shape)
    return float(np.linalg.norm(got64 - want64) / max(np.linalg.norm(want64), 1e-30))
