"""Which public host functions the runtime may replay as a recorded graph.

An entry's host code is *replayable* when everything it does, other than the device work it
issues, is a function of its arguments' descriptors (addresses, shapes, strides) and scalar
values: no host memory is read or written, no function is called but the module's own
replayable ones, nothing is printed, and no memref is returned. Its control flow can then
depend only on those values, so one recording (a CUDA graph) made for a given set of argument
buffers and scalars issues exactly the device work a direct call with the same arguments would
issue, and the runtime may replay the recording instead of running the host code (docs/async.md,
"Automatic graphs").

`replay_ops(func)` is the manifest's `EntryPoint.replay_ops`: 0 when the function is not
replayable, else the number of stream operations (kernel launches, copies, fills) its body
issues, counting an operation inside a loop twice (it runs any number of times). The runtime
replays only entries with two or more (nova.runtime.executor.MIN_REPLAY_OPS): a graph batches
the submission of several operations into one, and an entry that issues a single operation has
nothing to batch.

The check is an allow-list of operations, so any operation it does not know (a new dialect, a
host load, a library call) makes the entry non-replayable: the safe answer. A call is allowed
when its callee is defined in the module and passes the same check (no recursion).
"""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, MemRefType, UnrankedMemRefType
from xdsl.ir import Operation

from nova.backends.llvm.emitter import attr, symbol_name

PURE_DIALECTS = frozenset({"arith", "math", "index", "ub"})
"""Dialects whose every operation computes values from values (no memory, no side effects)."""

CONTROL_OPS = frozenset({
    "scf.for", "scf.if", "scf.yield", "scf.while", "scf.condition", "scf.index_switch",
    "scf.execute_region", "cf.br", "cf.cond_br", "cf.switch", "cf.assert", "func.return",
    "affine.apply", "affine.min", "affine.max", "builtin.unrealized_conversion_cast",
})
"""Control flow and index arithmetic: deterministic given the values they read."""

DESCRIPTOR_OPS = frozenset({
    "memref.dim", "memref.rank", "memref.cast", "memref.subview", "memref.reinterpret_cast",
    "memref.extract_strided_metadata", "memref.extract_aligned_pointer_as_index",
    "memref.collapse_shape", "memref.expand_shape", "memref.view", "memref.assume_alignment",
    "memref.memory_space_cast",
})
"""Memref operations that read or build descriptors, never the memory they describe."""

STREAM_OPS = frozenset({"gpu.launch_func", "gpu.memcpy", "gpu.memset"})
"""Device work on a stream: what a graph records as nodes."""

DEVICE_OPS = STREAM_OPS | {"gpu.alloc", "gpu.dealloc", "gpu.wait"}
"""Everything the graph capture bindings record (allocations become graph memory nodes, waits
become dependencies)."""

LOOPS = frozenset({"scf.for", "scf.while"})


def replay_ops(func: Operation) -> int:
    """0 if public host function `func` is not replayable, else its stream operations (see the
    module docstring)."""
    ftype = attr(func, "function_type")
    if not isinstance(ftype, FunctionType) or any(
            isinstance(t, MemRefType | UnrankedMemRefType) for t in ftype.outputs.data):
        return 0  # a returned allocation would be reused by the next replay
    return _body_ops(func, set(), {}) or 0


def _body_ops(func: Operation, calling: set[str], done: dict[str, int | None]) -> int | None:
    """Stream operations of `func`'s body (its callees' included), or None when something in
    it is not allowed. `calling`: the functions on the call path (recursion is not replayable:
    its depth could depend on memory); `done`: callees already analysed (each once)."""
    count = 0
    for op in func.walk():
        if op is func:
            continue
        name = op.name
        if name.partition(".")[0] in PURE_DIALECTS or name in CONTROL_OPS \
                or name in DESCRIPTOR_OPS:
            continue
        if name == "func.call":
            callee = _callee_ops(op, calling, done)
            if callee is None:
                return None
            count += 2 * callee if _in_loop(op, func) else callee
            continue
        if name not in DEVICE_OPS or (name == "gpu.alloc" and "hostShared" in op.properties):
            return None
        if name in STREAM_OPS:
            count += 2 if _in_loop(op, func) else 1
    return count


def _callee_ops(call: Operation, calling: set[str], done: dict[str, int | None]) -> int | None:
    """Stream operations of the function `call` calls, if it is defined in the module (not a
    runner utility or library declaration) and replayable itself."""
    module = call.parent_op()
    while module is not None and module.name != "builtin.module":
        module = module.parent_op()
    callee_attr = attr(call, "callee")
    name = getattr(getattr(callee_attr, "root_reference", None), "data", None)
    if module is None or name is None or name in calling:
        return None
    if name in done:
        return done[name]
    callee = next((op for op in module.body.block.ops  # type: ignore[attr-defined]
                   if op.name == "func.func" and symbol_name(op) == name), None)
    result = None
    if callee is not None and callee.regions and callee.regions[0].blocks:
        result = _body_ops(callee, calling | {name}, done)
    done[name] = result
    return result


def _in_loop(op: Operation, func: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not func:
        if parent.name in LOOPS:
            return True
        parent = parent.parent_op()
    return False
