"""Python kernels using `nova.atomic_cas` (memref.generic_atomic_rmw + memref.atomic_yield) and
`math.erfc` print MLIR that Nova's own parser reads back (the ops live in nova.ir with MLIR's
custom syntax), so `kern.mlir()` round-trips and `nova.kernel.save_bundle`, which compiles the
text, accepts such kernels; the saved bundle runs."""

from __future__ import annotations

import math

import numpy as np

import nova
from nova.ir.parser import parse_mlir, print_mlir

SIG = (nova.int32[:], nova.int32[:], nova.float32[:], nova.float32[:])


@nova.kernel
def cas_erfc(slots, owner, out, x):
    """Thread i claims slot i % 4 by compare-and-swap (one winner each) and writes erfc(x[i])."""
    i = nova.global_id(0)
    if i < len(x):
        owner[i] = nova.atomic_cas(slots, i % 4, -1, i)
        out[i] = math.erfc(x[i])


def _check(slots: np.ndarray, owner: np.ndarray, out: np.ndarray, x: np.ndarray) -> None:
    for s in range(4):
        claimants = [i for i in range(len(x)) if i % 4 == s]
        assert slots[s] in claimants
        assert sum(owner[i] == -1 for i in claimants) == 1
    want = np.array([math.erfc(float(v)) for v in x], np.float32)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-30)


def test_mlir_uses_custom_syntax_and_round_trips() -> None:
    text = cas_erfc.mlir(*SIG)
    assert "memref.generic_atomic_rmw %" in text and "memref.atomic_yield %" in text
    assert "math.erfc %" in text
    assert '"memref.' not in text and '"math.' not in text  # nothing in generic form
    assert print_mlir(parse_mlir(text, "cas_erfc.mlir")) == text


def test_save_bundle_accepts_them_and_the_bundle_runs(device, tmp_path) -> None:
    path = nova.kernel.save_bundle(tmp_path / "cas.nova", [(cas_erfc, SIG)])
    text = nova.kernel.bundle_source([(cas_erfc, SIG)])
    assert "memref.generic_atomic_rmw" in text
    mod = nova.load(path, device=device)
    (entry,) = mod.entries
    n = 37
    x = np.linspace(-2, 6, n, dtype=np.float32)
    slots = np.full(4, -1, np.int32)
    owner = np.zeros(n, np.int32)
    out = np.zeros(n, np.float32)
    getattr(mod, entry)(slots, owner, out, x, 1, 1, 1, 64, 1, 1)
    _check(slots, owner, out, x)
