"""`nova.wgmma`: Hopper warpgroup matrix multiply-accumulate (wgmma) in kernels.

A warpgroup is 4 consecutive warps (128 threads, the first warp's index a multiple of 4). One
`nova.wgmma.mma` multiplies a 64x16 A tile by a 16xN B tile (float16 or bfloat16, N a multiple
of 8 up to 256), both read by the tensor cores straight from shared memory through 64-bit
matrix descriptors, into a float32 64xN accumulator spread over the warpgroup's registers.
The MMA is asynchronous: fence before the first one, commit the issued ones as a group, and
wait for groups before reading the accumulator or overwriting their shared tiles. Shared tiles
written by threads (stores, `nova.async_copy`) need `fence_shared()` by the writing threads
before the barrier that publishes them. Every call except `descriptor` and `fence_shared` is
warpgroup-collective. Compute capability 9.0 GPUs (sm_90a) and the CPU
device (an exact emulation) run them. The translator (nova.lang.warpgroup) lowers them to
upstream MLIR's `nvvm.wgmma.*` ops.

    acc = nova.wgmma.zero(128)                            # 64x128 float32 zeros
    da = nova.wgmma.descriptor(sa, offset_a, swizzle=128, sbo=1024)   # A tile, K-major
    db = nova.wgmma.descriptor(sb, offset_b, swizzle=128, lbo=8192, sbo=1024)
    nova.wgmma.fence_shared()                             # after filling sa / sb, then
    nova.syncthreads()
    nova.wgmma.fence()
    acc = nova.wgmma.mma(acc, da, db, layout_b="row")     # acc += A @ B (B N-major)
    nova.wgmma.commit()
    nova.wgmma.wait(0)
    nova.wgmma.store(c, offset_c, acc, ld=n)              # c[offset + r * ld + j] = acc[r, j]

docs/python-kernels.md ("Warpgroup MMA") has the full contract, with the shared layouts.
"""

from __future__ import annotations

from nova.lang.intrinsics import _intrinsic

descriptor = _intrinsic(
    "wgmma.descriptor", "descriptor(array, offset=0, swizzle=128, lbo=0, sbo=0): the int64 "
    "matrix descriptor of the operand tile starting at element `offset` of the float16/bfloat16 "
    "shared array: its shared address, the leading- and stride-dimension byte offsets lbo and "
    "sbo (multiples of 16) and the swizzle mode (0, 32, 64 or 128 bytes, a constant).")
zero = _intrinsic(
    "wgmma.zero", "zero(n): a float32 accumulator of 64 x n zeros (n a constant multiple of 8, "
    "8..256).")
mma = _intrinsic(
    "wgmma.mma", "mma(acc, a, b, dtype=nova.float16, layout_a='row', layout_b='col', "
    "accumulate=True): start acc + A @ B (A 64x16, B 16xN from the descriptors a and b; "
    "layout_a 'row' / layout_b 'col' are K-major, the others MN-major; accumulate=False: A @ B); "
    "returns the new accumulator, valid after the wait that retires it.")
fence = _intrinsic("wgmma.fence", "fence(): order earlier register and shared memory accesses "
                   "before the warpgroup MMAs that follow (wgmma.fence).")
fence_shared = _intrinsic(
    "wgmma.fence_shared", "fence_shared(): make this thread's completed shared memory writes "
    "(stores, nova.async_copy after its wait) visible to the tensor cores, which read shared "
    "memory through the async proxy (fence.proxy.async.shared::cta); call it before the "
    "barrier that publishes the tiles.")
commit = _intrinsic("wgmma.commit", "commit(): close the group of the MMAs this warpgroup "
                    "started since its last commit.")
wait = _intrinsic("wgmma.wait", "wait(n=0): wait until at most the n most recent groups are "
                  "in flight (n a constant).")
store = _intrinsic(
    "wgmma.store", "store(array, offset, acc, ld): write the 64xN accumulator to the 1-D float32 "
    "array: element (r, j) to array[offset + r * ld + j].")

__all__ = ["commit", "descriptor", "fence", "fence_shared", "mma", "store", "wait", "zero"]
