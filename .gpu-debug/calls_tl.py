"""Per-call timeline summaries of one PageCompressor (which calls are slow, and where)."""
import time
import numpy as np
import nova
from nova.lz4 import PageCompressor
from nova.lz4.corpus import build_corpus

pages = build_corpus(4096, 32768)["mixed"]
dev = nova.get_device("cuda")
host = dev.allocate_pinned(pages.nbytes)
pinned = host.numpy(np.uint8, pages.shape)
pinned[:] = pages
with PageCompressor(4096, "cuda") as comp:
    for _ in range(2):
        comp.compress_pages(pinned)
    comp.timeline = True
    for i in range(12):
        t = time.perf_counter()
        batch = comp.compress_pages(pinned)
        wall = time.perf_counter() - t
        r = comp.timeline_report()
        print(f"call {i}: {pages.nbytes / wall / 1e9:5.1f} GB/s wall {wall * 1e3:6.2f} ms span {r['span_ms']:6.2f} "
              f"h2d {r['h2d_gbps']:5.1f} GB/s busy {r['h2d_total_ms']:5.2f} idle {r['h2d_idle_ms']:5.2f} "
              f"kernel med {r['kernel_median_ms']:.3f} d2h {r['d2h_gbps']:5.1f} lat {r['slot_latency_median_ms']:.2f} "
              f"host submit {r['host_submit_total_ms']:5.2f} stage {r['host_stage_total_ms']:5.2f} (med {r['host_stage_median_ms']:.3f})",
              flush=True)
        del batch
