"""The cpu device: device memory is host memory, streams are worker threads, kernels are the
x86-64 CPU objects of device modules run with GPU semantics.

It implements the same `Device` contract as cuda so programs, tests and the executor run unchanged
on machines without a GPU. Memory comes from the device's `GuardedArena` (nova.runtime.cpu.arena:
page-aligned mappings surrounded by no-access guards, in address space reserved away from the
Python heap) through the same caching pool; host code's own heap (`memref.alloc`) comes from the
same arena (`HostHeap`). Fresh allocations are filled with 0xCD when `config.poison_memory`
(NOVA_POISON=1) is on, to expose reads of uninitialized device memory.
"""

from __future__ import annotations

import _thread
import ctypes
import os
import weakref
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nova import config
from nova.errors import DeviceError
from nova.runtime.cpu.arena import GuardedArena
from nova.runtime.cpu.helpers import HelperThreads
from nova.runtime.cpu.module import BlockRun, CpuFunction, CpuModule
from nova.runtime.cpu.stream import CpuStream, StreamQueue
from nova.runtime.device import (
    Device,
    DeviceFunction,
    DeviceKind,
    DeviceModule,
    DeviceProperties,
    Dim3,
    ModuleImages,
    image_digest,
)
from nova.runtime.memory import Buffer
from nova.runtime.pool import Block
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from concurrent.futures import Future

    from nova.bundle.format import Manifest
    from nova.bundle.reader import Bundle
    from nova.runtime.cpu.abi import CpuAbi
    from nova.runtime.cpu.deferred_free import DeferredFrees
    from nova.runtime.cpu.host_heap import HostHeap
    from nova.runtime.graph import CaptureRequest, RecordedGraph
    from nova.runtime.launcher import Launcher

ALIGNMENT = 256
POISON_BYTE = 0xCD
MAX_SHARED_OPTIN = 227 * 1024  # what sm_90 allows with opt-in; kernels are written for it
INLINE_KERNEL_THREADS = 4096
"""Launches of at most this many GPU threads (grid x block) may run on a thread that
synchronizes their stream instead of its worker (CpuStream.enqueue's `inline`): no hand-off."""


def _cpuinfo() -> dict[str, str]:
    """The fields of /proc/cpuinfo's first processor (config.first_cpu_lines: read once per
    process, and only that block; a launch's first configuration check asks for the
    properties)."""
    info: dict[str, str] = {}
    for line in config.first_cpu_lines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in info:
            info[key.strip()] = value.strip()
    return info


class CpuDevice(Device):
    """The one cpu device (`cpu:0`)."""

    host_memory_is_device_memory = True

    # --- hooks of the shared runtime (nova.runtime.device.Device) -----------------------------
    def make_abi(self, manifest: Manifest) -> CpuAbi:
        from nova.runtime.cpu.abi import CpuAbi

        return CpuAbi(self, manifest)

    def images_may_print(self, bundle: Bundle) -> bool:
        from nova.runtime.runner_utils import cpu_images_may_print  # llvmlite: bundles only

        return cpu_images_may_print(bundle)

    def gemm_library(self) -> tuple[str, str | None, bool]:
        """NumPy (nova.runtime.cpu.library): always usable, not preferred, so the `auto` GEMM
        policy keeps testing the generated kernels on the cpu device (force it with
        gemm='library')."""
        return "numpy", None, False

    def conv_library(self) -> tuple[str, str | None, bool]:
        """NumPy again, not preferred (force it with conv='library')."""
        return "numpy", None, False

    def record_graph(self, request: CaptureRequest) -> RecordedGraph:
        from nova.runtime.cpu.graph import record

        return record(self, request)

    def add_host_callback(self, stream: Stream, fn: Callable[[], Any], future: Future) -> None:
        from nova.runtime.cpu.callbacks import add_host_callback

        add_host_callback(stream, fn, future)

    @property
    def dlpack_device(self) -> tuple[int, int]:
        from nova.runtime.dlpack import KDL_CPU  # NumPy: only when DLPack is used

        return (KDL_CPU, 0)

    def dlpack_export_sync(self, buffer: Buffer, stream: int | None) -> None:
        if stream is not None and stream != -1:
            raise BufferError(f"stream={stream!r} is meaningless for a cpu buffer")
        buffer.ready_stream().synchronize()

    def __init__(self) -> None:
        self.arena = GuardedArena("cpu:0")
        # every stream's queue, also of streams already collected whose workers still run
        self._queues: weakref.WeakSet[StreamQueue] = weakref.WeakSet()
        self._deferred: DeferredFrees | None = None  # `_frees`, made on the first raw free
        self._deferred_lock = _thread.allocate_lock()
        super().__init__(DeviceKind.CPU, 0)
        self.workers = max(1, config.get().cpu_workers or os.cpu_count() or 1)
        self._helpers = (HelperThreads(self.workers - 1, thread_name_prefix="nova-cpu-block")
                         if self.workers > 1 else None)
        self._streams: weakref.WeakSet[CpuStream] = weakref.WeakSet()

    @cached_property
    def properties(self) -> DeviceProperties:
        info = _cpuinfo()
        page = os.sysconf("SC_PAGE_SIZE")
        try:
            mhz = float(info.get("cpu MHz", "0"))
        except ValueError:
            mhz = 0.0
        return DeviceProperties(
            name=info.get("model name", "x86-64 CPU"),
            kind=DeviceKind.CPU,
            index=0,
            compute_capability=(0, 0),
            multiprocessor_count=self.workers,
            total_memory=page * os.sysconf("SC_PHYS_PAGES"),
            warp_size=32,
            max_threads_per_block=1024,
            max_block_dim=(1024, 1024, 64),
            max_grid_dim=(2**31 - 1, 65535, 65535),
            max_shared_memory_per_block=48 * 1024,
            max_shared_memory_per_block_optin=MAX_SHARED_OPTIN,
            clock_rate_khz=int(mhz * 1000),
        )

    def mem_info(self) -> tuple[int, int]:
        page = os.sysconf("SC_PAGE_SIZE")
        return page * os.sysconf("SC_AVPHYS_PAGES"), page * os.sysconf("SC_PHYS_PAGES")

    # --- memory ------------------------------------------------------------------------------
    @property
    def _frees(self) -> DeferredFrees:
        """The raw frees waiting for stream work (nova.runtime.cpu.deferred_free), made on the
        first raw free: a process that never hands memory back to the arena (a cached kernel's
        first call) does not import that module."""
        frees = self._deferred
        if frees is None:
            from nova.runtime.cpu.deferred_free import DeferredFrees

            with self._deferred_lock:
                if self._deferred is None:
                    self._deferred = DeferredFrees(self.arena.free)
                frees = self._deferred
        return frees

    def _flush_frees(self) -> None:
        frees = self._deferred
        if frees is not None:
            frees.flush()

    def _raw_alloc(self, size: int) -> int:
        self._flush_frees()
        return self.arena.allocate(size)  # page-aligned (ALIGNMENT and more); OutOfMemoryError

    def _raw_free(self, ptr: int) -> None:
        """Unmapped once the stream work queued so far has run (nova.runtime.cpu.deferred_free:
        the pool hands back stream-ordered frees that queued work may still read)."""
        self._frees.free(ptr, list(self._queues))

    @cached_property
    def host_heap(self) -> HostHeap:
        """The heap host code linked for this device allocates from (malloc/free rebound)."""
        from nova.runtime.cpu.host_heap import HostHeap

        return HostHeap(self.arena)

    def host_memory_in_place(self, address: int, nbytes: int) -> bool:
        return self.arena.owns(address) and self.arena.owns(address + max(nbytes, 1) - 1)

    def explain_address(self, address: int) -> str | None:
        """Where a faulting address lies relative to the device's memory (for fault reports):
        before or past which allocation, or None outside the arena."""
        if not self.arena.owns(address):
            return None
        hit = self.arena.locate(address)
        if hit is None:
            return ("in the no-access guard of the cpu device's memory, next to no live "
                    "allocation: a use after free, or an index far out of bounds")
        start, size = hit
        if address < start:
            return (f"{start - address} bytes before the start of the cpu device allocation "
                    f"at {start:#x} ({size} bytes mapped): an out-of-bounds access")
        if address >= start + size:
            return (f"{address - start - size} bytes past the end of the cpu device allocation "
                    f"at {start:#x} ({size} bytes mapped): an out-of-bounds access")
        return f"inside the cpu device allocation at {start:#x} ({size} bytes mapped)"

    _raw_alloc_host = _raw_alloc
    _raw_free_host = _raw_free

    def allocate_block(self, nbytes: int, stream: Stream) -> Block:
        block = super().allocate_block(nbytes, stream)
        if config.get().poison_memory and nbytes:
            ctypes.memset(block.ptr, POISON_BYTE, nbytes)
        return block

    def _enqueue_copy(self, direction: str, dst: int, src: int, nbytes: int, stream: Stream,
                      keepalive: object) -> None:
        def copy(keep: object = keepalive) -> None:
            ctypes.memmove(dst, src, nbytes)

        self._cpu_stream(stream).enqueue(copy, f"copy_{direction} of {nbytes} bytes",
                                         inline=True)

    def _sync_copy(self, direction: str, dst: int, src: int, nbytes: int) -> None:
        # When the default stream is idle nothing can precede the copy: run it right here
        # instead of paying two thread hand-offs.
        if not self._cpu_stream(self.default_stream).run_if_idle(
                lambda: ctypes.memmove(dst, src, nbytes)):
            super()._sync_copy(direction, dst, src, nbytes)

    def _sync_memset(self, dst: int, value: int, nbytes: int) -> None:
        if not self._cpu_stream(self.default_stream).run_if_idle(
                lambda: ctypes.memset(dst, value, nbytes)):
            super()._sync_memset(dst, value, nbytes)

    def _enqueue_memset(self, dst: int, value: int, nbytes: int, stream: Stream) -> None:
        self._cpu_stream(stream).enqueue(lambda: ctypes.memset(dst, value, nbytes),
                                         f"memset of {nbytes} bytes", inline=True)

    # --- streams -----------------------------------------------------------------------------
    def _new_stream(self) -> Stream:
        stream = CpuStream(self)
        self._streams.add(stream)
        self._queues.add(stream._q)
        return stream

    def _new_event(self, timing: bool) -> Event:
        from nova.runtime.cpu.events import CpuEvent

        return CpuEvent(self, timing)

    def _cpu_stream(self, stream: Stream) -> CpuStream:
        if not isinstance(stream, CpuStream) or stream.closed:
            raise DeviceError(f"{stream!r} is not an open cpu stream")
        return stream

    def _sync_for_pool(self) -> None:
        # Wait for every stream before the pool frees cached memory, but leave stream errors to
        # the streams' own next synchronize (and never wait for the stream we are running on).
        for s in [s for s in list(self._streams) if not s.closed]:
            if not s._q.on_worker():
                s._q.drain()
        self._flush_frees()

    def _synchronize_all(self) -> None:
        streams = [s for s in list(self._streams) if not s.closed]
        for s in streams:
            s._q.drain()
        self._flush_frees()
        for s in streams:
            s._q.take_error()

    # --- modules and launches ----------------------------------------------------------------
    def _module_key(self, images: ModuleImages) -> str:
        if images.cpu_object is None:
            raise DeviceError(f"device module {images.name!r} has no CPU object, which the cpu "
                              f"device needs (it was compiled without the cpu target)")
        return image_digest(images.cpu_object)

    def _load(self, images: ModuleImages, key: str) -> DeviceModule:
        return CpuModule(self, images, digest=key)

    def _launch(self, function: DeviceFunction, grid: Dim3, block: Dim3, params: Any,
                shared_bytes: int, stream: Stream, cluster: Dim3 | None) -> None:
        assert isinstance(function, CpuFunction)
        self.check_shared(function, shared_bytes)
        from nova.runtime.launch_params import pack_params  # Device.launch's, not a launcher's

        packed = pack_params(params, function.kernel, function.name)
        run = BlockRun(function, grid, block, cluster, shared_bytes, packed, self._helpers,
                       self.workers)
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        self._cpu_stream(stream).enqueue(run.run, f"kernel @{function.name}",
                                         inline=threads <= INLINE_KERNEL_THREADS)

    def check_shared(self, function: DeviceFunction, shared_bytes: int) -> None:
        """DeviceError when a block of `function` would need more shared memory than a block
        may use (the dynamic bytes plus the kernel's static shared memory)."""
        limit = self.properties.max_shared_memory_per_block_optin
        static = function.kernel.static_shared_bytes if function.kernel is not None else 0
        if shared_bytes + static > limit:
            raise DeviceError(f"launch of @{function.name}: {shared_bytes} bytes of dynamic "
                              f"shared memory (+{static} static) exceed the {limit} bytes a "
                              f"block may use")

    def launcher(self, function: DeviceFunction, slot_format: str) -> Launcher:
        from nova.runtime.cpu.launcher import CpuLauncher

        return CpuLauncher(self, function, slot_format)
