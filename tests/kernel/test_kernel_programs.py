"""The issue's acceptance programs, on every device, against NumPy."""

from __future__ import annotations

import kernel_programs as P
import numpy as np


def test_block_reduction_shared_memory_barriers_in_loop(device):
    got, want = P.run_block_sum(device)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(set(want.tolist())) == len(want)  # the blocks' shares differ: order matters


def test_histogram_with_atomics(device):
    got, want = P.run_histogram(device)
    np.testing.assert_array_equal(got, want)


def test_warp_shuffle_inclusive_scan(device):
    got, want = P.run_warp_scan(device)
    np.testing.assert_array_equal(got, want)


def test_tiled_matmul_shared_memory(device):
    got, want = P.run_matmul(device)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_byte_kernel_variable_length_output_per_block(device):
    got, want = P.run_rle(device)
    assert len(got) == len(want)
    for (gv, gc), (wv, wc) in zip(got, want, strict=True):
        np.testing.assert_array_equal(gv, wv)
        np.testing.assert_array_equal(gc, wc)


def test_2d_grid(device):
    got, want = P.run_grid2d(device)
    np.testing.assert_array_equal(got, want)


def test_3d_grid_and_device_function(device):
    got, want = P.run_grid3d(device)
    np.testing.assert_array_equal(got, want)
