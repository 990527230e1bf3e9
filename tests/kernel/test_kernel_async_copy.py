"""`nova.async_copy` / `async_commit` / `async_wait`: asynchronous global -> shared copies
(cp.async), on the cpu device and (marked gpu) on CUDA, against NumPy.

Covers a multi-stage pipeline (copies of later tiles in flight while a block computes on the
current one, one barrier per step, `async_wait(stages - 2)`), the zero-filling `src_count`, 4-,
8- and 16-byte copies of several dtypes, 2-D arrays, dynamic shared memory, bounds checks
(`check_bounds=True`), the MLIR built
(upstream's nvgpu ops, parsed again by Nova and, where installed, by mlir-opt 22), and located
errors for misuse."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import nova
from nova.errors import KernelFault
from nova.ir.parser import parse_mlir
from nova.lang import KernelCallError, KernelTypeError

TILE = 64      # float32 elements per tile: 16 threads copy 16 bytes each
STAGES = 3


@nova.kernel
def weighted_tile_sums(out, x):
    """out[t] = sum_i (i + 1) * x[i * TILE + t]: the tiles of x stream through a ring of STAGES
    shared buffers, STAGES - 1 of them in flight while the block reads the current one."""
    buf = nova.shared_array(STAGES * TILE, nova.float32)
    t = nova.thread_id(0)
    tiles = len(x) // TILE
    for s in range(STAGES - 1):
        if s < tiles and t < TILE // 4:
            nova.async_copy(buf, s * TILE + 4 * t, x, s * TILE + 4 * t, 4)
        nova.async_commit()
    acc = 0.0
    for i in range(tiles):
        nova.async_wait(STAGES - 2)
        nova.syncthreads()
        ahead = i + STAGES - 1
        if ahead < tiles and t < TILE // 4:
            stage = ahead % STAGES
            nova.async_copy(buf, stage * TILE + 4 * t, x, ahead * TILE + 4 * t, 4)
        nova.async_commit()
        acc += buf[(i % STAGES) * TILE + t] * (i + 1)
    out[nova.block_id(0) * TILE + t] = acc


@pytest.mark.parametrize("tiles", [1, 2, 9])
def test_pipeline_matches_numpy(device, tiles):
    x = np.random.default_rng(tiles).standard_normal(TILE * tiles).astype(np.float32)
    out = np.zeros(TILE, np.float32)
    weighted_tile_sums.launch(out, x, grid=1, block=TILE, device=device)
    want = (x.reshape(tiles, TILE) * np.arange(1, tiles + 1)[:, None]).sum(0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@nova.kernel
def ragged_copy(out, x, n):
    """Copies 8-element chunks of x (float16) into shared memory, reading only the n - start
    elements that exist (the rest zero-filled), then writes the whole chunks out."""
    buf = nova.shared_array(256, nova.float16)
    t = nova.thread_id(0)
    start = 8 * t
    if start < n:
        nova.async_copy(buf, start, x, start, 8, src_count=min(n - start, 8))
    nova.async_commit()
    nova.async_wait()
    if start < n:
        for e in range(8):
            out[start + e] = buf[start + e]


@pytest.mark.parametrize("n", [1, 8, 13, 250])
def test_src_count_zero_fills(device, n):
    x = np.zeros(256, np.float16)
    x[:n] = np.arange(1, n + 1)
    x[n:] = np.nan  # read past n: NaN would reach out
    out = np.full(256, -1, np.float16)
    ragged_copy.launch(out, x, n, grid=1, block=32, device=device)
    whole = -(-n // 8) * 8
    np.testing.assert_array_equal(out[:n], x[:n])
    np.testing.assert_array_equal(out[n:whole], 0)
    np.testing.assert_array_equal(out[whole:], -1)


def _copy_kernel(dtype, count):
    @nova.kernel
    def copy_through_shared(out, x):
        buf = nova.shared_array(32 * count, dtype)
        t = nova.thread_id(0)
        nova.async_copy(buf, count * t, x, count * t, count)
        nova.async_commit()
        nova.async_wait(0)
        nova.syncthreads()
        for e in range(count):
            out[count * t + e] = buf[count * (31 - t) + e]

    return copy_through_shared


@pytest.mark.parametrize(("dtype", "count"), [
    (np.int8, 4), (np.int8, 16), (np.float16, 2), (np.float16, 4), (np.float32, 1),
    (np.int32, 4), (np.float64, 1), (np.float64, 2), (np.int64, 2)])
def test_sizes_and_dtypes(device, dtype, count):
    x = (np.arange(32 * count) % 100).astype(dtype)
    out = np.zeros_like(x)
    _copy_kernel(dtype, count).launch(out, x, grid=1, block=32, device=device)
    want = x.reshape(32, count)[::-1].reshape(-1)
    np.testing.assert_array_equal(out, want)


@nova.kernel
def transpose_rows(out, x):
    """2-D arrays: row t of x (8 float16 = 16 bytes, bypass_l1 explicit) into row t of a 2-D
    shared array; out gets the rows in reverse order."""
    buf = nova.shared_array((32, 8), nova.float16)
    t = nova.thread_id(0)
    nova.async_copy(buf, (t, 0), x, (t, 0), 8, bypass_l1=True)
    nova.async_commit()
    nova.async_wait(0)
    nova.syncthreads()
    for e in range(8):
        out[31 - t, e] = buf[t, e]


def test_two_dimensional_arrays(device):
    x = np.arange(256, dtype=np.float16).reshape(32, 8)
    out = np.zeros_like(x)
    transpose_rows.launch(out, x, grid=1, block=32, device=device)
    np.testing.assert_array_equal(out, x[::-1])


@nova.kernel
def dynamic_stage(out, x):
    """Into dynamic shared memory (the launch's bytes) at a byte offset; per block."""
    buf = nova.dynamic_shared_array(nova.float32, 128, 512)
    t = nova.thread_id(0)
    base = nova.block_id(0) * 128
    nova.async_copy(buf, 4 * t, x, base + 4 * t, 4, bypass_l1=False)
    nova.async_commit()
    nova.async_wait(0)
    nova.syncthreads()
    for e in range(4):
        out[base + 4 * t + e] = buf[127 - 4 * t - e] * 2.0


def test_dynamic_shared_destination(device):
    x = np.random.default_rng(5).random(128 * 3).astype(np.float32)
    out = np.zeros_like(x)
    dynamic_stage.launch(out, x, grid=3, block=32, shared_bytes=512 + 128 * 4, device=device)
    np.testing.assert_array_equal(out, 2 * x.reshape(3, 128)[:, ::-1].reshape(-1))


@nova.kernel(check_bounds=True)
def checked_copy(out, x, off):
    buf = nova.shared_array(64, nova.float32)
    t = nova.thread_id(0)
    nova.async_copy(buf, 4 * t, x, 4 * t + off, 4)
    nova.async_commit()
    nova.async_wait()
    nova.syncthreads()
    out[t] = buf[4 * t]


def test_bounds_checks_cover_the_whole_copy(cpu_device):
    """check_bounds=True checks each copy's first and last element (here the last one of
    thread 15 is x[65] of 64)."""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(16, np.float32)
    checked_copy.launch(out, x, 0, grid=1, block=16, device=cpu_device)
    np.testing.assert_array_equal(out, x[::4])
    with pytest.raises(KernelFault, match=r"index 65 out of bounds for dimension 0 of size 64 "
                       r"\(nvgpu.device_async_copy at .*test_kernel_async_copy.py:\d+:5\)"):
        checked_copy.launch(out, x, 2, grid=1, block=16, device=cpu_device)


F32 = nova.float32[:]


def test_mlir_uses_upstream_nvgpu_ops():
    text = weighted_tile_sums.mlir(F32, F32)
    assert "nvgpu.device_async_copy" in text and "{bypassL1}" in text
    assert ": memref<?xf32> to memref<192xf32, 3>" in text
    assert "nvgpu.device_async_wait" in text and "{numGroups = 1 : i32}" in text
    # the one token every wait names: an empty group committed in the entry block
    assert text.count("nvgpu.device_async_create_group") == 3
    parse_mlir(text, "weighted_tile_sums.mlir")
    mlir_opt = shutil.which("mlir-opt") or "/usr/lib/llvm-22/bin/mlir-opt"
    if shutil.which(mlir_opt) is not None:
        done = subprocess.run([mlir_opt], input=text, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr


def test_intrinsics_outside_kernels_raise():
    for fn, args in ((nova.async_copy, (None, 0, None, 0, 4)), (nova.async_commit, ()),
                     (nova.async_wait, (0,))):
        with pytest.raises(KernelCallError, match="only be called inside"):
            fn(*args)


@nova.kernel
def dst_global(out, x):
    nova.async_copy(out, 0, x, 0, 4)


@nova.kernel
def src_shared(out, x):
    a = nova.shared_array(64, nova.float32)
    b = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, b, 0, 4)


@nova.kernel
def src_local(out, x):
    a = nova.shared_array(64, nova.float32)
    b = nova.local_array(8, nova.float32)
    nova.async_copy(a, 0, b, 0, 4)


@nova.kernel
def dtypes_differ(out, x):
    a = nova.shared_array(64, nova.float16)
    nova.async_copy(a, 0, x, 0, 4)


@nova.kernel
def twelve_bytes(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, x, 0, 3)


@nova.kernel
def runtime_count(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, x, 0, len(x))


@nova.kernel
def bypass_small(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, x, 0, 2, bypass_l1=True)


@nova.kernel
def bypass_runtime(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, x, 0, 4, bypass_l1=x[0] > 0)


@nova.kernel
def float_src_count(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 0, x, 0, 4, src_count=x[0])


@nova.kernel
def index_count(out, x):
    a = nova.shared_array((8, 8), nova.float32)
    nova.async_copy(a, 0, x, 0, 4)


@nova.kernel
def misaligned_dst(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 2, x, 0, 4)


@nova.kernel
def past_the_end(out, x):
    a = nova.shared_array(64, nova.float32)
    nova.async_copy(a, 63, x, 0, 2)


@nova.kernel
def negative_wait(out, x):
    nova.async_wait(-1)


@nova.kernel
def runtime_wait(out, x):
    nova.async_wait(len(x))


ERRORS = [
    (dst_global, "dst must be a shared array", "nova.async_copy(out, 0, x, 0, 4)"),
    (src_shared, "src must be a global array", "nova.async_copy(a, 0, b, 0, 4)"),
    (src_local, "src must be a global array", "nova.async_copy(a, 0, b, 0, 4)"),
    (dtypes_differ, "dst and src must have the same dtype, got float16 and float32",
     "nova.async_copy(a, 0, x, 0, 4)"),
    (twelve_bytes, "making 4, 8 or 16 bytes (1, 2, 4), got 3", "nova.async_copy(a, 0, x, 0, 3)"),
    (runtime_count, "count must be a compile-time number", "nova.async_copy(a, 0, x, 0, len(x))"),
    (bypass_small, "bypass_l1=True needs a 16-byte copy", "bypass_l1=True)"),
    (bypass_runtime, "bypass_l1 must be a constant True or False", "bypass_l1=x[0] > 0)"),
    (float_src_count, "src_count must be an integer", "src_count=x[0])"),
    (index_count, "on a 2-d array needs 2 indices", "nova.async_copy(a, 0, x, 0, 4)"),
    (misaligned_dst, "is not a multiple of the copy's 16 bytes", "nova.async_copy(a, 2, x, 0, 4)"),
    (past_the_end, "end past the array's 64", "nova.async_copy(a, 63, x, 0, 2)"),
    (negative_wait, "n must be a compile-time integer >= 0", "nova.async_wait(-1)"),
    (runtime_wait, "n must be a compile-time integer >= 0", "nova.async_wait(len(x))"),
]


@pytest.mark.parametrize(("kern", "message", "line"), ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_misuse_gives_located_errors(kern, message, line):
    with pytest.raises(KernelTypeError, match="error: ") as info:
        kern.mlir(F32, F32)
    assert message in str(info.value)
    loc = info.value.location
    assert loc is not None and loc.filename == __file__
    with open(__file__) as fh:
        assert line in fh.read().splitlines()[loc.line - 1]
