"""Fuzzed blocks fed to the decompression kernel, compiled with bounds checks on every array
access (a read or write out of bounds would stop the launch with a KernelFault): it never
faults, its per-page status and output are those of a plain-Python model of its rules
(lz4_helpers.reference_decode), a page it accepts decodes exactly as liblz4 decodes it, every
block liblz4's safe decoder rejects is flagged on its page only, and the only blocks liblz4
accepts that Nova rejects have a match offset of 0 (invalid in the LZ4 format). cpu; the cuda
copy is marked gpu (there, an out-of-bounds access would be an illegal-address fault)."""

from __future__ import annotations

import lz4.block
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lz4_helpers import kernel_decompress, pack, reference_decode

from nova import config
from nova.lz4 import kernels as K
from nova.lz4.corpus import build_corpus

PAGE = 1024  # small pages: more sequences per byte of fuzz input, faster on the CPU device
_PAGES = build_corpus(PAGE, 4)
_SEEDS = [lz4.block.compress(p.tobytes(), store_size=False)
          for c in ("text", "binary", "heap", "floats", "zeros") for p in _PAGES[c][:2]]


def _liblz4(block: bytes) -> bytes | None:
    try:
        out = lz4.block.decompress(block, uncompressed_size=PAGE)
    except (lz4.block.LZ4BlockError, ValueError):
        return None
    return out if len(out) == PAGE else None


@st.composite
def blocks(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["mutate", "truncate", "splice", "random"]))
    if kind == "random":
        return draw(st.binary(min_size=1, max_size=64))
    seed = bytearray(draw(st.sampled_from(_SEEDS)))
    if kind == "truncate":
        return bytes(seed[:draw(st.integers(1, len(seed)))])
    if kind == "splice":
        at = draw(st.integers(0, len(seed)))
        return bytes(seed[:at] + draw(st.binary(min_size=1, max_size=16)) + seed[at:])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(seed) - 1))
        seed[at] = draw(st.integers(0, 255))
    return bytes(seed)


def _check(batch: list[bytes], device: str) -> None:
    payload, offsets, sizes = pack(batch)
    with config.scoped(check_bounds=True):
        out, status = kernel_decompress(payload, offsets, sizes, PAGE, device)
    for i, block in enumerate(batch):
        model, why = reference_decode(block, PAGE)
        lib = _liblz4(block)
        if model is None:
            assert status[i] == K.STATUS_CORRUPT, f"page {i}: Nova accepts, model: {why}"
            assert lib is None or why == "offset 0", f"page {i}: liblz4 decodes, Nova: {why}"
        else:
            assert status[i] == K.STATUS_OK, f"page {i}: Nova rejects a block the model decodes"
            assert out[i].tobytes() == model == lib


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blocks(), min_size=1, max_size=8))
def test_fuzzed_blocks_cpu(batch):
    _check(batch, "cpu")


@pytest.mark.gpu
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blocks(), min_size=1, max_size=32))
def test_fuzzed_blocks_cuda(batch):
    from lz4_helpers import CUDA_REASON, CUDA_USABLE

    if not CUDA_USABLE:
        pytest.skip(CUDA_REASON)
    _check(batch, "cuda")


def test_seed_blocks_decode():
    _check(_SEEDS, "cpu")
