"""`nova.syncwarp()`: lanes of one warp exchange data through shared memory (CUDA's
`__syncwarp()`), on the CPU device and on cuda; the op prints and re-parses as upstream's
`nvvm.bar.warp.sync`, and the PTX has `bar.warp.sync`."""

from __future__ import annotations

import numpy as np

import nova
from nova.ir.parser import parse_mlir


@nova.kernel
def _rotate_in_warp(out, x):
    buf = nova.shared_array(64, nova.int32)
    t = nova.thread_id(0)
    lane = nova.lane_id()
    buf[t] = x[t]
    nova.syncwarp()  # every lane's store is visible to the lane that reads it
    out[t] = buf[(t // 32) * 32 + (lane + 1) % 32]
    nova.syncwarp()  # and nobody overwrites buf before the reads are done
    buf[t] = out[t] * 2
    nova.syncwarp()
    out[t] = buf[(t // 32) * 32 + (lane + 31) % 32]


def test_syncwarp_exchanges_through_shared_memory(device):
    x = np.arange(64, dtype=np.int32) * 3
    out = np.zeros_like(x)
    _rotate_in_warp.launch(out, x, grid=1, block=64, device=device)
    np.testing.assert_array_equal(out, x * 2)  # rotated by +1 then back by -1, doubled


def test_syncwarp_ir_and_ptx():
    sig = (nova.int32[:], nova.int32[:])
    text = _rotate_in_warp.mlir(*sig)
    assert text.count("nvvm.bar.warp.sync") == 3
    parse_mlir(text, "rotate.mlir")  # re-parses
    assert "bar.warp.sync" in _rotate_in_warp.ptx(*sig)
