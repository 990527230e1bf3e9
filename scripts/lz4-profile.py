"""Run nova.lz4's compress kernel on the mixed corpus a few times, for a profiler (ncu) to catch:
    ncu --kernel-name regex:compress -c 1 --set full python scripts/lz4-profile.py"""
import numpy as np

import nova
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

dev = nova.get_device("cuda")
pages = build_corpus(4096, 32768)["mixed"]
n, page = pages.shape
d_pages = nova.to_device(pages, dev)
staged = dev.allocate(n * page)
sizes = dev.allocate(4 * n).view(np.uint32, (n,))
stream = dev.create_stream()
for _ in range(3):
    D.launch_compress(D.view(d_pages, np.uint32, n * page // 4), D.view(staged, np.uint8, n * page),
                      sizes, n, page, stream)
stream.synchronize()
print("compressed", n, "pages; payload", int((sizes.numpy() & 0x7FFFFFFF).sum()))
