"""A fake `cuda.bindings.driver` for testing Nova's cuda device code on machines without a GPU.

It keeps the real module's types and enums (they import without a driver) and replaces the driver
functions with a host-memory emulation that follows the bindings' conventions: every function
returns a tuple whose first item is a CUresult, outputs follow (None on failure). Streams execute
synchronously. Kernels do nothing except `trap_kernel`, which leaves a sticky
CUDA_ERROR_LAUNCH_FAILED to be reported by the next synchronization, as real hardware does.
It checks what real hardware would not tolerate either: unknown handles, out-of-range pointers.
"""

from __future__ import annotations

import ctypes
import itertools
import time
from typing import Any

from cuda.bindings import driver as real

R = real.CUresult
OK = R.CUDA_SUCCESS

ATTRIBUTES = {
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 132,
    "WARP_SIZE": 32, "MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
    "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64, "MAX_GRID_DIM_X": 2**31 - 1,
    "MAX_GRID_DIM_Y": 65535, "MAX_GRID_DIM_Z": 65535, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448, "CLOCK_RATE": 1980000,
    "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120, "L2_CACHE_SIZE": 52428800,
    "MEMORY_POOLS_SUPPORTED": 1,
}


class FakeDriver:
    """Attribute access falls back to the real module (types, enums)."""

    def __init__(self, capacity: int = 1 << 24) -> None:
        self.capacity = capacity
        self.used = 0
        self.allocations: dict[int, ctypes.Array] = {}
        self.host_allocations: dict[int, ctypes.Array] = {}
        self.streams: set[int] = set()
        self.events: dict[int, float | None] = {}
        self.modules: dict[int, bytes] = {}
        self.functions: dict[int, str] = {}
        self.launches: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.pending_fault = False
        self.lost = False
        self.current: Any = None
        self.attributes = dict(ATTRIBUTES)
        self.mem_pools: dict[int, dict[str, Any]] = {}  # handle -> attributes set, trims
        self.capturing: set[int] = set()  # streams cuStreamIsCapturing reports as capturing
        self._ids = itertools.count(0x1000, 0x10)

    def __getattr__(self, name: str) -> Any:
        return getattr(real, name)

    def _log(self, name: str) -> None:
        self.calls.append(name)

    def _sticky(self) -> tuple | None:
        return (R.CUDA_ERROR_LAUNCH_FAILED, None) if self.lost else None

    # --- device and context ----------------------------------------------------------------
    def cuGetErrorString(self, err: Any) -> tuple:
        return OK, f"fake description of {R(int(err)).name}".encode()

    def cuDeviceGet(self, index: int) -> tuple:
        self._log("cuDeviceGet")
        return (OK, real.CUdevice(index)) if index == 0 else (R.CUDA_ERROR_INVALID_DEVICE, None)

    def cuDevicePrimaryCtxRetain(self, dev: Any) -> tuple:
        return OK, real.CUcontext(0xC0)

    def cuCtxSetCurrent(self, ctx: Any) -> tuple:
        self._log("cuCtxSetCurrent")
        self.current = ctx
        return (OK,)

    def cuDeviceGetAttribute(self, attr: Any, dev: Any) -> tuple:
        return OK, self.attributes[attr.name.removeprefix("CU_DEVICE_ATTRIBUTE_")]

    def cuDeviceGetName(self, length: int, dev: Any) -> tuple:
        return OK, b"Fake H100".ljust(length, b"\0")

    def cuDeviceTotalMem(self, dev: Any) -> tuple:
        return OK, self.capacity

    def cuMemGetInfo(self) -> tuple:
        return OK, self.capacity - self.used, self.capacity

    def cuCtxSynchronize(self) -> tuple:
        self._log("cuCtxSynchronize")
        return self._sync_result()

    def _sync_result(self) -> tuple:
        if self.pending_fault or self.lost:
            self.pending_fault, self.lost = False, True
            return (R.CUDA_ERROR_LAUNCH_FAILED,)
        return (OK,)

    # --- memory ------------------------------------------------------------------------------
    def cuMemAlloc(self, size: int) -> tuple:
        self._log("cuMemAlloc")
        if self._sticky():
            return self._sticky()
        if self.used + size > self.capacity:
            return R.CUDA_ERROR_OUT_OF_MEMORY, None
        buf = (ctypes.c_char * (size + 256))()
        ptr = -(-ctypes.addressof(buf) // 256) * 256
        self.allocations[ptr] = buf
        self.used += size
        return OK, real.CUdeviceptr(ptr)

    def cuMemFree(self, ptr: Any) -> tuple:
        self._log("cuMemFree")
        buf = self.allocations.pop(int(ptr), None)
        if buf is None:
            return (R.CUDA_ERROR_INVALID_VALUE,)
        self.used -= len(buf) - 256
        return (OK,)

    # --- stream-ordered memory pools (bookkeeping only: compiled code allocates from them) ---
    def cuMemPoolCreate(self, props: Any) -> tuple:
        self._log("cuMemPoolCreate")
        handle = next(self._ids)
        self.mem_pools[handle] = {"props": (props.allocType, props.location.type,
                                            props.location.id, props.handleTypes),
                                  "trims": []}
        return OK, real.CUmemoryPool(handle)

    def cuMemPoolSetAttribute(self, pool: Any, attr: Any, value: Any) -> tuple:
        self.mem_pools[int(pool)][attr.name] = int(value)
        return (OK,)

    def cuMemPoolGetAttribute(self, pool: Any, attr: Any) -> tuple:
        values = {"CU_MEMPOOL_ATTR_USED_MEM_CURRENT": self.mem_pools[int(pool)].get("used", 0),
                  "CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT": 2 << 20}
        return OK, real.cuuint64_t(values[attr.name])

    def cuMemPoolTrimTo(self, pool: Any, keep: int) -> tuple:
        self._log("cuMemPoolTrimTo")
        self.mem_pools[int(pool)]["trims"].append(keep)
        return (OK,)

    def cuDeviceGraphMemTrim(self, device: Any) -> tuple:
        self._log("cuDeviceGraphMemTrim")
        return (OK,)

    def cuMemPoolDestroy(self, pool: Any) -> tuple:
        self.mem_pools.pop(int(pool), None)
        return (OK,)

    def cuStreamIsCapturing(self, stream: Any) -> tuple:
        status = real.CUstreamCaptureStatus
        return OK, (status.CU_STREAM_CAPTURE_STATUS_ACTIVE if int(stream) in self.capturing
                    else status.CU_STREAM_CAPTURE_STATUS_NONE)

    def cuMemAllocHost(self, size: int) -> tuple:
        buf = (ctypes.c_char * max(size, 1))()
        self.host_allocations[ctypes.addressof(buf)] = buf
        return OK, ctypes.addressof(buf)

    def cuMemFreeHost(self, ptr: int) -> tuple:
        return (OK,) if self.host_allocations.pop(int(ptr), None) is not None else \
            (R.CUDA_ERROR_INVALID_VALUE,)

    def _device_range_ok(self, ptr: int, n: int) -> bool:
        for base, buf in self.allocations.items():
            if base <= ptr and ptr + n <= ctypes.addressof(buf) + len(buf):
                return True
        return False

    def _copy(self, name: str, dst: int, src: int, n: int, stream: Any, check: tuple) -> tuple:
        self._log(name)
        if self._sticky():
            return (R.CUDA_ERROR_LAUNCH_FAILED,)
        if int(stream) not in self.streams:
            return (R.CUDA_ERROR_INVALID_HANDLE,)
        for ptr, is_device in zip((int(dst), int(src)), check, strict=True):
            if is_device and not self._device_range_ok(ptr, n):
                return (R.CUDA_ERROR_INVALID_VALUE,)
        ctypes.memmove(int(dst), int(src), n)
        return (OK,)

    def cuMemcpyHtoDAsync(self, dst: Any, src: Any, n: int, stream: Any) -> tuple:
        return self._copy("cuMemcpyHtoDAsync", dst, src, n, stream, (True, False))

    def cuMemcpyDtoHAsync(self, dst: Any, src: Any, n: int, stream: Any) -> tuple:
        return self._copy("cuMemcpyDtoHAsync", dst, src, n, stream, (False, True))

    def cuMemcpyDtoDAsync(self, dst: Any, src: Any, n: int, stream: Any) -> tuple:
        return self._copy("cuMemcpyDtoDAsync", dst, src, n, stream, (True, True))

    def cuMemsetD8Async(self, dst: Any, value: int, n: int, stream: Any) -> tuple:
        self._log("cuMemsetD8Async")
        if int(stream) not in self.streams or not self._device_range_ok(int(dst), n):
            return (R.CUDA_ERROR_INVALID_VALUE,)
        ctypes.memset(int(dst), value, n)
        return (OK,)

    # --- streams and events ------------------------------------------------------------------
    def cuStreamCreate(self, flags: int) -> tuple:
        assert flags == int(real.CUstream_flags.CU_STREAM_NON_BLOCKING)
        handle = next(self._ids)
        self.streams.add(handle)
        return OK, real.CUstream(handle)

    def cuStreamDestroy(self, stream: Any) -> tuple:
        self._log("cuStreamDestroy")
        if self.lost:
            return (R.CUDA_ERROR_LAUNCH_FAILED,)
        self.streams.discard(int(stream))
        return (OK,)

    def cuStreamSynchronize(self, stream: Any) -> tuple:
        self._log("cuStreamSynchronize")
        return self._sync_result()

    def cuStreamQuery(self, stream: Any) -> tuple:
        return self._sync_result()

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple:
        self._log("cuStreamWaitEvent")
        return (OK,)

    def cuEventCreate(self, flags: int) -> tuple:
        handle = next(self._ids)
        self.events[handle] = None
        return OK, real.CUevent(handle)

    def cuEventDestroy(self, event: Any) -> tuple:
        self.events.pop(int(event), None)
        return (OK,)

    def cuEventRecord(self, event: Any, stream: Any) -> tuple:
        self.events[int(event)] = time.perf_counter()
        return (OK,)

    def cuEventQuery(self, event: Any) -> tuple:
        return (OK,)

    def cuEventSynchronize(self, event: Any) -> tuple:
        return (OK,)

    def cuEventElapsedTime(self, start: Any, end: Any) -> tuple:
        t0, t1 = self.events[int(start)], self.events[int(end)]
        return OK, (t1 - t0) * 1000.0

    # --- modules and launches ----------------------------------------------------------------
    def cuModuleLoadData(self, image: bytes) -> tuple:
        self._log("cuModuleLoadData")
        handle = next(self._ids)
        self.modules[handle] = bytes(image)
        return OK, real.CUmodule(handle)

    def cuModuleLoadDataEx(self, image: bytes, n: int, options: list, values: list) -> tuple:
        self._log("cuModuleLoadDataEx")
        assert image.endswith(b"\0") and n == len(options) == len(values)
        if b"syntax error" in image:
            log = b"ptxas application ptx input, line 3; error: syntax error near 'bogus'\0"
            values[0][: len(log)] = log
            return R.CUDA_ERROR_INVALID_PTX, None
        return self.cuModuleLoadData(image)

    def cuModuleUnload(self, module: Any) -> tuple:
        self.modules.pop(int(module), None)
        return (OK,)

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple:
        if b".entry " + name not in self.modules[int(module)]:
            return R.CUDA_ERROR_NOT_FOUND, None
        handle = next(self._ids)
        self.functions[handle] = name.decode()
        return OK, real.CUfunction(handle)

    def cuFuncLoad(self, function: Any) -> tuple:
        """Eager load of a lazily loaded kernel (CUDA 12.4+): nothing to do in the fake."""
        return (OK,) if int(function) in self.functions else (R.CUDA_ERROR_INVALID_HANDLE,)

    def cuFuncSetAttribute(self, fn: Any, attr: Any, value: int) -> tuple:
        self._log(f"cuFuncSetAttribute:{attr.name}={value}")
        return (OK,)

    def _record_launch(self, fn: Any, grid: tuple, block: tuple, shared: int, stream: Any,
                       params: int, cluster: tuple | None) -> tuple:
        if self._sticky():
            return (R.CUDA_ERROR_LAUNCH_FAILED,)
        name = self.functions[int(fn)]
        self.launches.append({"name": name, "grid": grid, "block": block, "shared": shared,
                              "stream": int(stream), "params": params, "cluster": cluster})
        if name == "trap_kernel":
            self.pending_fault = True
        return (OK,)

    def cuLaunchKernel(self, fn: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream: Any, params: int, extra: int) -> tuple:
        self._log("cuLaunchKernel")
        return self._record_launch(fn, (gx, gy, gz), (bx, by, bz), shared, stream, params, None)

    def cuLaunchKernelEx(self, config: Any, fn: Any, params: int, extra: int) -> tuple:
        self._log("cuLaunchKernelEx")
        attr = config.attrs[0]
        assert attr.id == real.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        cluster = (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z)
        grid = (config.gridDimX, config.gridDimY, config.gridDimZ)
        block = (config.blockDimX, config.blockDimY, config.blockDimZ)
        return self._record_launch(fn, grid, block, config.sharedMemBytes, config.hStream,
                                   params, cluster)


class AnyKernelDriver(FakeDriver):
    """The fake bindings, finding every kernel a module is asked for (the images are cubins
    when ptxas exists, so the PTX text FakeDriver searches is not there)."""

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple:
        handle = next(self._ids)
        self.functions[handle] = name.decode()
        return OK, real.CUfunction(handle)
