"""Batch LZ4 page compression: Nova's kernels vs nvCOMP's batched LZ4 vs liblz4 on all cores.

In one process, on the page corpus of nova.lz4.corpus (text, binary, heap, floats, zeros, random,
mixed), per class:

- liblz4 on every core (python-lz4 in one worker process per core, pages through shared
  memory: nova.lz4.cpu): compress / decompress GB/s of a host array (the copies in and out
  included), ratio;
- Nova kernels on device-resident pages: compress (compress kernel alone, and with the scan +
  compaction that make the payload contiguous), decompress; GB/s of uncompressed bytes, timed
  with device events; ratio and ratio / liblz4's;
- nvCOMP batched LZ4 (nvidia-nvcomp-cu13 6.x) through its C API (ctypes on libnvcomp.so.6 of
  nvidia-libnvcomp-cu13), on the same device pages, one chunk per page, default options; falls
  back to its Python API (nvidia.nvcomp, uncomp_chunk_size = the page) if the C API cannot be
  bound (probed in a child process first, so a wrong binding cannot crash the bench);
- end to end, pinned host -> host: nova.lz4.PageCompressor on a pinned HostBuffer of pages
  (H2D, kernels, D2H on three streams, slots), and the pinned H2D bandwidth it is measured
  against.

A/B in the same run: the compress kernel's options (--variants) and pages per block of the
decompressor (--decompress-warps); end to end, one compute stream, 3 slots (6 by default on
cuda) and slots of half the pages. --timeline adds, end to end, the GPU time of every
stage of every compress slot (timing events: H2D, kernel, scan, compaction, D2H), so a run shows
where the pipeline's time goes.

Every timed output is verified (reported as MISMATCH, the run as FAILED, the exit code is 1 and
no result file is written): Nova's blocks are
decoded by liblz4 and by Nova's decompressor, nvCOMP's blocks by liblz4 and by nvCOMP, and every
decompressor's pages are compared with the input. The kernels' occupancy (registers, shared
memory, resident warps per SM) comes from the CUDA occupancy API.

    python bench/lz4.py [--device cuda|cpu] [--pages N] [--page-size 4096] [--repeats 5]
                        [--classes mixed,text,...] [--no-nvcomp] [--slots N] [--timeline]
                        [--json PATH]

--device cpu runs Nova's kernels on the CPU device with small defaults (a smoke test; no nvCOMP).
"""

from __future__ import annotations

import sys
from pathlib import Path

# run as a script, this file's directory comes first on sys.path and `import lz4` (python-lz4,
# inside nova.lz4) would import this file: drop the directory before importing anything else
# (hence the imports below the assignment)
# ruff: noqa: E402
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import argparse
import ctypes
import glob
import importlib.util
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

import nova
from nova.lz4 import PageCompressor, cpu
from nova.lz4 import device as D
from nova.lz4 import kernels as K
from nova.lz4.batch import CompressedBatch
from nova.lz4.compressor import SLOT_BYTES
from nova.lz4.corpus import CLASSES, build_corpus

FAILURES: list[str] = []
DEC_WARPS: list[int] = []  # --decompress-warps
Variant = tuple[str, int | None, int | None, int | None, bool]
"""(name, hash_bits, in_batch, warps per block, every_match); None = the default."""


def parse_variants(text: str) -> list[Variant]:
    """'h10,shfl,h10+shfl' -> compress kernel variants to time beside the default: hN = a
    hash table of 2^N entries, shfl = in-batch matches by shuffles (K.IN_BATCH_SHUFFLE),
    many = by match_any (K.IN_BATCH_MATCH_ANY), wN = N warps (pages) per block, one = one
    match per batch of 32 positions (the kernel before every_match)."""
    out: list[Variant] = []
    for name in (v.strip() for v in text.split(",")):
        if not name:
            continue
        bits: int | None = None
        in_batch: int | None = None
        warps: int | None = None
        every_match = True
        for part in name.split("+"):
            if part.startswith("h") and part[1:].isdigit():
                bits = int(part[1:])
            elif part.startswith("w") and part[1:].isdigit() and 1 <= int(part[1:]) <= 32:
                warps = int(part[1:])
            elif part == "shfl":
                in_batch = K.IN_BATCH_SHUFFLE
            elif part == "many":
                in_batch = K.IN_BATCH_MATCH_ANY
            elif part == "one":
                every_match = False
            else:
                raise SystemExit(f"bench/lz4.py: unknown variant part {part!r} in {name!r}")
        out.append((name, bits, in_batch, warps, every_match))
    return out


def check(ok: bool, what: str) -> bool:
    if not ok:
        FAILURES.append(what)
        print(f"  MISMATCH: {what}", flush=True)
    return ok


class Timer:
    """Times device work: events on cuda, wall clock around a synchronize elsewhere."""

    def __init__(self, dev: nova.Device, stream: nova.Stream) -> None:
        self.dev, self.stream = dev, stream

    BATCH_SECONDS = 2e-3
    """On cuda, calls of fn are queued back to back until a timed batch lasts about this long:
    a short kernel (zero pages decode in ~100 us) timed one call at a time also times the
    host's issue of the call between the start event and the kernel, which varied run to run
    from ~0 to more than the kernel itself (zero-page decompression measured 601 to 1479 GB/s
    on one card). Every peer is timed the same way."""

    def __call__(self, fn: Callable[[], Any], repeats: int) -> float:
        """Median seconds of one fn() (after one warm-up run)."""
        fn()
        self.stream.synchronize()
        times = []
        calls = 1
        if self.dev.kind == "cuda":
            first = self._batch(fn, 1)
            calls = max(1, min(64, math.ceil(self.BATCH_SECONDS / max(first, 1e-7))))
        for _ in range(repeats):
            if self.dev.kind == "cuda":
                times.append(self._batch(fn, calls) / calls)
            else:
                t0 = time.perf_counter()
                fn()
                self.stream.synchronize()
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def _batch(self, fn: Callable[[], Any], calls: int) -> float:
        """Seconds between events around `calls` back-to-back calls of fn."""
        a, b = self.dev.create_event(timing=True), self.dev.create_event(timing=True)
        a.record(self.stream)
        for _ in range(calls):
            fn()
        b.record(self.stream)
        b.synchronize()
        seconds = a.elapsed_ms(b) / 1e3
        a.close()
        b.close()
        return seconds


def wall(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall seconds of fn() after a warm-up, and the last result."""
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# --- nvCOMP ------------------------------------------------------------------------------------
def find_libnvcomp() -> str:
    """libnvcomp.so of the installed wheels: nvidia-libnvcomp-cu13 ships it as
    nvidia/libnvcomp/lib64/libnvcomp.so.<major> (nvidia-nvcomp-cu13, the Python API, depends on
    that wheel and loads it from there); NVCOMP_LIBRARY overrides."""
    if os.environ.get("NVCOMP_LIBRARY"):
        return os.environ["NVCOMP_LIBRARY"]
    roots: list[str] = []
    for name in ("nvidia.libnvcomp", "nvidia.nvcomp", "nvidia"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        roots += list(spec.submodule_search_locations or []) if spec else []
    libs = {os.path.realpath(p) for r in roots
            for p in glob.glob(os.path.join(r, "**", "libnvcomp.so*"), recursive=True)}
    if not libs:
        raise RuntimeError("libnvcomp.so not found (pip install nvidia-nvcomp-cu13, which "
                           "brings nvidia-libnvcomp-cu13)")
    return sorted(libs, key=lambda p: (len(p), p))[0]


class NvcompC:
    """nvCOMP's batched LZ4 through its C API (ctypes), nvCOMP 6.x (nvcomp/lz4.h of
    nvidia-libnvcomp-cu13 6.0): options structs passed by value (64 bytes: compress
    {data_type, bitshuffle_mode, reserved[56]}, decompress {backend, sort_before_hw_decompress,
    data_type, bitshuffle_mode, reserved[48]}), temp-size queries that take the total
    uncompressed bytes and a stream, device statuses."""

    class CompressOpts(ctypes.Structure):
        _fields_ = [("data_type", ctypes.c_int), ("bitshuffle_mode", ctypes.c_int),
                    ("reserved", ctypes.c_char * 56)]

    class DecompressOpts(ctypes.Structure):
        _fields_ = [("backend", ctypes.c_int), ("sort_before_hw_decompress", ctypes.c_int),
                    ("data_type", ctypes.c_int), ("bitshuffle_mode", ctypes.c_int),
                    ("reserved", ctypes.c_char * 48)]

    class Alignments(ctypes.Structure):
        _fields_ = [("input", ctypes.c_size_t), ("output", ctypes.c_size_t),
                    ("temp", ctypes.c_size_t)]

    class Properties(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("cudart_version", ctypes.c_uint32)]

    def __init__(self) -> None:
        self.path = find_libnvcomp()
        lib = self.lib = ctypes.CDLL(self.path)
        props = self.Properties()
        self._check(lib.nvcompGetProperties(ctypes.byref(props)), "nvcompGetProperties")
        self.version = (f"{props.version // 1000}.{props.version % 1000 // 100}."
                        f"{props.version % 100}")
        if props.version // 1000 != 6:
            raise RuntimeError(f"nvCOMP {self.version}: this binding is for the 6.x C API")
        sz, vp, st = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
        copts, dopts = self.CompressOpts, self.DecompressOpts
        pz = ctypes.POINTER(ctypes.c_size_t)
        sigs: dict[str, list[Any]] = {
            "nvcompBatchedLZ4CompressGetTempSize": [sz, sz, copts, pz, sz, vp],
            "nvcompBatchedLZ4CompressGetMaxOutputChunkSize": [sz, copts, pz],
            "nvcompBatchedLZ4CompressGetRequiredAlignments": [copts,
                                                              ctypes.POINTER(self.Alignments)],
            "nvcompBatchedLZ4CompressAsync": [vp, vp, sz, sz, vp, sz, vp, vp, copts, vp, vp],
            "nvcompBatchedLZ4DecompressGetTempSize": [sz, sz, dopts, pz, sz, vp],
            "nvcompBatchedLZ4DecompressAsync": [vp, vp, vp, vp, sz, vp, sz, vp, dopts, vp, vp],
        }
        for name, argtypes in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, st
        self.copts = copts()  # zeroed: NVCOMP_TYPE_CHAR, no bitshuffle (the default options)
        self.dopts = dopts()  # zeroed: NVCOMP_DECOMPRESS_BACKEND_DEFAULT
        align = self.Alignments()
        self._check(lib.nvcompBatchedLZ4CompressGetRequiredAlignments(
            self.copts, ctypes.byref(align)), "required alignments")
        self.out_align = max(16, int(align.output))

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"nvCOMP {what} returned status {status}")

    def prepare(self, dev: nova.Device, n: int, page: int) -> dict[str, Any]:
        sz = ctypes.c_size_t
        temp_c, temp_d, max_out = sz(), sz(), sz()
        lib = self.lib
        self._check(lib.nvcompBatchedLZ4CompressGetTempSize(
            n, page, self.copts, ctypes.byref(temp_c), n * page, None), "compress temp size")
        self._check(lib.nvcompBatchedLZ4DecompressGetTempSize(
            n, page, self.dopts, ctypes.byref(temp_d), n * page, None), "decompress temp size")
        self._check(lib.nvcompBatchedLZ4CompressGetMaxOutputChunkSize(
            page, self.copts, ctypes.byref(max_out)), "max output size")
        stride = -(-max_out.value // self.out_align) * self.out_align
        return {"temp_c": dev.allocate(max(temp_c.value, 1)),
                "temp_d": dev.allocate(max(temp_d.value, 1)),
                "max_out": max_out.value, "out_stride": stride, "temp_c_bytes": temp_c.value,
                "temp_d_bytes": temp_d.value}

    def compress(self, in_ptrs: nova.Buffer, in_sizes: nova.Buffer, page: int, n: int,
                 temp: nova.Buffer, out_ptrs: nova.Buffer, out_sizes: nova.Buffer,
                 statuses: nova.Buffer, stream: nova.Stream) -> None:
        self._check(self.lib.nvcompBatchedLZ4CompressAsync(
            in_ptrs.ptr, in_sizes.ptr, page, n, temp.ptr, temp.nbytes, out_ptrs.ptr,
            out_sizes.ptr, self.copts, statuses.ptr, stream.handle), "compress")

    def decompress(self, in_ptrs: nova.Buffer, in_sizes: nova.Buffer, out_caps: nova.Buffer,
                   out_actual: nova.Buffer, n: int, temp: nova.Buffer, out_ptrs: nova.Buffer,
                   statuses: nova.Buffer, stream: nova.Stream) -> None:
        self._check(self.lib.nvcompBatchedLZ4DecompressAsync(
            in_ptrs.ptr, in_sizes.ptr, out_caps.ptr, out_actual.ptr, n, temp.ptr, temp.nbytes,
            out_ptrs.ptr, self.dopts, statuses.ptr, stream.handle), "decompress")


def bench_nvcomp_c(nv: NvcompC, dev: nova.Device, stream: nova.Stream, timer: Timer,
                   d_pages: nova.Buffer, pages: np.ndarray, repeats: int) -> dict[str, Any]:
    n, page = pages.shape
    prep = nv.prepare(dev, n, page)
    max_out, stride = prep["max_out"], prep["out_stride"]
    d_out = dev.allocate(n * stride)
    d_back = dev.allocate(n * page)
    ptrs = lambda base, stride: nova.to_device(  # noqa: E731
        (np.uint64(base) + np.arange(n, dtype=np.uint64) * np.uint64(stride)), dev)
    in_ptrs, out_ptrs, back_ptrs = ptrs(d_pages.ptr, page), ptrs(d_out.ptr, stride), \
        ptrs(d_back.ptr, page)
    in_sizes = nova.to_device(np.full(n, page, np.uint64), dev)
    out_sizes = nova.to_device(np.zeros(n, np.uint64), dev)
    caps = nova.to_device(np.full(n, page, np.uint64), dev)
    actual = nova.to_device(np.zeros(n, np.uint64), dev)
    statuses = nova.to_device(np.full(n, -1, np.int32), dev)
    t_c = timer(lambda: nv.compress(in_ptrs, in_sizes, page, n, prep["temp_c"], out_ptrs,
                                    out_sizes, statuses, stream), repeats)
    stream.synchronize()
    st = statuses.numpy()
    check(not st.any(), f"nvCOMP compress statuses: {np.unique(st).tolist()}")
    sizes = out_sizes.numpy().astype(np.int64)
    check(bool((sizes > 0).all() and (sizes <= max_out).all()), "nvCOMP compressed sizes")
    dev.memset(statuses, 0xFF, stream=stream)  # -1: a status nvCOMP does not write shows
    t_d = timer(lambda: nv.decompress(out_ptrs, out_sizes, caps, actual, n, prep["temp_d"],
                                      back_ptrs, statuses, stream), repeats)
    stream.synchronize()
    st = statuses.numpy()
    check(not st.any(), f"nvCOMP decompress statuses: {np.unique(st).tolist()}")
    check(bool((actual.numpy() == page).all()), "nvCOMP decompressed sizes != page size")
    back = d_back.numpy().reshape(n, page)
    check(np.array_equal(back, pages), "nvCOMP decompress(nvCOMP compress(pages)) != pages")
    blob = d_out.numpy()
    sample = np.linspace(0, n - 1, min(n, 256)).astype(np.int64)
    ok = all(cpu.decompress_block(blob[i * stride:i * stride + sizes[i]].tobytes(), page) ==
             pages[i].tobytes() for i in sample)
    check(ok, "liblz4 does not decode nvCOMP's blocks to the pages")
    stored = np.minimum(sizes, page) + 4  # as Nova counts: a page that grows is kept raw
    for buf in (d_out, d_back, prep["temp_c"], prep["temp_d"]):
        buf.free()
    return {"compress_gbps": pages.nbytes / t_c / 1e9, "decompress_gbps": pages.nbytes / t_d / 1e9,
            "ratio": pages.nbytes / stored.sum(), "api": f"C {nv.version}",
            "temp_bytes_per_chunk": prep["temp_c_bytes"] / n, "max_out_chunk": max_out}


def bench_nvcomp_py(stream: nova.Stream, timer: Timer, d_pages: nova.Buffer, pages: np.ndarray,
                    repeats: int) -> dict[str, Any]:
    """nvCOMP's Python API (only if the C API cannot be bound): one Array of n pages in chunks
    of one page (uncomp_chunk_size), its native bitstream (a small header per buffer), on our
    stream, timed with events like the rest."""
    from nvidia import nvcomp  # type: ignore[import-not-found]

    n, page = pages.shape
    codec = nvcomp.Codec(algorithm="LZ4", uncomp_chunk_size=page, cuda_stream=stream.handle)
    arr = nvcomp.as_array(d_pages, stream.handle)
    holder: dict[str, Any] = {}

    def enc() -> None:
        holder["enc"] = codec.encode(arr)

    def dec() -> None:
        holder["dec"] = codec.decode(holder["enc"])

    t_c = timer(enc, repeats)
    t_d = timer(dec, repeats)
    stream.synchronize()
    back = np.asarray(holder["dec"].cpu()).reshape(-1).view(np.uint8)[:pages.nbytes]
    check(back.size == pages.nbytes and np.array_equal(back.reshape(n, page), pages),
          "nvCOMP (Python API) round trip")
    return {"compress_gbps": pages.nbytes / t_c / 1e9, "decompress_gbps": pages.nbytes / t_d / 1e9,
            "ratio": pages.nbytes / holder["enc"].buffer_size,
            "api": "Python (native bitstream; events on the bench stream)"}


# --- Nova --------------------------------------------------------------------------------------
def check_staged(staged: nova.Buffer, sizes: nova.Buffer, pages: np.ndarray, what: str
                 ) -> float:
    """Blocks at page stride (a compress kernel's output) decode to the pages (liblz4, on a
    sample of 512 pages); returns the ratio over all pages."""
    n, page = pages.shape
    h_sizes = sizes.numpy()
    blob = staged.numpy()
    stored = (h_sizes & np.uint32(0x7FFFFFFF)).astype(np.int64)
    sample = np.linspace(0, n - 1, min(n, 512)).astype(np.int64)
    ok = all((blob[i * page:i * page + stored[i]].tobytes() if h_sizes[i] >> 31 else
              cpu.decompress_block(blob[i * page:i * page + stored[i]].tobytes(), page))
             == pages[i].tobytes() for i in sample)
    check(ok, f"liblz4 does not decode the {what} kernel's blocks to the pages")
    return float(pages.nbytes / (stored.sum() + 4 * n))


def bench_nova_kernels(dev: nova.Device, stream: nova.Stream, timer: Timer,
                       d_pages: nova.Buffer, pages: np.ndarray, repeats: int,
                       variants: list[Variant]) -> dict[str, Any]:
    n, page = pages.shape
    staged = dev.allocate(n * page)
    sizes = dev.allocate(4 * n).view(np.uint32, (n,))
    offsets = dev.allocate(8 * (n + 1)).view(np.uint64, (n + 1,))
    payload = dev.allocate(n * page)
    src32 = D.view(d_pages, np.uint32, n * page // 4)
    staged8 = D.view(staged, np.uint8, n * page)

    def comp() -> None:
        D.launch_compress(src32, staged8, sizes, n, page, stream)

    def comp_all() -> None:
        comp()
        D.launch_scan_compact(staged8, sizes, offsets, D.view(payload, np.uint8, n * page), n,
                              page, stream)

    out: dict[str, Any] = {}
    for name, bits, in_batch, warps, every_match in variants:  # A/B: the kernel's options
        def comp_variant(bits: int | None = bits, in_batch: int | None = in_batch,
                         warps: int | None = warps, every_match: bool = every_match) -> None:
            D.launch_compress(src32, staged8, sizes, n, page, stream, hash_bits=bits,
                              in_batch=in_batch, warps=warps, every_match=every_match)

        out[f"{name}_compress_kernel_gbps"] = (pages.nbytes / timer(comp_variant, repeats)
                                               / 1e9)
        stream.synchronize()
        out[f"{name}_ratio"] = check_staged(staged, sizes, pages, f"variant {name}")
    t_kernel = timer(comp, repeats)
    t_all = timer(comp_all, repeats)
    stream.synchronize()
    h_sizes = sizes.numpy()
    total = int(offsets.numpy()[-1])
    batch = CompressedBatch.from_sizes(page, h_sizes, payload.numpy()[:total])
    lib_pages, lib_status = cpu.decompress_pages_status(batch)
    check(not lib_status.any() and np.array_equal(lib_pages, pages),
          "liblz4 does not decode Nova's blocks to the pages")
    d_back = dev.allocate(n * page)
    status = dev.allocate(4 * n).view(np.int32, (n,))
    d_payload = D.view(payload, np.uint8, max(total, 1))
    dev.memset(d_back, 0, n * page, stream=stream)  # the check below sees the current kernel's
    t_dec = timer(lambda: D.launch_decompress(d_payload, offsets, sizes,
                                              D.view(d_back, np.uint32, n * page // 4), status,
                                              n, page, stream), repeats)
    stream.synchronize()
    check(not status.numpy().any() and np.array_equal(d_back.numpy().reshape(n, page), pages),
          "Nova decompress(Nova compress(pages)) != pages")
    for warps in DEC_WARPS:  # A/B: pages per block of the decompressor
        dev.memset(d_back, 0, n * page, stream=stream)
        t_w = timer(lambda warps=warps: D.launch_decompress(
            d_payload, offsets, sizes, D.view(d_back, np.uint32, n * page // 4), status, n,
            page, stream, warps=warps), repeats)
        stream.synchronize()
        check(not status.numpy().any() and np.array_equal(d_back.numpy().reshape(n, page),
                                                          pages),
              f"Nova decompress (w{warps}) != pages")
        out[f"w{warps}_decompress_gbps"] = pages.nbytes / t_w / 1e9
    # Nova decodes liblz4's blocks too (decoder correctness on another encoder's output)
    ref = cpu.compress_pages(pages, page)
    r_payload = nova.to_device(ref.payload if len(ref.payload) else np.zeros(1, np.uint8), dev)
    r_off, r_sizes = nova.to_device(ref.offsets, dev), nova.to_device(ref.sizes, dev)
    D.launch_decompress(r_payload, r_off, r_sizes, D.view(d_back, np.uint32, n * page // 4),
                        status, n, page, stream)
    stream.synchronize()
    check(not status.numpy().any() and np.array_equal(d_back.numpy().reshape(n, page), pages),
          "Nova does not decode liblz4's blocks to the pages")
    for buf in (staged, payload, d_back):
        buf.free()
    return {**out, "compress_kernel_gbps": pages.nbytes / t_kernel / 1e9,
            "compress_gbps": pages.nbytes / t_all / 1e9,
            "decompress_gbps": pages.nbytes / t_dec / 1e9, "ratio": batch.ratio,
            "liblz4_ratio": ref.ratio}


def print_timeline(name: str, tl: dict[str, Any]) -> None:
    """Where one compress call's time went (GPU timing events; ms)."""
    span = tl["span_ms"]
    print(f"  timeline ({name.strip()}): {len(tl['slots'])} slots, GPU span {span:.2f} ms "
          f"(wall {tl['wall_ms']:.2f} ms), slot latency H2D start -> last copy-out "
          f"{tl.get('slot_latency_median_ms', float('nan')):.3f} ms (median)")
    for stage in ("h2d", "kernel", "scan", "compact", "d2h"):
        if f"{stage}_total_ms" in tl:
            total = tl[f"{stage}_total_ms"]
            rate = tl.get(f"{stage}_gbps")
            print(f"    {stage:8s} median {tl[f'{stage}_median_ms']:7.3f} ms/slot, total "
                  f"{total:8.2f} ms = {100 * total / span:5.1f}% of the span"
                  + (f", {rate:.1f} GB/s while running" if rate else ""))
    print(f"    H2D stream idle between slots: {tl['h2d_idle_ms']:.2f} ms "
          f"({100 * tl['h2d_idle_ms'] / span:.1f}% of the span)")
    if "host_submit_total_ms" in tl:
        print(f"    host: submits {tl['host_submit_total_ms']:.2f} ms (median "
              f"{tl['host_submit_median_ms']:.3f}, waits for a free slot included), stage calls "
              f"{tl.get('host_stage_total_ms', 0.0):.2f} ms (median "
              f"{tl.get('host_stage_median_ms', 0.0):.3f}) of {tl['wall_ms']:.2f} ms wall")
    for r in tl["slots"][:8]:
        print("    slot " + str(r["item"]) + ": " + ", ".join(
            f"{st} {r[f'{st}_start_ms']:.3f}+{r[f'{st}_ms']:.3f}"
            for st in ("h2d", "kernel", "scan", "compact", "d2h") if f"{st}_ms" in r))


def bench_liblz4(pages: np.ndarray, repeats: int) -> dict[str, Any]:
    page = pages.shape[1]
    t_c, batch = wall(lambda: cpu.compress_pages(pages, page), repeats)
    t_d, (out, status) = wall(lambda: cpu.decompress_pages_status(batch), repeats)
    check(not status.any() and np.array_equal(out, pages), "liblz4 round trip")
    return {"compress_gbps": pages.nbytes / t_c / 1e9, "decompress_gbps": pages.nbytes / t_d / 1e9,
            "ratio": batch.ratio, "workers": os.cpu_count(),
            "how": "python-lz4 in worker processes, shared memory, ranges of pages per task"}


def bench_end_to_end(dev: nova.Device, pages: np.ndarray, repeats: int, slots: int | None,
                     per_slot: int | None, timeline: bool = False) -> dict[str, Any]:
    n, page = pages.shape
    host = dev.allocate_pinned(pages.nbytes)
    pinned = host.numpy(np.uint8, (n, page))
    pinned[:] = pages
    d = dev.allocate(pages.nbytes)
    stream = dev.create_stream()

    def h2d() -> None:
        dev.copy_htod(d, pinned, stream=stream)
        stream.synchronize()

    t_h2d, _ = wall(h2d, repeats)
    out: dict[str, Any] = {"h2d_gbps": pages.nbytes / t_h2d / 1e9}
    # the default (a stream per slot on cuda, 6 slots of 64 MiB on cuda), then the A/B
    # configurations: one compute stream, 3 slots, slots of half the pages
    half = max(1, (per_slot or SLOT_BYTES // page) // 2)
    for key, slot_streams, n_slots, n_per in (("", None, slots, per_slot),
                                              ("one_stream_", False, slots, per_slot),
                                              ("slots3_", None, 3, per_slot),
                                              ("half_", None, slots, half)):
        with PageCompressor(page, dev.kind, slots=n_slots, pages_per_slot=n_per,
                            slot_streams=slot_streams) as comp:
            t_c, batch = wall(lambda comp=comp: comp.compress_pages(pinned), repeats)
            t_d, back = wall(lambda comp=comp, batch=batch: comp.decompress_pages(batch),
                             repeats)
            check(np.array_equal(back, pages), f"PageCompressor round trip ({key or 'default'})")
            check(not comp.fallbacks, f"PageCompressor fell back: {comp.fallbacks}")
            if not key:  # liblz4 reads the pipeline's batch too
                lib_pages, lib_status = cpu.decompress_pages_status(batch)
                check(not lib_status.any() and np.array_equal(lib_pages, pages),
                      "liblz4 does not decode the PageCompressor's batch to the pages")
            out[f"{key}compress_gbps"] = pages.nbytes / t_c / 1e9
            out[f"{key}decompress_gbps"] = pages.nbytes / t_d / 1e9
            if not key:
                out["pages_per_slot"], out["slots"] = comp.pages_per_slot, comp.slots
    if timeline:  # where the time goes: timing events around every stage of every slot
        with PageCompressor(page, dev.kind, slots=slots, pages_per_slot=per_slot) as comp:
            comp.compress_pages(pinned)  # warm-up (kernels loaded, scratch allocated)
            comp.timeline = True
            t0 = time.perf_counter()
            comp.compress_pages(pinned)
            wall_ms = (time.perf_counter() - t0) * 1e3
            report = comp.timeline_report()
            report["wall_ms"] = wall_ms
            out["timeline"] = report
    out["compress_vs_h2d"] = out["compress_gbps"] / out["h2d_gbps"]
    host.free()
    d.free()
    return out


def occupancy(dev: nova.Device, page: int, variants: list[Variant]) -> dict[str, Any]:
    """Registers, shared memory and resident warps per SM of both kernels (CUDA occupancy API
    on the kernels' cubins)."""
    import re

    from cuda.bindings import driver as cu

    def call(result: Any) -> Any:
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"CUDA error {err}")
        return rest[0] if len(rest) == 1 else rest

    cw, dw = K.compress_warps_per_block(page), K.warps_per_block(page)
    out: dict[str, Any] = {}
    cudev = call(cu.cuDeviceGet(dev.index))
    call(cu.cuCtxSetCurrent(call(cu.cuDevicePrimaryCtxRetain(cudev))))  # Nova's context too
    csig = (nova.uint32[:], nova.uint8[:], nova.uint32[:], int, int, nova.uint32[:])
    cases = [
        ("compress", K.compress_kernel(page, K.hash_log(page), K.IN_BATCH), csig, cw,
         K.compress_shared_bytes(page, cw)),
        ("decompress", K.decompress_pages_kernel,
         (nova.uint8[:], nova.uint64[:], nova.uint32[:], nova.uint32[:], nova.int32[:], int, int,
          nova.uint32[:]), dw, K.decompress_shared_bytes(page, dw)),
    ]
    for bits in sorted({b for _, b, *_ in variants if b is not None}):
        w = K.compress_warps_per_block(page, bits)
        cases.append((f"compress_h{bits}", K.compress_kernel(page, bits, K.IN_BATCH), csig, w,
                      K.compress_shared_bytes(page, w, bits)))
    sms = call(cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cudev))
    for name, kern, sig, warps, smem in cases:
        images = kern.compile(*sig, device=dev)
        entry = re.search(r"\.entry\s+(\w+)", images.ptx or "").group(1)
        module = call(cu.cuModuleLoadData(images.cubin or images.ptx.encode() + b"\0"))
        fn = call(cu.cuModuleGetFunction(module, entry.encode()))
        regs = call(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
                                          fn))
        call(cu.cuFuncSetAttribute(
            fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))
        blocks = call(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, 32 * warps, smem))
        out[name] = {"registers": regs, "shared_bytes_per_block": smem, "warps_per_block": warps,
                     "blocks_per_sm": blocks, "warps_per_sm": blocks * warps, "sms": sms}
    return out


def probe_nvcomp(page: int) -> int:
    """Child-process check of the C binding on a few pages (exit code 0 = usable)."""
    dev = nova.get_device("cuda")
    stream = dev.create_stream()
    pages = build_corpus(page, 16)["mixed"]
    d_pages = nova.to_device(pages, dev)
    result = bench_nvcomp_c(NvcompC(), dev, stream, Timer(dev, stream), d_pages, pages, 1)
    print(f"nvCOMP C API ok: {result}")
    return 1 if FAILURES else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--pages", type=int, default=None,
                        help="pages per class (default 32768 on cuda: 128 MiB; 64 on cpu)")
    parser.add_argument("--page-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--classes", default=",".join(CLASSES))
    parser.add_argument("--slots", type=int, default=None,
                        help="pipeline slots (default: PageCompressor's, 6 on cuda)")
    parser.add_argument("--timeline", action="store_true",
                        help="end to end: per-stage GPU times of every compress slot "
                             "(timing events), printed and in the JSON")
    parser.add_argument("--pages-per-slot", type=int, default=None)
    parser.add_argument("--no-nvcomp", action="store_true")
    parser.add_argument("--variants", default="w1,w2",
                        help="compress kernel variants timed beside the default for A/B "
                             "(comma-separated; hN: 2^N hash entries, shfl: in-batch matches "
                             "by shuffles, many: by match_any, one: one match per batch; '' "
                             "for none)")
    parser.add_argument("--decompress-warps", default="1,2",
                        help="pages per block of the decompression kernel to time beside the "
                             "default (comma-separated; '' for none)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--probe-nvcomp", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe_nvcomp:
        return probe_nvcomp(args.page_size)
    DEC_WARPS[:] = [int(w) for w in args.decompress_warps.split(",") if w.strip()]
    variants = parse_variants(args.variants)

    dev = nova.get_device(args.device)
    gpu = dev.kind == "cuda"
    per_class = args.pages or (32768 if gpu else 64)
    repeats = args.repeats or (5 if gpu else 1)
    page = args.page_size
    classes = [c for c in args.classes.split(",") if c]
    stream = dev.create_stream()
    timer = Timer(dev, stream)
    print(f"nova.lz4 bench: {dev.name} ({dev.kind}), {page}-byte pages, {per_class} pages per "
          f"class ({per_class * 6} mixed), {repeats} repeats", flush=True)
    t0 = time.perf_counter()
    corpus = build_corpus(page, per_class)
    print(f"corpus built in {time.perf_counter() - t0:.1f}s", flush=True)

    nv: NvcompC | None = None
    nv_note = "skipped (--no-nvcomp)" if args.no_nvcomp else "skipped (not on cuda)"
    if gpu and not args.no_nvcomp:
        # a wrong C signature would crash this process: try the binding in a child first
        import subprocess

        probe = subprocess.run([sys.executable, __file__, "--probe-nvcomp", "--page-size",
                                str(page)], capture_output=True, text=True, timeout=600)
        if probe.returncode == 0:
            nv = NvcompC()
            nv_note = f"C API {nv.version} ({nv.path})"
        else:
            why = (probe.stdout + probe.stderr).strip().splitlines()[-1:] or [
                f"exit code {probe.returncode}"]
            nv_note = f"C API unusable ({why[0]}); using the Python API"
    print(f"nvCOMP: {nv_note}", flush=True)

    results: dict[str, Any] = {}
    if gpu:
        try:
            results["occupancy"] = occupancy(dev, page, variants)
        except Exception as exc:
            results["occupancy"] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"occupancy: {results['occupancy']}", flush=True)
    rows = []
    for cls in classes:
        pages = corpus[cls]
        print(f"[{cls}] {len(pages)} pages", flush=True)
        row: dict[str, Any] = {"class": cls, "pages": len(pages)}
        d_pages = nova.to_device(pages, dev)
        row["liblz4"] = bench_liblz4(pages, repeats)
        try:
            row["nova"] = bench_nova_kernels(dev, stream, timer, d_pages, pages, repeats,
                                             variants)
        except Exception as exc:  # e.g. sizes no batch can hold: Nova's output is wrong
            check(False, f"[{cls}] Nova kernels: {type(exc).__name__}: {exc}")
        if gpu and not args.no_nvcomp:
            try:
                row["nvcomp"] = (
                    bench_nvcomp_c(nv, dev, stream, timer, d_pages, pages, repeats)
                    if nv is not None else bench_nvcomp_py(stream, timer, d_pages, pages, repeats))
            except Exception as exc:
                row["nvcomp"] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"  nvCOMP failed: {row['nvcomp']['error']}", flush=True)
        if (cls == "mixed" or len(classes) == 1) and "nova" in row:
            try:
                row["end_to_end"] = bench_end_to_end(dev, pages, repeats, args.slots,
                                                     args.pages_per_slot, args.timeline)
            except Exception as exc:
                check(False, f"[{cls}] PageCompressor: {type(exc).__name__}: {exc}")
        d_pages.free()
        rows.append(row)
        print(f"  {json.dumps(row)}", flush=True)

    print()
    head = (f"{'class':8s} {'ratio':>6s} {'/lib':>6s} {'nv/lib':>6s} | {'Nova c':>8s} "
            f"{'(kern)':>8s} {'nvCOMP c':>9s} {'c x':>5s} {'kern x':>6s} | "
            f"{'Nova d':>8s} {'nvCOMP d':>9s} {'d x':>5s} | {'lib c':>7s} {'lib d':>7s}   "
            "(GB/s of uncompressed bytes; c x = Nova c / nvCOMP c, kern x = Nova's kernel "
            "alone / nvCOMP c)")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "nova" not in r:
            print(f"{r['class']:8s} FAILED (see MISMATCH above)")
            continue
        nv_r = r.get("nvcomp", {})
        nvc, nvd = nv_r.get("compress_gbps"), nv_r.get("decompress_gbps")
        nova_r, lib = r["nova"], r["liblz4"]
        fmt = lambda v, w=8: f"{v:{w}.2f}" if isinstance(v, float) else f"{'-':>{w}s}"  # noqa
        print(f"{r['class']:8s} {nova_r['ratio']:6.3f} {nova_r['ratio'] / lib['ratio']:6.3f} "
              f"{fmt(nv_r['ratio'] / lib['ratio'] if 'ratio' in nv_r else None, 6)} | "
              f"{fmt(nova_r['compress_gbps'])} {fmt(nova_r['compress_kernel_gbps'])} "
              f"{fmt(nvc, 9)} {fmt(nova_r['compress_gbps'] / nvc if nvc else None, 5)} "
              f"{fmt(nova_r['compress_kernel_gbps'] / nvc if nvc else None, 6)} | "
              f"{fmt(nova_r['decompress_gbps'])} {fmt(nvd, 9)} "
              f"{fmt(nova_r['decompress_gbps'] / nvd if nvd else None, 5)} | "
              f"{fmt(lib['compress_gbps'], 7)} {fmt(lib['decompress_gbps'], 7)}")
    if variants:
        print(f"\nA/B, compress kernel alone (default: 2^{K.hash_log(page)} hash entries, "
              f"in-batch matches by {'match_any' if K.IN_BATCH == 0 else 'shuffles'}):")
    for name, *_ in variants:
        for r in rows:
            if "nova" not in r:
                continue
            nova_r, lib = r["nova"], r["liblz4"]
            g, ratio = nova_r.get(f"{name}_compress_kernel_gbps"), nova_r.get(f"{name}_ratio")
            if g is None or ratio is None:
                continue
            print(f"  {name:10s} {r['class']:8s} {g:8.2f} GB/s "
                  f"({g / nova_r['compress_kernel_gbps']:.2f}x the default), ratio /lib "
                  f"{ratio / lib['ratio']:.3f} (default {nova_r['ratio'] / lib['ratio']:.3f})")
    print("\nA/B, decompress kernel (pages per block):")
    for r in rows:
        nova_r = r.get("nova", {})
        for key in sorted(k for k in nova_r
                          if k.startswith("w") and k.endswith("_decompress_gbps")):
            g = nova_r[key]
            print(f"  {r['class']:8s} {key.split('_')[0]:4s} {g:8.2f} GB/s "
                  f"({g / nova_r['decompress_gbps']:.2f}x the default)")
    for r in rows:
        if "end_to_end" in r:
            e = r["end_to_end"]
            print(f"\nend to end ({r['class']}, pinned host -> host, {e['slots']} slots of "
                  f"{e['pages_per_slot']} pages): compress {e['compress_gbps']:.2f} GB/s "
                  f"(A/B: every slot on one compute stream {e['one_stream_compress_gbps']:.2f}, "
                  f"3 slots {e['slots3_compress_gbps']:.2f}, slots of half the pages "
                  f"{e['half_compress_gbps']:.2f}), "
                  f"decompress {e['decompress_gbps']:.2f} GB/s ("
                  f"3 slots {e['slots3_decompress_gbps']:.2f}, "
                  f"half slots "
                  f"{e['half_decompress_gbps']:.2f}); "
                  f"pinned H2D {e['h2d_gbps']:.2f} GB/s; compress = "
                  f"{100 * e['compress_vs_h2d']:.0f}% of H2D")
            tl = e.get("timeline")
            if tl:
                print_timeline("default", tl)
    print(f"\nverification: {f'FAILED: {FAILURES}' if FAILURES else 'all outputs verified'}")
    if FAILURES:
        return 1  # no result file for wrong results
    report = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "device": dev.name,
              "kind": dev.kind, "host": platform.node(), "command": " ".join(sys.argv),
              "page_size": page, "pages_per_class": per_class, "repeats": repeats,
              "nvcomp": nv_note, "results": rows, "occupancy": results.get("occupancy"),
              "failures": FAILURES}
    path = args.json or Path(__file__).parent / "results" / f"lz4-{dev.kind}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=float))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
