"""Graph capture and replay of compiled entry points (CUDA graphs; a recorded op list on cpu).

`mod.capture("forward", *example_args) -> CapturedEntry` runs the entry's host code once with
*capture* bindings of the runtime ABI, so that the device work it issues is recorded instead of
executed; `captured(*args)` / `captured.replay(*args)` then copies new inputs into the
capture-time device buffers, runs the recorded work, copies the memref arguments back (like a
normal call does) and returns the entry's results. `captured.launch(stream)` runs the recorded
work alone, on the capture-time buffers (`captured.buffers`): pass those buffers as arguments to
replay in place, with no copies.

How it is recorded. The program's host object is linked a second time against capture bindings:
- cuda: `cuStreamBeginCapture` (relaxed mode) on a private stream, which plays the role of the
  executor's default stream (every null-stream operation of the host code goes there). Launches,
  copies, memsets and stream-ordered allocations call the native ABI (runtime.cuda.native) on that
  stream, so they become graph nodes. Host synchronizations cannot wait for work that does not run,
  so they become dependencies: synchronizing a stream or an event makes every live stream (and the
  capture stream) wait for it, which orders everything the host issues afterwards the way the host
  wait did. `gpu.wait async` streams fork from the capture stream (an event) when created and join
  back when synchronized or destroyed (destruction is deferred until the capture ended); every
  stream still live at the end joins too. Then `cuStreamEndCapture`, `cuGraphInstantiate`
  (auto-free-on-launch, for allocations the graph does not free), and each replay is one
  `cuGraphLaunch`.
- cpu: the same protocol over a recording of operations (launches with their parameter bytes,
  copies, fills, event records and waits, per virtual stream); a replay enqueues them again on the
  target stream and private replay streams, in the recorded order, so the cpu device runs the same
  graph with the same concurrency.

What is frozen at capture (as with any CUDA graph): everything the host code computed, so scalar
arguments must be equal at replay (an ArgumentError says so), shapes must be equal, and scalar
results are the values computed at capture. Memory the entry allocates with gpu.alloc keeps the
same address for the graph's lifetime (frees inside the entry are deferred on cpu; graph
allocation nodes on cuda). Host memory the entry's own host code allocates and frees (memref.alloc)
is *not* kept: a captured entry should move data through its memref arguments.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nova.abi import UNOWNED_ALLOCATED
from nova.bundle.format import EntryPoint, Manifest
from nova.errors import ArgumentError, NovaError, RuntimeFailure
from nova.runtime import marshal
from nova.runtime.linker import LinkedObject, link_object
from nova.runtime.memory import Buffer
from nova.runtime.native_support import control_symbols
from nova.runtime.results import ResultMemory, argument_spans
from nova.runtime.runner_utils import runner_util_symbols
from nova.runtime.stream import Stream

if TYPE_CHECKING:
    from nova.runtime.executor import NovaModule

__all__ = ["CaptureRequest", "CapturedEntry", "RecordedGraph", "capture"]


@dataclass(frozen=True)
class CaptureRequest:
    """What a device needs to record one entry (`Device.record_graph`): the entry's name and the
    program's manifest, `link(abi_symbols) -> entry address` (links the host object against the
    device's capture bindings) and the argument/result pointer arrays to call it with."""

    name: str
    manifest: Manifest
    link: Callable[[dict[str, int]], int]
    args: Any
    results: Any


class RecordedGraph(Protocol):
    """A device's recording of an entry's work (a CUDA graph, the cpu device's op list)."""

    label: str | None  # names the graph in errors a wait after its launch reports (cuda)

    @property
    def kernel_count(self) -> int: ...
    @property
    def node_count(self) -> int | None: ...
    @property
    def host_waits(self) -> int: ...
    @property
    def private_streams(self) -> int: ...
    def launch(self, origin: Stream) -> None: ...
    def synchronize(self, origin: Stream) -> None: ...
    def owns(self, address: int) -> bool: ...
    def close(self) -> None: ...


def link_for_recording(module: NovaModule, abi_symbols: dict[str, int],
                       name: str) -> LinkedObject:
    """The program's host object linked a second time, against a device's recording bindings
    (`abi_symbols`) instead of its runtime ABI: what `CaptureRequest.link` returns an entry of."""
    bindings = {**control_symbols(), **runner_util_symbols(), **abi_symbols}
    return link_object(module._object_bytes, bindings, name)


# --- the public object -------------------------------------------------------------------------
class CapturedEntry:
    """A compiled entry point captured once; replay it with new inputs of the same shapes."""

    def __init__(self, module: NovaModule, entry: EntryPoint, args: tuple[Any, ...]) -> None:
        self.module = module
        self.entry = entry
        self.name = entry.name
        self.device = module.device
        if len(args) != len(entry.args):
            raise ArgumentError(f"{self.name}: expected {len(entry.args)} argument(s), got "
                                f"{len(args)}")
        from nova.runtime.executor import EntryPlan

        self._plan = EntryPlan(entry)
        self.buffers: list[Buffer | None] = []
        self._scalars: list[Any] = []
        self._owned: list[Buffer] = []
        for index, (spec, value) in enumerate(zip(entry.args, args, strict=True)):
            storage = self._plan.arg_storage[index]
            if spec.kind == "memref":
                buf = self._capture_buffer(index, spec, value)
                info = marshal.check_memref(self.name, index, spec, buf)
                marshal.write_descriptor(storage, info)  # type: ignore[arg-type]
                self.buffers.append(buf)
                self._scalars.append(None)
            else:
                storage.value = marshal.scalar_value(self.name, index, spec, value)  # type: ignore
                self.buffers.append(None)
                self._scalars.append(storage.value)  # type: ignore[attr-defined]
        self._linked: LinkedObject | None = None
        self._graph: RecordedGraph | None = None
        self._lock = threading.Lock()  # one replay at a time: they share the capture buffers
        self._record()
        self._heap_results = self._heap_result_owners()

    def _capture_buffer(self, index: int, spec: Any, value: Any) -> Buffer:
        if isinstance(value, Buffer):
            if value.device is not self.device:
                raise ArgumentError(f"{self.name}: argument {index}: the buffer lives on "
                                    f"{value.device.kind}:{value.device.index}, the program runs "
                                    f"on {self.device.kind}:{self.device.index}")
            return value  # used in place
        info = marshal.array_info(value)
        if info is None or info.on_device:
            raise ArgumentError(f"{self.name}: argument {index}: expected {spec.mlir} as a NumPy "
                                f"array or a Nova Buffer, got {type(value).__name__}")
        array = np.array(value, copy=True, order="C")
        buf = self.device.to_device(array)
        self._owned.append(buf)
        return buf

    # --- recording ----------------------------------------------------------------------------
    def _link(self, abi_symbols: dict[str, int]) -> int:
        self._linked = link_for_recording(self.module, abi_symbols,
                                          f"{self.module.name} (capture of @{self.name})")
        return self._linked.function_address(self.entry.symbol)

    def _record(self) -> None:
        self.module._require_open()
        self.device.synchronize()  # capture-time buffers are ready before any replay uses them
        self._graph = self.device.record_graph(CaptureRequest(
            name=self.name, manifest=self.module.manifest, link=self._link,
            args=self._plan.args, results=self._plan.results))

    def _heap_result_owners(self) -> list[ResultMemory]:
        """The host code ran once, at capture: the host-heap memrefs it returned then (not the
        recording's own allocations, not capture buffers, not stack or global memory) belong to
        this capture, read by every replay and freed by close()."""
        memrefs = [i for i, spec in enumerate(self.entry.args) if spec.kind == "memref"]
        spans = argument_spans([
            (self._plan.arg_storage[i], self.entry.args[i].rank,  # type: ignore[misc]
             ctypes.sizeof(marshal.SCALAR_CTYPES.get(self.entry.args[i].dtype, ctypes.c_uint8)))
            for i in memrefs])
        graph = self._require()
        owners: dict[int, ResultMemory] = {}
        for spec, words in zip(self.entry.results, self._plan.result_storage, strict=True):
            if spec.kind != "memref":
                continue
            allocated = words[0] & 0xFFFFFFFFFFFFFFFF  # type: ignore[index]
            if allocated in owners or allocated in (0, UNOWNED_ALLOCATED) or graph.owns(
                    allocated) or any(low <= allocated <= high for low, high in spans):
                continue
            owners[allocated] = ResultMemory.host_heap(allocated)
        return list(owners.values())

    # --- replay -------------------------------------------------------------------------------
    @property
    def kernel_count(self) -> int:
        """Kernel launches recorded (per replay)."""
        return self._require().kernel_count

    @property
    def node_count(self) -> int | None:
        """Graph nodes (cuda: as the driver counts them; cpu: launches, copies and fills)."""
        return self._require().node_count

    def _require(self) -> RecordedGraph:
        if self._graph is None:
            raise RuntimeFailure(f"captured @{self.name} was closed")
        self.module._require_open()
        return self._graph

    def launch(self, stream: Stream | None = None) -> None:
        """Run the recorded work once on the capture-time buffers (asynchronous on `stream`,
        default: the device's default stream)."""
        self._require().launch(self.device._stream(stream))

    def replay(self, *args: Any, stream: Stream | None = None) -> Any:
        """Copy `args` into the capture-time buffers, run the recorded work, copy the memref
        arguments back, wait, and return the entry's results. Replays of one CapturedEntry are
        serialized (they share the capture-time buffers)."""
        with self._lock:
            return self._replay(args, stream)

    __call__ = replay

    def _replay(self, args: tuple[Any, ...], stream: Stream | None) -> Any:
        graph = self._require()
        s = self.device._stream(stream)
        if len(args) != len(self.entry.args):
            raise ArgumentError(f"{self.name}: expected {len(self.entry.args)} argument(s), got "
                                f"{len(args)}")
        back: list[tuple[Any, Buffer]] = []
        keep: list[Any] = []
        for index, (spec, value) in enumerate(zip(self.entry.args, args, strict=True)):
            cap = self.buffers[index]
            if cap is None:
                self._check_scalar(index, spec, value)
            elif value is not cap:
                self._copy_in(index, spec, value, cap, s, back, keep)
        graph.launch(s)
        for target, cap in back:
            if isinstance(target, Buffer):
                self.device.copy_dtod(target, cap, cap.nbytes, stream=s)
            else:
                self.device.copy_dtoh(target, cap, cap.nbytes, stream=s)
        graph.synchronize(s)
        for original, contiguous in keep:
            if original is not contiguous:
                np.copyto(original, contiguous)
        return self._results()

    def _check_scalar(self, index: int, spec: Any, value: Any) -> None:
        converted = marshal.scalar_value(self.name, index, spec, value)
        captured = self._scalars[index]
        if converted != captured and not (converted != converted and captured != captured):
            raise ArgumentError(f"{self.name}: argument {index} is a scalar, baked into the "
                                f"captured graph as {captured!r}; got {value!r} (capture again "
                                "for another value)")

    def _copy_in(self, index: int, spec: Any, value: Any, cap: Buffer, s: Stream,
                 back: list[tuple[Any, Buffer]], keep: list[Any]) -> None:
        if isinstance(value, Buffer):
            if value.device is not self.device or value.shape != cap.shape \
                    or value.dtype != cap.dtype:
                raise ArgumentError(f"{self.name}: argument {index}: expected a {cap.dtype} "
                                    f"buffer of shape {cap.shape} on {self.device.kind}, got "
                                    f"{value!r}")
            self.device.copy_dtod(cap, value, cap.nbytes, stream=s)
            back.append((value, cap))
            return
        array = np.asarray(value)
        if array.shape != cap.shape or array.dtype != cap.dtype:
            raise ArgumentError(f"{self.name}: argument {index}: expected {spec.mlir} with shape "
                                f"{cap.shape} and dtype {cap.dtype} (as captured), got shape "
                                f"{array.shape} and dtype {array.dtype}")
        contiguous = np.ascontiguousarray(array)
        self.device.copy_htod(cap, contiguous, cap.nbytes, stream=s)
        if array.flags.writeable:
            back.append((contiguous, cap))
            keep.append((array, contiguous))

    def _results(self) -> Any:
        from nova.runtime.executor import python_results

        abi = self.module._require_open()
        return python_results(self.entry.results, self._plan.result_storage, abi)

    # --- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the graph, the capture-time buffers it owns and its allocations."""
        graph, self._graph = self._graph, None
        if graph is None:
            return
        with contextlib.suppress(NovaError):
            self.device.synchronize()
        graph.close()
        for buf in self._owned:
            buf.free()
        self._owned.clear()
        for owner in self._heap_results:
            owner.release()
        self._heap_results.clear()
        self._linked = None

    def __enter__(self) -> CapturedEntry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._graph is None else f"{self.kernel_count} kernel launch(es)"
        return f"<CapturedEntry @{self.name} on {self.device.kind}:{self.device.index} {state}>"


def capture(module: NovaModule, name: str, *example_args: Any) -> CapturedEntry:
    """Capture entry `name` of `module` with arguments shaped like `example_args`."""
    entry = next((e for e in module.manifest.entries if e.name == name), None)
    if entry is None:
        raise KeyError(f"{module.name} has no entry '{name}' (entries: "
                       f"{', '.join(module.entries) or 'none'})")
    return CapturedEntry(module, entry, example_args)
