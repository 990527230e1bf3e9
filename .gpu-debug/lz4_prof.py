"""Profile the PageCompressor's compute-thread stage calls (cProfile inside the thread)."""
import cProfile
import io
import pstats
import sys
import time

import numpy as np

import nova
from nova.lz4 import PageCompressor
from nova.lz4 import compressor as C
from nova.lz4.corpus import build_corpus

state = {"prof": cProfile.Profile()}
orig = C.PageCompressor._compress_stage_work


def wrapped(self, ctx):
    p = state["prof"]
    p.enable()
    try:
        return orig(self, ctx)
    finally:
        p.disable()


C.PageCompressor._compress_stage_work = wrapped
pages = build_corpus(4096, 32768)["mixed"]
dev = nova.get_device("cuda")
host = dev.allocate_pinned(pages.nbytes)
pinned = host.numpy(np.uint8, pages.shape)
pinned[:] = pages
with PageCompressor(4096, "cuda") as comp:
    comp.compress_pages(pinned)
    comp.compress_pages(pinned)
    state["prof"] = cProfile.Profile()
    t = time.perf_counter()
    for _ in range(3):
        comp.compress_pages(pinned)
    dt = (time.perf_counter() - t) / 3
    print(f"compress_pages: {dt * 1e3:.2f} ms = {pages.nbytes / dt / 1e9:.2f} GB/s")
s = io.StringIO()
st = pstats.Stats(state["prof"], stream=s)
st.sort_stats("tottime").print_stats(35)
st.sort_stats("cumtime").print_stats(45)
print(s.getvalue())
