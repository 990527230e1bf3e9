"""PageCompressor: round trips through the slot pipeline (cpu device always, cuda marked gpu),
input forms, futures and streaming, the liblz4 backend, corrupt batches, argument errors, and
the CPU fallback when a slot faults (10 000 pages)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lz4_helpers import CUDA_REASON, CUDA_USABLE

import nova
from nova.lz4 import (
    CompressedBatch,
    CorruptDataError,
    Lz4ArgumentError,
    PageCompressor,
)
from nova.lz4 import cpu as cpu_codec
from nova.lz4.compressor import TAPER_MIN_PAGES, FallbackWarning, chunk_bounds

PAGE = 4096


@given(st.integers(0, 200_000), st.integers(64, 20_000))
def test_chunk_bounds_cover_every_page_once(n, k):
    """Chunks are contiguous, cover 0..n exactly, hold at most k pages; GPU-sized slots taper
    at the end (each of the last chunks at most half of what was left), small ones never."""
    bounds = chunk_bounds(n, k)
    assert [lo for lo, _ in bounds] == ([0] if n else []) + [hi for _, hi in bounds[:-1]]
    assert (bounds[-1][1] if bounds else 0) == n
    assert all(0 < hi - lo <= k for lo, hi in bounds)
    if k < TAPER_MIN_PAGES:
        assert all(hi - lo == k for lo, hi in bounds[:-1])
    elif n >= 4 * k:
        assert bounds[-1][1] - bounds[-1][0] <= k // 2


def _stamped(pages: np.ndarray, n: int) -> np.ndarray:
    """n pages cycling through `pages`, each with its index in its first 8 bytes (so a lost,
    duplicated or reordered page shows)."""
    out = pages[np.arange(n) % len(pages)].copy()
    out[:, :8] = np.arange(n, dtype=np.uint64)[:, None].view(np.uint8)
    return out


@pytest.mark.parametrize("slot_streams", [None, True, False],
                         ids=["default", "slot-streams", "one-stream"])
def test_roundtrip_through_slots(device, corpus, slot_streams):
    pages = corpus["mixed"]
    with PageCompressor(PAGE, device, slots=2, pages_per_slot=7,
                        slot_streams=slot_streams) as comp:
        assert comp.slot_streams == (slot_streams if slot_streams is not None
                                     else device == "cuda")
        batch = comp.compress_pages(pages)
        assert batch.n_pages == len(pages)
        ref = cpu_codec.compress_pages(pages, PAGE)
        assert batch.compressed_bytes <= ref.compressed_bytes / 0.97
        np.testing.assert_array_equal(comp.decompress_pages(batch), pages)
        # liblz4 reads Nova's batch, Nova reads liblz4's
        np.testing.assert_array_equal(cpu_codec.decompress_pages_status(batch)[0], pages)
        np.testing.assert_array_equal(comp.decompress_pages(ref), pages)
        assert comp.fallbacks == []


def test_timeline(device, corpus):
    """timeline=True reports every slot's stage times and the host's (bench/lz4.py
    --timeline)."""
    pages = corpus["mixed"][:20]
    with PageCompressor(PAGE, device, slots=2, pages_per_slot=7, timeline=True) as comp:
        batch = comp.compress_pages(pages)
        report = comp.timeline_report()
        np.testing.assert_array_equal(comp.decompress_pages(batch), pages)
    assert [r["item"] for r in report["slots"]] == [0, 1, 2]
    for name in ("h2d", "kernel", "scan", "d2h"):
        assert report[f"{name}_total_ms"] >= 0, name
    assert report["host_stage_total_ms"] > 0 and report["host_submit_total_ms"] > 0
    assert report["span_ms"] >= report["h2d_total_ms"] >= 0
    assert comp.timeline_report() == {}


def test_input_forms(device, corpus):
    pages = corpus["text"][:3]
    raw = pages.tobytes()
    with PageCompressor(PAGE, device, pages_per_slot=2) as comp:
        want = comp.compress_pages(pages)
        for form in (raw, bytearray(raw), memoryview(raw), list(pages), pages.view(np.uint32),
                     pages.reshape(-1)):
            got = comp.compress_pages(form)
            np.testing.assert_array_equal(got.payload, want.payload)
        buf = nova.to_device(pages, device)  # a device array: no host staging
        got = comp.compress_pages(buf)
        np.testing.assert_array_equal(got.sizes, want.sizes)
        np.testing.assert_array_equal(got.payload, want.payload)
        assert comp.compress_pages(b"").n_pages == 0


def test_futures_and_streaming(device, corpus):
    chunks = [corpus[c][:3] for c in ("text", "zeros", "random", "heap")]
    with PageCompressor(PAGE, device, pages_per_slot=2) as comp:
        futures = [comp.submit_compress(c) for c in chunks]
        batches = [f.result() for f in futures]
        for batch, chunk in zip(comp.iter_decompress(batches), chunks, strict=True):
            np.testing.assert_array_equal(batch, chunk)
        streamed = list(comp.iter_compress(iter(chunks), ahead=1))
        for a, b in zip(streamed, batches, strict=True):
            np.testing.assert_array_equal(a.payload, b.payload)
        np.testing.assert_array_equal(comp.submit_decompress(batches[0]).result(), chunks[0])


def test_corrupt_batch_flags_pages(device, corpus):
    pages = corpus["text"][:4]
    with PageCompressor(PAGE, device) as comp:
        batch = comp.compress_pages(pages)
        payload = batch.payload.copy()
        start = int(batch.offsets[2])
        payload[start] = 0xF0  # page 2: a 15+ literal run that overruns its block
        payload[start + 1] = 0xFF
        bad = CompressedBatch(PAGE, batch.sizes, batch.offsets, payload)
        result = comp.decompress_pages_status(bad)
        assert result.bad_pages.tolist() == [2]
        np.testing.assert_array_equal(result.pages[[0, 1, 3]], pages[[0, 1, 3]])
        with pytest.raises(CorruptDataError, match=r"1 of 4 pages .*\(pages 2\)"):
            comp.decompress_pages(bad)


def test_liblz4_backend(corpus):
    pages = corpus["mixed"]
    with PageCompressor(PAGE, "liblz4") as comp:
        batch = comp.compress_pages(pages)
        np.testing.assert_array_equal(comp.decompress_pages(batch), pages)


def test_argument_errors(corpus):
    with pytest.raises(Lz4ArgumentError, match="device must be one of"):
        PageCompressor(PAGE, "tpu")
    with pytest.raises(Lz4ArgumentError, match="slots"):
        PageCompressor(PAGE, "cpu", slots=0)
    with pytest.raises(Lz4ArgumentError, match="pages_per_slot"):
        PageCompressor(PAGE, "cpu", pages_per_slot=0)
    with PageCompressor(1024, "liblz4") as comp:
        with pytest.raises(Lz4ArgumentError, match="4096-byte pages"):
            comp.decompress_pages(cpu_codec.compress_pages(corpus["text"][:1], PAGE))
        with pytest.raises(Lz4ArgumentError, match="CompressedBatch"):
            comp.decompress_pages(b"not a batch")  # type: ignore[arg-type]
        with pytest.raises(Lz4ArgumentError, match="multiple of the page size"):
            comp.compress_pages(b"x" * 1000)


@pytest.mark.skipif(CUDA_USABLE, reason="this machine has a usable GPU")
def test_no_gpu_falls_back_to_liblz4_with_a_warning(corpus):
    with pytest.warns(FallbackWarning, match="no usable GPU"):
        comp = PageCompressor(PAGE)
    assert comp.backend == "liblz4"
    np.testing.assert_array_equal(comp.decompress_pages(comp.compress_pages(corpus["text"])),
                                  corpus["text"])


def _fault_run(device: str, n: int, fault_slot: int, per_slot: int, pages: np.ndarray
               ) -> tuple[CompressedBatch, list[str], PageCompressor]:
    comp = PageCompressor(PAGE, device, slots=3, pages_per_slot=per_slot,
                          inject_fault=fault_slot)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batch = comp.compress_pages(pages)
    return batch, [str(w.message) for w in caught if w.category is FallbackWarning], comp


def test_fault_in_a_slot_of_10000_pages_cpu(corpus):
    """No device copy of a failed slot, or of a later one, may land in the result the
    fallback fills on the CPU."""
    pages = _stamped(np.concatenate([corpus[c] for c in ("text", "binary", "heap", "zeros")]),
                     10_000)
    batch, messages, comp = _fault_run("cpu", 10_000, 2, 64, pages)
    assert len(messages) == 1 and "slot 2 (pages 128..191) failed on cpu" in messages[0]
    assert "injected fault" in messages[0] and "9872 pages" in messages[0]
    assert batch.n_pages == 10_000
    out, status = cpu_codec.decompress_pages_status(batch)  # liblz4 decodes every page
    assert not status.any()
    np.testing.assert_array_equal(out, pages)
    # the device is tried again on the next call (and the fault hook fires again: slot 2)
    comp.inject_fault = None
    again = comp.compress_pages(pages[:200])
    assert len(comp.fallbacks) == 1
    np.testing.assert_array_equal(comp.decompress_pages(again), pages[:200])
    comp.close()


def test_decompress_launch_failure_falls_back(device, corpus):
    pages = _stamped(np.concatenate([corpus[c] for c in ("text", "heap", "zeros")]), 100)
    with PageCompressor(PAGE, device, slots=2, pages_per_slot=16, inject_fault=2) as comp:
        batch = cpu_codec.compress_pages(pages, PAGE)
        with pytest.warns(FallbackWarning, match=r"decompress slot 2 \(pages 32\.\.47\) failed"
                          r".*injected launch failure.*68 pages"):
            out = comp.decompress_pages(batch)
        np.testing.assert_array_equal(out, pages)


_GPU_FAULT_SCRIPT = textwrap.dedent("""
    import re, sys, warnings
    import numpy as np
    sys.path.insert(0, {tests!r})
    from nova.lz4 import PageCompressor
    from nova.lz4 import cpu as cpu_codec
    from nova.lz4.corpus import build_corpus
    from test_compressor import _stamped, _fault_run
    c = build_corpus(4096, 8)
    pages = _stamped(np.concatenate([c[k] for k in ("text", "binary", "heap", "zeros")]),
                     10_000)
    batch, messages, comp = _fault_run("cuda", 10_000, 3, 1024, pages)
    # the assert loses the context, so slots still in flight (their copy-out work) fail with
    # it and are redone too: the first failed slot is 1, 2 or 3 (slot 0 completed before slot
    # 3 could take its place in the 3-slot ring)
    assert len(messages) == 1 and re.search(r"compress slot [123] \\(pages \\d+\\.\\.\\d+\\) "
                                            r"failed on cuda", messages[0]), messages
    out, status = cpu_codec.decompress_pages_status(batch)
    assert batch.n_pages == 10_000 and not status.any()
    np.testing.assert_array_equal(out, pages)
    print("FAULT-OK", messages[0])
""")


@pytest.mark.gpu
def test_fault_in_a_slot_of_10000_pages_cuda():
    """In a subprocess: the injected device-side assert loses the CUDA context, which must not
    take the other gpu tests of this process with it."""
    if not CUDA_USABLE:
        pytest.skip(CUDA_REASON)
    script = _GPU_FAULT_SCRIPT.format(tests=str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "FAULT-OK" in proc.stdout, proc.stdout + proc.stderr


def test_device_unusable_at_call_time_falls_back(monkeypatch, corpus):
    """A device that fails before any slot runs (e.g. a lost context): the whole call on the
    CPU, one warning naming slot 0."""
    pages = corpus["text"]
    comp = PageCompressor(PAGE, "cpu", pages_per_slot=3)

    def broken(kind: str):
        raise nova.NovaError("cuda:0: the context was lost earlier (CUDA_ERROR_ASSERT)")

    monkeypatch.setattr(comp, "_pipeline", broken)
    with pytest.warns(FallbackWarning, match=r"compress slot 0 \(pages 0\.\.2\).*context was lost"):
        batch = comp.compress_pages(pages)
    with pytest.warns(FallbackWarning, match="decompress slot 0"):
        np.testing.assert_array_equal(comp.decompress_pages(batch), pages)
    assert len(comp.fallbacks) == 2
