"""Automatic graphs: repeated calls of a replayable entry run as one recorded graph.

A compiled entry issues its device work one operation at a time from its host code; on cuda every
operation of a call that ends in a host wait costs about one submission and one completion
latency (docs/async.md, "What the allocation costs"). When the compiler found the entry
*replayable* (`EntryPoint.replay_ops` >= 2: nova.backends.host.replay) and the device asks for it
(`Device.auto_graphs`: cuda), a call that repeats the previous call of the same plan exactly —
the same Nova Buffers, unchanged, and equal scalar arguments — records the entry once (the
capture machinery of `nova.runtime.graph`) and from then on runs the recording instead of the
host code: one `cuGraphLaunch` (and one wait, when the host code waited).

Why this is the same program. A replayable entry's host code reads nothing but its arguments'
descriptors and scalar values, so the device work it issues is a function of those; the plan's
memo (nova.runtime.executor) proves the descriptors unchanged (the same Buffer objects, same
shapes, not freed) and the scalars are compared here, so the recording issues what the host code
would. Memory the entry allocates with gpu.alloc becomes graph memory: allocated once per
recording and reused by every replay, as the stream-ordered pool would reuse it.

When it records. A plan (one per concurrent call) keeps at most one recording. The first call
with new arguments runs directly; the second identical call records and replays; every later one
replays. Any change (another Buffer, new scalars) drops the recording (its graph memory with it)
and starts over, so alternating arguments never record. A recording that fails (the capture
bindings reject something) turns automatic graphs off for the entry: calls run directly, and
report any genuine error as they always did.

A fault in replayed work is raised by the wait, as for the direct call's deferred waits; on cuda
it names the entry's graph, since the driver does not say which node faulted.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from nova.errors import NovaError

if TYPE_CHECKING:
    from nova.runtime.executor import EntryFunction, EntryPlan
    from nova.runtime.graph import RecordedGraph
    from nova.runtime.linker import LinkedObject
    from nova.runtime.stream import Stream

__all__ = ["PlanGraph", "replay_or_record"]


class PlanGraph:
    """A plan's automatic-graph state: the scalar key of the last direct call, and the recording
    made for `key` (None until the key repeats)."""

    __slots__ = ("graph", "key", "linked", "recordings", "replays", "seen")

    def __init__(self) -> None:
        self.recordings = 0
        self.replays = 0
        self.graph: RecordedGraph | None = None
        self.key: tuple[Any, ...] | None = None
        self.seen: tuple[Any, ...] | None = None
        # the host object linked for the recording: the runtime may keep pointers into it (kernel
        # names, module descriptors) as long as the graph lives
        self.linked: LinkedObject | None = None

    def drop(self, stream: Stream) -> None:
        """Forget the key and release the recording (the plan's memrefs changed), after the
        work of its last replay on `stream` (its graph memory and kernels may still be in use;
        a fault found here is sticky and is raised again by the next wait)."""
        graph, self.graph = self.graph, None
        self.key = self.seen = None
        if graph is not None:
            with contextlib.suppress(NovaError):
                graph.synchronize(stream)
            graph.close()
        self.linked = None


def replay_or_record(function: EntryFunction, plan: EntryPlan) -> bool:
    """Run this call as the plan's recording when it may (see the module docstring); False
    when the call must run directly. The plan's memrefs matched their memo and its scalar
    arguments are bound."""
    state = plan.graph_state
    if state is None:
        state = plan.graph_state = PlanGraph()
    storage = plan.arg_storage
    key = tuple([storage[i].value for i in function._scalar_indices])  # type: ignore[attr-defined]
    graph = state.graph
    stream = function._device.default_stream
    if graph is None or state.key != key:
        if graph is not None:
            state.drop(stream)
        if state.seen != key:
            state.seen = key
            return False
        graph = _record(function, plan)
        if graph is None:
            return False
        state.graph, state.key = graph, key
        state.recordings += 1
    graph.launch(stream)
    state.replays += 1
    if graph.host_waits:
        graph.synchronize(stream)
    return True


def _record(function: EntryFunction, plan: EntryPlan) -> RecordedGraph | None:
    """Record the entry for the plan's bound arguments, or turn automatic graphs off for it."""
    # imports NumPy: not before a recording
    from nova.runtime.graph import CaptureRequest, link_for_recording

    module = function.module
    state = plan.graph_state
    assert state is not None

    def link(abi_symbols: dict[str, int]) -> int:
        state.linked = link_for_recording(
            module, abi_symbols, f"{module.name} (automatic graph of @{function.name})")
        return state.linked.function_address(function.entry.symbol)

    try:
        graph = function._device.record_graph(CaptureRequest(
            name=function.name, manifest=module.manifest, link=link, args=plan.args,
            results=plan.results))
    except NovaError:
        state.linked = None
        function.auto_graphs = False
        return None
    graph.label = f"{function.name} (automatic graph)"
    return graph
