"""Microbench: what do small D2D copies cost in a synchronised chain (cuda.bindings)."""
import time
import numpy as np
from cuda.bindings import driver as cu

def ck(r):
    err = r[0] if isinstance(r, tuple) else r
    if int(err) != 0:
        raise RuntimeError(err)
    return r[1] if isinstance(r, tuple) and len(r) == 2 else (r[1:] if isinstance(r, tuple) else None)

ck(cu.cuInit(0))
dev = ck(cu.cuDeviceGet(0))
ctx = ck(cu.cuDevicePrimaryCtxRetain(dev))
ck(cu.cuCtxSetCurrent(ctx))
PTX = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry add1(.param .u64 p, .param .u32 n) {
  .reg .u32 %r<8>; .reg .u64 %d<4>; .reg .f32 %f<3>; .reg .pred %q;
  ld.param.u64 %d0, [p]; ld.param.u32 %r0, [n];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3; setp.ge.u32 %q, %r4, %r0; @%q bra done;
  cvta.to.global.u64 %d0, %d0; mul.wide.u32 %d1, %r4, 4; add.u64 %d2, %d0, %d1;
  ld.global.f32 %f0, [%d2]; add.f32 %f1, %f0, 0f3F800000; st.global.f32 [%d2], %f1;
done: ret; }
.visible .entry copy(.param .u64 dst, .param .u64 src, .param .u32 n) {
  .reg .u32 %r<8>; .reg .u64 %d<8>; .reg .f32 %f<3>; .reg .pred %q;
  ld.param.u64 %d0, [dst]; ld.param.u64 %d5, [src]; ld.param.u32 %r0, [n];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3; setp.ge.u32 %q, %r4, %r0; @%q bra done;
  cvta.to.global.u64 %d0, %d0; cvta.to.global.u64 %d5, %d5; mul.wide.u32 %d1, %r4, 4;
  add.u64 %d2, %d0, %d1; add.u64 %d6, %d5, %d1;
  ld.global.f32 %f0, [%d6]; st.global.f32 [%d2], %f0;
done: ret; }
"""
mod = ck(cu.cuModuleLoadData(PTX.encode() + b"\0"))
add1 = ck(cu.cuModuleGetFunction(mod, b"add1"))
copyk = ck(cu.cuModuleGetFunction(mod, b"copy"))
stream = ck(cu.cuStreamCreate(1))
N = 4096
nb = N * 4
x = ck(cu.cuMemAlloc(nb)); d = ck(cu.cuMemAlloc(nb))
ck(cu.cuMemsetD32(x, 0, N))
pool = ck(cu.cuDeviceGetDefaultMemPool(dev))


import ctypes
def params(*vals):
    holders = [ctypes.c_uint64(v) if i < len(vals) - 1 else ctypes.c_uint32(v) for i, v in enumerate(vals)]
    arr = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    return holders, arr, ctypes.addressof(arr)
G = (N + 255) // 256
p_add_x = params(int(x), N); p_add_d = params(int(d), N)
p_cp_in = params(int(d), int(x), N); p_cp_out = params(int(x), int(d), N)
L = cu.cuLaunchKernel
def k(f, p):
    L(f, G, 1, 1, 256, 1, 1, 0, stream, p[2], 0)
sync = cu.cuStreamSynchronize
MA = cu.cuMemcpyAsync; MD = cu.cuMemcpyDtoDAsync
def c_step(): k(add1, p_add_x); sync(stream)
def c_memcpy(): MA(d, x, nb, stream); k(add1, p_add_d); MA(x, d, nb, stream); sync(stream)
def c_dtod(): MD(d, x, nb, stream); k(add1, p_add_d); MD(x, d, nb, stream); sync(stream)
def c_kcopy(): k(copyk, p_cp_in); k(add1, p_add_d); k(copyk, p_cp_out); sync(stream)
def c_3k(): k(add1, p_add_x); k(add1, p_add_x); k(add1, p_add_x); sync(stream)
def c_alloc_memcpy():
    dd = cu.cuMemAllocFromPoolAsync(nb, pool, stream)[1]
    MA(dd, x, nb, stream); k(add1, p_add_d); MA(x, dd, nb, stream); cu.cuMemFreeAsync(dd, stream); sync(stream)
def e_memcpy(): MA(d, x, nb, stream)
def e_dtod(): MD(d, x, nb, stream)
def e_kcopy(): k(copyk, p_cp_in)
def e_add(): k(add1, p_add_x)
def timeit(fn, n=2000, reps=7, syncafter=False):
    best = []
    for _ in range(reps):
        sync(stream)
        t = time.perf_counter()
        for _ in range(n): fn()
        if syncafter: sync(stream)
        best.append((time.perf_counter() - t) / n * 1e6)
    best.sort()
    return best[0], best[len(best)//2]
for name, fn in [("step: add1+sync", c_step), ("memcpyAsync+add1+memcpyAsync+sync", c_memcpy),
                 ("DtoDAsync+add1+DtoDAsync+sync", c_dtod), ("copyk+add1+copyk+sync", c_kcopy),
                 ("add1 x3 + sync", c_3k), ("poolalloc+memcpy chain+free+sync", c_alloc_memcpy)]:
    for _ in range(200): fn()
    print(f"{name:45s} min {timeit(fn)[0]:7.2f} med {timeit(fn)[1]:7.2f} us")
for name, fn in [("enqueue memcpyAsync", e_memcpy), ("enqueue DtoDAsync", e_dtod), ("enqueue copy kernel", e_kcopy), ("enqueue add1", e_add)]:
    print(f"{name:45s} min/med {timeit(fn, n=500, syncafter=False)} us (no sync, 500/loop)")
