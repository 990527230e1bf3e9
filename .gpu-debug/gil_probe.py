"""Does cuda.bindings release the GIL in cuEventSynchronize / cuStreamSynchronize?"""
import threading
import time
from cuda.bindings import driver as cu

cu.cuInit(0)
_, dev = cu.cuDeviceGet(0)
_, ctx = cu.cuDevicePrimaryCtxRetain(dev)
cu.cuCtxSetCurrent(ctx)
_, s = cu.cuStreamCreate(1)
n = 8 << 30
_, buf = cu.cuMemAlloc(n)
_, ev = cu.cuEventCreate(0)


def spin(seconds):
    c = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        c += 1
    return c


base = spin(0.02)
for what in ("event", "stream"):
    for _ in range(3):
        cu.cuMemsetD8Async(buf, 1, n, s)
        cu.cuMemsetD8Async(buf, 2, n, s)
        cu.cuEventRecord(ev, s)
        def waiter():
            cu.cuCtxSetCurrent(ctx)
            if what == "event":
                cu.cuEventSynchronize(ev)
            else:
                cu.cuStreamSynchronize(s)
        t = threading.Thread(target=waiter)
        t0 = time.perf_counter()
        t.start()
        c = spin(0.02)
        t.join()
        print(f"{what}: main-thread loop iterations in 20 ms while the other thread syncs: {c} (alone: {base}); join after {time.perf_counter() - t0:.4f} s")
