"""cpu device modules and kernel launches.

A device module's `cpu_object` (x86-64 ELF, built ahead of time by the CPU kernel target) is placed
in memory by `nova.runtime.objload` (no llvmlite import: the cold start of a cached kernel), or,
for an object that loader does not handle, by an llvmlite MCJIT engine; either way each module has
its own copy, so two modules may export kernels of the same name. Each kernel `k` is exported as
`i32 k(ptr params, ptr launch)` with `launch` a `nova.abi.CpuLaunch`.

A launch copies its parameter values at launch time (`pack_params`), then enqueues one task on the
stream. The task splits the grid's linear block range into chunks that the stream's own worker and
helper threads of the device's block pool take from a shared counter. The stream worker always
takes part, so a launch progresses even when every helper is busy with another stream's kernel
(which may be spinning on this one). Each participant calls the entry through ctypes (which
releases the GIL) with its own CpuLaunch and dynamic shared scratch.
"""

from __future__ import annotations

import _thread
import ctypes
import functools
import os
import struct
from typing import TYPE_CHECKING

from nova.abi import CPU_TARGET_RECORD_BYTES, CPU_TARGET_SYMBOL, CpuLaunch
from nova.bundle.elf import ElfFile
from nova.bundle.kernel_entry import Kernel
from nova.bundle.verify import verify_object
from nova.errors import BundleFormatError, DeviceError, KernelFault
from nova.runtime.cpu import fault_guard
from nova.runtime.cpu.helpers import Condition
from nova.runtime.device import DeviceFunction, DeviceModule, Dim3, ModuleImages, image_digest
from nova.runtime.objload import LoadedObject, ObjectLoadError

if TYPE_CHECKING:
    from nova.runtime.cpu.device import CpuDevice
    from nova.runtime.cpu.helpers import HelperThreads
    from nova.runtime.launcher import PackedParams

KERNEL_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)

_llvm_ready = False
_llvm_lock = _thread.allocate_lock()


def _target_machine() -> object:
    global _llvm_ready
    import llvmlite.binding as llvm

    with _llvm_lock:
        if not _llvm_ready:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _llvm_ready = True
    return llvm.Target.from_default_triple().create_target_machine(reloc="pic")


def check_elf_object(data: bytes, name: str) -> ElfFile:
    """Reject anything but a well-formed x86-64 ELF relocatable object before it is placed
    (RuntimeDyld crashes the process on malformed input instead of reporting an error); returns
    the parsed file."""

    def bad(why: str) -> DeviceError:
        return DeviceError(f"cannot load the CPU object of device module {name!r}: {why}")

    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise bad("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise bad("not a 64-bit little-endian ELF file")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_type != 1 or e_machine != 62:
        raise bad(f"not an x86-64 relocatable object (e_type {e_type}, e_machine {e_machine})")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * 64 > len(data):
        raise bad("the section header table is malformed or truncated")
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        offset, size = struct.unpack_from("<QQ", data, shoff + i * 64 + 24)
        if sh_type != 8 and offset + size > len(data):  # 8 = SHT_NOBITS (.bss)
            raise bad(f"section {i} lies outside the file (truncated?)")
    try:  # every field RuntimeDyld acts on (the bundle reader checked it too; this is the bytes
        return verify_object(data, "the object")  # the descriptor actually points at)
    except BundleFormatError as exc:
        raise bad(str(exc)) from None


@functools.cache
def _host_features() -> frozenset[str]:
    """LLVM's names of this CPU's features. Asking LLVM means importing llvmlite (~100 ms: the
    cold start of a cached program), so the answer is kept in the cache directory under a
    digest of /proc/cpuinfo's model name and flags (another CPU gets its own file)."""
    from nova import config

    path = None
    if config.get().cache_enabled:
        path = config.get().cache_path("runtime",
                                       f"host-cpu-features-{config.host_cpu_id()}.txt")
        try:
            with open(path, "rb") as f:  # bytes.decode: no codec module import (encodings.ascii)
                return frozenset(f.read().decode("ascii").split())
        except OSError:
            pass
    import llvmlite.binding as llvm

    flat = llvm.get_host_cpu_features().flatten()
    features = frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))
    if path is not None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path.removesuffix('.txt')}.{os.getpid()}.tmp"
            with open(tmp, "wb") as out:
                out.write(" ".join(sorted(features)).encode("ascii"))
            os.replace(tmp, path)
        except OSError:
            pass
    return features


def check_cpu_target(address: int, name: str) -> None:
    """Refuse an object compiled for CPU features this machine lacks (its code would die of an
    illegal instruction): a DeviceError naming the features. `address`: the object's
    CPU_TARGET_SYMBOL record, 0 when it has none (older objects, generic x86-64: they need
    nothing)."""
    if not address:
        return
    raw = ctypes.string_at(address, CPU_TARGET_RECORD_BYTES)
    record = raw.split(b"\0", 1)[0].decode("ascii", "replace")
    fields = dict(part.split("=", 1) for part in record.split(";") if "=" in part)
    needed = {f[1:] for f in fields.get("features", "").split(",") if f.startswith("+")}
    missing = sorted(needed - _host_features())
    if missing:
        raise DeviceError(
            f"the CPU object of device module {name!r} was compiled for CPU "
            f"{fields.get('cpu', '?')!r} and uses features this CPU lacks: {', '.join(missing)}; "
            "recompile it on this machine, or build a portable object with NOVA_CPU_ARCH=generic")


class CpuModule(DeviceModule):
    """A CPU object placed in memory by objload (else in its own MCJIT engine)."""

    def __init__(self, device: CpuDevice, images: ModuleImages,
                 digest: str | None = None) -> None:
        """`digest`: the CPU object's `image_digest` where the caller has it already."""
        super().__init__(device, images.name)
        if images.cpu_object is None:
            raise DeviceError(f"device module {images.name!r} has no CPU object")
        self.digest = image_digest(images.cpu_object) if digest is None else digest
        elf = check_elf_object(images.cpu_object, images.name)
        self._engine: object
        try:
            # objload binds the process's symbols: libc's malloc/free, never a host object's
            self._engine = LoadedObject(elf, f"the CPU object of device module {images.name!r}")
        except ObjectLoadError:
            self._engine = _mcjit(images.cpu_object, images.name)
        self.explain_address = device.explain_address
        check_cpu_target(self._global_address(CPU_TARGET_SYMBOL), images.name)
        fault_guard.guard()  # install the fault handlers before any kernel of the module runs

    @property
    def handle(self) -> int:
        return id(self._engine)

    def _address(self, name: str) -> int:
        engine = self._engine
        if isinstance(engine, LoadedObject):
            return engine.address(name)
        return int(engine.get_function_address(name))  # type: ignore[attr-defined]

    def _global_address(self, name: str) -> int:
        engine = self._engine
        if isinstance(engine, LoadedObject):
            return engine.address(name)
        return int(engine.get_global_value_address(name))  # type: ignore[attr-defined]

    def _lookup(self, name: str, kernel: Kernel | None) -> DeviceFunction:
        if not name or name.startswith("\x01"):  # LLVM's Mangler asserts (aborts) on these
            raise DeviceError(f"no kernel named {name!r} in the CPU object of device module "
                              f"{self.name!r}")
        address = self._address(name)
        if not address:
            raise DeviceError(f"kernel @{name} is not in the CPU object of device module "
                              f"{self.name!r}")
        return CpuFunction(self, name, kernel, address)


def _mcjit(data: bytes, name: str) -> object:
    """An MCJIT engine holding `data` (objects objload does not place)."""
    import llvmlite.binding as llvm

    from nova.runtime.linker import LINK_LOCK

    try:
        with LINK_LOCK:  # libc's malloc/free, never a host object's rebinding (linker)
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine())
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            engine.finalize_object()
    except Exception as exc:  # llvmlite raises RuntimeError with LLVM's message
        raise DeviceError(f"cannot load the CPU object of device module {name!r}: "
                          f"{exc}") from exc
    return engine


class CpuFunction(DeviceFunction):
    """A kernel entry `i32 k(ptr params, ptr launch)`; `.handle` is its address."""

    def __init__(self, module: CpuModule, name: str, kernel: Kernel | None, address: int) -> None:
        super().__init__(module, name, kernel, address)
        self.entry = KERNEL_PROTOTYPE(address)
        self.explain_address = module.explain_address


DYNAMIC_SHARED_ALIGN = 32
"""Alignment of a block's dynamic shared memory, as NVPTX's `.extern .shared .align 32` array
(32 bytes: what tensor-core (WMMA) loads and stores need)."""


def dynamic_shared_scratch(nbytes: int) -> tuple[ctypes.Array[ctypes.c_char] | None, int | None]:
    """One participant's dynamic shared memory: a buffer to keep alive and the address of its
    first `DYNAMIC_SHARED_ALIGN`-aligned byte (None, None for 0 bytes). ctypes buffers promise
    no alignment (small ones live inside the Python object), so ALIGN - 1 spare bytes are allocated.
    Each participant runs its chunk's blocks one after another, so one scratch per participant
    gives every running block its own memory."""
    if nbytes <= 0:
        return None, None
    buffer = (ctypes.c_char * (nbytes + DYNAMIC_SHARED_ALIGN - 1))()
    address = ctypes.addressof(buffer)
    return buffer, -(-address // DYNAMIC_SHARED_ALIGN) * DYNAMIC_SHARED_ALIGN


class BlockRun:
    """One enqueued launch: runs every block of the grid, spread over the stream worker and the
    device's helper threads, and raises KernelFault when a block fails."""

    def __init__(self, function: CpuFunction, grid: Dim3, block: Dim3, cluster: Dim3 | None,
                 shared_bytes: int, params: PackedParams, helpers: HelperThreads | None,
                 workers: int) -> None:
        self.function = function
        self.grid, self.block = grid, block
        self.cluster = cluster or (1, 1, 1)
        self.shared_bytes = shared_bytes
        self.params = params
        self.helpers = helpers
        total = grid[0] * grid[1] * grid[2]
        self.total = total
        self.chunks = max(1, min(total, workers * 4))
        self.chunk = -(-total // self.chunks)
        self.chunks = -(-total // self.chunk)
        self.workers = workers
        self._cond = Condition()
        self._next = 0
        self._grabbed = 0
        self._finished = 0
        self._failure: str | None = None

    def run(self) -> None:
        if self.helpers is not None:
            for _ in range(min(self.workers - 1, self.chunks - 1)):
                try:
                    self.helpers.submit(self._participate)
                except RuntimeError:  # the interpreter is shutting down: run without helpers
                    break
        self._participate()
        with self._cond:
            self._cond.wait_for(lambda: self._finished >= self._grabbed)
        if self._failure is not None:
            raise KernelFault(f"kernel @{self.function.name} failed: {self._failure}")

    def _grab(self) -> int | None:
        with self._cond:
            if self._failure is not None or self._next >= self.chunks:
                return None
            index = self._next
            self._next += 1
            self._grabbed += 1
            return index

    def _finish(self, failure: str | None) -> None:
        with self._cond:
            if failure is not None and self._failure is None:
                self._failure = failure
            self._finished += 1
            self._cond.notify_all()

    def _participate(self) -> None:
        """Take chunks until none is left; every chunk taken is reported finished, whatever
        happens, so `run` never waits forever."""
        index = self._grab()
        if index is None:
            return
        try:
            launch = CpuLaunch()
            launch.grid[:] = self.grid
            launch.block[:] = self.block
            launch.cluster[:] = self.cluster
            keep_alive, launch.dynamic_shared = dynamic_shared_scratch(self.shared_bytes)
            launch.dynamic_shared_bytes = self.shared_bytes
            fault_guard.prepare(launch)  # once: chunks are disjoint, kernels keep it current
            guard = fault_guard.guard()
        except BaseException as exc:  # e.g. MemoryError for the shared scratch
            self._finish(f"cannot set up the launch: {type(exc).__name__}: {exc}")
            return
        params = self.params.address
        launch_ptr = ctypes.addressof(launch)
        while index is not None:
            begin = index * self.chunk
            end = min(self.total, begin + self.chunk)
            failure = None
            try:
                launch.block_begin, launch.block_end = begin, end
                if guard is not None:  # faults become FAULT_STATUS (see fault_guard)
                    status = guard.call(self.function.handle, params, launch_ptr)
                else:
                    status = self.function.entry(params, launch_ptr)
                if status == fault_guard.FAULT_STATUS and guard is not None:
                    from nova.runtime.cpu.fault_record import describe_fault, release_after_fault

                    failure = describe_fault(launch, begin, end, self.function.explain_address)
                    release_after_fault(launch)
                elif status != 0:
                    text = launch.error.decode("utf-8", "replace") or "no message"
                    failure = f"{text} (status {status}, blocks [{begin}, {end}))"
            except BaseException as exc:  # ctypes itself failed; report it as the kernel's
                failure = f"{type(exc).__name__}: {exc} (blocks [{begin}, {end}))"
            self._finish(failure)
            index = self._grab()
        del keep_alive  # the blocks' dynamic shared memory, freed only after the last chunk
