"""The executor: load a .nova file, link its host code, bind the runtime ABI to a device, call
entries (`NovaModule`).

`load(path_or_bytes, device)` validates the bundle (`nova.bundle.reader`), lets the device refuse
what it cannot run (`Device.check_bundle`: a cuda device checks the arch and that GPU images exist),
binds every `nova_rt_*` symbol to the device's implementation (`Device.make_abi`:
`runtime/cuda/abi.py`, native code calling libcuda; `runtime/cpu/abi.py`, ctypes callbacks) and
links the host object with MCJIT (`linker`). Each manifest entry becomes a callable (`mod.main()`,
`mod["main"]()`): arguments are checked against the entry's TypeSpecs and written into storage
allocated once per entry (the call plan), the entry runs under the native unwind frame, and a
recorded failure is raised as its NovaError. NumPy arrays passed for memrefs are copied to the
device and back (cpu: used in place); device buffers are used in place. Returned memrefs hand
their allocation to the returned arrays, which free it when collected (`nova.runtime.results`;
docs/device-layer.md, "Returned memrefs and close()"). Program output is flushed
(libc `fflush`) after every call of a program that can print (`runner_utils.program_may_print`), and
by `synchronize()` and `close()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from nova import config
from nova.abi import UNOWNED_ALLOCATED
from nova.bundle.format import EntryPoint, Manifest, TypeSpec
from nova.errors import ArgumentError, BundleFormatError, NovaError, RuntimeFailure
from nova.runtime import marshal
from nova.runtime.device import Device
from nova.runtime.linker import LinkedObject, link_object
from nova.runtime.memory import Buffer
from nova.runtime.native_support import (
    InterruptedCall,
    clear_error,
    control_symbols,
    take_error,
)
from nova.runtime.results import ResultMemory, argument_spans, view_result
from nova.runtime.runner_utils import flush_stdout, program_may_print, runner_util_symbols
from nova.runtime.selection import get_device

if TYPE_CHECKING:
    import numpy as np

    from nova.runtime.autograph import PlanGraph
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

MIN_REPLAY_OPS = 2
"""Entries issuing fewer stream operations never run as automatic graphs (one operation: nothing
to batch into one submission)."""


class DeviceAbi(Protocol):
    """What `runtime.cpu.abi.CpuAbi` and `runtime.cuda.abi.CudaAbi` provide to the executor."""

    def call_entry(self, entry: int, args: Any, results: Any, /) -> int: ...

    def symbols(self) -> dict[str, int]: ...
    def stage_in(self, array: np.ndarray) -> tuple[int, object]: ...
    def stage_out(self, token: object) -> None: ...
    def release(self, token: object) -> None: ...
    def fetch(self, address: int, nbytes: int) -> bytes: ...
    def take_allocation(self, address: int) -> ResultMemory | None: ...
    def synchronize(self) -> None: ...
    def close(self) -> None: ...


@dataclass
class _Staged:
    """A NumPy array copied to the device for one call (copied back afterwards)."""

    array: np.ndarray
    original: np.ndarray
    token: object


class EntryPlan:
    """Argument and result storage for one entry, allocated once and reused by every call."""

    def __init__(self, entry: EntryPoint) -> None:
        self.arg_storage = [_storage(spec) for spec in entry.args]
        self.result_storage = [_storage(spec) for spec in entry.results]
        self.args = (ctypes.c_void_p * max(len(entry.args), 1))(
            *(ctypes.addressof(s) for s in self.arg_storage))
        self.results = (ctypes.c_void_p * max(len(entry.results), 1))(
            *(ctypes.addressof(s) for s in self.result_storage))
        # the arrays' addresses: ctypes passes an int to a pointer parameter faster than it
        # converts an array object (every call passes both)
        self.args_at = ctypes.addressof(self.args)
        self.results_at = ctypes.addressof(self.results)
        self.memo: list[_Memo | None] = [None] * len(entry.args)
        self.graph_state: PlanGraph | None = None  # automatic graphs (nova.runtime.autograph)


class _Memo:
    """The array a memref slot's descriptor was last written for, and its layout then. A call
    with the same object in the same layout skips validation and the descriptor rewrite (the
    common case of calling an entry repeatedly on the same device buffers).

    A Buffer's dtype and shape are set before it is handed out (`Buffer._retype` runs only on
    buffers just allocated), but `shape` is a plain attribute: the memo keeps the very tuple it
    saw and compares identity, which costs one attribute load per call."""

    __slots__ = ("is_buffer", "layout", "ref", "shape")

    def __init__(self, value: Any, is_buffer: bool) -> None:
        # typed as returning Any: `ref() is value` must not narrow `value` to Optional
        self.ref: Callable[[], Any] = weakref.ref(value)
        self.layout = _layout(value)
        self.is_buffer = is_buffer
        self.shape = value.shape if is_buffer else None

    def matches(self, value: Any) -> bool:
        """`value` is the memoised object, unchanged (a Buffer: not freed, same shape)."""
        if self.ref() is not value:
            return False
        if self.is_buffer:
            return value.shape is self.shape and value.alive
        return _layout(value) == self.layout


def _layout(value: Any) -> tuple:
    if type(value) is np.ndarray:
        return (value.shape, value.dtype, value.strides)
    return (value.shape, value.dtype)


class _NoFastPath:
    """A type no argument has: marks scalar slots that always take `marshal.scalar_value`."""


_FAST_SCALARS: dict[str, tuple[type[Any], float, float]] = {
    **{dtype: (int, -(1 << (bits - 1)), 1 << bits)
       for dtype, bits in marshal.INT_BITS.items()},
    "i1": (int, 0, 2),
    "f32": (float, -math.inf, math.inf),
    "f64": (float, -math.inf, math.inf),
}
"""dtype -> (Python type, low, high): a value of exactly that type with low <= value < high is
stored as it is (what `marshal.scalar_value` would return for it); anything else, NaN and
infinities included, goes through `marshal.scalar_value` (which converts or rejects it)."""


def _scalar_slot(index: int, spec: TypeSpec) -> tuple[int, TypeSpec, type[Any], float, float]:
    kind, low, high = _FAST_SCALARS.get(spec.dtype, (_NoFastPath, 0, 0))
    return index, spec, kind, low, high


def _storage(spec: TypeSpec) -> ctypes._CData:
    if spec.kind == "memref":
        return (ctypes.c_int64 * marshal.descriptor_words(spec.rank))()
    return marshal.SCALAR_CTYPES[spec.dtype]()


def _needs_identity_layout(spec: TypeSpec) -> bool:
    """Memrefs without an explicit layout are compiled for row-major (C-contiguous) data."""
    return "strided<" not in spec.mlir and "affine_map" not in spec.mlir


class EntryFunction:
    """One entry point of a loaded program, callable from Python.

    A call does the least it can for the common case of calling again on the same Nova buffers
    with new scalars: the memref slots whose memo still matches keep their descriptors, scalars
    go through a precomputed (type, range) check, an entry without results returns None without
    reading storage, and stdout is flushed only when the program can print (decided at load).
    Anything else (a new array, NumPy staging, a bad argument) takes the general binding path.
    """

    def __init__(self, module: NovaModule, entry: EntryPoint) -> None:
        self.module = module
        self.entry = entry
        self.name = entry.name
        self.address = module._linked.function_address(entry.symbol)
        self._plans: list[EntryPlan] = [EntryPlan(entry)]
        self._plan_count = 1  # plans made; those not in _plans belong to calls in flight
        self._device = module.device
        self._arity = len(entry.args)
        self._call_entry = module._require_open().call_entry
        self._memrefs = tuple(i for i, spec in enumerate(entry.args) if spec.kind == "memref")
        self._scalars = tuple(_scalar_slot(i, spec) for i, spec in enumerate(entry.args)
                              if spec.kind != "memref")
        self._has_results = bool(entry.results)
        self._may_print = module._may_print
        self._returns_memrefs = any(spec.kind == "memref" for spec in entry.results)
        self._scalar_indices = tuple(slot[0] for slot in self._scalars)
        # automatic graphs (nova.runtime.autograph): the recordings released and not yet closed
        self._retired: list[tuple[Any, Any, Any]] = []
        self._replay: Callable[[EntryFunction, EntryPlan], bool] | None = None
        self._after_direct: Callable[[EntryFunction, PlanGraph, bool], None] | None = None
        if entry.replay_ops >= MIN_REPLAY_OPS:
            from nova.runtime.autograph import after_direct_call, replay_or_record

            self._replay, self._after_direct = replay_or_record, after_direct_call
        self._auto_graphs = module._auto_graphs and self._replay is not None

    @property
    def auto_graphs(self) -> bool:
        """Whether repeated identical calls run as a recorded graph (docs/async.md, "Automatic
        graphs"). Starts as the module's setting (the device's default, NOVA_AUTO_GRAPHS) for
        entries the compiler found replayable, False for the others; setting it True raises
        for those, setting it False drops the recordings this entry's idle plans hold."""
        return self._auto_graphs

    @auto_graphs.setter
    def auto_graphs(self, value: bool) -> None:
        if value and self._replay is None:
            raise ArgumentError(f"@{self.name} cannot run as an automatic graph: its host code "
                                "is not replayable or issues fewer than "
                                f"{MIN_REPLAY_OPS} stream operations (docs/async.md, "
                                "\"Automatic graphs\")")
        self._auto_graphs = bool(value)
        if not self._auto_graphs:
            self.release_graphs()

    def __repr__(self) -> str:
        args = ", ".join(s.mlir for s in self.entry.args)
        results = ", ".join(s.mlir for s in self.entry.results)
        return f"<nova entry @{self.name}({args}) -> ({results})>"

    def __call__(self, *args: Any) -> Any:
        abi = self.module._abi
        if abi is None or len(args) != self._arity:
            self._reject(args)
        try:
            plan = self._plans.pop()
        except IndexError:  # another thread is using the cached plan
            plan = EntryPlan(self.entry)
            self._plan_count += 1  # a lost update under a race only makes close() wait less
        try:
            finish = self._bind_memoised(plan, args)
            if finish is None:  # some memref slot changed: bind everything the general way
                if plan.graph_state is not None:
                    plan.graph_state.release(self)
                staged = self._bind_all(plan, args, abi)
                finish = bool(staged) or self._returns_memrefs or not all(
                    isinstance(args[i], Buffer) for i in self._memrefs)
                status = self._run(plan)
            else:
                staged = []
                if self._scalars:
                    self._bind_scalars(plan, args)
                if not finish and self._auto_graphs and self._replay(self, plan):  # type: ignore
                    status = 0
                else:
                    state = plan.graph_state
                    if state is None:
                        status = self._run(plan)
                    else:
                        status = self._run_beside_graph(plan, state)
            if status:
                self._raise_failure(abi, staged)
            if finish:
                self._finish(abi, staged)
            # else: the call is stream-ordered on the program's default stream, like a CuPy or
            # PyTorch op: the program's own waits (gpu.wait, synchronous gpu ops) ran inside
            # it, Nova buffers are read back on the same stream, and a fault of work still in
            # flight is reported by the next synchronizing call, naming the kernel.
            if not self._has_results:
                return None
            if self._returns_memrefs:
                return self._owned_results(plan, abi)
            return python_results(self.entry.results, plan.result_storage, abi)
        finally:
            if self._may_print:
                flush_stdout()
            self._plans.append(plan)

    def _run(self, plan: EntryPlan) -> int:
        """Run the entry's host code on the plan's bound arguments; its status."""
        clear_error()
        return self._call_entry(self.address, plan.args_at, plan.results_at)

    def _run_beside_graph(self, plan: EntryPlan, state: PlanGraph) -> int:
        """A direct call of a plan with automatic-graph state (its recording, if any, is
        released when automatic graphs were turned off while the plan was in use)."""
        if state.graph is not None and not self._auto_graphs:
            state.release(self)
        status = 1
        try:
            status = self._run(plan)
        finally:
            self._after_direct(self, state, bool(status))  # type: ignore[misc]
        return status

    def graph_counts(self) -> tuple[int, int]:
        """(recordings made, calls run as a recording) by this entry's idle plans."""
        states = [p.graph_state for p in list(self._plans) if p.graph_state is not None]
        return sum(s.recordings for s in states), sum(s.replays for s in states)

    def release_graphs(self, wait: bool = False) -> None:
        """Release the automatic graphs of the plans not in use; close those whose work is done
        (all, after waiting for it, with `wait`)."""
        if self._replay is None:
            return
        from nova.runtime.autograph import reap, release_idle

        release_idle(self)
        reap(self, wait)

    def wait_for_calls(self) -> None:
        """Block until no call of this entry is in flight (every plan is back in the pool): the
        module is closing, so no new call can start. Calls are never made from inside a call of
        the same module on the same thread (the program's callbacks are the runtime's own)."""
        while len(self._plans) < self._plan_count:
            time.sleep(0.0002)

    def _reject(self, args: tuple[Any, ...]) -> NoReturn:
        """Raise for a call on a closed module or with the wrong number of arguments."""
        self.module._require_open()
        raise ArgumentError(f"{self.name}: expected {self._arity} argument(s), got {len(args)}")

    # --- arguments ---------------------------------------------------------------------------
    def _bind_memoised(self, plan: EntryPlan, args: tuple[Any, ...]) -> bool | None:
        """None unless every memref argument is the object its slot's memo holds, unchanged;
        else whether the call must synchronize afterwards (a host array used in place)."""
        memo = plan.memo
        finish = self._returns_memrefs
        for index in self._memrefs:  # _Memo.matches, inlined: this loop runs on every call
            slot = memo[index]
            value = args[index]
            if slot is None or slot.ref() is not value:
                return None
            if slot.is_buffer:
                if value.shape is not slot.shape or not value.alive:
                    return None
            elif _layout(value) != slot.layout:
                return None
            else:
                finish = True
        return finish

    def _bind_scalars(self, plan: EntryPlan, args: tuple[Any, ...]) -> None:
        """Store every scalar argument (validated: `marshal.scalar_value` unless its type and
        range make it storable as it is)."""
        storage = plan.arg_storage
        for index, spec, kind, low, high in self._scalars:
            value = args[index]
            if type(value) is not kind or not low <= value < high:
                value = marshal.scalar_value(self.name, index, spec, value)
            storage[index].value = value  # type: ignore[attr-defined]

    def _bind_all(self, plan: EntryPlan, args: tuple[Any, ...], abi: DeviceAbi) -> list[_Staged]:
        """Bind every argument in order (the first bad one raises); returns the arrays staged
        to the device, which are released again when a later argument is rejected."""
        staged: list[_Staged] = []
        try:
            for index, (spec, value) in enumerate(zip(self.entry.args, args, strict=True)):
                self._bind(plan, index, spec, value, staged, abi)
        except BaseException:
            for item in staged:  # arrays staged before the bad argument
                abi.release(item.token)
            raise
        return staged

    def _bind(self, plan: EntryPlan, index: int, spec: TypeSpec, value: Any,
              staged: list[_Staged], abi: DeviceAbi) -> None:
        storage = plan.arg_storage[index]
        if spec.kind != "memref":
            storage.value = marshal.scalar_value(self.name, index, spec, value)  # type: ignore
            return
        memo = plan.memo[index]
        if memo is not None and memo.matches(value):
            return
        plan.memo[index] = None
        info = marshal.check_memref(self.name, index, spec, value)
        owner = getattr(value, "device", None)
        if isinstance(owner, Device) and owner is not self._device:
            raise ArgumentError(f"{self.name}: argument {index}: the buffer lives on "
                                f"{owner.kind}:{owner.index}, the program runs on "
                                f"{self._device.kind}:{self._device.index}")
        if info.on_device:
            if _needs_identity_layout(spec) and not info.is_contiguous():
                raise ArgumentError(f"{self.name}: argument {index}: {spec.mlir} needs a "
                                    "C-contiguous device array")
            marshal.write_descriptor(storage, info)  # type: ignore[arg-type]
            if info.stream is not None and not isinstance(value, Buffer):
                # CuPy/PyTorch arrays: order the call after work on the array's own stream
                wait = getattr(self._device, "wait_for_foreign_stream", None)
                if wait is not None:
                    wait(info.stream)
            if isinstance(value, Buffer):
                plan.memo[index] = _Memo(value, True)
            return
        array = value
        if not value.flags.writeable:
            # a read-only array is never written: the program gets a copy (as on cuda, and as
            # kernels do), and what it writes there is dropped
            array = np.array(value, order="C", copy=True)
        elif _needs_identity_layout(spec) and not value.flags.c_contiguous:
            array = np.ascontiguousarray(value)
        if array is not value:
            copied = marshal.array_info(array)
            assert copied is not None
            info = copied
        address, token = abi.stage_in(array)
        if token is not None or array is not value:
            staged.append(_Staged(array, value, token))
        marshal.write_descriptor(storage, info, address)  # type: ignore[arg-type]
        if token is None and array is value and type(value) is np.ndarray:
            plan.memo[index] = _Memo(value, False)

    # --- after the call ----------------------------------------------------------------------
    def _finish(self, abi: DeviceAbi, staged: list[_Staged]) -> None:
        for item in staged:
            abi.stage_out(item.token)
        try:
            abi.synchronize()
        finally:
            for item in staged:
                abi.release(item.token)
        for item in staged:
            if item.array is not item.original and item.original.flags.writeable:
                np.copyto(item.original, item.array)

    def _owned_results(self, plan: EntryPlan, abi: DeviceAbi) -> Any:
        """The call's results, taking ownership of the allocations its memrefs return
        (`nova.runtime.results`): each distinct allocated pointer the program may give away
        becomes one ResultMemory, shared by the results that point into it."""
        owners = self._take_owners(plan, abi)
        try:
            return python_results(self.entry.results, plan.result_storage, abi, owners)
        except BaseException:
            for owner in owners.values():  # no result will hold them
                owner.release()
            raise
        finally:
            for owner in owners.values():
                if not owner.host_addressable:  # copied into the results: free it now
                    owner.release()

    def _take_owners(self, plan: EntryPlan, abi: DeviceAbi) -> dict[int, ResultMemory]:
        """allocated pointer -> ResultMemory for every memref result whose memory the program
        hands over (not null, not stack or global memory, not inside an argument)."""
        owners: dict[int, ResultMemory] = {}
        spans: list[tuple[int, int]] | None = None
        for spec, words in zip(self.entry.results, plan.result_storage, strict=True):
            if spec.kind != "memref":
                continue
            allocated = words[0] & 0xFFFFFFFFFFFFFFFF  # type: ignore[index]
            if allocated in owners or allocated in (0, UNOWNED_ALLOCATED):
                continue
            if spans is None:
                spans = argument_spans([
                    (plan.arg_storage[i], self.entry.args[i].rank,  # type: ignore[misc]
                     ctypes.sizeof(marshal.SCALAR_CTYPES.get(self.entry.args[i].dtype,
                                                             ctypes.c_uint8)))
                    for i in self._memrefs])
            if any(low <= allocated <= high for low, high in spans):
                continue  # an argument's memory (or a view of it): the caller's already
            owners[allocated] = (abi.take_allocation(allocated)
                                 or ResultMemory.host_heap(allocated))
        return owners

    def _raise_failure(self, abi: DeviceAbi, staged: list[_Staged]) -> None:
        """The program failed: raise what it recorded (KeyboardInterrupt for Ctrl-C) once queued
        work finished and staging memory was released."""
        error = self._failure()  # taken first: the cleanup may fail (and record) too
        self._abandon(abi, staged)
        clear_error()
        if isinstance(error, InterruptedCall):
            raise KeyboardInterrupt(str(error))
        raise error

    @staticmethod
    def _abandon(abi: DeviceAbi, staged: list[_Staged]) -> None:
        """After a failure: let queued work finish before staging memory is reused."""
        try:
            abi.synchronize()
        except NovaError:
            pass  # the recorded failure is the one to report
        finally:
            for item in staged:
                abi.release(item.token)

    def _failure(self) -> NovaError:
        error = take_error()
        if error is None:
            return RuntimeFailure(f"{self.name}: the program failed without reporting why")
        return error


def python_results(specs: Sequence[TypeSpec], result_storage: Sequence[object],
                   abi: DeviceAbi, owners: dict[int, ResultMemory] | None = None) -> Any:
    """What a call returns to Python, read from the entry's result storage (shared by direct
    calls and graph replays): None, the one value, or a tuple of the values. A memref whose
    allocated pointer is in `owners` (memory handed to the caller, host-addressable) is viewed
    in place and keeps its owner alive; any other is copied into a new array."""
    values = []
    for spec, storage in zip(specs, result_storage, strict=True):
        if spec.kind == "memref":
            values.append(_memref_result(spec, storage, abi, owners))  # type: ignore[arg-type]
        else:
            values.append(marshal.scalar_result(spec, storage))  # type: ignore[arg-type]
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _memref_result(spec: TypeSpec, words: ctypes.Array, abi: DeviceAbi,
                   owners: dict[int, ResultMemory] | None) -> np.ndarray:
    """A returned memref as a NumPy array: a view of memory handed to the caller (`owners`),
    else a copy (the program, an argument or a graph keeps the memory)."""
    dtype = marshal.numpy_dtype(spec.dtype)
    if dtype is None:
        raise ArgumentError(f"cannot return {spec.mlir} as a NumPy array")
    aligned, offset, sizes, strides = marshal.read_descriptor(words, spec.rank)
    if any(s == 0 for s in sizes):
        return np.empty(sizes, dtype=dtype)
    owner = owners.get(words[0] & 0xFFFFFFFFFFFFFFFF) if owners else None
    if owner is not None and owner.host_addressable:
        return view_result(owner, aligned, offset, sizes, strides, dtype)
    low = offset + sum(min(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    high = offset + sum(max(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    raw = abi.fetch(aligned + low * dtype.itemsize, (high - low + 1) * dtype.itemsize)
    flat = np.frombuffer(raw, dtype=dtype)
    view = np.lib.stride_tricks.as_strided(
        flat[offset - low:], shape=sizes, strides=tuple(s * dtype.itemsize for s in strides))
    return np.array(view)


class NovaModule:
    """A loaded .nova program: its entries are attributes (`mod.main`) and items (`mod["main"]`).

    Use it as a context manager (or call `close()`) to release what the program allocated; the
    linked code stays valid as long as this object is referenced.
    """

    def __init__(self, data: bytes, device: Device, name: str = "<bundle>",
                 trusted_keys: Sequence[str | Path | bytes] | None = None) -> None:
        from nova.bundle.reader import read_bundle

        bundle = read_bundle(data, None, name, trust_policy(trusted_keys))
        self.name = name
        self.manifest: Manifest = bundle.manifest
        self.device = device
        device.check_bundle(self.manifest, name)
        self._abi: DeviceAbi | None = device.make_abi(self.manifest)
        bindings = {**control_symbols(), **runner_util_symbols(), **self._abi.symbols()}
        self._linked: LinkedObject = link_object(bundle.object_bytes, bindings, name)
        preload = getattr(self._abi, "preload", None)
        if preload is not None:
            preload(self._linked)
        self._object_bytes = bundle.object_bytes  # linked again by graph capture
        self._may_print = program_may_print(bundle, device)  # else no fflush per call
        setting = config.get().auto_graphs
        self._auto_graphs = device.auto_graphs if setting is None else setting
        self._entries = {e.name: EntryFunction(self, e) for e in self.manifest.entries}
        self._lock = threading.Lock()
        # `mod.forward` as an instance attribute: a plain dict hit instead of a failed lookup and
        # __getattr__ on every call. Names the class or the instance already use (`close`,
        # `capture`, `name`, ...) keep their meaning, as before: such entries are `mod["close"]`.
        for name, entry in self._entries.items():
            if name.isidentifier() and name not in self.__dict__ and not hasattr(type(self), name):
                self.__dict__[name] = entry

    @property
    def entries(self) -> tuple[str, ...]:
        """Names of the program's entry points."""
        return tuple(self._entries)

    def __getitem__(self, name: str) -> EntryFunction:
        entry = self._entries.get(name)
        if entry is None:
            raise KeyError(f"{self.name} has no entry '{name}' (entries: "
                           f"{', '.join(self._entries) or 'none'})")
        return entry

    def __getattr__(self, name: str) -> EntryFunction:
        entries = self.__dict__.get("_entries")
        if entries is not None and name in entries:
            return entries[name]
        raise AttributeError(f"{self.__dict__.get('name', 'module')} has no entry or attribute "
                             f"'{name}'")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._entries})

    def capture(self, entry: str, *example_args: Any) -> Any:
        """Capture entry `entry` once (a CUDA graph on cuda, a recorded op list on cpu) for
        arguments shaped like `example_args`; returns a `nova.runtime.graph.CapturedEntry`
        whose `replay(*args)` / `__call__` runs it again with new inputs of the same shapes."""
        from nova.runtime.graph import capture

        return capture(self, entry, *example_args)

    def release_graphs(self) -> None:
        """Release the automatic graphs of every entry (their graph memory with them) once the
        device has finished their work; calls in progress keep theirs until their next call."""
        for entry in self._entries.values():
            entry.release_graphs()

    def synchronize(self) -> None:
        """Wait for all work the program queued (calls on Nova buffers return without waiting
        for work they left in flight) and raise the first error it hit, naming the kernel."""
        abi = self._require_open()
        try:
            abi.synchronize()
        finally:
            flush_stdout()

    def _require_open(self) -> DeviceAbi:
        abi = self._abi
        if abi is None:
            raise RuntimeFailure(f"{self.name} was closed")
        return abi

    def close(self) -> None:
        """Wait for the program's work and release its streams, events and allocations. Calls
        already inside the program (other threads) finish first; new ones raise. Arrays the
        program returned own their memory and stay valid (freed when they are collected)."""
        with self._lock:
            abi, self._abi = self._abi, None
        if abi is None:
            return
        for entry in self._entries.values():
            entry.wait_for_calls()
        try:
            abi.synchronize()
        finally:
            for entry in self._entries.values():
                entry.release_graphs(wait=True)
            abi.close()
            flush_stdout()

    def __enter__(self) -> NovaModule:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
            return
        with contextlib.suppress(NovaError):  # keep the error that is already propagating
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._abi is None else f"on {self.device.kind}:{self.device.index}"
        return f"<NovaModule {self.name} {state} entries={list(self._entries)}>"


def _read(path_or_bytes: str | Path | bytes | bytearray | memoryview) -> tuple[bytes, str]:
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        return bytes(path_or_bytes), "<bundle>"
    if not isinstance(path_or_bytes, str | os.PathLike):
        raise ArgumentError(f"nova.load: expected a path (str or os.PathLike) or the bundle's "
                            f"bytes, got {type(path_or_bytes).__name__}")
    path = Path(path_or_bytes)
    try:
        return path.read_bytes(), str(path)
    except OSError as exc:
        raise BundleFormatError(f"cannot read '{path}': {exc.strerror or exc}") from None


def trust_policy(trusted_keys: Sequence[str | Path | bytes] | None) -> tuple[bytes, ...] | None:
    """The raw public keys a bundle must be signed by, or None for no policy: `trusted_keys`
    (paths of PEM public keys, PEM bytes or raw 32-byte keys) when given, else NOVA_TRUSTED_KEYS;
    an empty `trusted_keys` sets no policy (bundles this process compiled itself)."""
    if trusted_keys is None:
        trusted_keys = config.get().trusted_keys
    elif isinstance(trusted_keys, str | bytes | Path):
        trusted_keys = [trusted_keys]
    if not trusted_keys:
        return None  # no policy: the signature module (hashlib, base64) is not needed
    from nova.bundle.signature import trusted_key_bytes

    return trusted_key_bytes(trusted_keys)


def load(path_or_bytes: str | Path | bytes | bytearray | memoryview,
         device: str | Device | None = None,
         trusted_keys: Sequence[str | Path | bytes] | None = None) -> NovaModule:
    """Load a .nova file (a path or its bytes) on `device` ('cuda', 'cpu', a Device, or None for
    NOVA_DEVICE / auto).

    `trusted_keys`: paths of Ed25519 public keys (PEM); when given (or, when None, when
    NOVA_TRUSTED_KEYS names any), only a bundle signed by one of them loads: an unsigned one,
    one signed by another key or modified after signing raises SignatureError. An empty
    sequence sets no policy even when NOVA_TRUSTED_KEYS does (for bundles compiled in this
    process from source, as `nova.compile` loads them)."""
    data, name = _read(path_or_bytes)
    return NovaModule(data, get_device(device), name, trusted_keys)
