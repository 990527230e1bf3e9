"""The GPU kernels, written in Nova's Python kernel language (`@nova.kernel`).

Both kernels give each page to one warp; a block runs `compress_warps_per_block(page_size)`
(compression: as many resident warps per SM as shared memory allows) or
`warps_per_block(page_size)` (decompression) warps.

**Compression** (`compress_pages_kernel`). The warp stages its page into shared memory (16 bytes
per lane per step, v4 loads, two steps in flight) and zeroes a hash table of 16-bit positions
(`hash_bits`, by default `hash_log`: 2048 entries for pages up to 4 KiB), so a 4 KiB page
costs 8 KiB of shared memory. Then greedy LZ4 matching, 32 positions at a time, each step
straight-line code: each lane hashes the 4 bytes at `pos + lane` (Knuth's multiplicative hash),
reads the table's candidate and verifies it (a candidate must be earlier and hold the same 4
bytes), `match_any` of the hashes (or four shuffles of the words: `in_batch`) finds the nearest
earlier lane with the same bytes, and one vote picks the first lane with a match, as a
sequential LZ4 compressor would. The same `match_any` makes the insertions deterministic: of
the lanes whose positions hash alike only the highest stores (no same-address stores race).
The match is extended backwards over the pending literals and forwards over the next 8
bytes by every lane alike (4-byte XORs of broadcast loads, no vote), longer matches 128 bytes
per warp step (each lane compares one 4-byte word; a ballot and a count of trailing zero bits
of the XOR find the first differing byte). Each sequence (token, length bytes, literals,
offset) is written in one pass, lane k writing byte k. LZ4's end-of-block rules hold: no match
starts within the last 12 bytes, every match ends at least 5 bytes before the end, the block
ends with literals. A page whose output would not be smaller than the page stops as soon as
that is certain and is stored raw (`RAW_FLAG` in its size entry).

**Decompression** (`decompress_pages_kernel`). Every lane parses the same sequence headers
(the reads hit one address, a broadcast; the offset and the next token are loaded together with
the literals), then the lanes copy the literals and the match into the page in shared memory
(one predicated byte per lane for copies of at most 32 bytes; a match with offset d < length
repeats with period d, so lane k copies `out[op - d + k % d]`: every source byte was written
before the copy started, no lane waits for another; matches of LONG_MATCH bytes or more as
4-byte words from a multiple of d), and the page is written out 16 bytes per lane. Stored
pages go to the output directly. Every read
of the block is checked against the block's length and every write against the page, with
liblz4's own parsing limits, so any block liblz4's safe decoder rejects is rejected here too,
and a malicious block can never read or write out of bounds: it only sets its page's status.

Warp-level communication through shared memory is ordered by `nova.syncwarp()`.
"""

from __future__ import annotations

import functools
from typing import Any

import nova

HASH_MUL = 2654435761  # Knuth's multiplicative constant, as LZ4's 4-byte hash
SKIP_SHIFT = 2  # after 2**SKIP_SHIFT batches without a match the stride grows (liblz4 skips too)
RAW = 0x80000000
LEN_MASK = 0x7FFFFFFF
MIN_MATCH = 4
MF_LIMIT = 12  # a match starts at least this many bytes before the end of the block
LAST_LITERALS = 5  # the last bytes of a block are always literals

IN_BATCH_MATCH_ANY = 0  # compress_pages_kernel's in_batch: match_any over the batch
IN_BATCH_SHUFFLE = 1  # ... or shuffles for distances 1, 2, 4, 8
IN_BATCH = IN_BATCH_MATCH_ANY  # the default (bench/lz4.py times the other one beside it)
FULL = 0xFFFFFFFF  # every lane: the compression kernel's blocks are whole warps; a constant
# member mask reaches PTX as an immediate, so ptxas checks no computed mask before each vote
# or shuffle (a MATCH.ANY and a REDUX.OR per collective)

STATUS_OK = 0
STATUS_CORRUPT = 1  # the block is not a valid LZ4 block for a page of this size
STATUS_BAD_ENTRY = 2  # the size table or offsets point outside the payload


@nova.func
def hash_log(page_size):
    """log2 of the hash table's entries (16-bit positions) for a page size: 1024 entries (2 KiB)
    up to 4 KiB pages, 4096 up to 16 KiB, 8192 above. Measured on an H100 (bench/results/
    lz4-2026-11-26-h100.md, one run): for 4 KiB pages 1024 entries instead of 2048 cost 0.5-0.8%
    of ratio (0.985-0.991x liblz4's per class) and made the compress kernel 1.10-1.30x faster
    (36 instead of 28 resident warps per SM: 6 KiB of shared memory per warp instead of 8).
    Called from kernels and from Python."""
    return 10 if page_size <= 4096 else (12 if page_size <= 16384 else 13)


def table_bytes(page_size: int, hash_bits: int | None = None) -> int:
    """Shared memory of one warp's hash table (2-byte entries; hash_log(page_size) bits by
    default)."""
    return 2 << (hash_log(page_size) if hash_bits is None else hash_bits)


@nova.func
def load_word(buf32, p, nwords):
    """The 4 bytes at byte position p (little-endian), from a uint32 view: two aligned loads
    and a funnel shift. The high word's index is clamped into the view (its bytes are not
    used when p is aligned)."""
    i = p >> 2
    s = nova.uint32((p & 3) * 8)
    lo = buf32[i]
    hi = buf32[min(i + 1, nwords - 1)]
    # (hi << 1) << (31 - s) rather than hi << (32 - s): both amounts provably < 32, so no
    # out-of-range guard is emitted and LLVM forms one funnel shift (shf.r on the GPU)
    return (lo >> s) | ((hi << nova.uint32(1)) << (nova.uint32(31) - s))


@nova.func
def load_word_nc(buf32, p):
    """load_word without the clamp of the high word: for a view that holds one word more than
    the page (the compression kernel's: shared memory goes on after every page)."""
    i = p >> 2
    s = nova.uint32((p & 3) * 8)
    return (buf32[i] >> s) | ((buf32[i + 1] << nova.uint32(1)) << (nova.uint32(31) - s))


@nova.func
def word_before(buf32, q):
    """The 4 bytes before byte position q (q - 4 .. q - 1, little-endian: byte q - 1 on top).
    For q < 4 the missing bytes below position 0 read as zeros (callers use only the top
    min(q, ...) bytes)."""
    p = max(q - 4, 0)
    return load_word_nc(buf32, p) << nova.uint32(8 * (p - q + 4))


@nova.func
def length_bytes(n):
    """Extra length bytes LZ4 needs for a literal/match length field value n (int32)."""
    return 0 if n < 15 else nova.int32(nova.uint32(n - 15) // nova.uint32(255)) + 1


@nova.func
def write_length(dst, at, n, nbytes, lane):
    """Write the nbytes extension bytes of length n (255, ..., 255, rest) from `at`."""
    rest = nova.uint8(nova.uint32(n - 15) % nova.uint32(255))
    k = lane
    while k < nbytes:
        dst[at + k] = nova.uint8(255) if k < nbytes - 1 else rest
        k += 32


@nova.func
def near_repeats(w, lane):
    """Bit lane - d set where the word of lane - d equals this lane's w, for d = 1, 2, 4, 8
    (runs and short periods: most of what match_any finds inside a batch, at four shuffles;
    every lane shuffles, whatever its lane number)."""
    w1 = nova.shuffle_up(w, 1, members=FULL)
    w2 = nova.shuffle_up(w, 2, members=FULL)
    w4 = nova.shuffle_up(w, 4, members=FULL)
    w8 = nova.shuffle_up(w, 8, members=FULL)
    one = nova.uint32(1)
    bits = nova.uint32(0)
    if lane >= 1 and w1 == w:
        bits |= one << nova.uint32(lane - 1)
    if lane >= 2 and w2 == w:
        bits |= one << nova.uint32(lane - 2)
    if lane >= 4 and w4 == w:
        bits |= one << nova.uint32(lane - 4)
    if lane >= 8 and w8 == w:
        bits |= one << nova.uint32(lane - 8)
    return bits


@nova.func
def write_sequence(dst, at, buf, anchor, lit, lb, off, ml, mb, seq, lane):
    """Write one sequence (`seq` bytes from dst[at]) in one pass, lane k writing bytes k,
    k + 32, ...: token, lb literal-length bytes, the lit literals buf[anchor:], the 2-byte
    offset, mb match-length bytes (ml = match length - 4). Every lane picks its byte with
    selects, so a typical sequence (< 32 bytes) is one shared load and one store per lane,
    with no lane-0 branches. A literals-only last sequence passes seq = 1 + lb + lit."""
    token = nova.uint8((min(lit, 15) << 4) | min(ml, 15))
    lrest = nova.uint8(nova.uint32(lit - 15) % nova.uint32(255))
    mrest = nova.uint8(nova.uint32(ml - 15) % nova.uint32(255))
    lend = 1 + lb + lit  # the offset's first byte
    last_lit = max(lit - 1, 0)
    k = lane
    while k < seq:
        v = buf[anchor + min(max(k - 1 - lb, 0), last_lit)]
        lenbyte = nova.uint8(255) if k < lb else lrest
        v = lenbyte if k <= lb else v
        v = token if k == 0 else v
        j = k - lend
        mbyte = nova.uint8(255) if j < mb + 1 else mrest
        mbyte = nova.uint8(off >> 8) if j == 1 else mbyte
        mbyte = nova.uint8(off & 255) if j == 0 else mbyte
        v = mbyte if j >= 0 else v
        dst[at + k] = v
        k += 32


CLAIM_GROUPS = 32
"""Independent page counters of the page kernels (see claim_next)."""
CLAIM_STRIDE = 8  # words between two counters: each in its own 32-byte sector
WORK_WORDS = CLAIM_GROUPS * CLAIM_STRIDE
"""uint32 words of a page kernel's `work` buffer (zero at the launch)."""


@nova.func
def claim_next(work, lane, group):
    """The page kernels' work distribution: the grid covers the resident warps (launch
    geometry: nova.lz4.device.resident_grid), each warp starts at its own page, and a warp that
    is done takes the next unclaimed page beyond the grid's first pages, so warps whose pages
    were quick never idle beside slow ones until their block retires. The pages beyond are
    dealt to up to CLAIM_GROUPS counters (blocks take turns), so that no single address takes
    every warp's atomic: with quick pages (zero pages decode at ~1 TB/s) one counter's atomics
    bounded the kernel. Lane 0 claims at the top of a page, so the atomic's latency hides
    behind that page's work; the caller broadcasts the claim at the end (next_page)."""
    claim = nova.uint32(0)
    if lane == 0:
        claim = nova.atomic_add(work, group * CLAIM_STRIDE, nova.uint32(1))
    return claim


@nova.func
def next_page(claim, grid_warps, group, groups):
    """The page lane 0 claimed (claim_next), for every lane: page grid_warps + group +
    groups * claim (counter `group` deals every groups-th page past the first grid's)."""
    return grid_warps + group + groups * nova.int32(nova.shuffle_idx(claim, 0, members=FULL))


def compress_kernel(page_size: int, hash_bits: int, in_batch: int,
                    every_match: bool = True) -> Any:
    """The compression kernel for one page size, hash table (log2 of its entries: hash_log
    by default) and in-batch mode: how a position finds an earlier position of its own batch,
    which the table cannot hold yet: IN_BATCH_MATCH_ANY (any of them: match_any) or
    IN_BATCH_SHUFFLE (those 1, 2, 4 or 8 bytes back: four shuffles). every_match: a batch of
    32 positions emits every match it holds, in order (a match ending inside the batch leaves
    the lanes past its end to start the next one), where the first kernels emitted only the
    batch's first match and started the next batch at its end, throwing away the hashing,
    table reads and votes of the lanes past it (False: that kernel, for A/B). The four are
    compile-time constants of the kernel (closure constants), so every size, limit and shift
    derived from them folds: as kernel parameters they were reloaded from constant memory
    inside the matching loop, where ncu attributed ~10% of the stall samples on text pages to
    waiting for them."""
    # checked before the cache: it would find (4096, 10, 0, True)'s kernel for 4096.0 or 1
    if not (type(page_size) is int and type(hash_bits) is int and type(in_batch) is int
            and type(every_match) is bool):
        raise TypeError("compress_kernel(page_size, hash_bits, in_batch, every_match) takes "
                        "three ints and a bool")
    return _compress_kernel(page_size, hash_bits, in_batch, every_match)


@functools.cache
def _compress_kernel(page_size: int, hash_bits: int, in_batch: int, every_match: bool) -> Any:
    """compress_kernel's kernel, made once per (exactly typed) option tuple."""

    @nova.kernel
    def compress_pages_kernel(src, dst, sizes, n_pages, fault_page, work):
        """src: uint32[n * page_size / 4] (the pages); dst: uint8[n * page_size] (page i's
        block or raw copy at i * page_size); sizes: uint32[n] (stored size | RAW). Positions
        and lengths within a page are int32 (64-bit integer arithmetic costs two instructions
        on the GPU). work: uint32[WORK_WORDS], zero at the launch: claim_next's counters."""
        warp = nova.thread_id(0) // 32
        nwarps = nova.block_dim(0) // 32
        page = nova.block_id(0) * nwarps + warp
        grid_warps = nova.grid_dim(0) * nwarps
        groups = min(nova.int32(CLAIM_GROUPS), nova.int32(nova.grid_dim(0)))
        group = nova.int32(nova.block_id(0)) % groups
        lane = nova.int32(nova.lane_id())
        size = nova.int32(page_size)
        nwords = size >> 2
        hlog = nova.int32(hash_bits)
        entries = nova.int32(1) << hlog
        # each warp's page, then its hash table (2-byte entries). Offsets and indices are written
        # as multiples of 16 bytes (page sizes and tables are), so LLVM can prove the 16-byte
        # alignment that merges a lane's four words into one v4 load/store
        pbase = warp * ((page_size + 2 * nova.int64(entries) + 15) // 16) * 16
        # one word more than the page: load_word_nc reads the word after a position's word
        # without a clamp; after the page comes the warp's own table, so the word exists and no
        # other warp writes it (compute-sanitizer's racecheck saw the last warp's reads of the
        # first warp's table when the tables followed all the pages)
        buf32 = nova.dynamic_shared_array(nova.uint32, nwords + 1, pbase)
        buf = nova.dynamic_shared_array(nova.uint8, size, pbase)
        toff = pbase + page_size
        table = nova.dynamic_shared_array(nova.uint16, entries, toff)
        table32 = nova.dynamic_shared_array(nova.uint32, entries >> 1, toff)
        hshift = nova.uint32(32 - hlog)
        while page < n_pages:
            assert page != fault_page, "nova.lz4: injected fault (test hook)"
            claim = claim_next(work, lane, group)
            wbase = page * (page_size // 16) * 4
            i = lane * 4
            while i + 128 < nwords:  # two 16-byte loads in flight per lane, then their stores
                w0 = src[wbase + i]
                w1 = src[wbase + i + 1]
                w2 = src[wbase + i + 2]
                w3 = src[wbase + i + 3]
                v0 = src[wbase + i + 128]
                v1 = src[wbase + i + 129]
                v2 = src[wbase + i + 130]
                v3 = src[wbase + i + 131]
                buf32[i] = w0
                buf32[i + 1] = w1
                buf32[i + 2] = w2
                buf32[i + 3] = w3
                buf32[i + 128] = v0
                buf32[i + 129] = v1
                buf32[i + 130] = v2
                buf32[i + 131] = v3
                i += 256
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
            limit = size - MF_LIMIT  # the last position a match may start at
            mlimit = size - LAST_LITERALS  # matches end at or before this
            below = (nova.uint32(1) << nova.uint32(lane)) - nova.uint32(1)
            pos: nova.int32 = 0
            anchor: nova.int32 = 0
            op: nova.int32 = 0
            raw = False
            misses: nova.int32 = 0  # batches without a match since the last match
            while pos <= limit:
                p = pos + lane
                # every lane loads (lanes past the limit at the limit): no divergent branch; a table
                # entry is always a position inside the page (0 when empty)
                inside = p <= limit
                w = load_word_nc(buf32, min(p, limit))
                h = (w * nova.uint32(HASH_MUL)) >> hshift
                # the warp collective first: MATCH.ANY's latency (its result was waited for right
                # after it, ~18% of the stall samples on text pages) hides behind the table read
                # and the candidate's loads
                alike_all = nova.match_any(h)
                c = nova.int32(table[h])
                wc = load_word_nc(buf32, c)
                ok = inside and c < p and wc == w
                # a nearer match inside this batch: the closest earlier valid lane with the same
                # word. One match_any over the hashes serves both this and the insertions below:
                # the nearest earlier lane with the same hash is taken when its word is the same too
                # (a hash collision in between costs that in-batch match, rarely)
                nvalid = min(limit - pos + 1, 32)
                valid = nova.uint32(0xFFFFFFFF) >> nova.uint32(32 - nvalid)
                if in_batch == IN_BATCH_MATCH_ANY:  # uniform: a kernel parameter
                    same = alike_all & valid & below
                else:
                    same = near_repeats(w, lane) & valid
                if same != 0 and inside:
                    near = pos + 31 - nova.int32(nova.clz(same))
                    if in_batch != IN_BATCH_MATCH_ANY or load_word_nc(buf32, near) == w:
                        c = near
                        ok = True
                found = nova.ballot(ok, members=FULL)
                if not every_match:
                    nova.syncwarp()  # every lane's table read is done before any lane stores
                    # insert the positions up to the first match: the next batch starts after
                    # the match, so later positions would be found as their own candidates there.
                    # Lanes whose positions hash alike leave the latest position, as a sequential
                    # compressor would: only the highest of them stores, so the table and the
                    # output do not depend on which of several same-address stores wins. The
                    # inserting lanes without a vote: `valid` is the lanes inside, `upto` lanes
                    # 0..first
                    first = nova.int32(nova.ctz(found))  # 32 when there is no match
                    upto = nova.uint32(0xFFFFFFFF) >> nova.uint32(31 - min(first, 31))
                    alike = alike_all & valid & upto
                    if inside and lane <= first and (alike >> nova.uint32(lane)) == nova.uint32(1):
                        table[h] = nova.uint16(p)
                    nova.syncwarp()  # ... and the next batch sees every insertion
                todo = found
                live = ok  # a lane whose match may still be emitted
                inmatch = False  # a lane inside an emitted match (not its start)
                if found != 0:
                    misses = 0
                    # every lane measures its own candidate's match before the warp walks the
                    # matches in order (below): the equal bytes just before p and c (0-4: the
                    # leading zero bytes of the XOR of the words before them) and after their
                    # first 4 (0-8: the trailing zero bytes of the next two words' XORs). Packed
                    # with c (16 bits) into one word, one shuffle hands a match all three. The
                    # words read end at most at limit + 15 = size + 3: the word after the page
                    q = min(p, limit)
                    xb = word_before(buf32, q) ^ word_before(buf32, c)
                    x0 = load_word_nc(buf32, q + 4) ^ load_word_nc(buf32, c + 4)
                    x1 = load_word_nc(buf32, q + 8) ^ load_word_nc(buf32, c + 8)
                    fwd = nova.int32(nova.ctz(x0) >> nova.uint32(3))
                    if x0 == 0:
                        fwd = 4 + nova.int32(nova.ctz(x1) >> nova.uint32(3))  # 32 for 0: 8 bytes
                    bk = nova.int32(nova.clz(xb) >> nova.uint32(3))
                    mine = nova.uint32(c) | nova.uint32(fwd << 16) | nova.uint32(bk << 20)
                    while todo != 0:  # the batch's matches in order (one unless every_match)
                        first = nova.int32(nova.ctz(todo))
                        s = pos + first
                        m = nova.shuffle_idx(mine, first, members=FULL)
                        cand = nova.int32(m & nova.uint32(0xFFFF))
                        # backwards over pending literals: the lane's 0-4 bytes, then 4 bytes per
                        # step while whole words are equal (rare), every lane alike (broadcast
                        # loads, no vote)
                        room = min(s - anchor, cand)
                        eq = nova.int32(m >> nova.uint32(20))
                        back = min(eq, room)
                        while eq == 4 and back < room:
                            xw = word_before(buf32, s - back) ^ word_before(buf32, cand - back)
                            eq = nova.int32(nova.clz(xw) >> nova.uint32(3))
                            back += min(eq, room - back)
                        s -= back
                        cand -= back
                        # forwards: the lane's 0-8 bytes past the first 4 (most matches end
                        # there: the corpus' median match is 7 bytes), then 128 bytes per warp
                        # step. The words read start at most at s + maxlen + 3 = size - 2 (their
                        # high word may be the one after the page: see buf32); bytes past maxlen
                        # are cut by the min below.
                        maxlen = mlimit - s
                        ahead = nova.int32((m >> nova.uint32(16)) & nova.uint32(15))
                        mlen = MIN_MATCH + back + ahead
                        while ahead == 8 and mlen < maxlen:
                            q = mlen + lane * 4
                            x = nova.uint32(0)
                            if q < maxlen:
                                x = load_word_nc(buf32, s + q) ^ load_word_nc(buf32, cand + q)
                            diff = nova.ballot(x != 0, members=FULL)
                            if diff != 0:
                                first_lane = nova.int32(nova.ctz(diff))
                                xl = nova.shuffle_idx(x, first_lane, members=FULL)
                                mlen += first_lane * 4 + nova.int32(nova.ctz(xl) >> 3)
                                break
                            mlen += 128
                        mlen = min(mlen, maxlen)
                        lit = s - anchor
                        ml = mlen - MIN_MATCH
                        lb = length_bytes(lit)
                        mb = length_bytes(ml)
                        seq = 1 + lb + lit + 2 + mb
                        if op + seq + 1 + LAST_LITERALS >= size:
                            raw = True
                            break
                        write_sequence(dst, obase + op, buf, anchor, lit, lb, s - cand, ml, mb, seq,
                                       lane)
                        op += seq
                        anchor = s + mlen
                        # lanes inside the match (past its start) are not inserted below;
                        # lanes before its end can no longer start one. Per lane, not masks:
                        # each is two compares, where building the masks took ~20 instructions
                        inmatch = inmatch or (p > s and p < anchor)
                        live = live and p >= anchor
                        todo = nova.uint32(0)
                        if every_match:
                            todo = nova.ballot(live, members=FULL)
                if raw:
                    break
                if every_match:
                    # every position of the batch was examined in this batch (the next one starts
                    # after it, or after the last match when that runs past it): all but those
                    # inside a match go in, as liblz4 leaves those out too (the highest of alike
                    # lanes, as above)
                    keep = nova.ballot(inside and not inmatch, members=FULL)
                    # every lane's table read, and its reads of the word after the page (the
                    # table's first: see buf32), are done before any lane stores
                    nova.syncwarp()
                    if ((keep & alike_all) >> nova.uint32(lane)) == nova.uint32(1):
                        table[h] = nova.uint16(p)
                    nova.syncwarp()
                if found == 0:
                    misses += 1
                    pos += 32 + 32 * (misses >> SKIP_SHIFT)
                    pending = pos - anchor
                    if op + 1 + pending + pending // 255 >= size:
                        raw = True  # the literals alone already fill the page
                        break
                else:
                    pos = max(pos + 32, anchor) if every_match else anchor
            if not raw:
                lit = size - anchor
                lb = length_bytes(lit)
                if op + 1 + lb + lit >= size:
                    raw = True
                else:
                    write_sequence(dst, obase + op, buf, anchor, lit, lb, 0, 0, 0, 1 + lb + lit,
                                   lane)
                    op += 1 + lb + lit
            if raw:
                k = lane
                while k < size:
                    dst[obase + k] = buf[k]
                    k += 32
                op = size
            if lane == 0:
                sizes[page] = nova.uint32(op) | nova.uint32(RAW if raw else 0)
            # the next page: the one claimed at the top of this iteration
            nova.syncwarp()  # every lane is done with the shared page
            page = next_page(claim, grid_warps, group, groups)

    return compress_pages_kernel


LONG_MATCH = 256  # matches this long take the word path (see decompress_pages_kernel)
PERIOD_MIN = 132  # the word path copies from a multiple of the offset >= this (128 + 4)


@nova.kernel
def decompress_pages_kernel(src, offsets, sizes, dst, status, n_pages, page_size, work):
    """src: uint8 payload; offsets: uint64[n + 1]; sizes: uint32[n] (stored size | RAW);
    dst: uint32[n * page_size / 4]; status: int32[n] (STATUS_*). A page with a nonzero
    status is left unwritten. Positions within a block and a page are int32.
    work: uint32[WORK_WORDS], zero at the launch (claim_next).

    Per sequence, the loads that do not depend on each other are issued together: as soon as
    the literal length is known, the offset bytes and the byte after them (the next token, or
    the first match-length byte) are loaded with the literals, so a typical sequence waits for
    one global load instead of three. Literals and matches of at most 32 bytes (nearly all of
    them) are one predicated copy per lane without a loop; a modulo is computed only for an
    overlapping match (offset < length), once per match, and longer copies step a residue
    instead of dividing per byte. A match of LONG_MATCH bytes or more with offset 1, 2 or 4 (zero
    pages, runs) is a run of one repeated word (copy_run). Other matches of LONG_MATCH bytes or
    more are copied as 4-byte words: their first bytes byte by byte until the output holds one
    period D (the smallest multiple of the offset >= PERIOD_MIN), then aligned words from D
    bytes back (two aligned loads and a funnel shift: a warp step of 128 bytes only reads bytes
    written before it, since D > 128 + 3), then the last partial word."""
    warp = nova.thread_id(0) // 32
    nwarps = nova.block_dim(0) // 32
    page = nova.block_id(0) * nwarps + warp
    grid_warps = nova.grid_dim(0) * nwarps
    groups = min(nova.int32(CLAIM_GROUPS), nova.int32(nova.grid_dim(0)))
    group = nova.int32(nova.block_id(0)) % groups
    lane = nova.int32(nova.lane_id())
    size = nova.int32(page_size)
    nwords = size >> 2
    pbase = warp * (page_size // 16) * 16  # provably 16-byte aligned: v4 loads of the page
    out = nova.dynamic_shared_array(nova.uint8, size, pbase)
    out32 = nova.dynamic_shared_array(nova.uint32, nwords, pbase)
    total = len(src)
    while page < n_pages:
        claim = claim_next(work, lane, group)
        start = nova.int64(offsets[page])
        stop = nova.int64(offsets[page + 1])
        entry = sizes[page]
        clen64 = nova.int64(entry & nova.uint32(LEN_MASK))
        err: nova.int32 = STATUS_OK
        written = False  # the page went straight to dst (a raw page), not through shared memory
        wbase = page * (page_size // 16) * 4  # the page's first word in dst: a multiple of 4
        if stop < start or stop - start != clen64 or stop > total:
            err = STATUS_BAD_ENTRY
        elif (entry & nova.uint32(RAW)) != 0:
            if clen64 != page_size:
                err = STATUS_CORRUPT
            else:  # a stored page: 4 byte loads (the block need not be aligned), one word store
                rw = lane
                while rw < nwords:
                    rb = start + rw * 4
                    dst[wbase + rw] = (nova.uint32(src[rb]) | (nova.uint32(src[rb + 1]) << 8)
                                       | (nova.uint32(src[rb + 2]) << 16)
                                       | (nova.uint32(src[rb + 3]) << 24))
                    rw += 32
                written = True
        elif clen64 < 1:
            err = STATUS_CORRUPT
        else:
            clen = nova.int32(clen64)
            token = nova.int32(src[start])
            ip: nova.int32 = 1
            op: nova.int32 = 0
            while True:
                # token was read at ip - 1
                lit = token >> 4
                if lit == 15:
                    if ip >= clen - 15:
                        err = STATUS_CORRUPT
                        break
                    while True:
                        b = nova.int32(src[start + ip])
                        ip += 1
                        lit += b
                        if ip > clen - 15 or lit > size:
                            err = STATUS_CORRUPT
                            break
                        if b != 255:
                            break
                    if err != STATUS_OK:
                        break
                q = ip + lit  # the offset's position (when the sequence has a match)
                # `|` rather than `or`: no short circuit, one branch (plain compares)
                last = (op + lit > size - MF_LIMIT) | (q > clen - 8)
                if last and ((q != clen) | (op + lit != size)):
                    err = STATUS_CORRUPT
                    break
                d: nova.int32 = 0
                nxt: nova.int32 = 0
                if not last:  # q + 2 <= clen - 6: in the block. Loaded before the literals' stores
                    d = nova.int32(src[start + q]) | (nova.int32(src[start + q + 1]) << 8)
                    nxt = nova.int32(src[start + q + 2])
                if lit <= 32:
                    if lane < lit:
                        out[op + lane] = src[start + ip + lane]
                else:
                    k = lane
                    while k < lit:
                        out[op + k] = src[start + ip + k]
                        k += 32
                op += lit
                if last:
                    break
                ip = q + 3  # past the offset and nxt
                ml = token & 15
                if ml == 15:
                    b = nxt
                    ml += b
                    if ip > clen - 4 or ml > size:
                        err = STATUS_CORRUPT
                        break
                    while b == 255:
                        b = nova.int32(src[start + ip])
                        ip += 1
                        ml += b
                        if ip > clen - 4 or ml > size:
                            err = STATUS_CORRUPT
                            break
                    if err != STATUS_OK:
                        break
                    if ip >= clen:
                        err = STATUS_CORRUPT
                        break
                    nxt = nova.int32(src[start + ip])  # the next token
                    ip += 1
                ml += MIN_MATCH
                if (d == 0) | (d > op) | (op + ml > size - LAST_LITERALS):
                    err = STATUS_CORRUPT
                    break
                token = nxt
                base = op - d
                nova.syncwarp()  # the bytes this match copies are in place
                if ml <= 32:
                    if lane < ml:
                        j = lane
                        if ml > d:  # overlapping: a run of period d (1, 2, 4, 8: no division)
                            if (d & (d - 1)) == 0:
                                j = lane & (d - 1)
                            else:
                                j = nova.int32(nova.uint32(lane) % nova.uint32(d))
                        out[op + lane] = out[base + j]
                elif ml < LONG_MATCH:
                    copy_periodic(out, op, base, d, ml, lane)
                elif d <= 4 and d != 3:
                    copy_run(out, out32, op, base, d, ml, lane)
                else:
                    period = d
                    if d < PERIOD_MIN:
                        period = d * nova.int32(nova.uint32(PERIOD_MIN - 1 + d) // nova.uint32(d))
                    end = op + ml
                    a0 = (op + period - d + 3) & -4  # bytes before a0 byte by byte (< 135 bytes)
                    ae = end & -4
                    copy_periodic(out, op, base, d, a0 - op, lane)
                    cur = a0
                    while cur < ae:
                        nova.syncwarp()  # everything before cur is in place
                        p = cur + lane * 4
                        if p < ae:
                            s = p - period
                            i = s >> 2
                            sh = nova.uint32((s & 3) * 8)
                            out32[p >> 2] = ((out32[i] >> sh)
                                             | ((out32[i + 1] << nova.uint32(1))
                                                << (nova.uint32(31) - sh)))
                        cur += 128
                    nova.syncwarp()
                    if lane < end - ae:
                        out[ae + lane] = out[ae + lane - period]
                op += ml
        nova.syncwarp()
        if err == STATUS_OK and not written:
            i = lane * 4  # v4 stores: wbase is a multiple of 4 words
            while i < nwords:
                w0 = out32[i]
                w1 = out32[i + 1]
                w2 = out32[i + 2]
                w3 = out32[i + 3]
                dst[wbase + i] = w0
                dst[wbase + i + 1] = w1
                dst[wbase + i + 2] = w2
                dst[wbase + i + 3] = w3
                i += 128
        if lane == 0:
            status[page] = err
        # the next page: the one claimed at the top of this iteration
        nova.syncwarp()  # no lane reuses the shared page before every lane has copied it out
        page = next_page(claim, grid_warps, group, groups)


@nova.func
def copy_run(out, out32, op, base, d, n, lane):
    """A long match of offset d = 1, 2 or 4 (runs: zero pages, 16-bit and 32-bit patterns):
    every aligned output word holds the same 4 bytes (d divides 4), built once from the d bytes
    before op (written before the caller's warp barrier), so the words are plain stores with no
    load and no barrier between them; the bytes before the first and after the last aligned
    word are one predicated byte per lane each (fewer than 4 on each side)."""
    mask = d - 1
    pattern = nova.uint32(0)
    for k in range(4):
        byte = nova.uint32(out[base + ((k - op) & mask)])
        pattern |= byte << nova.uint32(8 * k)
    end = op + n
    a0 = (op + 3) & -4
    ae = end & -4
    if lane < a0 - op:
        out[op + lane] = out[base + (lane & mask)]
    p = a0 + lane * 4
    while p < ae:
        out32[p >> 2] = pattern
        p += 128
    if lane < end - ae:
        out[ae + lane] = out[base + ((ae + lane - op) & mask)]


@nova.func
def copy_periodic(out, op, base, d, n, lane):
    """out[op + x] = out[base + x % d] for x < n, lane k doing x = k, k + 32, ...: every source
    byte is before op (written before the caller's warp barrier), so no lane waits for another.
    The residue x % d steps by 32 % d per iteration (one modulo per call, and none when
    d >= 32) instead of a division per byte."""
    r = lane
    step = 32
    if d <= 32:
        if (d & (d - 1)) == 0:  # 1, 2, 4, ..., 32: no division
            r = lane & (d - 1)
            step = 0
        else:
            r = nova.int32(nova.uint32(lane) % nova.uint32(d))
            step = nova.int32(nova.uint32(32) % nova.uint32(d))
    k = lane
    while k < n:
        out[op + k] = out[base + r]
        r += step
        if r >= d:
            r -= d
        k += 32


SM_SHARED_BYTES = 228 * 1024
"""Shared memory of one SM on sm_90 (H100, H200), which the block shape is chosen for."""
BLOCK_SHARED_LIMIT = 227 * 1024  # the most one block may opt in to on sm_90
BLOCK_RESERVED = 1024  # shared memory the driver reserves per resident block (sm_80+)


def warps_per_block(page_size: int) -> int:
    """Warps (pages) per block of the decompression kernel: 4 for pages up to 4 KiB (4 KiB
    of shared memory per warp: the page), fewer for larger pages so a block stays <= 48 KiB."""
    return max(1, min(4, (48 * 1024) // page_size))


@functools.cache
def compress_warps_per_block(page_size: int, hash_bits: int | None = None,
                             sm_shared: int = SM_SHARED_BYTES) -> int:
    """Warps (pages) per block of the compression kernel: the fewest that make the most warps
    resident per SM, which shared memory bounds (page + hash table per warp, plus the 1 KiB the
    driver reserves per block). 4 KiB pages (8 KiB per warp): 7 warps per 57 KiB block, 4
    blocks = 28 warps per SM on sm_90, where 4-warp blocks (33 KiB) fit 6 = 24 warps."""
    per_warp = page_size + table_bytes(page_size, hash_bits)
    best_w, best = 1, 0
    for w in range(1, 33):
        block = w * per_warp
        if block > BLOCK_SHARED_LIMIT:
            break
        resident = min(sm_shared // (block + BLOCK_RESERVED), 32, 64 // w) * w
        if resident > best:
            best_w, best = w, resident
    return best_w


def compress_shared_bytes(page_size: int, warps: int, hash_bits: int | None = None) -> int:
    """Per warp its page, then its table (16-byte multiples both: see compress_pages_kernel)."""
    per_warp = page_size + table_bytes(page_size, hash_bits)
    return warps * (-(-per_warp // 16) * 16)


def decompress_shared_bytes(page_size: int, warps: int) -> int:
    return warps * page_size


@nova.kernel
def scan_sizes_kernel(sizes, offsets, n, run, ready):
    """offsets[i] = run[0] + stored bytes of pages 0..i-1, offsets[n] = run[0] + the total, and
    run[0] advances to offsets[n] (one block; each thread sums a contiguous run of pages,
    thread 0 scans the run totals). `run` carries the payload position from slot to slot, so
    successive slots' scans, in stream order, place their payloads back to back. Sets
    ready[0] = 1 when the offsets are valid (compact_kernel checks it: see there)."""
    t = nova.thread_id(0)
    nt = nova.block_dim(0)
    part = nova.shared_array(1024, nova.uint64)
    per = (n + nt - 1) // nt
    lo = min(t * per, n)
    hi = min(lo + per, n)
    acc = nova.uint64(0)
    for i in range(lo, hi):
        acc += nova.uint64(sizes[i] & nova.uint32(LEN_MASK))
    part[t] = acc
    nova.syncthreads()
    if t == 0:
        total = run[0]
        for j in range(nt):
            v = part[j]
            part[j] = total
            total += v
        offsets[n] = total
        run[0] = total
    nova.syncthreads()
    at = part[t]
    for i in range(lo, hi):
        offsets[i] = at
        at += nova.uint64(sizes[i] & nova.uint32(LEN_MASK))
    nova.syncthreads()
    if t == 0:
        ready[0] = nova.uint32(1)


@nova.func
def funnel(lo, hi, shift):
    """The 4 bytes at byte `shift / 8` (0..3) of the 8-byte pair lo, hi (little endian); the
    shift is split so that it stays below 32 when shift is 0."""
    return (lo >> shift) | ((hi << nova.uint32(1)) << (nova.uint32(31) - shift))


@nova.kernel
def compact_kernel(staged, sizes, offsets, payload, payload32, n_pages, page_size, ready):
    """Copy each page's stored bytes from its page-sized slot in `staged` (uint32 view; page
    starts are 4-byte aligned) to byte `offsets[i]` of the payload (one warp per page).
    `payload` and `payload32` are byte and word views of one 16-byte aligned buffer: the bytes
    before the first and after the last 16-byte boundary inside the page's range are stored one
    by one (a neighbouring page's warp owns the rest of those lines), the 16-byte chunks in
    between whole (one v4 store per lane, each word assembled from two aligned source words and
    a funnel shift): a warp step writes 512 aligned bytes. The payload is usually pinned host
    memory written over PCIe, where whole aligned lines travel as full write packets and a
    line split between two packets costs two. Does nothing unless ready[0] is set: the
    compaction may run on another stream than the scan (behind an event), and if the slot
    failed before its scan ran, its offsets are stale and must not be used to write anywhere."""
    lane = nova.int32(nova.lane_id())
    page = (nova.block_id(0) * nova.block_dim(0) + nova.thread_id(0)) // 32
    if page >= n_pages or ready[0] == nova.uint32(0):
        return
    size = nova.int32(sizes[page] & nova.uint32(LEN_MASK))
    src = page * (page_size // 4)  # word index of the page's slot
    dst = nova.int64(offsets[page])
    head = min(size, nova.int32((16 - (dst & 15)) & 15))
    chunks = (size - head) >> 4
    tail = size - head - 16 * chunks
    if lane < head:
        w = staged[src + (lane >> 2)]
        payload[dst + lane] = nova.uint8(w >> nova.uint32(8 * (lane & 3)))
    if lane < tail:
        b = head + 16 * chunks + lane
        w = staged[src + (b >> 2)]
        payload[dst + b] = nova.uint8(w >> nova.uint32(8 * (b & 3)))
    shift = nova.uint32(8 * (head & 3))
    first = ((dst + head) >> 4) * 4  # the first chunk's word: a multiple of 4 (v4 stores)
    last_src = nova.int32(page_size // 4) - 1
    j = lane
    while j < chunks:
        i = (head >> 2) + 4 * j  # the chunk's first source word, within the page
        w0 = staged[src + i]
        w1 = staged[src + i + 1]
        w2 = staged[src + i + 2]
        w3 = staged[src + i + 3]
        w4 = staged[src + min(i + 4, last_src)]
        at = first + 4 * nova.int64(j)
        payload32[at] = funnel(w0, w1, shift)
        payload32[at + 1] = funnel(w1, w2, shift)
        payload32[at + 2] = funnel(w2, w3, shift)
        payload32[at + 3] = funnel(w3, w4, shift)
        j += 32
