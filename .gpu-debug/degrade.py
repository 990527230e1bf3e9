"""Why do successive PageCompressors in one process get slower?"""
import os
import sys
import threading
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
mode = sys.argv[1] if len(sys.argv) > 1 else "new"
comp0 = PageCompressor(4096, "cuda") if mode == "same" else None
for inst in range(5):
    comp = comp0 or PageCompressor(4096, "cuda")
    t_cpu = os.times()
    times = []
    for _ in range(6):
        t = time.perf_counter()
        batch = comp.compress_pages(pinned)
        times.append(time.perf_counter() - t)
        back = comp.decompress_pages(batch)
    c = os.times()
    if comp0 is None:
        comp.close()
    gb = [f"{pages.nbytes / x / 1e9:.1f}" for x in times]
    print(f"instance {inst}: compress GB/s per call {gb}; threads {threading.active_count()}; "
          f"cpu user {c.user - t_cpu.user:.2f} sys {c.system - t_cpu.system:.2f} s; "
          f"pinned {dev.pinned_pool.stats()}; pool in use {dev.pool.stats()}", flush=True)
    del batch, back
