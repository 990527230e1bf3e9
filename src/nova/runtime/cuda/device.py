"""The cuda device: one GPU through the CUDA driver API (cuda-bindings), on its primary context.

The primary context is retained once per device and made current on each thread that uses it
(`CudaDriver.make_current`). Every driver call goes through `self.driver.call` (the one checked
wrapper). `context_handle` and `driver` are public so the executor's native ABI module runs on the
same context; streams, events and functions expose their raw handles as ints (`.handle`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nova.bundle.format import Manifest, PayloadKind
from nova.errors import BundleFormatError, CudaError, DeviceError, OutOfMemoryError
from nova.runtime.cuda.driver_api import CUDA_ERROR_OUT_OF_MEMORY, CudaDriver, load_bindings
from nova.runtime.cuda.module import CudaFunction, CudaModule, pick_image
from nova.runtime.cuda.stream import CudaEvent, CudaStream
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
from nova.runtime.launch_params import pack_params
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from concurrent.futures import Future

    from nova.bundle.reader import Bundle
    from nova.runtime.cuda.abi import CudaAbi
    from nova.runtime.cuda.py_launch import LaunchBuiltins
    from nova.runtime.graph import CaptureRequest, RecordedGraph
    from nova.runtime.launcher import Launcher
    from nova.runtime.memory import Buffer

_NEVER_RELEASE = 2**64 - 1
"""CU_MEMPOOL_ATTR_RELEASE_THRESHOLD of the stream-ordered pool: keep all freed memory."""

_COPY_CALLS = {"htod": "cuMemcpyHtoDAsync", "dtoh": "cuMemcpyDtoHAsync",
               "dtod": "cuMemcpyDtoDAsync"}


class CudaDevice(Device):
    """GPU `cuda:<index>`."""

    auto_graphs = True

    def __init__(self, index: int) -> None:
        self.driver = CudaDriver(load_bindings(), f"cuda:{index}")
        self.cu_device: Any = self.driver.call("cuDeviceGet", index, current=False)
        ctx = self.driver.call("cuDevicePrimaryCtxRetain", self.cu_device, current=False)
        self.driver.context = ctx
        self.context_handle = int(ctx)
        self._block_cache: Any = None  # the native ABI's, once compiled (attach_block_cache)
        super().__init__(DeviceKind.CUDA, index)

    # --- hooks of the shared runtime (nova.runtime.device.Device) -----------------------------
    def make_abi(self, manifest: Manifest) -> CudaAbi:
        from nova.runtime.cuda.abi import CudaAbi

        return CudaAbi(self, manifest)

    def gemm_library(self) -> tuple[str, str | None, bool]:
        """cuBLASLt (nova.runtime.cuda.cublaslt), preferred for large GEMMs when it loads."""
        from nova.runtime.cuda.cublaslt import unavailable_reason

        problem = unavailable_reason()
        return "cublaslt", problem, problem is None

    def conv_library(self) -> tuple[str, str | None, bool]:
        """cuDNN (nova.runtime.cuda.cudnn), preferred for convolutions when it loads."""
        from nova.runtime.cuda.cudnn import unavailable_reason

        problem = unavailable_reason()
        return "cudnn", problem, problem is None

    def check_bundle(self, manifest: Manifest, name: str) -> None:
        check_arch(manifest, self, name)
        check_gpu_images(manifest, self, name)

    def images_may_print(self, bundle: Bundle) -> bool:
        from nova.runtime.runner_utils import gpu_images_may_print  # bundles only

        return gpu_images_may_print(bundle)

    def record_graph(self, request: CaptureRequest) -> RecordedGraph:
        from nova.runtime.cuda.graph import record

        return record(self, request)

    def add_host_callback(self, stream: Stream, fn: Callable[[], Any], future: Future) -> None:
        from nova.runtime.cuda.callbacks import add_host_callback

        add_host_callback(stream, fn, future)

    @property
    def dlpack_device(self) -> tuple[int, int]:
        from nova.runtime.dlpack import KDL_CUDA  # only when DLPack is used

        return (KDL_CUDA, self.index)

    def dlpack_export_sync(self, buffer: Buffer, stream: int | None) -> None:
        if stream != -1:
            consumer = 1 if not stream else int(stream)  # None (and 0): the legacy stream
            self.foreign_stream_waits(consumer, buffer.ready_stream())

    @property
    def context_lost(self) -> bool:
        """True after a sticky error (illegal address, trap, assert...): start a new process."""
        return self.driver.context_lost

    def _attr(self, name: str) -> int:
        attr = getattr(self.driver.raw.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self.driver.call("cuDeviceGetAttribute", attr, self.cu_device, current=False))

    @cached_property
    def properties(self) -> DeviceProperties:
        raw_name = self.driver.call("cuDeviceGetName", 256, self.cu_device, current=False)
        name = bytes(raw_name).split(b"\0", 1)[0].decode("utf-8", "replace")
        a = self._attr
        return DeviceProperties(
            name=name,
            kind=DeviceKind.CUDA,
            index=self.index,
            compute_capability=(a("COMPUTE_CAPABILITY_MAJOR"), a("COMPUTE_CAPABILITY_MINOR")),
            multiprocessor_count=a("MULTIPROCESSOR_COUNT"),
            total_memory=int(self.driver.call("cuDeviceTotalMem", self.cu_device,
                                              current=False)),
            warp_size=a("WARP_SIZE"),
            max_threads_per_block=a("MAX_THREADS_PER_BLOCK"),
            max_block_dim=(a("MAX_BLOCK_DIM_X"), a("MAX_BLOCK_DIM_Y"), a("MAX_BLOCK_DIM_Z")),
            max_grid_dim=(a("MAX_GRID_DIM_X"), a("MAX_GRID_DIM_Y"), a("MAX_GRID_DIM_Z")),
            max_shared_memory_per_block=a("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_shared_memory_per_block_optin=a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            clock_rate_khz=a("CLOCK_RATE"),
            memory_clock_rate_khz=a("MEMORY_CLOCK_RATE"),
            memory_bus_width=a("GLOBAL_MEMORY_BUS_WIDTH"),
            l2_cache_size=a("L2_CACHE_SIZE"),
        )

    def mem_info(self) -> tuple[int, int]:
        free, total = self.driver.call("cuMemGetInfo")
        return int(free), int(total)

    # --- memory ------------------------------------------------------------------------------
    def _raw_alloc(self, size: int) -> int:
        try:
            return int(self.driver.call("cuMemAlloc", size))
        except CudaError as exc:
            if exc.code != CUDA_ERROR_OUT_OF_MEMORY:
                raise
            free, total = self.mem_info()
            raise OutOfMemoryError(f"cuda:{self.index}: cuMemAlloc of {size} bytes failed: out "
                                   f"of device memory ({free} of {total} bytes free)") from None

    def _raw_free(self, ptr: int) -> None:
        self.driver.quiet("cuMemFree", ptr)

    # --- the stream-ordered pool of compiled code (gpu.alloc -> nova_rt_mem_alloc) ---------------
    @cached_property
    def _ordered_pool(self) -> Any:
        """A CUmemoryPool of its own for `gpu.alloc` (created on first use, never destroyed:
        the device lives as long as the process). Its release threshold is "never", so memory
        freed by cuMemFreeAsync stays reserved for the next allocation instead of being unmapped
        at every synchronization (the default pool's threshold of 0 made every allocation map
        fresh physical memory: ~120 us per call on an H100). None when the device has no memory
        pools (then the device's default pool serves, as cuMemAllocAsync does)."""
        try:
            if not self._attr("MEMORY_POOLS_SUPPORTED"):
                return None
            raw = self.driver.raw
            props = raw.CUmemPoolProps()
            props.allocType = raw.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
            props.handleTypes = raw.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
            props.location.type = raw.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = self.index
            pool = self.driver.call("cuMemPoolCreate", props)
        except CudaError:
            return None
        try:
            self.driver.call("cuMemPoolSetAttribute", pool,
                             raw.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                             raw.cuuint64_t(_NEVER_RELEASE))
        except CudaError:
            self.driver.quiet("cuMemPoolDestroy", pool)
            return None
        return pool

    @property
    def ordered_pool_handle(self) -> int:
        """The CUmemoryPool handle `gpu.alloc` allocates from (0: the device's default pool)."""
        pool = self._ordered_pool
        return 0 if pool is None else int(pool)

    def attach_block_cache(self, cache: Any) -> None:
        """The native ABI's block cache in front of the stream-ordered pool
        (`nova.runtime.cuda.native_blocks`; a `NativeCudaAbi`): flushed when the device trims
        its caches, and its cached bytes reported as free by `ordered_pool_usage`."""
        self._block_cache = cache

    def ordered_pool_usage(self) -> tuple[int, int] | None:
        """(bytes in use, bytes reserved) of the stream-ordered pool of compiled code, or None
        when the device's default pool serves it. Blocks the native block cache holds freed
        count as reserved, not in use (as the driver's own cached memory)."""
        pool = self._ordered_pool
        if pool is None:
            return None
        attrs = self.driver.raw.CUmemPool_attribute
        used = self.driver.call("cuMemPoolGetAttribute", pool,
                                attrs.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
        reserved = self.driver.call("cuMemPoolGetAttribute", pool,
                                    attrs.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
        cached = self._block_cache.cached_bytes() if self._block_cache is not None else 0
        return int(used) - cached, int(reserved)

    def _trim_other_caches(self) -> None:
        """Give the stream-ordered pool's free memory back to the driver (after a device-wide
        synchronize everything freed is releasable; never memory still in use), the blocks the
        native block cache holds first (freed on their streams, then waited for)."""
        pool = self.__dict__.get("_ordered_pool")  # not created just to trim it
        if pool is None:
            return
        cache = self._block_cache
        if cache is not None and cache.cached_bytes() and not self.context_lost:
            cache.flush_blocks()
            self._synchronize_all()
        self.driver.quiet("cuMemPoolTrimTo", pool, 0)
        # graph memory (gpu.alloc inside recorded graphs: nova.runtime.autograph, captures) is
        # cached per device apart from the pool; the driver frees what no launched graph uses
        self.driver.quiet("cuDeviceGraphMemTrim", self.cu_device)

    def reclaim_for_ordered_alloc(self, stream: int) -> bool:
        """An allocation from the stream-ordered pool on `stream` ran out of memory (called by
        the native code, on that error path only): synchronize, free `self.pool`'s cache and
        trim, so that the one retry may succeed. Not while `stream` is being captured into a
        graph (a synchronization would break the capture): False, no retry."""
        if self.context_lost:
            return False
        status = self.driver.call("cuStreamIsCapturing", self.driver.raw.CUstream(stream))
        if int(status) != int(self.driver.raw.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE):
            return False
        self.synchronize()
        self.pool.empty_cache()  # also trims the stream-ordered pool
        return True

    def _raw_alloc_host(self, size: int) -> int:
        try:
            return int(self.driver.call("cuMemAllocHost", size))
        except CudaError as exc:
            if exc.code != CUDA_ERROR_OUT_OF_MEMORY:
                raise
            raise OutOfMemoryError(f"cuda:{self.index}: cuMemAllocHost of {size} bytes "
                                   f"failed: out of page-locked host memory") from None

    def _raw_free_host(self, ptr: int) -> None:
        self.driver.quiet("cuMemFreeHost", ptr)

    def _enqueue_copy(self, direction: str, dst: int, src: int, nbytes: int, stream: Stream,
                      keepalive: object) -> None:
        # Pageable host memory is consumed (htod) or filled (dtoh) before the call returns, so
        # `keepalive` needs no extension; pinned HostBuffers must outlive their async copies.
        self.driver.call(_COPY_CALLS[direction], dst, src, nbytes, self._cu_stream(stream).cu)

    def _enqueue_memset(self, dst: int, value: int, nbytes: int, stream: Stream) -> None:
        self.driver.call("cuMemsetD8Async", dst, value, nbytes, self._cu_stream(stream).cu)

    # --- streams -----------------------------------------------------------------------------
    def _new_stream(self) -> Stream:
        return CudaStream(self)

    def _new_event(self, timing: bool) -> Event:
        return CudaEvent(self, timing)

    def _cu_stream(self, stream: Stream) -> CudaStream:
        if not isinstance(stream, CudaStream) or stream.closed:
            raise DeviceError(f"{stream!r} is not an open stream of {self!r}")
        return stream

    def _synchronize_all(self) -> None:
        self.driver.call("cuCtxSynchronize")

    def foreign_stream_waits(self, consumer_stream: int, producer: Stream | None = None) -> None:
        """Make a foreign stream (a raw CUstream value, 1 = legacy, 2 = per-thread) wait for
        everything enqueued so far on `producer` (default stream when None; DLPack export)."""
        ev = CudaEvent(self, timing=False)
        ev.record(producer or self.default_stream)
        self.driver.call("cuStreamWaitEvent", self.driver.raw.CUstream(consumer_stream), ev.cu, 0)
        ev.close()

    def wait_for_foreign_stream(self, producer_stream: int) -> None:
        """Make the default stream wait for work enqueued so far on a foreign stream."""
        ev = CudaEvent(self, timing=False)
        self.driver.call("cuEventRecord", ev.cu, self.driver.raw.CUstream(producer_stream))
        self.default_stream.wait(ev)
        ev.close()

    # --- modules and launches ----------------------------------------------------------------
    def _module_key(self, images: ModuleImages) -> str:
        return image_digest(pick_image(images, self.arch)[1])

    def _load(self, images: ModuleImages, key: str) -> DeviceModule:
        return CudaModule(self, images)

    def _launch(self, function: DeviceFunction, grid: Dim3, block: Dim3, params: Any,
                shared_bytes: int, stream: Stream, cluster: Dim3 | None) -> None:
        assert isinstance(function, CudaFunction)
        s = self._cu_stream(stream)
        name = function.name
        if isinstance(params, int) and not isinstance(params, bool):
            packed, address = None, params  # the driver copies the values during the call
        else:
            packed = pack_params(params, function.kernel, name)
            address = packed.address
        self.opt_in_shared(function, shared_bytes)
        if cluster is None:
            self.driver.call("cuLaunchKernel", function.cu, *grid, *block, shared_bytes, s.cu,
                             address, 0, kernel=name)
        else:
            self.driver.call("cuLaunchKernelEx", self._cluster_config(name, grid, block, cluster,
                                                                      shared_bytes, s),
                             function.cu, address, 0, kernel=name)
        s.last_kernel = name
        del packed  # kept alive until the driver has copied the values

    def _occupancy(self, function: DeviceFunction, block_threads: int, shared_bytes: int) -> int:
        """The driver's occupancy calculator (registers, static and dynamic shared memory,
        block limits), after opting `function` in to `shared_bytes`. Cached per shape."""
        assert isinstance(function, CudaFunction)
        key = (block_threads, shared_bytes)
        blocks = function.occupancy.get(key)
        if blocks is None:
            self.opt_in_shared(function, shared_bytes)
            blocks = int(self.driver.call("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                          function.cu, block_threads, shared_bytes,
                                          kernel=function.name))
            function.occupancy[key] = blocks
        return blocks

    def opt_in_shared(self, function: DeviceFunction, shared_bytes: int) -> None:
        """Let `function` use `shared_bytes` of dynamic shared memory: above 48 KiB a kernel
        must opt in (cuFuncSetAttribute), once per size it has not allowed yet."""
        assert isinstance(function, CudaFunction)
        if shared_bytes > function.max_dynamic_shared:
            attr = self.driver.raw.CUfunction_attribute
            self.driver.call("cuFuncSetAttribute", function.cu,
                             attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes,
                             kernel=function.name)
            function.max_dynamic_shared = shared_bytes

    native_launch: int | None = None
    """The address of this device's `nova_cuda_launch_packed` (nova.runtime.cuda.native), set
    by the first `launcher` call; 0 while the device runs on substitute driver bindings (tests'
    fake driver), whose launchers then go through `_launch`. Tests bind it to a mock driver."""
    launch_builtins: LaunchBuiltins | None = None
    """Makes the Python-callable launches over it (nova.runtime.cuda.py_launch), set with
    `native_launch`; None where they cannot be made (launchers then call it through ctypes)."""

    def _native_launch_module(self) -> None:
        """Compile the launch module (nova.runtime.cuda.native.launch_ir) for this device."""
        if self.driver.raw is not sys.modules.get("cuda.bindings.driver"):
            self.native_launch = 0  # substitute bindings: launch through them
            return
        from nova.runtime.cuda.launch_module import compile_launch  # no llvmlite: objload

        self._launch_module = compile_launch(self)
        self.native_launch = self._launch_module.launch_packed
        self.launch_builtins = self._launch_module.builtins

    def launcher(self, function: DeviceFunction, slot_format: str) -> Launcher:
        if self.native_launch is None:
            with self._lock:
                if self.native_launch is None:
                    self._native_launch_module()
        if not self.native_launch:
            return super().launcher(function, slot_format)
        from nova.runtime.cuda.launcher import CudaLauncher

        return CudaLauncher(self, function, slot_format, self.native_launch,
                            self.launch_builtins)

    def _cluster_config(self, name: str, grid: Dim3, block: Dim3, cluster: Dim3,
                        shared_bytes: int, stream: CudaStream) -> Any:
        raw = self.driver.raw
        config = raw.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared_bytes
        config.hStream = stream.cu
        attr = raw.CUlaunchAttribute()
        attr.id = raw.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        config.attrs = [attr]
        config.numAttrs = 1
        return config


# --- bundle checks -------------------------------------------------------------------------
_SM = re.compile(r"sm_(\d+)([a-z]?)$")


def check_arch(manifest: Manifest, device: CudaDevice, name: str) -> None:
    """A bundle built for a newer GPU than `device` cannot run there (cpu runs anything)."""
    want, have = _SM.match(manifest.arch), _SM.match(device.arch)
    if want is None or have is None:
        raise BundleFormatError(f"{name}: built for '{manifest.arch}', which cannot run on "
                                f"{device.arch}")
    if int(want.group(1)) > int(have.group(1)) or (want.group(2) and want.group(1) !=
                                                   have.group(1)):
        raise BundleFormatError(f"{name}: built for {manifest.arch}, but the device "
                                f"{device.name!r} is {device.arch}")


def check_gpu_images(manifest: Manifest, device: CudaDevice, name: str) -> None:
    """A bundle compiled for the cpu device only (no PTX, no cubin) cannot run on cuda: say so
    before anything is loaded."""
    missing = [m.name for m in manifest.modules
               if m.payload(PayloadKind.PTX) is None and m.payload(PayloadKind.CUBIN) is None]
    if missing:
        raise BundleFormatError(
            f"{name}: this bundle was built without GPU images (device module(s) "
            f"{', '.join(missing)} have no PTX or cubin: compiled for the cpu device only, e.g. "
            "by `nova-run --device cpu` or with CompileOptions(ptx=False)); recompile it with "
            "PTX enabled (the default) to run it on cuda")
