"""Helpers shared by the nova.models tests (a uniquely named module: every test directory has a
conftest.py, so `from conftest import ...` would depend on collection order)."""

from __future__ import annotations

import numpy as np

TOLERANCE = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 2e-2}
"""Relative L2 error allowed against a float32/float64 reference (the issue's bounds)."""


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """Relative L2 error of `got` against `want` (computed in float64)."""
    got64 = np.asarray(got).astype(np.float64)
    want64 = np.asarray(want).astype(np.float64)
    assert got64.shape == want64.shape, (got64.shape, want64.shape)
    return float(np.linalg.norm(got64 - want64) / max(np.linalg.norm(want64), 1e-30))
