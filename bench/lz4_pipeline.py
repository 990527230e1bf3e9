"""End-to-end LZ4 page compression (pinned host -> host) across pipeline configurations, beside
the PCIe bandwidths that bound it.

The goal of nova.lz4's pipeline is end-to-end compression >= 80% of the pinned H2D bandwidth.
Compression sends every page up (H2D) and ~1/ratio of it back down (a copy-engine D2H of
each slot's payload), so the bound is the copy-in rate while the copy-out runs at the same
time. This script measures, in one process on one card:

- pinned H2D alone, pinned D2H alone, and both at once on two streams (the duplex rates);
- `PageCompressor.compress_pages` on the mixed corpus for each combination of `--slots`,
  `--pages-per-slot`, every result decoded back and compared (a mismatch, a fallback to
  liblz4 or a wrong PCIe copy fails the run: FAILED, exit 1, no JSON written).

    python bench/lz4_pipeline.py [--device cuda|cpu] [--pages N] [--slots 6,12]
                                 [--pages-per-slot 4096,8192] [--repeats 5] [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

# ruff: noqa: E402  (as bench/lz4.py: keep `import lz4` from importing a file of this directory)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

import nova
from nova.lz4 import PageCompressor
from nova.lz4.corpus import build_corpus

FAILURES: list[str] = []


def wall(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall seconds of fn() after a warm-up, and the last result."""
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def pcie(dev: nova.Device, nbytes: int, repeats: int) -> dict[str, float]:
    """GB/s of pinned H2D alone, D2H alone, and each while the other runs on a second stream."""
    up_host, down_host = dev.allocate_pinned(nbytes), dev.allocate_pinned(nbytes)
    up_dev, down_dev = dev.allocate(nbytes), dev.allocate(nbytes)
    src = up_host.numpy(np.uint8, (nbytes,))
    src[:] = np.arange(nbytes, dtype=np.uint64).astype(np.uint8)
    s_up, s_down = dev.create_stream(), dev.create_stream()
    dev.copy_htod(down_dev, src, stream=s_down)
    dst = down_host.numpy(np.uint8, (nbytes,))

    def up() -> None:
        dev.copy_htod(up_dev, src, stream=s_up)
        s_up.synchronize()

    def down() -> None:
        dev.copy_dtoh(dst, down_dev, stream=s_down)
        s_down.synchronize()

    def both() -> tuple[float, float]:
        e0 = s_up.record(dev.create_event(timing=True))
        s_down.wait(e0)
        dev.copy_htod(up_dev, src, stream=s_up)
        e_up = s_up.record(dev.create_event(timing=True))
        dev.copy_dtoh(dst, down_dev, stream=s_down)
        e_down = s_down.record(dev.create_event(timing=True))
        e_up.synchronize()
        e_down.synchronize()
        return e0.elapsed_ms(e_up), e0.elapsed_ms(e_down)

    t_up, _ = wall(up, repeats)
    t_down, _ = wall(down, repeats)
    both()
    duplex = [both() for _ in range(repeats)]
    out = {"h2d_gbps": nbytes / t_up / 1e9, "d2h_gbps": nbytes / t_down / 1e9,
           "h2d_while_d2h_gbps": nbytes / (statistics.median(d[0] for d in duplex) / 1e3) / 1e9,
           "d2h_while_h2d_gbps": nbytes / (statistics.median(d[1] for d in duplex) / 1e3) / 1e9}
    if not np.array_equal(dst, src):
        FAILURES.append("D2H copy does not match the H2D source")
    for b in (up_host, down_host, up_dev, down_dev):
        b.free()
    return out


def timeline(dev: nova.Device, pinned: np.ndarray, slots: int, per_slot: int
             ) -> dict[str, Any]:
    """One compress call with timing events; prints where its time went."""
    with PageCompressor(4096, dev.kind, slots=slots, pages_per_slot=per_slot) as comp:
        comp.compress_pages(pinned)
        comp.timeline = True
        t0 = time.perf_counter()
        comp.compress_pages(pinned)
        wall_ms = (time.perf_counter() - t0) * 1e3
        tl = comp.timeline_report()
    busy = ", ".join(f"{st} {100 * tl[f'{st}_total_ms'] / tl['span_ms']:.0f}%"
                     for st in ("h2d", "kernel", "scan", "d2h") if f"{st}_total_ms" in tl)
    print(f"      timeline: wall {wall_ms:.2f} ms, GPU span {tl['span_ms']:.2f} ms; busy: {busy}; "
          f"H2D idle {tl['h2d_idle_ms']:.2f} ms; slot latency "
          f"{tl.get('slot_latency_median_ms', 0.0):.3f} ms; host submits "
          f"{tl.get('host_submit_total_ms', 0.0):.2f} ms, stage calls "
          f"{tl.get('host_stage_total_ms', 0.0):.2f} ms "
          f"(median {tl.get('host_stage_median_ms', 0.0):.3f})", flush=True)
    tl["wall_ms"] = wall_ms
    return {k: v for k, v in tl.items() if k != "slots"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--pages", type=int, default=None,
                        help="pages per corpus class (mixed = 6x; default 32768 on cuda)")
    parser.add_argument("--slots", default="6,12")
    parser.add_argument("--pages-per-slot", default="4096,8192")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--timeline", action="store_true",
                        help="per configuration, one more compress call with timing events "
                             "(PageCompressor(timeline=True)): stage and host totals")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    dev = nova.get_device(args.device)
    gpu = dev.kind == "cuda"
    per_class = args.pages or (32768 if gpu else 64)
    repeats = args.repeats or (5 if gpu else 1)
    pages = build_corpus(4096, per_class)["mixed"]
    host = dev.allocate_pinned(pages.nbytes)
    pinned = host.numpy(np.uint8, pages.shape)
    pinned[:] = pages
    link = pcie(dev, pages.nbytes, repeats)
    print(f"{dev.name}: {len(pages)} mixed pages ({pages.nbytes >> 20} MiB); pinned H2D "
          f"{link['h2d_gbps']:.1f} GB/s, D2H {link['d2h_gbps']:.1f}; at once: H2D "
          f"{link['h2d_while_d2h_gbps']:.1f} + D2H {link['d2h_while_h2d_gbps']:.1f} GB/s",
          flush=True)
    rows = []
    print(f"{'slots':>5s} {'pages/slot':>10s} | {'compress GB/s':>13s} {'% of H2D':>8s} | "
          f"{'decompress GB/s':>15s}")
    for slots in [int(s) for s in args.slots.split(",")]:
        for per_slot in [int(s) for s in args.pages_per_slot.split(",")]:
            with PageCompressor(4096, dev.kind, slots=slots, pages_per_slot=per_slot) as comp:
                try:
                    t_c, batch = wall(lambda comp=comp: comp.compress_pages(pinned), repeats)
                    t_d, back = wall(lambda comp=comp, b=batch: comp.decompress_pages(b),
                                     repeats)
                except Exception as exc:  # e.g. sizes no batch can hold: the output is wrong
                    FAILURES.append(f"slots={slots} per_slot={per_slot}: "
                                    f"{type(exc).__name__}: {exc}")
                    print(f"{slots:5d} {per_slot:10d} | FAILED: {FAILURES[-1]}", flush=True)
                    continue
                if not np.array_equal(back, pages) or comp.fallbacks:
                    FAILURES.append(f"round trip slots={slots} per_slot={per_slot}")
            row = {"slots": slots, "pages_per_slot": per_slot,
                   "compress_gbps": pages.nbytes / t_c / 1e9,
                   "decompress_gbps": pages.nbytes / t_d / 1e9}
            row["compress_vs_h2d"] = row["compress_gbps"] / link["h2d_gbps"]
            rows.append(row)
            print(f"{slots:5d} {per_slot:10d} | {row['compress_gbps']:13.2f} "
                  f"{100 * row['compress_vs_h2d']:7.0f}% | {row['decompress_gbps']:15.2f}",
                  flush=True)
            if args.timeline:
                row["timeline"] = timeline(dev, pinned, slots, per_slot)
    host.free()
    print(f"verification: {f'FAILED: {FAILURES}' if FAILURES else 'all outputs verified'}")
    if FAILURES:
        return 1  # no result file for wrong results
    report = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "device": dev.name,
              "command": " ".join(sys.argv), "pcie": link, "rows": rows, "failures": FAILURES}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
