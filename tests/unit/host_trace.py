"""Run host LLVM IR in-process against a recording stand-in for the runtime ABI.

`TraceRuntime` binds every ABI function (except the native unwind pair) to a ctypes callback that
appends a `TracedCall` and behaves like a tiny host-memory device: handles are distinct fake
values, `nova_rt_mem_alloc` returns real host memory, copies and fills really move bytes, and any
call can be made to fail. `HostJit` links the module with the runtime's own linker (symbol checks,
MCJIT) and calls entry points through `nova_rt_call_entry`, so a failed status unwinds exactly as
it does in production. This is how the host lowering is tested without a device: tests assert the
exact sequence of ABI calls (module loads, stream/event protocol, parameter arrays) and the data.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import numpy as np

from nova.abi import ABI_FUNCTIONS, DEVICE_MODULE_PREFIX, DeviceModuleDescriptor
from nova.runtime.linker import LinkedObject, link_object
from nova.runtime.native_support import call_entry_function, host_target_machine, unwind_symbols

_NATIVE = frozenset({"nova_rt_call_entry", "nova_rt_raise"})

HANDLE_BASES = {
    "nova_rt_module_load": 0x1000,
    "nova_rt_module_get_function": 0x2000,
    "nova_rt_stream_create": 0x3000,
    "nova_rt_event_create": 0x4000,
    "nova_rt_library_plan": 0x5000,
}
"""Fake handles are BASE + 1, BASE + 2, ... so a trace shows which object each call uses."""


@dataclass(frozen=True)
class TracedCall:
    """One ABI call: its name, its arguments (pointers as ints, null as 0) and, read while the call
    ran, `params`: for launches the 8 raw bytes behind each entry of the parameter array, for
    printMemref* the descriptor's 8-byte words (allocated, aligned, offset, sizes, strides)."""

    name: str
    args: tuple[int | float, ...]
    params: tuple[bytes, ...] = ()

    def arg(self, name: str) -> int | float:
        """An argument by its ABI parameter name."""
        names = [p for p, _ in _BY_NAME[self.name].params]
        return self.args[names.index(name)]


_BY_NAME = {f.name: f for f in ABI_FUNCTIONS}


@dataclass
class TraceRuntime:
    """Recording ABI implementations. `fail` maps an ABI name to the 1-based ordinal of the call
    of that name that returns status 1 (e.g. {"nova_rt_launch": 2} fails the second launch)."""

    fail: dict[str, int] = field(default_factory=dict)
    calls: list[TracedCall] = field(default_factory=list)
    buffers: list[ctypes.Array] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _callbacks: dict[str, object] = field(default_factory=dict)

    def names(self) -> list[str]:
        """The names of the recorded calls, in order."""
        return [c.name for c in self.calls]

    def of(self, name: str) -> list[TracedCall]:
        """The recorded calls of one function."""
        return [c for c in self.calls if c.name == name]

    def symbols(self) -> dict[str, int]:
        """ABI name -> callback address for every function but the unwind pair."""
        out: dict[str, int] = {}
        for fn in ABI_FUNCTIONS:
            if fn.name in _NATIVE:
                continue
            callback = fn.ctypes_prototype()(self._make(fn.name))
            self._callbacks[fn.name] = callback  # keep alive while code may call it
            out[fn.name] = ctypes.cast(callback, ctypes.c_void_p).value or 0
        return out

    def _make(self, name: str) -> Callable[..., object]:
        behave = _BEHAVIOUR.get(name)

        def callback(*raw: object) -> object:
            args = tuple(0 if a is None else a for a in raw)
            params = _captured_memory(name, args)
            self.calls.append(TracedCall(name, args, params))  # type: ignore[arg-type]
            ordinal = self._counts[name] = self._counts.get(name, 0) + 1
            if self.fail.get(name) == ordinal:
                return 1
            if behave is not None:
                behave(self, name, ordinal, args)
            if name in ("nova_rt_host_assert_fail", "nova_rt_host_alloc_failed"):
                return 1  # "always returns nonzero"
            return 0 if _BY_NAME[name].result.value == "i32" else None

        return callback


def _write_handle(rt: TraceRuntime, name: str, ordinal: int, args: tuple) -> None:
    ctypes.c_void_p.from_address(args[0]).value = HANDLE_BASES[name] + ordinal


def _alloc(rt: TraceRuntime, name: str, ordinal: int, args: tuple) -> None:
    buffer = (ctypes.c_uint8 * max(int(args[1]), 1))()
    rt.buffers.append(buffer)
    ctypes.c_void_p.from_address(args[0]).value = ctypes.addressof(buffer)


def _memcpy(rt: TraceRuntime, name: str, ordinal: int, args: tuple) -> None:
    ctypes.memmove(args[0], args[1], args[2])


def _memset(rt: TraceRuntime, name: str, ordinal: int, args: tuple) -> None:
    width = {"nova_rt_memset32": 4, "nova_rt_memset16": 2, "nova_rt_memset8": 1}[name]
    dtype = {4: np.uint32, 2: np.uint16, 1: np.uint8}[width]
    count = int(args[2])
    view = np.ctypeslib.as_array((ctypes.c_uint8 * (count * width)).from_address(args[0]))
    view.view(dtype)[:] = dtype(args[1] & ((1 << (8 * width)) - 1))


_BEHAVIOUR: dict[str, Callable[[TraceRuntime, str, int, tuple], None]] = {
    **{name: _write_handle for name in HANDLE_BASES},
    "nova_rt_mem_alloc": _alloc,
    "nova_rt_memcpy": _memcpy,
    "nova_rt_memset32": _memset,
    "nova_rt_memset16": _memset,
    "nova_rt_memset8": _memset,
}


def _captured_memory(name: str, args: tuple) -> tuple[bytes, ...]:
    """What a call's pointers refer to that dies with the caller's stack frame (see TracedCall)."""
    if name.startswith("nova_rt_launch"):
        array, count = args[-2], int(args[-1])
        pointers = (ctypes.c_uint64 * count).from_address(array) if count else ()
        return tuple(ctypes.string_at(p, 8) for p in pointers)
    if name == "nova_rt_library_call":
        array, count = args[1], int(args[2])
        pointers = (ctypes.c_uint64 * count).from_address(array) if count else ()
        return tuple(int(p).to_bytes(8, "little") for p in pointers)
    if name.startswith("nova_rt_print_memref"):
        rank, desc = int(args[0]), args[1]
        return tuple(ctypes.string_at(desc + 8 * i, 8) for i in range(3 + 2 * rank))
    return ()


def param_i64(raw: bytes) -> int:
    """A traced parameter slot read as a signed 64-bit integer (pointers and index values)."""
    return int.from_bytes(raw, "little", signed=True)


def param_f32(raw: bytes) -> float:
    """A traced parameter slot read as an f32 (its low 4 bytes)."""
    return float(np.frombuffer(raw[:4], dtype=np.float32)[0])


# --- memref descriptors ---------------------------------------------------------------------------

def descriptor_class(rank: int) -> type[ctypes.Structure]:
    """A ctypes struct laid out like the ranked descriptor of `rank` dimensions."""
    fields: list[tuple[str, type]] = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                                      ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"Descriptor{rank}", (ctypes.Structure,), {"_fields_": fields})


def memref_of(array: np.ndarray) -> ctypes.Structure:
    """The descriptor of a numpy array (which must stay alive while it is used)."""
    cls = descriptor_class(array.ndim)
    desc = cls()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    for i, (size, stride) in enumerate(zip(array.shape, array.strides, strict=True)):
        desc.sizes[i] = size
        desc.strides[i] = stride // array.itemsize
    return desc


def array_of(desc: ctypes.Structure, dtype: type, rank: int) -> np.ndarray:
    """A copy of the data a descriptor (of identity layout) describes."""
    sizes = [desc.sizes[i] for i in range(rank)] if rank else []
    count = int(np.prod(sizes)) if sizes else 1
    itemsize = np.dtype(dtype).itemsize
    base = desc.aligned + desc.offset * itemsize
    data = (ctypes.c_uint8 * (count * itemsize)).from_address(base)
    return np.frombuffer(bytes(data), dtype=dtype).reshape(sizes)


# --- the JIT --------------------------------------------------------------------------------------

class HostJit:
    """A host LLVM module linked in-process against a TraceRuntime."""

    def __init__(self, llvm_ir: str, runtime: TraceRuntime,
                 device_modules: Iterable[str] = ()) -> None:
        self.runtime = runtime
        self.descriptors = {name: DeviceModuleDescriptor(abi_version=1, name=name.encode())
                            for name in device_modules}
        bindings = {**runtime.symbols(), **unwind_symbols()}
        for name, desc in self.descriptors.items():
            bindings[DEVICE_MODULE_PREFIX + name] = ctypes.addressof(desc)
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
        obj = host_target_machine().emit_object(module)
        self.linked: LinkedObject = link_object(obj, bindings, "<host under test>")

    def descriptor_address(self, module: str) -> int:
        return ctypes.addressof(self.descriptors[module])

    def call(self, entry: str, args: Sequence[ctypes._CData] = (),
             results: Sequence[ctypes._CData] = ()) -> int:
        """Run `__nova_entry_<entry>` through nova_rt_call_entry; 0 on success, 1 if it raised."""
        address = self.linked.function_address("__nova_entry_" + entry)
        arg_array = (ctypes.c_void_p * max(len(args), 1))(*(ctypes.addressof(a) for a in args))
        result_array = (ctypes.c_void_p * max(len(results), 1))(
            *(ctypes.addressof(r) for r in results))
        return int(call_entry_function()(address, ctypes.addressof(arg_array),
                                         ctypes.addressof(result_array)))
