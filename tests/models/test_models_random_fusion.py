"""Random graphs of elementwise ops with broadcasts, index maps (Transpose, Slice, Reshape,
Concat), anchors (MatMul, Softmax, reductions) and multi-reader tensors: whatever the fusion
planner groups, the compiled model must equal the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from models_testutil import rel_err

import nova.models as nm
from nova.models.reference import run_reference

SHAPE = (3, 4, 5)


def _random_graph(seed: int) -> tuple[nm.Graph, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    g = nm.Graph(f"random{seed}")
    pool = [g.input("x", SHAPE), g.input("y", SHAPE[1:])]
    inputs = [rng.standard_normal(SHAPE).astype(np.float32),
              rng.standard_normal(SHAPE[1:]).astype(np.float32)]
    full = {pool[0]}  # tensors of the full SHAPE
    for _ in range(int(rng.integers(6, 12))):
        choice = int(rng.integers(0, 9))
        a = pool[int(rng.integers(0, len(pool)))]
        f = sorted(full)[int(rng.integers(0, len(full)))]
        if choice == 0:
            out = g.add(f, a)
        elif choice == 1:
            out = g.mul(f, g.sigmoid(a))
        elif choice == 2:
            out = g.node(["Tanh", "Relu", "Silu", "Gelu", "Neg"][int(rng.integers(0, 5))], [f])
        elif choice == 3:
            out = g.transpose(g.transpose(f, [1, 0, 2]), [1, 0, 2])
        elif choice == 4:
            out = g.reshape(g.reshape(f, [12, 5]), list(SHAPE))
        elif choice == 5:
            out = g.concat([g.slice(f, [0], [1], [1]), g.slice(f, [1], [4], [1])], axis=1)
        elif choice == 6:
            out = g.softmax(f, int(rng.integers(0, 3)))
        elif choice == 7:
            out = g.sub(f, g.reduce_mean(f, [int(rng.integers(0, 3))]))
        else:
            out = g.reshape(g.matmul(g.reshape(f, [12, 5]), rng.standard_normal((5, 5)).astype(
                np.float32) * 0.3), list(SHAPE))
        pool.append(out)
        full.add(out)
    outs = sorted(full - {pool[0]})
    chosen = [outs[-1]] + [o for o in outs[:-1] if rng.random() < 0.3]
    g.output(*dict.fromkeys(chosen))
    return g, inputs


@pytest.mark.parametrize("seed", range(12))
def test_random_fused_graph_matches_reference(seed: int) -> None:
    g, inputs = _random_graph(seed)
    got = nm.compile(g, device="cpu")(*inputs)
    want = run_reference(g, *inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want, strict=True):
        assert rel_err(a, b) <= 1e-5, str(g)
