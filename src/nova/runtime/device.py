"""The device contract and device selection.

One small ABC (`Device`) with two implementations chosen at run time: `cuda` (the CUDA driver API
through cuda-bindings, `nova.runtime.cuda.device`) and `cpu` (host memory,
                                                              worker-thread streams and
kernels compiled ahead of time to x86-64, `nova.runtime.cpu.device`). `get_device("cuda"|"cpu")` or
NOVA_DEVICE picks one; the default is cuda when a GPU is usable, else cpu.

Everything device-independent lives here once: argument checking, the caching pools, synchronous
operations (enqueue on the default stream, then wait for it), and `to_device`. Implementations
provide a handful of raw primitives (`_raw_alloc`, `_enqueue_copy`, `_launch`, ...).
"""

from __future__ import annotations

import _thread
import ctypes
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from nova.bundle.kernel_entry import Kernel
from nova.errors import ArgumentError
from nova.hashing import sha256
from nova.records import Record
from nova.runtime.pool import Block, MemoryPool
from nova.runtime.stream import Event, Stream

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    import numpy as np

    from nova.abi import DeviceModuleDescriptor
    from nova.bundle.format import Manifest
    from nova.bundle.reader import Bundle
    from nova.runtime.graph import CaptureRequest, RecordedGraph
    from nova.runtime.launcher import Launcher
    from nova.runtime.memory import Buffer, HostBuffer

Dim3 = tuple[int, int, int]


class DeviceKind(StrEnum):
    """The kinds of device Nova runs on. Shared runtime code compares members of this enum (or,
    better, asks the Device through its hooks); being a StrEnum, comparing a device's kind with
    the plain name still works in users' code and messages print the plain name."""

    CUDA = "cuda"
    CPU = "cpu"


class DeviceProperties(Record):
    """What a program may ask of a device. `compute_capability` is (0, 0) for the cpu device."""

    __match_args__ = ("name", "kind", "index", "compute_capability", "multiprocessor_count",
                      "total_memory", "warp_size", "max_threads_per_block", "max_block_dim",
                      "max_grid_dim", "max_shared_memory_per_block",
                      "max_shared_memory_per_block_optin", "clock_rate_khz",
                      "memory_clock_rate_khz", "memory_bus_width", "l2_cache_size")
    _fields = __match_args__

    name: str
    kind: DeviceKind
    index: int
    compute_capability: tuple[int, int]
    multiprocessor_count: int
    total_memory: int
    warp_size: int
    max_threads_per_block: int
    max_block_dim: Dim3
    max_grid_dim: Dim3
    max_shared_memory_per_block: int  # without opt-in
    max_shared_memory_per_block_optin: int
    clock_rate_khz: int
    memory_clock_rate_khz: int
    memory_bus_width: int
    l2_cache_size: int

    def __init__(self, name: str, kind: DeviceKind, index: int,
                 compute_capability: tuple[int, int], multiprocessor_count: int, total_memory: int,
                 warp_size: int, max_threads_per_block: int, max_block_dim: Dim3,
                 max_grid_dim: Dim3, max_shared_memory_per_block: int,
                 max_shared_memory_per_block_optin: int, clock_rate_khz: int,
                 memory_clock_rate_khz: int = 0, memory_bus_width: int = 0,
                 l2_cache_size: int = 0) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "compute_capability", compute_capability)
        object.__setattr__(self, "multiprocessor_count", multiprocessor_count)
        object.__setattr__(self, "total_memory", total_memory)
        object.__setattr__(self, "warp_size", warp_size)
        object.__setattr__(self, "max_threads_per_block", max_threads_per_block)
        object.__setattr__(self, "max_block_dim", max_block_dim)
        object.__setattr__(self, "max_grid_dim", max_grid_dim)
        object.__setattr__(self, "max_shared_memory_per_block", max_shared_memory_per_block)
        object.__setattr__(self, "max_shared_memory_per_block_optin",
                           max_shared_memory_per_block_optin)
        object.__setattr__(self, "clock_rate_khz", clock_rate_khz)
        object.__setattr__(self, "memory_clock_rate_khz", memory_clock_rate_khz)
        object.__setattr__(self, "memory_bus_width", memory_bus_width)
        object.__setattr__(self, "l2_cache_size", l2_cache_size)

    @property
    def arch(self) -> str:
        """'sm_XY' for cuda devices, 'x86_64' for the cpu device."""
        if self.kind is DeviceKind.CPU:
            return "x86_64"
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"


class ModuleImages(Record):
    """Every image of one device module; a device picks the one it can run.

    `cubin_arch` says which GPU the cubin was built for ('sm_90'); cuda loads the cubin only on a
    device of that arch and otherwise JIT-compiles the PTX. `cpu_object` is the x86-64 ELF object
    of the same kernels for the cpu device.
    """

    __match_args__ = ("name", "ptx", "cubin", "cubin_arch", "cpu_object")
    _fields = __match_args__

    name: str
    ptx: str | None
    cubin: bytes | None
    cubin_arch: str | None
    cpu_object: bytes | None

    def __init__(self, name: str, ptx: str | None = None, cubin: bytes | None = None,
                 cubin_arch: str | None = None, cpu_object: bytes | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "ptx", ptx)
        object.__setattr__(self, "cubin", cubin)
        object.__setattr__(self, "cubin_arch", cubin_arch)
        object.__setattr__(self, "cpu_object", cpu_object)

    @staticmethod
    def from_descriptor(desc: DeviceModuleDescriptor, arch: str | None) -> ModuleImages:
        """Read the images a host object's `__nova_devmod_<m>` descriptor points at (copied)."""

        def grab(ptr: int | None, size: int) -> bytes | None:
            return ctypes.string_at(ptr, size) if ptr and size > 0 else None

        ptx = grab(desc.ptx, desc.ptx_size)
        return ModuleImages(
            name=(desc.name or b"").decode("utf-8", "replace"),
            ptx=ptx.decode("utf-8") if ptx is not None else None,
            cubin=grab(desc.cubin, desc.cubin_size),
            cubin_arch=arch,
            cpu_object=grab(desc.cpu_object, desc.cpu_object_size),
        )


def image_digest(image: bytes | str) -> str:
    """sha256 of an image: the key under which devices cache loaded modules."""
    data = image.encode("utf-8") if isinstance(image, str) else image
    return sha256(data).hexdigest()


class DeviceFunction:
    """A kernel of a loaded module: `.handle` is the native handle (CUfunction or entry address)."""

    def __init__(self, module: DeviceModule, name: str, kernel: Kernel | None,
                 handle: int) -> None:
        self.module = module
        self.name = name
        self.kernel = kernel
        self.handle = handle

    def __repr__(self) -> str:
        return f"<{type(self).__name__} @{self.name} {self.handle:#x}>"


class DeviceModule(ABC):
    """A device module loaded on one device."""

    def __init__(self, device: Device, name: str) -> None:
        self.device = device
        self.name = name
        self._functions: dict[str, DeviceFunction] = {}

    @property
    @abstractmethod
    def handle(self) -> int:
        """The native module handle as an integer (CUmodule on cuda, an id on cpu)."""

    def get_function(self, name: str, kernel: Kernel | None = None) -> DeviceFunction:
        """The kernel `name`; `kernel` (its manifest entry) gives parameter sizes for launches."""
        fn = self._functions.get(name)
        if fn is None or (kernel is not None and fn.kernel is None):
            fn = self._lookup(name, kernel)
            self._functions[name] = fn
        return fn

    @abstractmethod
    def _lookup(self, name: str, kernel: Kernel | None) -> DeviceFunction: ...


def _dim3(value: int | Sequence[int], what: str, kernel: str) -> Dim3:
    """`value` as a (x, y, z) launch shape, or an ArgumentError naming `kernel` and what was
    launched (a zero dimension is rejected as CUDA rejects it, never run as an empty launch)."""
    if type(value) is int and value >= 1:  # the common case, on every launch
        return (value, 1, 1)
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ArgumentError(f"kernel @{kernel}: {what} size must be 1 to 3 ints, got {value!r}")
    shape = (*dims, *(1,) * (3 - len(dims)))
    if any(d < 1 for d in dims):
        raise ArgumentError(f"kernel @{kernel}: {what} size {shape}: every dimension must be "
                            ">= 1")
    return shape  # type: ignore[return-value]


def _check_limits(kernel: str, what: str, shape: Dim3, limits: Dim3) -> None:
    """Reject a launch dimension above the device's limit, as cuLaunchKernel does with
    CUDA_ERROR_INVALID_VALUE (so the CPU device fails where a GPU would, rather than run)."""
    for axis, dim, limit in zip("xyz", shape, limits, strict=True):
        if dim > limit:
            raise ArgumentError(f"kernel @{kernel}: {what} size {shape}: {axis} = {dim} exceeds "
                                f"the device limit of {limit} (invalid launch configuration)")


def check_nbytes(nbytes: object, what: str = "nbytes") -> int:
    """Validate a byte count (a non-negative int) or raise ArgumentError."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ArgumentError(f"{what} must be a non-negative int, got {nbytes!r}")
    return nbytes


class Device(ABC):
    """A place where kernels run and device memory lives. Obtain one with `get_device()`."""

    host_memory_is_device_memory = False
    """Whether a host address is a device address (the cpu device): a launch may then pass a
    writable C-contiguous NumPy array's own memory instead of staging a copy."""

    auto_graphs = False
    """Whether programs on this device run repeated identical calls of their replayable entries
    as recorded graphs by default (nova.runtime.autograph; NOVA_AUTO_GRAPHS overrides). cuda:
    yes, a graph launch replaces several submissions; cpu: no, a recording's replay costs about
    what the host code does."""

    def host_memory_in_place(self, address: int, nbytes: int) -> bool:
        """Whether kernels may use the host memory [address, address + nbytes) in place rather
        than a staged copy. The cpu device accepts only its own guarded memory (a returned
        result, a Buffer's): an out-of-bounds store through anything else could reach the
        Python heap (docs/device-layer.md, "Memory isolation on the cpu device")."""
        return self.host_memory_is_device_memory

    def __init__(self, kind: DeviceKind, index: int) -> None:
        self.kind = kind
        self.index = index
        self._lock = _thread.RLock()
        self._default_stream: Stream | None = None
        self._modules: dict[str, DeviceModule] = {}
        self.pool = MemoryPool(f"{kind}:{index} device pool", self._raw_alloc, self._raw_free,
                               self._sync_for_pool, trim=self._trim_other_caches)
        self.pinned_pool = MemoryPool(f"{kind}:{index} pinned host pool", self._raw_alloc_host,
                                      self._raw_free_host, self._sync_for_pool)

    # --- hooks the shared runtime asks (each device package implements them) ----------------
    @abstractmethod
    def make_abi(self, manifest: Manifest) -> Any:
        """The runtime-ABI bindings (an executor `DeviceAbi`) a program with `manifest` is linked
        against on this device."""

    def check_bundle(self, manifest: Manifest, name: str) -> None:
        """Raise BundleFormatError when a bundle cannot run here (say why before anything is
        loaded); every bundle runs on a device that does not override this."""
        return

    @abstractmethod
    def images_may_print(self, bundle: Bundle) -> bool:
        """Whether the kernel images this device runs from `bundle` can print (so the executor
        must flush C's stdio after each call)."""

    @abstractmethod
    def record_graph(self, request: CaptureRequest) -> RecordedGraph:
        """Record an entry's device work for replay (`mod.capture`, nova.runtime.graph)."""

    @abstractmethod
    def add_host_callback(self, stream: Stream, fn: Callable[[], Any], future: Future) -> None:
        """Arrange for `fn` to be handed to the callback dispatcher (nova.runtime.callbacks)
        once `stream` reaches this point; `future` receives its outcome."""

    def gemm_library(self) -> tuple[str, str | None, bool]:
        """(name, problem, preferred) of the library this device binds `nova_rt_library_call`
        to: `problem` is None when it is usable, else why not; `preferred` says whether model
        compilation's `auto` GEMM policy should give large GEMMs to it. A device that does not
        override this binds no library."""
        return "none", f"the {self.kind} device binds no library calls", False

    def conv_library(self) -> tuple[str, str | None, bool]:
        """The same as `gemm_library`, for library convolutions (`ConvPlan`s)."""
        return "none", f"the {self.kind} device binds no library calls", False

    def max_active_blocks(self, function: DeviceFunction, block_threads: int,
                          shared_bytes: int = 0) -> int:
        """How many blocks of `function` (`block_threads` threads, `shared_bytes` of dynamic
        shared memory) one multiprocessor holds at once: for grids sized to what is resident
        (persistent kernels whose warps claim work). A device that runs one block per worker at
        a time (the CPU device) keeps this default of 1 (see `_occupancy`)."""
        check_nbytes(shared_bytes, "shared_bytes")
        limit = self.properties.max_threads_per_block
        if type(block_threads) is not int or not 1 <= block_threads <= limit:
            raise ArgumentError(f"kernel @{function.name}: block_threads must be an int from 1 "
                                f"to {limit}, got {block_threads!r}")
        return self._occupancy(function, block_threads, shared_bytes)

    def _occupancy(self, function: DeviceFunction, block_threads: int, shared_bytes: int) -> int:
        """`max_active_blocks` of validated arguments."""
        return 1

    @property
    @abstractmethod
    def dlpack_device(self) -> tuple[int, int]:
        """DLPack's (device_type, device_id) for this device's memory."""

    @abstractmethod
    def dlpack_export_sync(self, buffer: Buffer, stream: int | None) -> None:
        """DLPack's export handshake: make the consumer's `stream` (the `__dlpack__(stream=)`
        argument) wait for `buffer`'s pending work, or wait for it on the host."""

    # --- description -------------------------------------------------------------------------
    @property
    @abstractmethod
    def properties(self) -> DeviceProperties: ...

    @property
    def name(self) -> str:
        return self.properties.name

    @property
    def arch(self) -> str:
        return self.properties.arch

    @abstractmethod
    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind}:{self.index} {self.name!r}>"

    # --- primitives the implementations provide ---------------------------------------------
    @abstractmethod
    def _raw_alloc(self, size: int) -> int: ...

    @abstractmethod
    def _raw_free(self, ptr: int) -> None: ...

    @abstractmethod
    def _raw_alloc_host(self, size: int) -> int: ...

    @abstractmethod
    def _raw_free_host(self, ptr: int) -> None: ...

    @abstractmethod
    def _enqueue_copy(self, direction: str, dst: int, src: int, nbytes: int, stream: Stream,
                      keepalive: object) -> None:
        """Enqueue a copy ('htod', 'dtoh', 'dtod'); `keepalive` must live until it ran."""

    @abstractmethod
    def _enqueue_memset(self, dst: int, value: int, nbytes: int, stream: Stream) -> None: ...

    @abstractmethod
    def _new_stream(self) -> Stream: ...

    @abstractmethod
    def _new_event(self, timing: bool) -> Event: ...

    @abstractmethod
    def _load(self, images: ModuleImages, key: str) -> DeviceModule:
        """Load the image this device runs (the one `_module_key` names; `key` is that digest,
        computed once)."""

    @abstractmethod
    def _module_key(self, images: ModuleImages) -> str:
        """The sha256 of the image `_load` would pick (raises DeviceError when there is none)."""

    @abstractmethod
    def _launch(self, function: DeviceFunction, grid: Dim3, block: Dim3, params: Any,
                shared_bytes: int, stream: Stream, cluster: Dim3 | None) -> None: ...

    @abstractmethod
    def _synchronize_all(self) -> None: ...

    def _sync_for_pool(self) -> None:
        self.synchronize()

    def _trim_other_caches(self) -> None:
        """Give back device memory cached outside `self.pool` (called by the pool on memory
        pressure and by `pool.empty_cache()`; devices with such caches override it)."""
        return None

    # --- memory ------------------------------------------------------------------------------
    def allocate(self, nbytes: int, *, stream: Stream | None = None) -> Buffer:
        """Device memory of `nbytes` from this device's caching pool (`.pool`), as uint8."""
        from nova.runtime.memory import Buffer

        check_nbytes(nbytes)
        stream = self._stream(stream)
        return Buffer._from_pool(self, self.allocate_block(nbytes, stream), nbytes, stream)

    def allocate_block(self, nbytes: int, stream: Stream) -> Block:
        """A pool block of at least `nbytes` for use on `stream`, without a Buffer around it
        (the caller gives it back with `pool.release`): what `allocate` and the cpu runtime
        ABI's gpu.alloc build on."""
        return self.pool.allocate(nbytes, stream.pool_key)

    def allocate_pinned(self, nbytes: int) -> HostBuffer:
        """Page-locked host memory (cpu: plain aligned host memory) from the pinned pool."""
        from nova.runtime.memory import HostBuffer

        check_nbytes(nbytes)
        return HostBuffer._from_pool(self, self.pinned_pool.allocate(nbytes, None), nbytes)

    def copy_htod(self, dst: Any, src: Any, nbytes: int | None = None,
                  stream: Stream | None = None) -> None:
        """Copy host `src` (NumPy array, HostBuffer, bytes-like or int address) to device `dst`
        (Buffer or int). With `stream` the copy is asynchronous; without, it has finished on
        return. `nbytes` defaults to the smaller of the two sizes."""
        self._copy("htod", dst, src, nbytes, stream)

    def copy_dtoh(self, dst: Any, src: Any, nbytes: int | None = None,
                  stream: Stream | None = None) -> None:
        """Copy device `src` to host `dst` (a writable host object or int address)."""
        self._copy("dtoh", dst, src, nbytes, stream)

    def copy_dtod(self, dst: Any, src: Any, nbytes: int | None = None,
                  stream: Stream | None = None) -> None:
        """Copy between two device allocations of this device."""
        self._copy("dtod", dst, src, nbytes, stream)

    def _copy(self, direction: str, dst: Any, src: Any, nbytes: int | None,
              stream: Stream | None) -> None:
        from nova.runtime.memory import device_span, host_span

        d_ptr, d_size, d_keep = (device_span(self, dst, "dst") if direction != "dtoh"
                                 else host_span(dst, "dst", writable=True))
        s_ptr, s_size, s_keep = (device_span(self, src, "src") if direction != "htod"
                                 else host_span(src, "src", writable=False))
        n = self._span_size(nbytes, d_size, s_size, f"copy_{direction}")
        if n == 0:
            return
        if stream is None:
            self._sync_copy(direction, d_ptr, s_ptr, n)
        else:
            self._enqueue_copy(direction, d_ptr, s_ptr, n, self._stream(stream), (d_keep, s_keep))

    def _sync_copy(self, direction: str, dst: int, src: int, nbytes: int) -> None:
        """A synchronous copy: on the default stream, then wait (devices may do better)."""
        s = self.default_stream
        self._enqueue_copy(direction, dst, src, nbytes, s, None)
        s.synchronize()

    def _sync_memset(self, dst: int, value: int, nbytes: int) -> None:
        """A synchronous memset: on the default stream, then wait (devices may do better)."""
        s = self.default_stream
        self._enqueue_memset(dst, value, nbytes, s)
        s.synchronize()

    @staticmethod
    def _span_size(nbytes: int | None, dst_size: int | None, src_size: int | None,
                   what: str) -> int:
        sizes = [s for s in (dst_size, src_size) if s is not None]
        if nbytes is None:
            if not sizes:
                raise ArgumentError(f"{what}: nbytes is required when both sides are addresses")
            return min(sizes)
        check_nbytes(nbytes)
        for side, size in (("destination", dst_size), ("source", src_size)):
            if size is not None and nbytes > size:
                raise ArgumentError(f"{what}: {nbytes} bytes requested but the {side} holds "
                                    f"only {size} bytes")
        return nbytes

    def memset(self, buf: Any, byte_value: int, nbytes: int | None = None,
               stream: Stream | None = None) -> None:
        """Set `nbytes` (default: all) bytes of device memory `buf` to `byte_value` (0..255)."""
        from nova.runtime.memory import device_span

        if isinstance(byte_value, bool) or not isinstance(byte_value, int) \
                or not 0 <= byte_value <= 255:
            raise ArgumentError(f"memset: byte_value must be an int in 0..255, got {byte_value!r}")
        ptr, size, _ = device_span(self, buf, "buf")
        n = self._span_size(nbytes, size, None, "memset")
        if n == 0:
            return
        if stream is None:
            self._sync_memset(ptr, byte_value, n)
        else:
            self._enqueue_memset(ptr, byte_value, n, self._stream(stream))

    def to_device(self, array: Any, stream: Stream | None = None) -> Buffer:
        """Copy a NumPy array (or anything np.asarray accepts) into new device memory."""
        from nova.runtime.memory import to_device

        return to_device(array, self, stream)

    def empty(self, shape: int | Sequence[int], dtype: Any = "float32",
              stream: Stream | None = None) -> Buffer:
        """Uninitialized device memory viewed as an array of `shape` and `dtype`."""
        import numpy as np

        dt = np.dtype(dtype)
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        buf = self.allocate(math.prod(dims) * dt.itemsize, stream=stream)
        return buf._retype(dt, dims)

    # --- streams and events ------------------------------------------------------------------
    @property
    def default_stream(self) -> Stream:
        """This device's default stream: a non-blocking stream, never the legacy NULL stream."""
        if self._default_stream is None:
            with self._lock:
                if self._default_stream is None:
                    self._default_stream = self._new_stream()
        return self._default_stream

    def create_stream(self) -> Stream:
        return self._new_stream()

    def create_event(self, timing: bool = False) -> Event:
        return self._new_event(timing)

    def _stream(self, stream: Stream | None) -> Stream:
        if stream is None:
            return self.default_stream
        if not isinstance(stream, Stream) or stream.device is not self:
            raise ArgumentError(f"stream {stream!r} does not belong to {self!r}")
        return stream

    def synchronize(self) -> None:
        """Wait for all work on every stream of this device; raises the first error found."""
        self._synchronize_all()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.synchronize()

    # --- modules and launches ----------------------------------------------------------------
    def load_module(self, images: ModuleImages) -> DeviceModule:
        """Load a device module (cached by the sha256 of the image this device picks)."""
        key = self._module_key(images)
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                module = self._load(images, key)
                self._modules[key] = module
            return module

    def launch(self, function: DeviceFunction, grid: int | Sequence[int],
               block: int | Sequence[int], params: Any, shared_bytes: int = 0,
               stream: Stream | None = None, cluster: int | Sequence[int] | None = None) -> None:
        """Launch `function` (non-blocking). `params` is a void** address (int) or a list of
        ctypes values / ints / floats / Buffers, one per expanded kernel parameter."""
        g, b, c = self.check_launch(function, grid, block, shared_bytes, cluster)
        self._launch(function, g, b, params, shared_bytes, self._stream(stream), c)

    def check_launch(self, function: DeviceFunction, grid: int | Sequence[int],
                     block: int | Sequence[int], shared_bytes: int = 0,
                     cluster: int | Sequence[int] | None = None) -> tuple[Dim3, Dim3, Dim3 | None]:
        """Validate a launch configuration of `function` on this device (ArgumentError naming
        the kernel): the (grid, block, cluster) shapes it launches with. `launch` runs it on
        every call; a `Launcher` once per configuration."""
        if not isinstance(function, DeviceFunction) or function.module.device is not self:
            raise ArgumentError(f"{function!r} is not a function loaded on {self!r}")
        name = function.name
        g, b = _dim3(grid, "grid", name), _dim3(block, "block", name)
        c = None if cluster is None else _dim3(cluster, "cluster", name)
        if c is not None and any(gd % cd for gd, cd in zip(g, c, strict=True)):
            raise ArgumentError(f"kernel @{name}: grid size {g} is not a multiple of the "
                                f"cluster shape {c}")
        check_nbytes(shared_bytes, "shared_bytes")
        props = self.properties
        threads = b[0] * b[1] * b[2]
        if threads > props.max_threads_per_block:
            raise ArgumentError(f"kernel @{name}: block size {b} has {threads} threads, more "
                                f"than the device's {props.max_threads_per_block} per block "
                                "(too many threads per block)")
        _check_limits(name, "block", b, props.max_block_dim)
        _check_limits(name, "grid", g, props.max_grid_dim)
        return g, b, c

    def launcher(self, function: DeviceFunction, slot_format: str) -> Launcher:
        """A `Launcher` of `function` whose parameters are 8-byte slots packed with the `struct`
        format `slot_format` (no byte-order prefix): repeated launches validate their
        configuration once and pack every parameter in one call (nova.runtime.launcher).
        Devices return their own subclass where they launch faster than `_launch`."""
        from nova.runtime.launcher import Launcher

        return Launcher(self, function, slot_format)


_DTYPES: dict[Any, np.dtype] = {}
"""numpy_dtype's answers for hashable specs (type objects, names, dtypes): every Buffer view
resolves one, and np.dtype() of a type costs microseconds."""


def numpy_dtype(dtype: Any) -> np.dtype:
    """np.dtype(dtype), turning failures into ArgumentError."""
    try:
        return _DTYPES[dtype]
    except KeyError:
        hashable = True
    except TypeError:
        hashable = False
    import numpy as np

    try:
        found = np.dtype(dtype)
    except TypeError as exc:
        raise ArgumentError(f"not a NumPy dtype: {dtype!r}") from exc
    if hashable and len(_DTYPES) < 256:
        _DTYPES[dtype] = found
    return found
