"""Where the compute thread's stage call spends its time (wall, per wrapped call)."""
import collections
import os
import sys
if os.environ.get("SWITCH"):
    sys.setswitchinterval(float(os.environ["SWITCH"]))
import statistics
import threading
import time

import numpy as np

import nova
import nova.runtime.cuda.stream as S
import nova.runtime.device as RD
from nova.lz4 import PageCompressor
from nova.lz4 import compressor as C
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

acc = collections.defaultdict(list)
on = {"v": False}


def timed(owner, name, label=None):
    orig = getattr(owner, name)
    label = label or f"{getattr(owner, '__name__', owner)}.{name}"

    def w(*a, **k):
        if not on["v"] or not threading.current_thread().name.endswith("-compute"):
            return orig(*a, **k)
        t = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            acc[label].append(time.perf_counter() - t)
    setattr(owner, name, w)


for n in ("launch_compress", "launch_scan_compact", "view", "_work_counter"):
    timed(D, n)
timed(D.SlotScratch, "grow")
timed(D.SlotScratch, "grow_pinned")
timed(RD.Device, "copy_dtoh")
timed(S.CudaStream, "wait")
timed(S.CudaEvent, "record")
timed(C.PageCompressor, "_compress_stage")
timed(C.PageCompressor, "_stage_copy_engine")
timed(C.PageCompressor, "_copy_thread")
orig_wait = threading.Event.wait
pages = build_corpus(4096, 32768)["mixed"]
dev = nova.get_device("cuda")
host = dev.allocate_pinned(pages.nbytes)
pinned = host.numpy(np.uint8, pages.shape)
pinned[:] = pages
print("threads before:", [t.name for t in threading.enumerate()])
with PageCompressor(4096, "cuda") as comp:
    comp.compress_pages(pinned)
    comp.compress_pages(pinned)
    print("threads:", [t.name for t in threading.enumerate()])
    on["v"] = True
    t = time.perf_counter()
    for _ in range(3):
        comp.compress_pages(pinned)
    dt = (time.perf_counter() - t) / 3
    on["v"] = False
print(f"compress_pages: {dt * 1e3:.2f} ms = {pages.nbytes / dt / 1e9:.2f} GB/s")
for k, v in sorted(acc.items(), key=lambda kv: -sum(kv[1])):
    print(f"{k:45s} n={len(v):5d} total {sum(v) * 1e3 / 3:8.2f} ms/run  median {statistics.median(v) * 1e6:8.1f} us  max {max(v) * 1e6:8.1f} us")
