"""Run one of nova.lz4's kernels on one corpus class a few times, for a profiler (ncu) to catch:
    ncu --kernel-name regex:compress -c 1 --set full python scripts/lz4-profile.py [KIND] [CLASS]
KIND: compress (default) or decompress; CLASS: a corpus class (default mixed)."""
import sys

import numpy as np

import nova
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

kind = sys.argv[1] if len(sys.argv) > 1 else "compress"
klass = sys.argv[2] if len(sys.argv) > 2 else "mixed"
dev = nova.get_device("cuda")
pages = build_corpus(4096, 32768)[klass]
n, page = pages.shape
d_pages = nova.to_device(pages, dev)
staged = dev.allocate(n * page)
sizes = dev.allocate(4 * n).view(np.uint32, (n,))
stream = dev.create_stream()
runs = 3 if kind == "compress" else 1
for _ in range(runs):
    D.launch_compress(D.view(d_pages, np.uint32, n * page // 4), D.view(staged, np.uint8, n * page),
                      sizes, n, page, stream)
stream.synchronize()
print("compressed", n, klass, "pages; payload", int((sizes.numpy() & 0x7FFFFFFF).sum()))
if kind == "decompress":
    from nova.lz4.compressor import PageCompressor
    with PageCompressor(page, device="cuda") as pc:
        batch = pc.compress_pages(pages)
        for _ in range(3):
            out = pc.decompress_pages(batch)
    if not np.array_equal(out, pages):
        sys.exit("decompressed pages differ")
    print("decompressed", n, klass, "pages")
