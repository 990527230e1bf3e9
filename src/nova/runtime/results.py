"""Returned memrefs: who owns the memory an entry hands back (docs/device-layer.md, "Returned
memrefs").

An entry that returns a memref gives the caller the allocation behind it. The executor sorts each
distinct `allocated` pointer of a call's memref results into one of three kinds:

* not the program's to give: null, `nova.abi.UNOWNED_ALLOCATED` (memref.alloca, get_global) or
  memory of one of the call's own memref arguments (a view or alias of an argument). The result
  is a copy, nothing is freed;
* a runtime allocation (`gpu.alloc` -> nova_rt_mem_alloc): the device ABI hands it over
  (`take_allocation`), so the module no longer frees it at `close()`;
* anything else came from the host code's heap (`memref.alloc` -> malloc/aligned_alloc) and is
  freed with libc `free` (on the cpu device host code's heap is the guarded arena's
  `nova.runtime.cpu.host_heap`, registered with `register_heap`, which frees it instead).

An allocation handed over becomes a `ResultMemory`. When the device can address it from the host
(the cpu device; host-heap memory on any device) the NumPy arrays returned view it without a copy
and keep it alive (their `base` chain holds it); it is freed once the last of them is collected.
Otherwise (cuda device memory) the result is copied to a new array and the allocation freed at
once. Two results with one `allocated` pointer (the same memref twice, or a view of another
result) share one ResultMemory, so the memory is freed once, after both are gone.

`stats()` counts ResultMemory objects made and released: what the tests and bench/soak.py check.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

_libc = ctypes.CDLL(None)
_libc_free = _libc.free
_libc_free.argtypes = [ctypes.c_void_p]
_libc_free.restype = None


@dataclass(frozen=True)
class ResultStats:
    """Allocations handed to Python by returned memrefs: made so far, released so far, and
    alive now (made - released)."""

    adopted: int
    released: int

    @property
    def live(self) -> int:
        return self.adopted - self.released


_lock = threading.RLock()  # a finalizer may run (gc) on a thread already holding it
_counts = {"adopted": 0, "released": 0}
_heaps: list[tuple[Callable[[int], bool], Callable[[int], None]]] = []


def register_heap(owns: Callable[[int], bool], free: Callable[[int], None]) -> None:
    """Declare a heap host code may allocate from instead of libc's (the cpu device's guarded
    host-code heap): a returned memref whose memory `owns` is freed with its `free`."""
    with _lock:
        _heaps.append((owns, free))


def _heap_free(address: int) -> Callable[[], None]:
    """How to free host-heap memory at `address`: its registered heap's free, else libc's."""
    with _lock:
        heaps = list(_heaps)
    for owns, free in heaps:
        if owns(address):
            return lambda: free(address)
    return lambda: _libc_free(address)


def stats() -> ResultStats:
    """How many returned allocations were handed to Python and how many were freed since."""
    with _lock:
        adopted, released = _counts["adopted"], _counts["released"]
    return ResultStats(adopted, released)


def _release(free: Callable[[], None]) -> None:
    # a finalizer must never raise (e.g. a cuda context that was lost)
    try:
        free()
    except Exception:  # nothing to report to from a finalizer
        pass
    finally:
        with _lock:
            _counts["released"] += 1


class ResultMemory:
    """One allocation returned by an entry, owned by the Python objects made from it.

    `free` runs exactly once: when this object is collected, or at `release()`.
    `host_addressable`: NumPy may view the memory in place (else results are copied)."""

    __slots__ = ("__weakref__", "_finalizer", "address", "host_addressable")

    def __init__(self, address: int, free: Callable[[], None], host_addressable: bool) -> None:
        self.address = address
        self.host_addressable = host_addressable
        with _lock:
            _counts["adopted"] += 1
        self._finalizer = weakref.finalize(self, _release, free)
        self._finalizer.atexit = False

    @classmethod
    def host_heap(cls, address: int) -> ResultMemory:
        """Memory from the host code's malloc/aligned_alloc (freed with libc free, or by the heap
        registered for it)."""
        return cls(address, _heap_free(address), True)

    @property
    def alive(self) -> bool:
        return self._finalizer.alive

    def release(self) -> None:
        """Free the memory now (idempotent); nothing may use it any more."""
        self._finalizer()

    def __repr__(self) -> str:
        return f"<ResultMemory {self.address:#x} {'live' if self.alive else 'freed'}>"


class _Span:
    """`nbytes` at `address` as a NumPy-viewable object that keeps `owner` alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner: ResultMemory, address: int, nbytes: int) -> None:
        self.owner = owner
        self.__array_interface__: dict[str, Any] = {
            "shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 3}


def view_result(owner: ResultMemory, aligned: int, offset: int, sizes: tuple[int, ...],
                strides: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A NumPy array viewing a returned memref in place (aligned pointer, offset, sizes and
    strides in elements); the array keeps `owner` alive."""
    low = offset + sum(min(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    high = offset + sum(max(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    flat = np.asarray(_Span(owner, aligned + low * dtype.itemsize,
                            (high - low + 1) * dtype.itemsize)).view(dtype)
    return np.lib.stride_tricks.as_strided(
        flat[offset - low:], shape=sizes, strides=tuple(s * dtype.itemsize for s in strides))


def argument_spans(words_of_args: list[tuple[ctypes.Array, int, int]]) -> list[tuple[int, int]]:
    """[low, high] byte addresses of the memory each memref argument of a call covers (its
    allocated pointer included), from (descriptor words, rank, element size) of each."""
    spans = []
    for words, rank, itemsize in words_of_args:
        allocated, aligned, offset = (w & 0xFFFFFFFFFFFFFFFF for w in words[:3])
        sizes, strides = words[3:3 + rank], words[3 + rank:3 + 2 * rank]
        if 0 in sizes:  # no elements: only the pointers themselves
            sizes = strides = []
        low = offset + sum(min(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
        high = offset + sum(max(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
        start, end = aligned + low * itemsize, aligned + (high + 1) * itemsize
        spans.append((min(allocated, start), max(allocated, end)))
    return spans
