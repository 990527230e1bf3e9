"""The native block cache in front of the stream-ordered pool (`gpu.alloc`/`gpu.dealloc`).

LLVM IR, part of the native cuda ABI module (`nova.runtime.cuda.native`). Why: every
`gpu.alloc`/`gpu.dealloc` pair of compiled code cost three driver calls (cuMemAllocFromPoolAsync,
cuPointerGetAttribute to tell managed memory apart, cuMemFreeAsync), each a microsecond or so of
host time on an H100 machine, although the driver's pool served them; a model's forward makes
such a pair per intermediate on every call. The cache answers the common case without the driver:
a block freed on stream S and allocated again on S with the same byte size.

A fixed table of `BLOCK_SLOTS` slots `{ptr block, i64 size, ptr stream, i64 state}` under a
spin lock (held only while scanning; never across a driver call):

- `LIVE`: a block `nova_rt_mem_alloc` got from the driver (stream-ordered device memory of up to
  `TRACK_MAX_BYTES`) while a slot was empty. Its free needs no cuPointerGetAttribute: it is
  known not to be managed.
- `CACHED`: a LIVE block freed on `stream` (while the cached bytes stay within
  `CACHE_MAX_BYTES`; else it goes to cuMemFreeAsync and the slot empties). An allocation of the
  same size on the same stream takes it back (LIVE) without a driver call: stream order puts the
  new user's work after everything enqueued on that stream before the free, which is all the
  driver's same-stream reuse promises too. No other stream ever gets it: cross-stream reuse,
  which needs events, stays with the driver's pool.

Cached blocks go back to the driver (cuMemFreeAsync on the stream they were freed on, ordered
after all their uses) by `FLUSH_BLOCKS`: for one stream before the native ABI destroys it (so a
new stream that reuses the handle value never inherits them), for all on out-of-memory before
the reclaim callback (which synchronizes and trims), and from Python when the device empties
its caches (`CudaDevice._trim_other_caches`). `CACHED_BYTES_GLOBAL` is their total, which
`CudaDevice.ordered_pool_usage` subtracts from the driver's "used" (cached bytes are free for
Nova's purposes, as the driver's own cached memory is). The cache is off until
`BLOCKS_ENABLED_GLOBAL` is set (`native_for` sets it for real devices; tests of the plain driver
path leave it off). Graph captures bypass it (`ALLOC_DIRECT`/`FREE_DIRECT`): a graph's memory
must never be cached outside the graph, nor a cached block handed to one.
"""

from __future__ import annotations

from nova.runtime.cuda.spinlock_ir import spinlock_ir

BLOCK_SLOTS = 128
"""Slots of the table: blocks tracked at once (live or cached). Further blocks are allocated and
freed by the driver as before."""
TRACK_MAX_BYTES = 64 << 20
"""Larger blocks are never tracked (the driver call is small next to using them)."""
CACHE_MAX_BYTES = 256 << 20
"""The most bytes held in CACHED blocks (memory other streams cannot get without a flush)."""

STATE_EMPTY, STATE_LIVE, STATE_CACHED = 0, 1, 2
BLOCKS_ENABLED_GLOBAL = "nova_blocks_enabled"
CACHED_BYTES_GLOBAL = "nova_blocks_cached"
FLUSH_BLOCKS = "nova_cuda_flush_blocks"
"""`i32 nova_cuda_flush_blocks(ptr stream)`: give every block cached for `stream` (null: for
any stream) back to the driver with cuMemFreeAsync on its stream; returns the first failing
CUresult (0: none), after trying them all."""
ALLOC_DIRECT = "nova_cuda_mem_alloc_direct"
"""`nova_rt_mem_alloc` without the cache (same signature): graph captures use it."""
FREE_DIRECT = "nova_cuda_mem_free_direct"
"""`nova_rt_mem_free` without the cache (same signature; a tracked block is forgotten)."""

_SLOT = "{ ptr, i64, ptr, i64 }"
_TABLE = f"[{BLOCK_SLOTS} x {_SLOT}]"


def _field(slot: str, index: int, name: str) -> str:
    return (f"  %{name} = getelementptr {_TABLE}, ptr @nova_blocks, i64 0, i64 {slot}, "
            f"i32 {index}")


def blocks_ir(prefix: str) -> str:
    """The table, its lock and its functions (internal but for `FLUSH_BLOCKS`)."""
    return f"""
@nova_blocks = internal global {_TABLE} zeroinitializer
{spinlock_ir("nova_blocks_lock", "nova_blocks_acquire", "nova_blocks_release_lock", True)}
@{BLOCKS_ENABLED_GLOBAL} = global i32 0
@{CACHED_BYTES_GLOBAL} = global i64 0

; the first slot whose state is `state` and whose block (when `block` is not null), size and
; stream (when `size` is not -1) match, else -1; the lock is held
define internal i64 @nova_blocks_find(i64 %state, ptr %block, i64 %size, ptr %stream) {{
entry:
  %any.block = icmp eq ptr %block, null
  %any.size = icmp eq i64 %size, -1
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %miss]
  %end = icmp eq i64 %i, {BLOCK_SLOTS}
  br i1 %end, label %none, label %test
test:
{_field("%i", 3, "state.at")}
  %slot.state = load i64, ptr %state.at
  %state.ok = icmp eq i64 %slot.state, %state
  br i1 %state.ok, label %test.block, label %miss
test.block:
{_field("%i", 0, "block.at")}
  %slot.block = load ptr, ptr %block.at
  %block.same = icmp eq ptr %slot.block, %block
  %block.ok = or i1 %any.block, %block.same
  br i1 %block.ok, label %test.size, label %miss
test.size:
{_field("%i", 1, "size.at")}
  %slot.size = load i64, ptr %size.at
{_field("%i", 2, "stream.at")}
  %slot.stream = load ptr, ptr %stream.at
  %size.same = icmp eq i64 %slot.size, %size
  %stream.same = icmp eq ptr %slot.stream, %stream
  %both.same = and i1 %size.same, %stream.same
  %size.ok = or i1 %any.size, %both.same
  br i1 %size.ok, label %found, label %miss
miss:
  %i.next = add i64 %i, 1
  br label %loop
found:
  ret i64 %i
none:
  ret i64 -1
}}

; a block cached for `stream` with exactly `size` bytes, now LIVE again; null when none
define internal ptr @nova_blocks_take(i64 %size, ptr %stream) {{
entry:
  %enabled = load atomic i32, ptr @{BLOCKS_ENABLED_GLOBAL} monotonic, align 4
  %off = icmp eq i32 %enabled, 0
  br i1 %off, label %none, label %look
look:
  call void @nova_blocks_acquire()
  %i = call i64 @nova_blocks_find(i64 {STATE_CACHED}, ptr null, i64 %size, ptr %stream)
  %missed = icmp eq i64 %i, -1
  br i1 %missed, label %unlock.none, label %hit
hit:
{_field("%i", 3, "state.at")}
  store i64 {STATE_LIVE}, ptr %state.at
{_field("%i", 0, "block.at")}
  %block = load ptr, ptr %block.at
  %cached = load i64, ptr @{CACHED_BYTES_GLOBAL}
  %left = sub i64 %cached, %size
  store atomic i64 %left, ptr @{CACHED_BYTES_GLOBAL} monotonic, align 8
  call void @nova_blocks_release_lock()
  ret ptr %block
unlock.none:
  call void @nova_blocks_release_lock()
  br label %none
none:
  ret ptr null
}}

; remember a block the driver just allocated (LIVE), if it is small enough and a slot is empty
define internal void @nova_blocks_track(ptr %block, i64 %size) {{
entry:
  %enabled = load atomic i32, ptr @{BLOCKS_ENABLED_GLOBAL} monotonic, align 4
  %off = icmp eq i32 %enabled, 0
  %big = icmp ugt i64 %size, {TRACK_MAX_BYTES}
  %skip = or i1 %off, %big
  br i1 %skip, label %done, label %look
look:
  call void @nova_blocks_acquire()
  ; the driver never hands out a live block: a LIVE slot with this address is stale (freed
  ; past the cache), so it is reused rather than left to shadow the new one
  %stale = call i64 @nova_blocks_find(i64 {STATE_LIVE}, ptr %block, i64 -1, ptr null)
  %empty = call i64 @nova_blocks_find(i64 {STATE_EMPTY}, ptr null, i64 -1, ptr null)
  %fresh = icmp eq i64 %stale, -1
  %i = select i1 %fresh, i64 %empty, i64 %stale
  %full = icmp eq i64 %i, -1
  br i1 %full, label %unlock, label %store
store:
{_field("%i", 0, "block.at")}
  store ptr %block, ptr %block.at
{_field("%i", 1, "size.at")}
  store i64 %size, ptr %size.at
{_field("%i", 2, "stream.at")}
  store ptr null, ptr %stream.at
{_field("%i", 3, "state.at")}
  store i64 {STATE_LIVE}, ptr %state.at
  br label %unlock
unlock:
  call void @nova_blocks_release_lock()
  br label %done
done:
  ret void
}}

; a free of `block` on `stream`: 0 when the block is not tracked (the caller asks the driver
; what it is); 1 when it is now CACHED for `stream` (nothing else to do); 2 when it was tracked
; but must go to cuMemFreeAsync (no room in the cache, or `keep` is 0); the slot is then empty;
; 3 when it is cached already: freed twice (the driver would reject the second free too)
define internal i32 @nova_blocks_free(ptr %block, ptr %stream, i1 %keep) {{
entry:
  call void @nova_blocks_acquire()
  %i = call i64 @nova_blocks_find(i64 {STATE_LIVE}, ptr %block, i64 -1, ptr null)
  %untracked = icmp eq i64 %i, -1
  br i1 %untracked, label %unknown, label %tracked
unknown:
  %again = call i64 @nova_blocks_find(i64 {STATE_CACHED}, ptr %block, i64 -1, ptr null)
  call void @nova_blocks_release_lock()
  %twice = icmp ne i64 %again, -1
  %status = select i1 %twice, i32 3, i32 0
  ret i32 %status
tracked:
{_field("%i", 1, "size.at")}
  %size = load i64, ptr %size.at
{_field("%i", 3, "state.at")}
  %cached = load i64, ptr @{CACHED_BYTES_GLOBAL}
  %total = add i64 %cached, %size
  %fits = icmp ule i64 %total, {CACHE_MAX_BYTES}
  %enabled = load atomic i32, ptr @{BLOCKS_ENABLED_GLOBAL} monotonic, align 4
  %on = icmp ne i32 %enabled, 0
  %fits.on = and i1 %fits, %on
  %cache = and i1 %fits.on, %keep
  br i1 %cache, label %keep.it, label %let.go
keep.it:
{_field("%i", 2, "stream.at")}
  store ptr %stream, ptr %stream.at
  store i64 {STATE_CACHED}, ptr %state.at
  store atomic i64 %total, ptr @{CACHED_BYTES_GLOBAL} monotonic, align 8
  call void @nova_blocks_release_lock()
  ret i32 1
let.go:
  store i64 {STATE_EMPTY}, ptr %state.at
  call void @nova_blocks_release_lock()
  ret i32 2
}}

; take one block cached for `stream` (null: any stream) out of the table; null when none;
; *stream.out = the stream it was freed on
define internal ptr @nova_blocks_evict(ptr %stream, ptr %stream.out) {{
entry:
  %any = icmp eq ptr %stream, null
  call void @nova_blocks_acquire()
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %miss]
  %end = icmp eq i64 %i, {BLOCK_SLOTS}
  br i1 %end, label %none, label %test
test:
{_field("%i", 3, "state.at")}
  %state = load i64, ptr %state.at
  %is.cached = icmp eq i64 %state, {STATE_CACHED}
{_field("%i", 2, "stream.at")}
  %slot.stream = load ptr, ptr %stream.at
  %same = icmp eq ptr %slot.stream, %stream
  %wanted = or i1 %any, %same
  %take = and i1 %is.cached, %wanted
  br i1 %take, label %found, label %miss
miss:
  %i.next = add i64 %i, 1
  br label %loop
found:
  store i64 {STATE_EMPTY}, ptr %state.at
{_field("%i", 0, "block.at")}
  %block = load ptr, ptr %block.at
{_field("%i", 1, "size.at")}
  %size = load i64, ptr %size.at
  %cached = load i64, ptr @{CACHED_BYTES_GLOBAL}
  %left = sub i64 %cached, %size
  store atomic i64 %left, ptr @{CACHED_BYTES_GLOBAL} monotonic, align 8
  store ptr %slot.stream, ptr %stream.out
  call void @nova_blocks_release_lock()
  ret ptr %block
none:
  call void @nova_blocks_release_lock()
  ret ptr null
}}

define i32 @{FLUSH_BLOCKS}(ptr %stream) {{
entry:
  %owner = alloca ptr, align 8
  br label %next
next:
  %status = phi i32 [0, %entry], [%status.next, %freed]
  %block = call ptr @nova_blocks_evict(ptr %stream, ptr %owner)
  %done = icmp eq ptr %block, null
  br i1 %done, label %finished, label %free
free:
  %on = load ptr, ptr %owner
  %result = call i32 @{prefix}cuMemFreeAsync(ptr %block, ptr %on)
  br label %freed
freed:
  %first = icmp eq i32 %status, 0
  %status.next = select i1 %first, i32 %result, i32 %status
  br label %next
finished:
  ret i32 %status
}}
"""
