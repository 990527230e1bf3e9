"""The LZ4 kernels on real-data pages: bit-exact round trips, interop with liblz4 both ways,
LZ4's end-of-block rules, ratio against liblz4, other page sizes, bad blocks flagged per page.
cpu always; the same tests on cuda are marked gpu."""

from __future__ import annotations

import lz4.block
import numpy as np
import pytest
from lz4_helpers import check_end_rules, kernel_compress, kernel_decompress, pack

from nova.lz4 import kernels as K
from nova.lz4.corpus import CLASSES, build_corpus

PAGE = 4096


@pytest.mark.parametrize("cls", CLASSES)
def test_compress_roundtrip_and_liblz4_decodes(device, corpus, cls):
    pages = corpus[cls]
    dst, sizes = kernel_compress(pages, device)
    blocks, raw = [], []
    for i, page in enumerate(pages):
        size, is_raw = int(sizes[i] & K.LEN_MASK), bool(sizes[i] & K.RAW)
        block = dst[i * PAGE:i * PAGE + size].tobytes()
        if is_raw:
            assert size == PAGE and block == page.tobytes()
        else:
            assert size < PAGE
            assert lz4.block.decompress(block, uncompressed_size=PAGE) == page.tobytes()
            check_end_rules(block, PAGE)
        blocks.append(block)
        raw.append(is_raw)
    out, status = kernel_decompress(*pack(blocks, raw)[:2], pack(blocks, raw)[2], PAGE, device)
    assert not status.any()
    np.testing.assert_array_equal(out, pages)


@pytest.mark.parametrize("grid_cap", [1, 2, 7, 10**6])
def test_every_page_exactly_once_whatever_the_grid(device, corpus, grid_cap):
    """The page kernels' warps claim pages beyond the grid's first (claim_next): one block,
    fewer blocks than claim counters, more, and a grid of one page per warp (no claims) give
    the same blocks and pages."""
    pages = corpus["mixed"][:37]
    want_dst, want_sizes = kernel_compress(pages, device, grid_cap=10**6)
    dst, sizes = kernel_compress(pages, device, grid_cap=grid_cap)
    np.testing.assert_array_equal(sizes, want_sizes)
    np.testing.assert_array_equal(dst, want_dst)
    blocks = [dst[i * PAGE:i * PAGE + int(sizes[i] & K.LEN_MASK)].tobytes()
              for i in range(len(pages))]
    payload, offsets, packed = pack(blocks, [bool(z & K.RAW) for z in sizes])
    out, status = kernel_decompress(payload, offsets, packed, PAGE, device, grid_cap=grid_cap)
    assert not status.any()
    np.testing.assert_array_equal(out, pages)


def test_expected_raw_and_tiny_pages(device, corpus):
    _, sizes = kernel_compress(corpus["zeros"][:2], device)
    assert (sizes < 64).all()  # a zero page is one long match
    _, sizes = kernel_compress(corpus["random"][:2], device)
    assert (sizes == (PAGE | K.RAW)).all()


def test_ratio_within_3_percent_of_liblz4(device, corpus):
    pages = corpus["mixed"]
    _, sizes = kernel_compress(pages, device)
    nova_bytes = int((sizes & K.LEN_MASK).astype(np.int64).sum()) + 4 * len(pages)
    ref = sum(min(len(lz4.block.compress(p.tobytes(), store_size=False)), PAGE) + 4
              for p in pages)
    assert ref / nova_bytes >= 0.97, (ref, nova_bytes)


@pytest.mark.parametrize("hash_bits,in_batch,every_match", [
    (10, K.IN_BATCH_MATCH_ANY, True), (11, K.IN_BATCH_SHUFFLE, True),
    (10, K.IN_BATCH_SHUFFLE, True), (10, K.IN_BATCH_MATCH_ANY, False),
    (10, K.IN_BATCH_SHUFFLE, False)])
def test_kernel_options_roundtrip_and_ratio(device, corpus, hash_bits, in_batch, every_match):
    """The options bench/lz4.py times for A/B (hash table size, in-batch matches by shuffles,
    one match per batch) give valid blocks that liblz4 decodes, within 3% of liblz4's ratio."""
    pages = corpus["mixed"]
    dst, sizes = kernel_compress(pages, device, hash_bits, in_batch, every_match=every_match)
    for i, page in enumerate(pages):
        size = int(sizes[i] & K.LEN_MASK)
        block = dst[i * PAGE:i * PAGE + size].tobytes()
        if sizes[i] & K.RAW:
            assert block == page.tobytes()
        else:
            assert lz4.block.decompress(block, uncompressed_size=PAGE) == page.tobytes()
            check_end_rules(block, PAGE)
    nova_bytes = int((sizes & K.LEN_MASK).astype(np.int64).sum()) + 4 * len(pages)
    ref = sum(min(len(lz4.block.compress(p.tobytes(), store_size=False)), PAGE) + 4
              for p in pages)
    assert ref / nova_bytes >= 0.97, (ref, nova_bytes)


@pytest.mark.parametrize("mode", ["default", "high_compression"])
def test_decodes_liblz4_blocks(device, corpus, mode):
    pages = np.concatenate([corpus[c][:3] for c in CLASSES if c != "mixed"])
    blocks = [lz4.block.compress(p.tobytes(), mode=mode, store_size=False) for p in pages]
    out, status = kernel_decompress(*pack(blocks), PAGE, device)
    assert not status.any()
    np.testing.assert_array_equal(out, pages)


@pytest.mark.parametrize("page_size", [256, 1024, 16384, 65536])
def test_other_page_sizes(device, page_size):
    corpus = build_corpus(page_size, 2)
    pages = np.concatenate([corpus["text"], corpus["binary"], corpus["zeros"][:1],
                            corpus["random"][:1]])
    dst, sizes = kernel_compress(pages, device)
    blocks = []
    for i, page in enumerate(pages):
        size = int(sizes[i] & K.LEN_MASK)
        block = dst[i * page_size:i * page_size + size].tobytes()
        if not sizes[i] & K.RAW:
            assert lz4.block.decompress(block, uncompressed_size=page_size) == page.tobytes()
            check_end_rules(block, page_size)
        blocks.append(block)
    raw = [bool(s & K.RAW) for s in sizes]
    out, status = kernel_decompress(*pack(blocks, raw), page_size, device)
    assert not status.any()
    np.testing.assert_array_equal(out, pages)


def test_bad_blocks_only_fail_their_page(device, corpus):
    pages = corpus["text"][:4]
    blocks = [lz4.block.compress(p.tobytes(), store_size=False) for p in pages]
    bad = [
        blocks[0][:-1],                      # truncated: last literals run short
        b"\x00",                             # empty last sequence: decodes to 0 bytes
        b"\x1f\x41\x00\x00\xff\xff\xff",    # match offset 0 / truncated length
        b"\x10A\x05\x00" + b"\x50" + b"abcde",  # offset 5 > 1 byte produced so far
    ]
    payload, offsets, sizes = pack([*bad, blocks[1], blocks[2]])
    out, status = kernel_decompress(payload, offsets, sizes, PAGE, device)
    assert status.tolist() == [K.STATUS_CORRUPT] * 4 + [K.STATUS_OK] * 2
    np.testing.assert_array_equal(out[4:], pages[1:3])


def test_bad_size_table_entries(device, corpus):
    pages = corpus["text"][:2]
    blocks = [lz4.block.compress(p.tobytes(), store_size=False) for p in pages]
    payload, offsets, sizes = pack(blocks)
    sizes_bad = sizes.copy()
    sizes_bad[0] += 1  # disagrees with the offsets
    out, status = kernel_decompress(payload, offsets, sizes_bad, PAGE, device)
    assert status.tolist() == [K.STATUS_BAD_ENTRY, K.STATUS_OK]
    np.testing.assert_array_equal(out[1], pages[1])
    offsets_bad = offsets.copy()
    offsets_bad[2] += 10**9  # points past the payload
    sizes_far = sizes.copy()
    sizes_far[1] += 10**9 - 0  # consistent with the offsets, but outside the payload
    sizes_far[1] &= K.LEN_MASK
    _, status = kernel_decompress(payload, offsets_bad, sizes_far, PAGE, device)
    assert status[1] == K.STATUS_BAD_ENTRY
    raw_short = sizes.copy()
    raw_short[0] |= K.RAW  # raw flag on a block that is not page-sized
    _, status = kernel_decompress(payload, offsets, raw_short, PAGE, device)
    assert status.tolist() == [K.STATUS_CORRUPT, K.STATUS_OK]


def test_scan_and_compaction(device):
    """The device-side payload assembly: every alignment of every page's start and length
    (sizes 1..page, raw pages), against NumPy."""
    import nova
    from nova.lz4 import device as D

    rng = np.random.default_rng(3)
    page, n = 256, 300
    sizes = rng.integers(1, page, n).astype(np.uint32)
    sizes[:8] = [1, 2, 3, 4, 5, 6, 7, page]
    sizes[7] |= K.RAW
    sizes[rng.integers(0, n, 20)] = page | K.RAW
    staged = rng.integers(0, 256, n * page, dtype=np.uint8)
    stored = (sizes & K.LEN_MASK).astype(np.int64)
    want = np.concatenate([staged[i * page:i * page + stored[i]] for i in range(n)])
    dev = nova.get_device(device)
    stream = dev.create_stream()
    d_staged, d_sizes = nova.to_device(staged, dev), nova.to_device(sizes, dev)
    d_offsets = nova.to_device(np.zeros(n + 1, np.uint64), dev)
    d_payload = nova.to_device(np.zeros(n * page + 4, np.uint8), dev)
    D.launch_scan_compact(d_staged, d_sizes, d_offsets, d_payload, n, page, stream)
    stream.synchronize()
    offsets = d_offsets.numpy()
    assert offsets[0] == 0 and np.array_equal(np.diff(offsets.astype(np.int64)), stored)
    payload = d_payload.numpy()
    np.testing.assert_array_equal(payload[:len(want)], want)
    assert not payload[len(want):].any()  # nothing written past the end


def _seq_block(rng: np.random.Generator, page: int, lead: int, d: int, ml: int) -> bytes:
    """One literal run of `lead` random bytes, a match of offset d and length ml, random last
    literals up to the page: an LZ4 block written by hand (every length encoding path)."""
    def length(n: int) -> bytes:
        out = b""
        while n >= 255:
            out += b"\xff"
            n -= 255
        return out + bytes([n])

    tail = page - lead - ml
    lits, last = rng.bytes(lead), rng.bytes(tail)
    lit_c, ml_c = min(lead, 15), min(ml - 4, 15)
    block = bytes([lit_c << 4 | ml_c]) + (length(lead - 15) if lead >= 15 else b"") + lits
    block += d.to_bytes(2, "little") + (length(ml - 4 - 15) if ml - 4 >= 15 else b"")
    return block + bytes([min(tail, 15) << 4]) + (length(tail - 15) if tail >= 15 else b"") + last


def test_matches_of_every_shape(device):
    """Matches short and long (the word path: >= LONG_MATCH), overlapping with every small
    offset, at every alignment of the output, decode as liblz4 decodes them."""
    rng = np.random.default_rng(7)
    blocks, pages = [], []
    offsets = [*range(1, 40), 63, 64, 65, 127, 128, 131, 132, 133, 200, 300, 1000]
    shapes = [(lead, d, ml) for d in offsets
              for lead, ml in ((d + 3, 4), (d, 17), (d + 1, 33), (d + 2, 100), (d + 5, 255),
                               (d, 256), (d + 1, 257), (d + 2, 1000), (d + 3, 2600),
                               (max(d, 40), 4096 - max(d, 40) - 5))
              if lead + ml <= 4096 - 12]
    for lead, d, ml in shapes:
        block = _seq_block(rng, PAGE, lead, d, ml)
        blocks.append(block)
        pages.append(np.frombuffer(lz4.block.decompress(block, uncompressed_size=PAGE), np.uint8))
    out, status = kernel_decompress(*pack(blocks), PAGE, device)
    assert not status.any()
    np.testing.assert_array_equal(out, np.stack(pages))


@pytest.mark.parametrize("args", [(4096.0, 10, 0), (4096, 10, "0"), (4096, True, 0),
                                  (4096, 10, 0, 1)])
def test_compress_kernel_refuses_options_of_other_types(args):
    """The kernel's options are compile-time constants of exact types (an int that is a bool,
    or a float page size, would specialise a kernel nobody asked for), also once the kernel
    of the equal options is cached (functools.cache found it for 4096.0 or 1: a regression)."""
    K.compress_kernel(4096, 10, 0, True)
    with pytest.raises(TypeError, match="three ints and a bool"):
        K.compress_kernel(*args)
