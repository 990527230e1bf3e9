"""nova.lz4.device.LaunchCache: a slot's memo of buffer views and prepared launches gives the
same results as fresh views and general launches, and never hands out a view of a buffer the
scratch replaced."""

from __future__ import annotations

import numpy as np

import nova
from nova.lz4 import device as D
from nova.lz4 import kernels as K


def _scan_compact_case(rng: np.random.Generator, page: int, n: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = rng.integers(1, page, n).astype(np.uint32)
    sizes[rng.integers(0, n, 5)] = page | K.RAW
    staged = rng.integers(0, 256, n * page, dtype=np.uint8)
    stored = (sizes & K.LEN_MASK).astype(np.int64)
    want = np.concatenate([staged[i * page:i * page + stored[i]] for i in range(n)])
    return sizes, staged, want


def test_cached_scan_compact_matches_numpy_on_every_reuse(device):
    """Three rounds on the same scratch through one cache (the first prepares the launchers,
    the later ones run them), new data each round: each matches NumPy."""
    rng = np.random.default_rng(11)
    page, n = 256, 120
    dev = nova.get_device(device)
    stream = dev.create_stream()
    scratch = D.SlotScratch()
    for _ in range(3):
        sizes, staged, want = _scan_compact_case(rng, page, n)
        d_staged = scratch.grow(dev, "staged", n * page)
        d_sizes = scratch.grow(dev, "sizes_dev", 4 * n)
        dev.copy_htod(d_staged, staged, n * page, stream=stream)
        dev.copy_htod(d_sizes, sizes, 4 * n, stream=stream)
        offsets = scratch.grow(dev, "offsets", 8 * (n + 1))
        payload = scratch.grow(dev, "payload_dev", n * page + 16)
        dev.memset(payload, 0, n * page + 16, stream=stream)
        view = scratch.cache.view
        D.launch_scan_compact(view(d_staged, np.uint8, n * page), view(d_sizes, np.uint32, n),
                              view(offsets, np.uint64, n + 1),
                              view(payload, np.uint8, n * page + 16), n, page, stream,
                              scalars=scratch.grow(dev, "work_dev", 16), cache=scratch.cache)
        stream.synchronize()
        got = np.empty(n * page + 16, np.uint8)
        dev.copy_dtoh(got, payload, n * page + 16, stream=stream)
        stream.synchronize()
        np.testing.assert_array_equal(got[:len(want)], want)
        assert not got[len(want):].any()
    scratch.free()


def test_views_are_kept_per_buffer_and_dropped_with_it(device):
    dev = nova.get_device(device)
    scratch = D.SlotScratch()
    buf = scratch.grow(dev, "staged", 1024)
    cache = scratch.cache
    a = cache.view(buf, np.uint32, 16, 64)
    assert cache.view(buf, np.uint32, 16, 64) is a  # found again
    assert cache.view(buf, np.uint32, 16, 0) is not a  # another offset: another view
    assert a.ptr == buf.ptr + 64 and a.shape == (16,)
    bigger = scratch.grow(dev, "staged", 1 << 20)  # replaces (and frees) the old buffer
    assert bigger is not buf
    b = cache.view(bigger, np.uint32, 16, 64)
    assert b is not a and b.ptr == bigger.ptr + 64
    scratch.free()


def test_the_cache_starts_over_when_full(device):
    dev = nova.get_device(device)
    buf = dev.allocate(4096)
    cache = D.LaunchCache()
    first = cache.view(buf, np.uint8, 1)
    for count in range(2, D.LAUNCH_CACHE_LIMIT + 2):
        cache.view(buf, np.uint8, count)
    assert cache.view(buf, np.uint8, 1) is not first  # dropped when the cache was cleared
    buf.free()
