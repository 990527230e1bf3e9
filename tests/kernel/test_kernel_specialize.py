"""Launch-checked alignment and aliasing facts of array arguments (T.ArrayType.align/noalias):
a launch reads them off the actual pointers, the signature (and so the compiled code) carries
them, and the result is right whether or not the arrays are aligned or overlap."""

from __future__ import annotations

import numpy as np
import pytest

import nova
from nova.lang import types as T
from nova.lang.launch import refine
from nova.runtime.memory import Buffer


@nova.kernel
def add_one4(out, x):
    """Four neighbouring elements per thread: vectorisable when both arrays are 16-byte aligned
    and do not overlap."""
    i = nova.global_id(0) * 4
    n = len(x)
    if i + 3 < n:
        out[i] = x[i] + 1
        out[i + 1] = x[i + 1] + 1
        out[i + 2] = x[i + 2] + 1
        out[i + 3] = x[i + 3] + 1
    else:
        while i < n:
            out[i] = x[i] + 1
            i += 1


@nova.kernel
def add_pair(out, a, b):
    i = nova.global_id(0)
    if i < len(out):
        out[i] = a[i] + b[i]


def _facts(sig):
    return [(t.align, t.noalias) for t in sig if isinstance(t, T.ArrayType)]


def test_distinct_aligned_arrays_get_both_facts_and_vector_code():
    x, out = np.zeros(64, np.float32), np.zeros(64, np.float32)
    sig = add_one4.signature(out, x)
    assert _facts(sig) == [(16, True), (16, True)]
    text = add_one4.mlir(out, x)
    # noalias reaches only the array the kernel never writes (see test_barrier_exchange_...)
    assert "%0: memref<?xf32> {llvm.align = 16 : i64}," in text
    assert "%1: memref<?xf32> {llvm.align = 16 : i64, llvm.noalias}" in text
    ptx = add_one4.ptx(out, x)
    assert "ld.global.nc.v4.b32" in ptx and "st.global.v4.b32" in ptx


def test_the_same_array_twice_is_not_noalias_and_gets_no_nc_loads():
    x = np.zeros(64, np.float32)
    sig = add_one4.signature(x, x)
    assert _facts(sig) == [(16, False), (16, False)]
    assert "llvm.noalias" not in add_one4.mlir(x, x)
    assert ".nc" not in add_one4.ptx(x, x)


def test_explicit_types_assume_nothing():
    sig = add_one4.signature(nova.float32[:], nova.float32[:])
    assert _facts(sig) == [(0, False), (0, False)]
    assert "llvm." not in add_one4.mlir(nova.float32[:], nova.float32[:])


def test_misaligned_and_overlapping_numpy_views():
    base = np.zeros(65, np.float32)
    # out = base[1:] is 4 bytes past a 16-byte boundary; base[:-1] and base[1:] overlap
    assert _facts(add_one4.signature(base[1:], base[:-1])) == [(0, False), (16, False)]
    other = np.zeros(64, np.float32)
    assert _facts(add_one4.signature(other, base[1:])) == [(16, True), (0, True)]


@pytest.mark.parametrize(("spans", "expect"), [
    ([(0, 0, 16), (1, 16, 16)], [(16, True), (16, True)]),  # adjacent, not overlapping
    ([(0, 0, 17), (1, 16, 16)], [(16, False), (16, False)]),  # one byte shared
    ([(0, 4, 0), (1, 0, 64)], [(0, True), (16, True)]),  # an empty array overlaps nothing
    ([(0, 32, 8), (1, 0, 64)], [(16, False), (16, False)]),  # contained
])
def test_refine_reads_alignment_and_overlap_off_the_spans(spans, expect):
    base = (T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 1))
    assert _facts(refine(base, spans)) == expect
    assert refine(base, spans) == refine(base, spans)  # same facts, same signature (cache key)


def _offset_view(base: Buffer, first: int, count: int) -> Buffer:
    """`count` float32 of `base` from element `first` (no copy; keeps `base` alive)."""
    return Buffer.wrap(base.device, base.ptr + 4 * first, 4 * count, np.float32, (count,),
                       owner=base)


@pytest.mark.parametrize("n", [1, 3, 4, 7, 64, 1001])
def test_results_are_right_aligned_misaligned_and_in_place(device, n):
    rng = np.random.default_rng(n)
    data = rng.standard_normal(n).astype(np.float32)
    grid = (n + 4 * 64 - 1) // (4 * 64)
    # distinct, aligned (vector path)
    x = nova.to_device(data, device)
    out = nova.to_device(np.zeros(n, np.float32), device)
    add_one4[grid, 64](out, x)
    np.testing.assert_array_equal(out.numpy(), data + 1)
    # out misaligned by one element inside a larger buffer, x aligned, disjoint
    base = nova.to_device(np.zeros(2 * n + 8, np.float32), device)
    base.copy_from_host(np.concatenate([data, np.zeros(n + 8, np.float32)]))
    shifted = _offset_view(base, n + 5, n)
    add_one4[grid, 64](shifted, _offset_view(base, 0, n))
    np.testing.assert_array_equal(base.numpy()[n + 5:2 * n + 5], data + 1)
    # in place: the same buffer as input and output (no noalias)
    add_one4[grid, 64](x, x)
    np.testing.assert_array_equal(x.numpy(), data + 1)
    device.synchronize()


def test_overlapping_read_only_inputs(device):
    n = 300
    data = np.arange(n + 1, dtype=np.float32)
    base = nova.to_device(data, device)
    out = nova.to_device(np.zeros(n, np.float32), device)
    a, b = _offset_view(base, 0, n), _offset_view(base, 1, n)
    assert _facts(add_pair.signature(out, a, b)) == [(16, True), (16, False), (0, False)]
    add_pair[(n + 127) // 128, 128](out, a, b)
    np.testing.assert_array_equal(out.numpy(), data[:-1] + data[1:])


def test_numpy_arguments_launch_correctly_when_they_overlap(device):
    # on cuda NumPy arrays are staged into fresh (aligned, disjoint) buffers; on the cpu
    # device they are used in place, overlapping: both must give NumPy's answer
    data = np.arange(101, dtype=np.float32)
    out = np.zeros(100, np.float32)
    add_pair.launch(out, data[:-1], data[1:], grid=1, block=128, device=device)
    np.testing.assert_array_equal(out, data[:-1] + data[1:])


@nova.kernel
def exchange(a, out):
    """Threads talk through a global array across barriers: thread 0 writes what all read."""
    t = nova.thread_id(0)
    x = a[0]
    nova.syncthreads()
    if t == 0:
        a[0] = x + 1
    nova.syncthreads()
    out[t] = a[0]


def test_barrier_exchange_through_a_written_array_sees_the_new_value(device):
    # with llvm.noalias on `a` LLVM kept a[0] loaded before the barrier: out was [2, 1, 1, ...]
    a = nova.to_device(np.ones(1, np.float32), device)
    out = nova.to_device(np.zeros(8, np.float32), device)
    exchange[1, 8](a, out)
    np.testing.assert_array_equal(out.numpy(), np.full(8, 2, np.float32))
    assert "%0: memref<?xf32> {llvm.align = 16 : i64}," in exchange.mlir(a, out)


def test_saved_bundles_carry_no_launch_checked_facts(tmp_path):
    x, out = np.zeros(64, np.float32), np.zeros(64, np.float32)
    text = nova.kernel.bundle_source([(add_one4, (out, x))])
    assert "llvm.noalias" not in text and "llvm.align" not in text


def test_an_explicit_array_type_cancels_noalias_of_example_arrays():
    x = np.zeros(64, np.float32)
    sig = add_one4.signature(nova.float32[:], x)
    assert _facts(sig) == [(0, False), (16, False)]


@pytest.mark.gpu
def test_cupy_and_torch_views_get_facts_from_their_own_pointers(cuda_device):
    """CUDA array interface pointers (with offsets into a larger allocation) are what the launch
    checks: an offset view is misaligned, two views of one array overlap, and the results are
    right on the vector path and off it."""
    cupy = pytest.importorskip("cupy")
    base = cupy.arange(1 + 2 * 1024, dtype=cupy.float32)
    aligned, shifted = base[:1024], base[1:1025]  # shifted: 4 bytes past a 16-byte boundary
    out = cupy.zeros(1024, dtype=cupy.float32)
    assert _facts(add_one4.signature(out, aligned)) == [(16, True), (16, True)]
    assert _facts(add_one4.signature(out, shifted)) == [(16, True), (0, True)]
    assert _facts(add_one4.signature(base[1024:2048], base[:1024])) == [(16, True), (16, True)]
    assert _facts(add_one4.signature(base[512:1536], base[:1024])) == [(16, False), (16, False)]
    for src in (aligned, shifted):
        add_one4[1, 256](out, src)
        cuda_device.synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(src) + 1)
    torch = pytest.importorskip("torch")
    t = torch.arange(1025, dtype=torch.float32, device="cuda")
    tout = torch.zeros(1024, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    add_one4[1, 256](tout, t[1:])
    cuda_device.synchronize()
    np.testing.assert_array_equal(tout.cpu().numpy(), np.arange(1, 1025, dtype=np.float32) + 1)
