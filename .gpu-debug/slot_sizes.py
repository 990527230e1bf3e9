"""Per-call compress GB/s for slot sizes, alternating instances (host-bound pipelines)."""
import statistics
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
comps = {(k, s): PageCompressor(4096, "cuda", pages_per_slot=k, slots=s) for k, s in
         ((8192, 6), (12288, 6), (16384, 6), (16384, 4), (8192, 8))}
res = {k: [] for k in comps}
for c in comps.values():
    for _ in range(3):
        c.compress_pages(pinned)
for rnd in range(8):
    for k, c in comps.items():
        t = time.perf_counter()
        c.compress_pages(pinned)
        res[k].append(pages.nbytes / (time.perf_counter() - t) / 1e9)
for k, v in res.items():
    print(f"pages/slot, slots {k}: median {statistics.median(v):.1f} GB/s, "
          f"min {min(v):.1f}, max {max(v):.1f}: {[round(x, 1) for x in v]}")
for c in comps.values():
    c.close()
