"""The functions kernels call: thread indexing, barriers, shared/local arrays, atomics, warp
operations and integer bit functions.

They exist as Python objects so kernels can name them (`nova.thread_id(0)`); the translator
recognises each by its `__nova_intrinsic__` tag and emits IR. Called outside a kernel they raise
KernelCallError: they only have a meaning for a GPU thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nova.errors import NovaError

WARP_SIZE = 32
"""Threads per warp on both devices (CUDA warps; the CPU device emulates 32-lane warps)."""


class KernelCallError(NovaError):
    """A kernel-only function was called from ordinary Python code."""


def _intrinsic(name: str, doc: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise KernelCallError(f"nova.{name}() can only be called inside a @nova.kernel or "
                              f"@nova.func function")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    stub.__nova_intrinsic__ = name  # type: ignore[attr-defined]
    return stub


# --- thread indexing (d = 0, 1, 2 for x, y, z); results are int64 ----------------------------
thread_id = _intrinsic("thread_id", "thread_id(d): this thread's index in its block along d.")
block_id = _intrinsic("block_id", "block_id(d): this block's index in the grid along d.")
block_dim = _intrinsic("block_dim", "block_dim(d): threads per block along d.")
grid_dim = _intrinsic("grid_dim", "grid_dim(d): blocks in the grid along d.")
global_id = _intrinsic("global_id",
                       "global_id(d): block_id(d) * block_dim(d) + thread_id(d).")
lane_id = _intrinsic("lane_id", "lane_id(): this thread's lane in its warp (0..31).")
syncthreads = _intrinsic("syncthreads",
                         "syncthreads(): barrier for every thread of the block; also orders "
                         "shared and global memory accesses of the block.")
syncwarp = _intrinsic("syncwarp",
                      "syncwarp(): barrier for the lanes of the calling warp (CUDA's "
                      "__syncwarp()); orders their shared and global memory accesses, so lanes "
                      "can exchange data through memory. Every lane of the warp must call it.")

# --- memory ------------------------------------------------------------------------------------
shared_array = _intrinsic(
    "shared_array", "shared_array(shape, dtype): a block-wide array in shared (workgroup) memory; "
    "shape and dtype are compile-time constants. Contents start undefined.")
dynamic_shared_array = _intrinsic(
    "dynamic_shared_array", "dynamic_shared_array(dtype, count=None, offset=0): a 1-D view of "
    "the block's dynamic shared memory (the launch's shared_bytes) starting at byte `offset`, "
    "of `count` elements (run-time or constant; by default all that follow the offset). dtype "
    "is a compile-time constant. Several views may share the allocation at different offsets.")
local_array = _intrinsic(
    "local_array", "local_array(shape, dtype): a per-thread array (registers / stack); shape "
    "and dtype are compile-time constants. Contents start undefined.")

# --- asynchronous copies global -> shared (cp.async; nova.lang.copies) ----------------------
async_copy = _intrinsic(
    "async_copy", "async_copy(dst, d, src, s, count, src_count=None, bypass_l1=None): start "
    "copying `count` elements (a constant making 4, 8 or 16 bytes) of the global array `src` "
    "at index s to the shared array `dst` at index d (both addresses aligned to the copy's "
    "size). src_count (run time): read only that many, zero-fill the rest. bypass_l1: cache in "
    "L2 only (16-byte copies; their default). Completes at a later async_wait.")
async_commit = _intrinsic(
    "async_commit", "async_commit(): close the group of the copies this thread started since "
    "its last commit.")
async_wait = _intrinsic(
    "async_wait", "async_wait(n=0): wait until at most the n most recent groups of this "
    "thread are in flight (n a constant); then syncthreads() to share the data with the block.")

# --- atomics: f(array, index, value) -> the old value -------------------------------------------
atomic_add = _intrinsic("atomic_add", "atomic_add(a, i, v): a[i] += v atomically; old value.")
atomic_sub = _intrinsic("atomic_sub", "atomic_sub(a, i, v): a[i] -= v atomically; old value.")
atomic_min = _intrinsic("atomic_min", "atomic_min(a, i, v): a[i] = min(a[i], v); old value.")
atomic_max = _intrinsic("atomic_max", "atomic_max(a, i, v): a[i] = max(a[i], v); old value.")
atomic_and = _intrinsic("atomic_and", "atomic_and(a, i, v): a[i] &= v atomically; old value.")
atomic_or = _intrinsic("atomic_or", "atomic_or(a, i, v): a[i] |= v atomically; old value.")
atomic_xor = _intrinsic("atomic_xor", "atomic_xor(a, i, v): a[i] ^= v atomically; old value.")
atomic_exchange = _intrinsic("atomic_exchange",
                             "atomic_exchange(a, i, v): a[i] = v atomically; old value.")
atomic_cas = _intrinsic("atomic_cas", "atomic_cas(a, i, compare, v): a[i] = v if a[i] == compare, "
                        "atomically (integer arrays); the old value.")

# --- warp operations ---------------------------------------------------------------------------
shuffle_idx = _intrinsic("shuffle_idx",
                         "shuffle_idx(v, lane, width=32, members=None): v of lane `lane` "
                         "(within groups of `width` lanes).")
shuffle_up = _intrinsic("shuffle_up", "shuffle_up(v, delta, width=32, members=None): v of "
                        "lane - delta (own value where that lane is outside the group).")
shuffle_down = _intrinsic("shuffle_down", "shuffle_down(v, delta, width=32, members=None): v "
                          "of lane + delta (own value where that lane is outside the group).")
shuffle_xor = _intrinsic("shuffle_xor", "shuffle_xor(v, mask, width=32, members=None): v of "
                         "lane ^ mask.")
ballot = _intrinsic("ballot", "ballot(pred, members=None): uint32 with bit i set when lane i's "
                    "pred is true (every lane of `members`, default the warp's, takes part).")
match_any = _intrinsic("match_any", "match_any(v): uint32 with bit i set when lane i's v equals "
                       "this lane's (CUDA's __match_any_sync; integers, all 32 lanes take part).")
warp_any = _intrinsic("warp_any", "warp_any(pred, members=None): True when pred is true on "
                      "some lane.")
warp_all = _intrinsic("warp_all", "warp_all(pred, members=None): True when pred is true on "
                      "every lane.")
warp_reduce_add = _intrinsic("warp_reduce_add", "warp_reduce_add(v): sum of v over the warp.")
warp_reduce_mul = _intrinsic("warp_reduce_mul",
                             "warp_reduce_mul(v): product of v over the warp.")
warp_reduce_min = _intrinsic("warp_reduce_min", "warp_reduce_min(v): minimum over the warp.")
warp_reduce_max = _intrinsic("warp_reduce_max", "warp_reduce_max(v): maximum over the warp.")
warp_reduce_and = _intrinsic("warp_reduce_and", "warp_reduce_and(v): bitwise and over the warp.")
warp_reduce_or = _intrinsic("warp_reduce_or", "warp_reduce_or(v): bitwise or over the warp.")
warp_reduce_xor = _intrinsic("warp_reduce_xor", "warp_reduce_xor(v): bitwise xor over the warp.")

# --- integer bit functions ----------------------------------------------------------------------
popc = _intrinsic("popc", "popc(x): number of set bits of an integer (same type as x).")
clz = _intrinsic("clz", "clz(x): leading zero bits of an integer (same type as x).")
ctz = _intrinsic("ctz", "ctz(x): trailing zero bits of an integer (same type as x).")

INTRINSIC_NAMES: tuple[str, ...] = (
    "thread_id", "block_id", "block_dim", "grid_dim", "global_id", "lane_id", "syncthreads",
    "syncwarp", "shared_array", "dynamic_shared_array", "local_array", "async_copy",
    "async_commit", "async_wait", "atomic_add", "atomic_sub",
    "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange",
    "atomic_cas", "shuffle_idx", "shuffle_up", "shuffle_down", "shuffle_xor", "ballot",
    "match_any", "warp_any", "warp_all", "warp_reduce_add", "warp_reduce_mul", "warp_reduce_min",
    "warp_reduce_max",
    "warp_reduce_and", "warp_reduce_or", "warp_reduce_xor", "popc", "clz", "ctz",
)


def intrinsic_name(obj: Any) -> str | None:
    """The intrinsic a Python object stands for, or None."""
    return getattr(obj, "__nova_intrinsic__", None) if callable(obj) else None
