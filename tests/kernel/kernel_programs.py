"""The Python-kernel programs the suite checks against NumPy (and whose MLIR the golden tests
pin down): block reduction, histogram, warp-shuffle scan, tiled matmul, a run-length encoder
writing variable-length output per block, 2-D/3-D grids, and a tensor-core (nova.mma) matmul.

Each `run_*` launches its kernel on `device` and returns (result, expected).
"""

from __future__ import annotations

import numpy as np

import nova

TPB = 128
TILE = 16
CHUNK = 256


@nova.kernel
def block_sum(out, x):
    """Grid-stride accumulation, then a shared-memory tree reduction with barriers in a loop."""
    buf = nova.shared_array(TPB, nova.float32)
    t = nova.thread_id(0)
    i = nova.global_id(0)
    acc = 0
    stride = nova.grid_dim(0) * nova.block_dim(0)
    while i < x.shape[0]:
        acc += x[i]
        i += stride
    buf[t] = acc
    nova.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        nova.syncthreads()
        s //= 2
    if t == 0:
        out[nova.block_id(0)] = buf[0]


def block_sum_expected(x: np.ndarray, blocks: int) -> np.ndarray:
    """What `block_sum` leaves in out[b]: the elements block b's threads visit in the
    grid-stride loop (index i belongs to block (i mod blocks*TPB) // TPB), summed in float64."""
    owner = (np.arange(len(x)) % (blocks * TPB)) // TPB
    return np.bincount(owner, weights=x.astype(np.float64), minlength=blocks)


def run_block_sum(device, n: int = 10000, blocks: int = 8):
    """(each block's sum, each block's expected sum): a check of every block, not only of the
    total, so a kernel that got the blocks' shares wrong but the total right still fails."""
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    out = nova.to_device(np.zeros(blocks, np.float32), device)
    block_sum.launch(out, nova.to_device(x, device), grid=blocks, block=TPB, device=device)
    return out.numpy(), block_sum_expected(x, blocks)


@nova.kernel
def histogram(hist, data):
    """Atomic increments of 16 bins (uint8 data, int32 counters)."""
    i = nova.global_id(0)
    if i < len(data):
        nova.atomic_add(hist, data[i] % 16, 1)


def run_histogram(device, n: int = 5000):
    data = np.random.default_rng(2).integers(0, 256, n).astype(np.uint8)
    hist = np.zeros(16, np.int32)
    histogram.launch(hist, data, grid=(n + 127) // 128, block=128, device=device)
    return hist, np.bincount(data % 16, minlength=16).astype(np.int32)


@nova.kernel
def warp_scan(out, x):
    """Inclusive prefix sum of each 32-element warp segment with shuffle_up."""
    i = nova.global_id(0)
    lane = nova.lane_id()
    v = x[i]
    d = 1
    while d < nova.WARP_SIZE:
        y = nova.shuffle_up(v, d)
        if lane >= d:
            v += y
        d *= 2
    out[i] = v


def run_warp_scan(device, n: int = 256):
    x = np.random.default_rng(3).integers(-50, 50, n).astype(np.int32)
    out = np.zeros_like(x)
    warp_scan.launch(out, x, grid=n // 128, block=128, device=device)
    return out, np.cumsum(x.reshape(-1, 32), axis=1).reshape(-1).astype(np.int32)


@nova.kernel
def matmul(c, a, b):
    """Tiled matrix multiply through two shared-memory tiles (float32)."""
    sa = nova.shared_array((TILE, TILE), nova.float32)
    sb = nova.shared_array((TILE, TILE), nova.float32)
    tx = nova.thread_id(0)
    ty = nova.thread_id(1)
    row = nova.block_id(1) * TILE + ty
    col = nova.block_id(0) * TILE + tx
    n = a.shape[0]
    k = a.shape[1]
    m = b.shape[1]
    acc = nova.float32(0)
    for t in range((k + TILE - 1) // TILE):
        kk = t * TILE
        sa[ty, tx] = a[row, kk + tx] if row < n and kk + tx < k else 0
        sb[ty, tx] = b[kk + ty, col] if kk + ty < k and col < m else 0
        nova.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        nova.syncthreads()
    if row < n and col < m:
        c[row, col] = acc


def run_matmul(device, n: int = 50, k: int = 37, m: int = 41):
    rng = np.random.default_rng(4)
    a = rng.random((n, k), dtype=np.float32)
    b = rng.random((k, m), dtype=np.float32)
    c = np.zeros((n, m), np.float32)
    matmul.launch(c, a, b, grid=((m + TILE - 1) // TILE, (n + TILE - 1) // TILE),
                  block=(TILE, TILE), device=device)
    return c, a @ b


@nova.kernel
def rle(vals, counts, nruns, data):
    """Run-length encode each CHUNK of bytes with one warp: ballot + popc give every run start
    its output slot; each block writes a variable number of (value, count) pairs."""
    b = nova.block_id(0)
    lane = nova.thread_id(0)
    base = b * CHUNK
    end = min(base + CHUNK, len(data))
    written = 0
    for off in range(base, end, 32):
        i = off + lane
        inside = i < end
        v = data[i] if inside else nova.uint8(0)
        start = inside and (i == base or data[i - 1] != v)
        mask = nova.ballot(start)
        below = mask & ((nova.uint32(1) << nova.uint32(lane)) - 1)
        pos = written + nova.popc(below)
        if start:
            n = 1
            while i + n < end:
                if data[i + n] != v:
                    break
                n += 1
            vals[base + pos] = v
            counts[base + pos] = n
        written += nova.popc(mask)
    if lane == 0:
        nruns[b] = written


def rle_reference(data: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for b in range(0, len(data), CHUNK):
        chunk = data[b:b + CHUNK]
        starts = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1]])
        out.append((chunk[starts], np.diff(np.r_[starts, len(chunk)]).astype(np.int32)))
    return out


def run_rle(device, runs: int = 300):
    rng = np.random.default_rng(5)
    data = np.repeat(rng.integers(0, 4, runs).astype(np.uint8), rng.integers(1, 9, runs))
    nb = (len(data) + CHUNK - 1) // CHUNK
    vals = np.zeros(nb * CHUNK, np.uint8)
    counts = np.zeros(nb * CHUNK, np.int32)
    nruns = np.zeros(nb, np.int64)
    rle.launch(vals, counts, nruns, data, grid=nb, block=32, device=device)
    got = [(vals[b * CHUNK:b * CHUNK + k], counts[b * CHUNK:b * CHUNK + k])
           for b, k in enumerate(nruns)]
    return got, rle_reference(data)


@nova.func
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@nova.kernel
def grid2d(out):
    """out[y, x] = 1000 * y + x over a 2-D grid of 2-D blocks."""
    x = nova.global_id(0)
    y = nova.global_id(1)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = 1000 * y + x


@nova.kernel
def grid3d(out):
    """A 3-D grid of 3-D blocks, through a device function with early returns."""
    x = nova.block_id(0) * nova.block_dim(0) + nova.thread_id(0)
    y = nova.block_id(1) * nova.block_dim(1) + nova.thread_id(1)
    z = nova.block_id(2) * nova.block_dim(2) + nova.thread_id(2)
    if x < out.shape[2] and y < out.shape[1] and z < out.shape[0]:
        out[z, y, x] = clamp(x + 10 * y + 100 * z, 0, 250)


def run_grid2d(device):
    out = np.zeros((19, 45), np.int64)
    grid2d.launch(out, grid=(3, 5), block=(16, 4), device=device)
    yy, xx = np.indices(out.shape)
    return out, 1000 * yy + xx


def run_grid3d(device):
    out = np.zeros((5, 6, 7), np.int32)
    grid3d.launch(out, grid=(2, 2, 3), block=(4, 3, 2), device=device)
    zz, yy, xx = np.indices(out.shape)
    return out, np.clip(xx + 10 * yy + 100 * zz, 0, 250)


MMA_TILE = 16  # nova.mma fragments are 16x16 (x16)


@nova.kernel
def mma_matmul(c, a, b):
    """c = a @ b on tensor cores (float16 in, float32 accumulators), any shape: a block of two
    warps computes a 32x32 tile of c, each warp 16x32 (two accumulator fragments); the 32x16 and
    16x32 tiles of a and b are staged in shared memory with zeros past the edges, and the result
    goes through a shared tile so the store into c can be guarded element by element."""
    sa = nova.shared_array((2 * MMA_TILE, MMA_TILE), nova.float16)
    sb = nova.shared_array((MMA_TILE, 2 * MMA_TILE), nova.float16)
    sc = nova.shared_array((2 * MMA_TILE, 2 * MMA_TILE), nova.float32)
    t = nova.thread_id(0)
    row0 = (t // 32) * MMA_TILE          # the warp's rows in the block's tile
    m0 = nova.block_id(1) * 2 * MMA_TILE
    n0 = nova.block_id(0) * 2 * MMA_TILE
    m, k = a.shape
    n = b.shape[1]
    left = nova.mma.fill(0.0)
    right = nova.mma.fill(0.0)
    for k0 in range(0, k, MMA_TILE):
        for e in range(t, 2 * MMA_TILE * MMA_TILE, 64):
            r, q = e // MMA_TILE, e % MMA_TILE
            sa[r, q] = a[m0 + r, k0 + q] if m0 + r < m and k0 + q < k else 0
            r, q = e // (2 * MMA_TILE), e % (2 * MMA_TILE)
            sb[r, q] = b[k0 + r, n0 + q] if k0 + r < k and n0 + q < n else 0
        nova.syncthreads()
        x = nova.mma.load(sa, (row0, 0), "a")
        left = nova.mma.mma(x, nova.mma.load(sb, (0, 0), "b"), left)
        right = nova.mma.mma(x, nova.mma.load(sb, (0, MMA_TILE), "b"), right)
        nova.syncthreads()
    nova.mma.store(sc, (row0, 0), left)
    nova.mma.store(sc, (row0, MMA_TILE), right)
    nova.syncthreads()
    for e in range(t, 4 * MMA_TILE * MMA_TILE, 64):
        r, q = e // (2 * MMA_TILE), e % (2 * MMA_TILE)
        if m0 + r < m and n0 + q < n:
            c[m0 + r, n0 + q] = sc[r, q]


def run_mma_matmul(device, m: int = 50, k: int = 37, n: int = 41, seed: int = 5):
    """Small integers: every product and sum is exact in float32, so the result is exact."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    mma_matmul.launch(c, a, b, grid=(-(-n // 32), -(-m // 32)), block=64, device=device)
    return c, a.astype(np.float32) @ b.astype(np.float32)
