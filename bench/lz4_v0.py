"""The compression kernel as it landed on main (commit df1f96f), for A/B runs of bench/lz4.py
in one process: 4 warps per block, ballots as or-reductions of per-lane bits (what
`nova.ballot` lowered to then: five shuffles and a broadcast), a byte-wise backward extension,
one warp step for every forward extension, and the sequence written piece by piece.
Not part of the package: the bench times it next to `nova.lz4.kernels.compress_pages_kernel`
on the same pages and checks its output decodes too."""

from __future__ import annotations

import nova
from nova.lz4 import kernels as K

WARPS = 4


@nova.func
def reduce_ballot(pred):
    """The ballot as nova.ballot lowered it on main: an or-reduction of each lane's bit."""
    return nova.warp_reduce_or(nova.uint32(1 if pred else 0) << nova.uint32(nova.lane_id()))


@nova.kernel
def compress_pages_kernel_v0(src, dst, sizes, n_pages, page_size, fault_page):
    """src: uint32[n * page_size / 4] (the pages); dst: uint8[n * page_size] (page i's block or
    raw copy at i * page_size); sizes: uint32[n] (stored size | K.RAW). Positions and lengths
    within a page are int32 (64-bit integer arithmetic costs two instructions on the GPU)."""
    warp = nova.thread_id(0) // 32
    nwarps = nova.block_dim(0) // 32
    page = nova.block_id(0) * nwarps + warp
    if page >= n_pages:
        return
    assert page != fault_page, "nova.lz4: injected fault (test hook)"
    lane = nova.int32(nova.lane_id())
    size = nova.int32(page_size)
    nwords = size >> 2
    buf32 = nova.dynamic_shared_array(nova.uint32, nwords, warp * page_size)
    buf = nova.dynamic_shared_array(nova.uint8, size, warp * page_size)
    hlog = nova.int32(K.hash_log(page_size))
    entries = nova.int32(1) << hlog
    toff = nwarps * page_size + warp * (2 * nova.int64(entries))
    table = nova.dynamic_shared_array(nova.uint16, entries, toff)
    table32 = nova.dynamic_shared_array(nova.uint32, entries >> 1, toff)
    hshift = nova.uint32(32 - hlog)

    wbase = page * (page_size // 4)
    i = lane * 4
    while i < nwords:
        w0 = src[wbase + i]
        w1 = src[wbase + i + 1]
        w2 = src[wbase + i + 2]
        w3 = src[wbase + i + 3]
        buf32[i] = w0
        buf32[i + 1] = w1
        buf32[i + 2] = w2
        buf32[i + 3] = w3
        i += 128
    j = lane
    while j < entries >> 1:
        table32[j] = nova.uint32(0)
        j += 32
    nova.syncwarp()

    obase = page * page_size
    limit = size - K.MF_LIMIT  # the last position a match may start at
    mlimit = size - K.LAST_LITERALS  # matches end at or before this
    below = (nova.uint32(1) << nova.uint32(lane)) - nova.uint32(1)
    pos: nova.int32 = 0
    anchor: nova.int32 = 0
    op: nova.int32 = 0
    raw = False
    misses: nova.int32 = 0  # batches without a match since the last match
    while pos <= limit:
        p = pos + lane
        ok = False
        c: nova.int32 = 0
        h = nova.uint32(0)
        w = nova.uint32(0)
        if p <= limit:
            w = K.load_word(buf32, p, nwords)
            h = (w * nova.uint32(K.HASH_MUL)) >> hshift
            c = nova.int32(table[h])
            ok = c < p and K.load_word(buf32, c, nwords) == w
        # a nearer match inside this batch: the closest earlier valid lane with the same word
        nvalid = min(limit - pos + 1, 32)
        valid = nova.uint32(0xFFFFFFFF) >> nova.uint32(32 - nvalid)
        same = nova.match_any(w) & valid & below
        if same != 0 and p <= limit:
            c = pos + 31 - nova.int32(nova.clz(same))
            ok = True
        found = reduce_ballot(ok)
        # every lane has read the table: insert the positions up to the first match (the
        # next batch starts after the match, so later positions would be found as their own
        # candidates there)
        first = nova.int32(nova.ctz(found))  # 32 when there is no match
        if p <= limit and lane <= first:
            table[h] = nova.uint16(p)
        nova.syncwarp()  # ... and the next batch sees every insertion
        if found == 0:
            misses += 1
            pos += 32 + 32 * (misses >> K.SKIP_SHIFT)
            pending = pos - anchor
            if op + 1 + pending + pending // 255 >= size:
                raw = True  # the literals alone already fill the page
                break
            continue
        s = pos + first
        cand = nova.shuffle_idx(c, first)
        # extend backwards over pending literals
        back: nova.int32 = 0
        while True:
            k = back + lane + 1
            same_byte = k <= s - anchor and k <= cand and buf[s - k] == buf[cand - k]
            run = reduce_ballot(not same_byte)
            if run != 0:
                back += nova.int32(nova.ctz(run))
                break
            back += 32
        s -= back
        cand -= back
        # extend forwards, 128 bytes per step
        maxlen = mlimit - s
        mlen = K.MIN_MATCH + back
        while mlen < maxlen:
            q = mlen + lane * 4
            x = nova.uint32(0)
            if q < maxlen:
                x = K.load_word(buf32, s + q, nwords) ^ K.load_word(buf32, cand + q, nwords)
            diff = reduce_ballot(x != 0)
            if diff != 0:
                first_lane = nova.int32(nova.ctz(diff))
                xl = nova.shuffle_idx(x, first_lane)
                mlen += first_lane * 4 + nova.int32(nova.ctz(xl) >> 3)
                break
            mlen += 128
        mlen = min(mlen, maxlen)
        lit = s - anchor
        ml = mlen - K.MIN_MATCH
        lb = K.length_bytes(lit)
        mb = K.length_bytes(ml)
        seq = 1 + lb + lit + 2 + mb
        if op + seq + 1 + K.LAST_LITERALS >= size:
            raw = True
            break
        at = obase + op
        if lane == 0:
            dst[at] = nova.uint8((min(lit, 15) << 4) | min(ml, 15))
        K.write_length(dst, at + 1, lit, lb, lane)
        k = lane
        while k < lit:
            dst[at + 1 + lb + k] = buf[anchor + k]
            k += 32
        off = s - cand
        if lane == 0:
            dst[at + 1 + lb + lit] = nova.uint8(off & 255)
            dst[at + 2 + lb + lit] = nova.uint8(off >> 8)
        K.write_length(dst, at + 3 + lb + lit, ml, mb, lane)
        op += seq
        pos = s + mlen
        anchor = pos
        misses = 0
    if not raw:
        lit = size - anchor
        lb = K.length_bytes(lit)
        if op + 1 + lb + lit >= size:
            raw = True
        else:
            at = obase + op
            if lane == 0:
                dst[at] = nova.uint8(min(lit, 15) << 4)
            K.write_length(dst, at + 1, lit, lb, lane)
            k = lane
            while k < lit:
                dst[at + 1 + lb + k] = buf[anchor + k]
                k += 32
            op += 1 + lb + lit
    if raw:
        k = lane
        while k < size:
            dst[obase + k] = buf[k]
            k += 32
        op = size
    if lane == 0:
        sizes[page] = nova.uint32(op) | nova.uint32(K.RAW if raw else 0)
