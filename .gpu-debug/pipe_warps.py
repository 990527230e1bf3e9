"""Pipeline compress GB/s with the compress kernel's pages per block forced (argv[1]; 0 = default)
and pages per slot (argv[2])."""
import statistics
import sys
import time
import numpy as np
import nova
from nova.lz4 import PageCompressor
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

warps = int(sys.argv[1]); per_slot = int(sys.argv[2])
if warps:
    orig = D.launch_compress
    def patched(*a, **k):
        k.setdefault("warps", warps)
        if k.get("warps") is None:
            k["warps"] = warps
        return orig(*a, **k)
    D.launch_compress = patched
    import nova.lz4.compressor as C
    C.D.launch_compress = patched
pages = build_corpus(4096, 32768)["mixed"]
dev = nova.get_device("cuda")
host = dev.allocate_pinned(pages.nbytes)
pinned = host.numpy(np.uint8, pages.shape)
pinned[:] = pages
with PageCompressor(4096, "cuda", pages_per_slot=per_slot) as comp:
    for _ in range(3):
        comp.compress_pages(pinned)
    v = []
    for _ in range(10):
        t = time.perf_counter()
        comp.compress_pages(pinned)
        v.append(pages.nbytes / (time.perf_counter() - t) / 1e9)
    comp.timeline = True
    comp.compress_pages(pinned)
    r = comp.timeline_report()
print(f"warps {warps or 'default'} per_slot {per_slot}: median {statistics.median(v):.1f} GB/s "
      f"min {min(v):.1f} max {max(v):.1f}; timeline kernel median {r['kernel_median_ms']:.3f} ms, "
      f"kernel busy {r['kernel_total_ms']:.1f} of span {r['span_ms']:.1f} ms, h2d idle {r['h2d_idle_ms']:.1f}")
