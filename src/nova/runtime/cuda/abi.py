"""The cuda device's implementation of the runtime ABI.

Launches, streams, events, memory and copies are native code calling libcuda
(`nova.runtime.cuda.native`, JIT-compiled once per device). Module loading and kernel lookup
call back into Python once per program and kernel (the host code caches the handles): they go
through the device layer (`CudaDevice.load_module`, which picks cubin or PTX), and remember each
CUfunction's name so that a failed launch names its kernel. Errors are reported by the native code
through one error-path callback that records a `CudaError` (and marks the context lost after a
sticky error, so later device-layer calls fail fast instead of cascading).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import llvmlite.binding as llvm

from nova.abi import ABI_BY_NAME, DEVICE_MODULE_PREFIX, DeviceModuleDescriptor, library_plans
from nova.bundle.format import Kernel, Manifest
from nova.errors import CudaError, DeviceError, RuntimeFailure, cuda_error
from nova.runtime.cuda.launch_module import NativeLaunch, compile_launch  # noqa: F401 (re-exported)
from nova.runtime.cuda.native import (
    CALL_ENTRY,
    CONTEXT_GLOBAL,
    DEFAULT_STREAM_GLOBAL,
    DRIVER_FUNCTIONS,
    ERROR_CALLBACK_GLOBAL,
    FORGET_STREAM,
    LAST_FUNCTION_GLOBAL,
    MEM_POOL_GLOBAL,
    NATIVE_ABI_NAMES,
    RECLAIM_CALLBACK_GLOBAL,
    launch_ir,
    native_ir,
)
from nova.runtime.cuda.native_blocks import (
    ALLOC_DIRECT,
    BLOCKS_ENABLED_GLOBAL,
    CACHED_BYTES_GLOBAL,
    FLUSH_BLOCKS,
    FREE_DIRECT,
)
from nova.runtime.cuda.native_errors import (
    ERROR_CALLBACK_TYPE,
    KERNEL_NAMES,
    STICKY_ERRORS,  # noqa: F401 (re-exported)
    error_name,
    remember_kernel_name,
    report,
)
from nova.runtime.device import Device, DeviceFunction, DeviceModule, ModuleImages
from nova.runtime.native_support import (
    guarded_callback,
    host_target_machine,
    take_error,
    unwind_symbols,
)
from nova.runtime.results import ResultMemory

if TYPE_CHECKING:
    from nova.runtime.cuda.module import CudaFunction

_ERROR_CALLBACK_TYPE = ERROR_CALLBACK_TYPE
_RECLAIM_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_FLUSH_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_CALL_ENTRY_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_void_p)
_MEMCPY_TYPE = ABI_BY_NAME["nova_rt_memcpy"].ctypes_prototype()
_ALLOC_TYPE = ABI_BY_NAME["nova_rt_mem_alloc"].ctypes_prototype()
_STAGING_PER_SIZE = 4  # cached managed staging blocks per byte size (per program)
_STAGING_MAX_BYTES = 64 << 20  # larger staged arrays are freed after each call
_FREE_TYPE = ABI_BY_NAME["nova_rt_mem_free"].ctypes_prototype()
_SYNC_TYPE = ABI_BY_NAME["nova_rt_stream_synchronize"].ctypes_prototype()

_kernel_names = KERNEL_NAMES  # the same dict (tests name kernels through it)

_compile_lock = threading.Lock()


@dataclass
class NativeCudaAbi:
    """The JIT-compiled native module of one device, and where its globals live."""

    engine: llvm.ExecutionEngine
    addresses: dict[str, int]
    call_entry: int
    forget_stream: int  # runtime.cuda.native.FORGET_STREAM
    default_stream_at: int
    context_at: int
    on_error: Any  # the ctypes error callback (kept alive here)
    device: Any = None
    mem_pool_at: int = 0
    reclaim_at: int = 0
    on_reclaim: Any = None  # the ctypes reclaim callback (kept alive here)
    direct: dict[str, int] | None = None  # ALLOC_DIRECT / FREE_DIRECT -> address
    blocks_enabled_at: int = 0
    blocks_cached_at: int = 0
    flush_blocks_at: int = 0
    last_function_at: int = 0  # @nova_last_function: what a fault found by a wait names

    def set_block_cache(self, enabled: bool) -> None:
        """Turn the block cache in front of the stream-ordered pool on or off
        (`nova.runtime.cuda.native_blocks`; off flushes what it holds)."""
        ctypes.c_int32.from_address(self.blocks_enabled_at).value = int(enabled)
        if not enabled:
            self.flush_blocks()

    def block_cache_enabled(self) -> bool:
        return bool(ctypes.c_int32.from_address(self.blocks_enabled_at).value)

    def cached_bytes(self) -> int:
        """Bytes of freed blocks the block cache holds (still allocated from the driver's
        pool, free for Nova's purposes)."""
        return int(ctypes.c_int64.from_address(self.blocks_cached_at).value)

    def flush_blocks(self, stream: int = 0) -> None:
        """Give the blocks cached for `stream` (0: every stream) back to the driver, each with
        cuMemFreeAsync on the stream it was freed on; raises the first failure."""
        status = _FLUSH_TYPE(self.flush_blocks_at)(stream or None)
        if status:
            raise cuda_error("cuMemFreeAsync", error_name(status), status,
                             "giving cached gpu.alloc blocks back to the pool failed")

    def set_default_stream(self, handle: int) -> None:
        ctypes.c_void_p.from_address(self.default_stream_at).value = handle or None

    def set_mem_pool(self, handle: int) -> None:
        """The CUmemoryPool `nova_rt_mem_alloc` allocates from (0: the device's default pool)."""
        ctypes.c_void_p.from_address(self.mem_pool_at).value = handle or None

    def set_reclaim(self, reclaim: Callable[[int], bool] | None) -> None:
        """What an allocation that ran out of memory calls before its one retry: `reclaim(stream)`
        frees other caches and says whether retrying may help. Called from native code: it must
        not raise (an exception counts as False)."""
        def impl(stream: int | None) -> int:
            try:
                return int(bool(reclaim(stream or 0))) if reclaim is not None else 0
            except BaseException:  # never unwind through C frames; the OOM is then reported
                return 0

        self.on_reclaim = None if reclaim is None else _RECLAIM_TYPE(impl)
        address = ctypes.cast(self.on_reclaim, ctypes.c_void_p).value if self.on_reclaim else None
        ctypes.c_void_p.from_address(self.reclaim_at).value = address

    def set_context(self, handle: int) -> None:
        ctypes.c_void_p.from_address(self.context_at).value = handle or None


_report = report


def compile_native(device: Any = None, prefix: str = "",
                   driver_symbols: Mapping[str, int] | None = None) -> NativeCudaAbi:
    """JIT-compile the native cuda ABI. Real use: libcuda.so.1 is loaded and bound. Tests pass
    `prefix` and `driver_symbols` (`<prefix>cuX` -> mock address) instead."""
    if driver_symbols is None:
        try:
            llvm.load_library_permanently("libcuda.so.1")
        except RuntimeError as exc:
            raise DeviceError(f"cannot load the CUDA driver library libcuda.so.1: {exc}") from None
    else:
        missing = [n for n in DRIVER_FUNCTIONS if prefix + n not in driver_symbols]
        if missing:
            raise DeviceError(f"driver symbols missing: {', '.join(missing)}")
    last: list[int] = []  # the address of @nova_last_function, known after compiling

    def on_error_impl(call: int | None, code: int, function: int | None) -> None:
        last_function = ctypes.c_void_p.from_address(last[0]).value if last else None
        _report(device, ctypes.string_at(call) if call else b"?", code, function, last_function)

    on_error = _ERROR_CALLBACK_TYPE(on_error_impl)
    with _compile_lock:
        for name, address in {**unwind_symbols(), **(driver_symbols or {})}.items():
            llvm.add_symbol(name, address)
        module = llvm.parse_assembly(native_ir(prefix))
        module.verify()
        engine = llvm.create_mcjit_compiler(module, host_target_machine())
        engine.finalize_object()
    last.append(engine.get_global_value_address(LAST_FUNCTION_GLOBAL))
    native = NativeCudaAbi(
        engine=engine,
        addresses={n: engine.get_function_address(n) for n in NATIVE_ABI_NAMES},
        call_entry=engine.get_function_address(CALL_ENTRY),
        forget_stream=engine.get_function_address(FORGET_STREAM),
        default_stream_at=engine.get_global_value_address(DEFAULT_STREAM_GLOBAL),
        context_at=engine.get_global_value_address(CONTEXT_GLOBAL),
        on_error=on_error,
        device=device,
        mem_pool_at=engine.get_global_value_address(MEM_POOL_GLOBAL),
        reclaim_at=engine.get_global_value_address(RECLAIM_CALLBACK_GLOBAL),
        direct={n: engine.get_function_address(n) for n in (ALLOC_DIRECT, FREE_DIRECT)},
        blocks_enabled_at=engine.get_global_value_address(BLOCKS_ENABLED_GLOBAL),
        blocks_cached_at=engine.get_global_value_address(CACHED_BYTES_GLOBAL),
        flush_blocks_at=engine.get_function_address(FLUSH_BLOCKS),
        last_function_at=last[0],
    )
    ctypes.c_void_p.from_address(
        engine.get_global_value_address(ERROR_CALLBACK_GLOBAL)).value = ctypes.cast(
            on_error, ctypes.c_void_p).value
    return native


def launch_engine(prefix: str = "", driver_symbols: Mapping[str, int] | None = None) -> Any:
    """The launch module (`native.launch_ir`) JIT-compiled by MCJIT, bound to libcuda or to
    `driver_symbols`: what nova.runtime.cuda.launch_module falls back to when objload cannot
    place the module's object."""
    if driver_symbols is None:
        try:
            llvm.load_library_permanently("libcuda.so.1")
        except RuntimeError as exc:
            raise DeviceError(f"cannot load the CUDA driver library libcuda.so.1: {exc}") from None
    with _compile_lock:
        for name, address in (driver_symbols or {}).items():
            llvm.add_symbol(name, address)
        module = llvm.parse_assembly(launch_ir(prefix))
        module.verify()
        engine = llvm.create_mcjit_compiler(module, host_target_machine())
        engine.finalize_object()
    return engine


_natives: dict[int, NativeCudaAbi] = {}


def native_for(device: Any) -> NativeCudaAbi:
    """The device's native module (compiled on first use; its globals set to the device's
    context and default stream)."""
    with _compile_lock:
        native = _natives.get(id(device))
    if native is None:
        native = compile_native(device)
        native.set_context(device.context_handle)
        native.set_default_stream(device.default_stream.handle)
        native.set_mem_pool(device.ordered_pool_handle)
        native.set_reclaim(device.reclaim_for_ordered_alloc)
        native.set_block_cache(True)
        with _compile_lock:
            native = _natives.setdefault(id(device), native)
        attach = getattr(device, "attach_block_cache", None)
        if attach is not None:  # the device flushes it and reports it in ordered_pool_usage
            attach(native)
    return native


def _store_pointer(out: int | None, value: int) -> None:
    if not out:
        raise RuntimeFailure("null out-pointer passed to the runtime")
    ctypes.c_void_p.from_address(out).value = value or None


_CUDA_ERROR_INVALID_VALUE = 1


class CudaAbi:
    """Runtime ABI of one program on a cuda device."""

    def __init__(self, device: Device, manifest: Manifest,
                 native: NativeCudaAbi | None = None) -> None:
        self.device = device
        self.manifest = manifest
        self.native = native or native_for(device)
        # handle -> (module, its manifest kernels, its gpu.module name)
        self._modules: dict[int, tuple[DeviceModule, tuple[Kernel, ...], str]] = {}
        self._functions: dict[int, DeviceFunction] = {}
        self._callbacks = {
            "nova_rt_module_load": ABI_BY_NAME["nova_rt_module_load"].ctypes_prototype()(
                guarded_callback("nova_rt_module_load", self._module_load)),
            "nova_rt_module_get_function":
                ABI_BY_NAME["nova_rt_module_get_function"].ctypes_prototype()(
                    guarded_callback("nova_rt_module_get_function", self._get_function)),
        }
        self.call_entry = _CALL_ENTRY_TYPE(self.native.call_entry)
        self._memcpy = _MEMCPY_TYPE(self.native.addresses["nova_rt_memcpy"])
        self._alloc = _ALLOC_TYPE(self.native.addresses["nova_rt_mem_alloc"])
        self._staging: dict[int, list[int]] = {}  # nbytes -> cached managed blocks
        self._free = _FREE_TYPE(self.native.addresses["nova_rt_mem_free"])
        self._sync = _SYNC_TYPE(self.native.addresses["nova_rt_stream_synchronize"])
        self._init_library()

    def _init_library(self) -> None:
        """cuBLASLt / cuDNN for programs with library plans (nova.runtime.cuda.library): each
        loaded, and its native call compiled, only when the manifest lists plans of its kind; a
        missing library fails the load here, saying where it looked."""
        try:
            self.library_plans = library_plans(getattr(self.manifest, "extra", None) or {})
        except ValueError as exc:
            raise RuntimeFailure(f"this program's library plans are malformed: {exc}") from None
        self.library_call = 0
        self._library: Any = None
        if not self.library_plans:
            return
        from nova.runtime.cuda.library import ProgramLibraries

        self._library = ProgramLibraries(self.device, self.library_plans)
        self.library_call = self._library.call
        self._callbacks["nova_rt_library_plan"] = \
            ABI_BY_NAME["nova_rt_library_plan"].ctypes_prototype()(
                guarded_callback("nova_rt_library_plan", self._library_plan))

    def _library_plan(self, out: int, index: int) -> None:
        if not 0 <= index < len(self.library_plans):
            raise RuntimeFailure(f"nova_rt_library_plan: plan {index} does not exist (the "
                                 f"manifest lists {len(self.library_plans)})")
        _store_pointer(out, self._library.plan(index))

    def symbols(self) -> dict[str, int]:
        symbols = dict(self.native.addresses)
        for name, callback in self._callbacks.items():
            symbols[name] = ctypes.cast(callback, ctypes.c_void_p).value or 0
        if self.library_call:
            symbols["nova_rt_library_call"] = self.library_call
        return symbols

    def preload(self, linked: Any) -> None:
        """Load every device module and kernel of the program now, at `nova.load` time, as
        upstream's global constructors do. Loading a module (or a lazily loaded kernel) while
        another kernel runs can wait for it, so a first launch in the middle of a program could
        serialize streams that must run concurrently. The host code's own first-use loads then
        find the cached modules."""
        scratch = ctypes.c_void_p()
        for index in range(len(self.library_plans)):  # descriptors + heuristics now, not mid-run
            self._library_plan(ctypes.addressof(scratch), index)
        for listed in self.manifest.modules:
            descriptor = linked.global_address(f"{DEVICE_MODULE_PREFIX}{listed.name}")
            self._module_load(ctypes.addressof(scratch), descriptor)
            module = scratch.value or 0
            for kernel in listed.kernels:
                name = ctypes.create_string_buffer(kernel.name.encode())
                self._get_function(ctypes.addressof(scratch), module, ctypes.addressof(name))

    def _module_load(self, out: int, descriptor: int) -> None:
        if not descriptor:
            raise RuntimeFailure("nova_rt_module_load: null module descriptor")
        images = ModuleImages.from_descriptor(DeviceModuleDescriptor.from_address(descriptor),
                                              self.manifest.arch)
        module = self.device.load_module(images)
        listed = next((m for m in self.manifest.modules if m.name == images.name), None)
        self._modules[module.handle] = (module, listed.kernels if listed else (), images.name)
        _store_pointer(out, module.handle)

    def _get_function(self, out: int, module: int, name: int) -> None:
        entry = self._modules.get(module or 0)
        if entry is None:
            raise RuntimeFailure(f"invalid module handle {module or 0:#x}")
        loaded, kernels, module_name = entry
        kernel_name = ctypes.string_at(name).decode() if name else ""
        kernel = next((k for k in kernels if k.name == kernel_name), None)
        function = loaded.get_function(kernel_name, kernel)
        self._allow_dynamic_shared(function)
        self._functions[function.handle] = function
        # errors name the kernel as the program's launch does: @module::@func where the two
        # differ (outlining names the second launch's module @main_kernel_0, its func @main_kernel)
        qualified = (kernel_name if module_name in ("", kernel_name)
                     else f"{module_name}::@{kernel_name}")
        remember_kernel_name(function.handle, qualified)
        _store_pointer(out, function.handle)

    def _allow_dynamic_shared(self, function: DeviceFunction) -> None:
        """Opt the kernel in to all the dynamic shared memory the device allows, once, so that
        native launches with more than 48 KiB need no per-launch attribute call. The static size
        comes from the driver (not the manifest); if the opt-in fails, launches above 48 KiB
        fail later with the driver's error, naming the kernel."""
        current = getattr(function, "max_dynamic_shared", None)
        driver = getattr(self.device, "driver", None)
        if current is None or driver is None:
            return
        cuda_function = cast("CudaFunction", function)  # what has max_dynamic_shared
        attrs = driver.raw.CUfunction_attribute
        try:
            static = int(driver.call("cuFuncGetAttribute",
                                     attrs.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                     cuda_function.cu, kernel=function.name))
            allowed = self.device.properties.max_shared_memory_per_block_optin - static
            if allowed > current:
                driver.call("cuFuncSetAttribute", cuda_function.cu,
                            attrs.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, allowed,
                            kernel=function.name)
                cuda_function.max_dynamic_shared = allowed
        except CudaError:
            return

    # --- what the executor needs -------------------------------------------------------------
    def stage_in(self, array: Any) -> tuple[int, object]:
        """Copy a host array into new *managed* memory (ordered on the default stream).

        Managed, not plain device memory: an entry's host code may read or write a memref
        argument itself (loops, printMemref, memref.copy) as well as hand it to kernels, and
        only managed memory is valid for both (plain device memory would segfault the host
        code). Nova buffers passed in place stay the fast path."""
        if not array.nbytes:
            return 0, (0, array)
        address = self._take_staging(array.nbytes)
        if self._memcpy(address, array.ctypes.data, array.nbytes, None):
            self._give_staging(address, array.nbytes)
            raise take_error() or RuntimeFailure("staging copy failed")
        # The entry's host code may read the argument itself before any kernel runs: the copy
        # (asynchronous on the default stream) must have landed. Found on an H100: a host loop
        # over a freshly allocated staging block read zeros on the first call.
        self.synchronize()
        return address, (address, array)

    def _take_staging(self, nbytes: int) -> int:
        """A managed block of `nbytes`: a cached one (calls repeat with the same shapes) or new."""
        with contextlib.suppress(KeyError, IndexError):  # none cached (or another thread won)
            return self._staging[nbytes].pop()
        pointer = ctypes.c_void_p()
        if self._alloc(ctypes.addressof(pointer), nbytes, None, 1):
            raise take_error() or RuntimeFailure("staging allocation failed")
        return pointer.value or 0

    def _give_staging(self, address: int, nbytes: int) -> None:
        """Keep up to _STAGING_PER_SIZE blocks per size for the next call; free the rest."""
        cached = self._staging.setdefault(nbytes, [])
        if len(cached) < _STAGING_PER_SIZE and nbytes <= _STAGING_MAX_BYTES:
            cached.append(address)
        elif self._free(address, None):
            raise take_error() or RuntimeFailure("freeing a staged argument failed")

    def stage_out(self, token: object) -> None:
        address, array = cast("tuple[int, Any]", token)  # what stage_in made
        failed = address and array.flags.writeable and self._memcpy(
            array.ctypes.data, address, array.nbytes, None)
        if failed:
            raise take_error() or RuntimeFailure("copying a staged argument back failed")

    def release(self, token: object) -> None:
        """Return a staged block (the call has synchronized: nothing uses it any more)."""
        if token is None:
            return
        address, array = cast("tuple[int, Any]", token)  # what stage_in made
        if address:
            self._give_staging(address, array.nbytes)

    def fetch(self, address: int, nbytes: int) -> bytes:
        """Copy `nbytes` at any address: plain host memory (e.g. `memref.alloc` in host code)
        directly, memory the driver knows (device, managed, registered) with cuMemcpyAsync."""
        if nbytes == 0:
            return b""
        if not self._driver_knows(address):
            return ctypes.string_at(address, nbytes)
        out = ctypes.create_string_buffer(nbytes)
        if self._memcpy(ctypes.addressof(out), address, nbytes, None) or self._sync(None):
            raise take_error() or RuntimeFailure("copying a memref result failed")
        return out.raw

    def take_allocation(self, address: int) -> ResultMemory | None:
        """Hand a returned `gpu.alloc` allocation (device or managed memory at `address`) to
        the caller. It is not host-addressable for NumPy, so the executor copies the result
        and releases it at once (nova_rt_mem_free, ordered on the default stream after the
        copy). None for memory the driver does not own (host-heap memory, registered or not:
        the executor frees that with libc free)."""
        if not self._is_device_allocation(address):
            return None

        def free() -> None:
            if self._free(address, None):
                raise take_error() or RuntimeFailure("freeing a returned memref failed")

        return ResultMemory(address, free, host_addressable=False)

    def _is_device_allocation(self, address: int) -> bool:
        """Device or managed memory (what nova_rt_mem_alloc makes), not host memory."""
        driver = getattr(self.device, "driver", None)
        if driver is None:
            return True
        attr = driver.raw.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        # CUDA_ERROR_INVALID_VALUE: pageable host memory; other failures (a lost context)
        # raise rather than let the executor free device memory with libc free
        code, kind = driver.call("cuPointerGetAttribute", attr, address,
                                 allow=(_CUDA_ERROR_INVALID_VALUE,))
        if code == _CUDA_ERROR_INVALID_VALUE:
            return False
        if int(kind) != int(driver.raw.CUmemorytype.CU_MEMORYTYPE_HOST):
            return True
        managed = driver.raw.CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED
        return bool(driver.call("cuPointerGetAttribute", managed, address))  # else registered

    def _driver_knows(self, address: int) -> bool:
        driver = getattr(self.device, "driver", None)
        if driver is None:
            return True
        attr = driver.raw.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        try:
            driver.call("cuPointerGetAttribute", attr, address)
        except CudaError:
            return False  # CUDA_ERROR_INVALID_VALUE: pageable host memory
        return True

    def synchronize(self) -> None:
        """Wait for the default stream natively, so a fault names the latest kernel."""
        if self._sync(None):
            raise take_error() or RuntimeFailure("cuStreamSynchronize failed")

    def close(self) -> None:
        """Modules stay cached by the device; forget this program's handles and free the
        cached staging blocks."""
        self._modules.clear()
        self._functions.clear()
        staging, self._staging = self._staging, {}
        for blocks in staging.values():
            for address in blocks:
                self._free(address, None)
