"""Automatic graphs: repeated calls of a replayable entry run as one recorded graph.

A compiled entry issues its device work one operation at a time from its host code; on cuda every
operation of a call that ends in a host wait costs about one submission and one completion
latency (docs/async.md, "What the allocation costs"). When the compiler found the entry
*replayable* (`EntryPoint.replay_ops` >= 2: nova.backends.host.replay) and automatic graphs are
on (`Device.auto_graphs`: cuda; NOVA_AUTO_GRAPHS), a call that repeats the previous calls of the
same plan exactly — the same Nova Buffers, unchanged, and bit-identical scalar arguments — records
the entry once (the capture machinery of `nova.runtime.graph`) and from then on runs the
recording instead of the host code: one `cuGraphLaunch`, and one wait when the host code waited.

Why this is the same program. A replayable entry's host code reads nothing but its arguments'
descriptors and scalar values, so the device work it issues is a function of those; the plan's
memo (nova.runtime.executor) proves the descriptors unchanged (the same Buffer objects, same
shapes, not freed) and the scalars are compared here by their bytes (so -0.0 is not 0.0), so the
recording issues what the host code would. Memory the entry allocates with gpu.alloc becomes
graph memory: allocated once per recording and reused by every replay, as the stream-ordered pool
would reuse it; the recording holds it until it is released (arguments change, the entry's
`auto_graphs` is set False, `NovaModule.release_graphs()`, the module closes).

When it records. A plan (one per concurrent call) keeps at most one recording. A run of
identical calls is counted from its first call made with the plan's memo in place (a call with
new Buffers binds them first, so it does not count); once the count exceeds the plan's threshold
(1 at first: the run's second counted call records), the call records and replays. Any change
releases the recording and starts a new run. A recording that was released before it paid for
itself (fewer than `PAYBACK_REPLAYS` replays: recording costs about as much as a hundred direct
calls) multiplies the plan's threshold by 4 (up to `MAX_THRESHOLD`); one that paid resets it, so
alternating or short runs of arguments soon stop recording. A released recording is closed once
the device has finished its last replay (an event), without waiting for it.

When it does not. A recording that fails while the direct call then succeeds turns automatic
graphs off for the entry (the capture bindings cannot record it); a call that fails either way
is the host code's own error, raised as always, and changes nothing. On the cpu device a
recording whose work forks onto streams of its own is not replayed (its faults would surface
only on those streams), and the entry runs directly.

Faults in replayed work are raised by the wait, as for the direct call's deferred waits; on cuda
they name `<entry> (automatic graph)` as the latest kernel launched, since the driver does not
say which node faulted.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from nova.errors import NovaError

if TYPE_CHECKING:
    from nova.runtime.executor import EntryFunction, EntryPlan
    from nova.runtime.graph import RecordedGraph
    from nova.runtime.linker import LinkedObject
    from nova.runtime.stream import Event

__all__ = ["PlanGraph", "after_direct_call", "reap", "release_idle", "replay_or_record"]

PAYBACK_REPLAYS = 64
"""A recording released after fewer replays than this did not pay for itself."""
MAX_THRESHOLD = 4096
"""The most identical calls a plan waits for before recording again."""


class PlanGraph:
    """A plan's automatic-graph state: the run of identical calls it is counting and the
    recording made for it."""

    __slots__ = ("graph", "key", "linked", "record_failed", "recordings", "replays", "run",
                 "run_key", "threshold", "uses")

    def __init__(self) -> None:
        self.recordings = 0  # recordings made by this plan
        self.replays = 0  # calls this plan ran as a recording
        self.graph: RecordedGraph | None = None
        self.key: bytes | None = None  # the scalars' bytes the recording was made for
        self.uses = 0  # replays of the current recording
        self.run_key: bytes | None = None  # the scalars of the run being counted
        self.run = 0  # identical calls counted in the run
        self.threshold = 1
        self.record_failed = False
        # the host object linked for the recording: the runtime may keep pointers into it (kernel
        # names, module descriptors) as long as the graph lives
        self.linked: LinkedObject | None = None

    def release(self, function: EntryFunction) -> None:
        """Forget the run and hand the recording to `function`'s retired list (closed once the
        device finished its last replay)."""
        self.run_key = None
        self.run = 0
        graph, self.graph = self.graph, None
        if graph is None:
            return
        paid = self.uses >= PAYBACK_REPLAYS
        self.threshold = 1 if paid else min(self.threshold * 4, MAX_THRESHOLD)
        self.key, self.uses = None, 0
        linked, self.linked = self.linked, None
        device = function._device
        event: Event | None = None
        try:
            event = device.create_event()
            event.record(device.default_stream)
        except NovaError:  # no event (a lost context): the graph cannot be running any more
            event = None
        function._retired.append((event, graph, linked))
        reap(function, wait=False)


def _scalar_key(function: EntryFunction, plan: EntryPlan) -> bytes:
    storage = plan.arg_storage
    return b"".join([bytes(storage[i]) for i in function._scalar_indices])


def replay_or_record(function: EntryFunction, plan: EntryPlan) -> bool:
    """Run this call as the plan's recording when it may (see the module docstring); False
    when the call must run directly (then `after_direct_call` follows it). The plan's memrefs
    matched their memo and its scalar arguments are bound."""
    state = plan.graph_state
    if state is None:
        state = plan.graph_state = PlanGraph()
    key = _scalar_key(function, plan)
    graph = state.graph
    if graph is None or state.key != key:
        if graph is not None:
            state.release(function)
        if state.run_key != key:
            state.run_key, state.run = key, 1
            return False
        state.run += 1
        if state.run <= state.threshold:
            return False
        graph = _record(function, plan, state)
        if graph is None:
            return False
        state.graph, state.key = graph, key
        state.recordings += 1
    stream = function._device.default_stream
    graph.launch(stream)
    state.replays += 1
    state.uses += 1
    if graph.host_waits:
        graph.synchronize(stream)
    return True


def after_direct_call(function: EntryFunction, state: PlanGraph, failed: bool) -> None:
    """A direct call of a plan with automatic-graph state returned (`failed`: it raised or
    returned an error status)."""
    if failed:  # the host code's own error: the run it was part of is over
        state.run_key, state.run, state.record_failed = None, 0, False
        return
    if state.record_failed:  # the program runs, but cannot be recorded
        state.record_failed = False
        function.auto_graphs = False


def _record(function: EntryFunction, plan: EntryPlan, state: PlanGraph) -> RecordedGraph | None:
    """Record the entry for the plan's bound arguments; None (and `state.record_failed`) when
    that fails, or when the recording must not be replayed (cpu work on private streams)."""
    # imports NumPy: not before a recording
    from nova.runtime.graph import CaptureRequest, link_for_recording

    module = function.module

    def link(abi_symbols: dict[str, int]) -> int:
        state.linked = link_for_recording(
            module, abi_symbols, f"{module.name} (automatic graph of @{function.name})")
        return state.linked.function_address(function.entry.symbol)

    graph: RecordedGraph | None = None
    try:
        graph = function._device.record_graph(CaptureRequest(
            name=function.name, manifest=module.manifest, link=link, args=plan.args,
            results=plan.results))
    except NovaError:
        pass
    except BaseException:
        state.linked = None
        raise
    if graph is not None and graph.private_streams:
        graph.close()
        graph = None
    if graph is None:
        state.linked = None
        state.record_failed = True
        return None
    graph.label = f"{function.name} (automatic graph)"
    return graph


def reap(function: EntryFunction, wait: bool) -> None:
    """Close `function`'s released recordings whose last replay finished (all of them after
    waiting, with `wait`; a fault found by that wait is left to the program's next wait)."""
    keep: list[tuple[Any, Any, Any]] = []
    retired, function._retired = function._retired, keep
    for event, graph, linked in retired:
        if event is not None and not wait:
            try:
                done = event.query()
            except NovaError:
                done = True  # the fault is the stream's, reported by its next wait
            if not done:
                keep.append((event, graph, linked))
                continue
        if event is not None:
            if wait:
                with contextlib.suppress(NovaError):  # reported by the program's own wait
                    event.synchronize()
            event.close()
        graph.close()  # the linked host object goes with the entry


def release_idle(function: EntryFunction) -> None:
    """Release the recordings of `function`'s idle plans. The plans are taken out of the pool
    while this runs, so no call uses them meanwhile; plans in use release theirs when they next
    see automatic graphs off, or when the module closes."""
    taken = []
    while True:
        try:
            taken.append(function._plans.pop())
        except IndexError:
            break
    try:
        for plan in taken:
            if plan.graph_state is not None:
                plan.graph_state.release(function)
    finally:
        function._plans.extend(taken)
