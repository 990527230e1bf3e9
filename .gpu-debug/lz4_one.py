"""Launch the compress kernel twice on one class's pages (ncu profiles the second launch)."""
import sys
import numpy as np
import nova
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

cls = sys.argv[1] if len(sys.argv) > 1 else "binary"
n = int(sys.argv[3]) if len(sys.argv) > 3 else 16384
pages = build_corpus(4096, n)[cls]
dev = nova.get_device(sys.argv[2] if len(sys.argv) > 2 else "cuda")
stream = dev.create_stream()
d_pages = nova.to_device(pages.reshape(-1), dev)
staged = dev.allocate(pages.nbytes)
sizes = dev.allocate(4 * len(pages)).view(np.uint32, (len(pages),))
src32 = D.view(d_pages, np.uint32, pages.nbytes // 4)
for _ in range(2):
    D.launch_compress(src32, D.view(staged, np.uint8, pages.nbytes), sizes, len(pages), 4096, stream)
    stream.synchronize()
print("ok", cls, len(pages))
