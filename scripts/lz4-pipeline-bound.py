"""What bounds nova.lz4's end-to-end compression: the GPU-side pipeline alone (no host waits,
no Python per slot beyond enqueueing), with the compaction writing to pinned host memory
(direct writes), to device memory, or not run at all. Prints GB/s per configuration.
    python scripts/lz4-pipeline-bound.py [slot_pages ...]"""
import sys
import time

import numpy as np

import nova
from nova.lz4 import device as D
from nova.lz4.corpus import build_corpus

dev = nova.get_device("cuda")
pages = build_corpus(4096, 32768)["mixed"]
n, page = pages.shape
host = dev.allocate_pinned(pages.nbytes)
host.numpy(np.uint8, pages.shape)[:] = pages
out_host = dev.allocate_pinned(pages.nbytes)
out_dev = dev.allocate(pages.nbytes)
for per in [int(a) for a in sys.argv[1:]] or [4096, 8192]:
    slots = 8
    d_in = [dev.allocate(per * page) for _ in range(slots)]
    staged = [dev.allocate(per * page) for _ in range(slots)]
    sizes = [dev.allocate(4 * per).view(np.uint32, (per,)) for _ in range(slots)]
    offs = [dev.allocate(8 * (per + 1)).view(np.uint64, (per + 1,)) for _ in range(slots)]
    ready = [dev.allocate(4).view(np.uint32, (1,)) for _ in range(slots)]
    run = dev.allocate(8).view(np.uint64, (1,))
    s_in, s_out = dev.create_stream(), dev.create_stream()
    s_k = [dev.create_stream() for _ in range(slots)]
    for mode in ("none", "device", "pinned", "h2d-only"):
        ev_in = [dev.create_event() for _ in range(slots)]
        ev_k = [dev.create_event() for _ in range(slots)]
        ev_out = [dev.create_event() for _ in range(slots)]
        target = out_dev if mode == "device" else nova.Buffer.wrap(
            dev, out_host.ptr, out_host.nbytes, owner=out_host)
        for _rep in range(2):
            dev.synchronize()
            dev.memset(run, 0, 8)
            t0 = time.perf_counter()
            for i, lo in enumerate(range(0, n, per)):
                s = i % slots
                k = min(per, n - lo)
                if i >= slots:
                    s_in.wait(ev_k[s])  # the kernel that read d_in[s] last is done
                dev.copy_htod(d_in[s], host.ptr + lo * page, k * page, stream=s_in)
                ev_in[s].record(s_in)
                if mode == "h2d-only":
                    continue
                s_k[s].wait(ev_in[s])
                if i >= slots:
                    s_k[s].wait(ev_out[s])  # the compaction that read staged[s] last is done
                D.launch_compress(D.view(d_in[s], np.uint32, k * page // 4),
                                  D.view(staged[s], np.uint8, k * page), sizes[s], k, page,
                                  s_k[s])
                if mode != "none":
                    dev.memset(ready[s], 0, 4, stream=s_k[s])
                    D.launch_scan(sizes[s], offs[s], k, run, ready[s], s_k[s])
                ev_k[s].record(s_k[s])
                if mode != "none":
                    s_out.wait(ev_k[s])
                    D.launch_compact(D.view(staged[s], np.uint8, k * page), sizes[s], offs[s],
                                     target, k, page, ready[s], s_out)
                    ev_out[s].record(s_out)
            dev.synchronize()
            dt = time.perf_counter() - t0
        print(f"slot {per:5d} pages, {slots} slots, compaction {mode:8s}: "
              f"{pages.nbytes / dt / 1e9:6.2f} GB/s", flush=True)
