"""`nova.match_any(v)` (CUDA's `__match_any_sync`): the mask of lanes holding the same value, for
32- and 64-bit and narrow integers, on the CPU device and cuda; the op prints and re-parses as
upstream's `nvvm.match.sync any`, and the PTX has `match.any.sync`."""

from __future__ import annotations

import numpy as np
import pytest

import nova
from nova.ir.parser import parse_mlir
from nova.lang import KernelTypeError


@nova.kernel
def _match(out, x):
    t = nova.global_id(0)
    out[t] = nova.match_any(x[t])


def _expected(x: np.ndarray) -> np.ndarray:
    out = np.zeros(len(x), np.uint32)
    for w in range(0, len(x), 32):
        seg = x[w:w + 32]
        for i, v in enumerate(seg):
            out[w + i] = sum(1 << j for j, u in enumerate(seg) if u == v)
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.uint8])
def test_match_any(device, dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 5, 64).astype(dtype)
    x[32:] = np.arange(32)  # second warp: every value distinct
    if dtype == np.uint64:
        x[:8] = np.uint64(1 << 40) + np.arange(8) % 2  # equal only in all 64 bits
    out = np.zeros(64, np.uint32)
    _match.launch(out, x, grid=2, block=32, device=device)
    np.testing.assert_array_equal(out, _expected(x))


def test_match_any_ir_and_ptx():
    sig = (nova.uint32[:], nova.int64[:])
    text = _match.mlir(*sig)
    assert "nvvm.match.sync  any" in text and ": i64 -> i32" in text
    parse_mlir(text, "match.mlir")
    assert "match.any.sync.b64" in _match.ptx(*sig)


def test_match_any_rejects_floats():
    @nova.kernel
    def bad(out, x):
        t = nova.global_id(0)
        out[t] = nova.match_any(x[t])

    with pytest.raises(KernelTypeError, match="needs an integer"):
        bad.mlir(nova.uint32[:], nova.float32[:])
