"""sink-index-computations: clone cheap index computations used in a `gpu.launch` into its body.

Upstream MLIR's `gpu-launch-sink-index-computations`: constants, `memref.dim`, `arith.select` and
`arith.cmpi` defined above a launch and used in its body (with the chains of such ops they need)
are cloned to the top of the body, in MLIR's order, when that adds no new captured values; the
body's uses are redirected to the clones. Outlining afterwards then turns them into kernel-local
values instead of kernel arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nova.ir.gpu.launch_ops import LaunchOp
from nova.passes.launch_utils import captured_values, defining_op, is_constant

# Besides constants, the ops upstream's `isLikelyAnIndexComputation` accepts.
_INDEX_COMPUTATIONS = frozenset({"memref.dim", "arith.select", "arith.cmpi"})


def is_index_computation(op: Operation) -> bool:
    """Whether sinking (duplicating) `op` into a kernel is cheap and legal."""
    return is_constant(op) or op.name in _INDEX_COMPUTATIONS


def _collect_sinkable(op: Operation, dependencies: set[SSAValue], chosen: dict[Operation, None],
                      available: set[SSAValue]) -> bool:
    """MLIR's `extractBeneficiaryOps`: whether `op` can be sunk without adding kernel arguments;
    records it (after the ops it needs) in `chosen`."""
    if op in chosen:
        return True
    if not is_index_computation(op):
        return False
    for operand in op.operands:
        if operand in available:
            continue
        producer = defining_op(operand)
        sinkable = producer is not None and _collect_sinkable(
            producer, dependencies, chosen, available)
        if not sinkable and operand not in dependencies:
            return False
    chosen[op] = None
    available.update(op.results)
    return True


def sink_into_launch(launch: LaunchOp) -> None:
    """Clone the sinkable producers of `launch`'s captured values to the top of its body."""
    candidates = captured_values(launch)
    dependencies = set(candidates)
    chosen: dict[Operation, None] = {}
    available: set[SSAValue] = set()
    for value in candidates:
        producer = defining_op(value)
        if producer is not None:
            _collect_sinkable(producer, dependencies, chosen, available)
    entry = launch.body.blocks[0]
    anchor = entry.first_op
    mapping: dict[SSAValue, SSAValue] = {}
    for op in chosen:
        clone = op.clone(mapping)  # keeps op's source location
        if anchor is None:
            entry.add_op(clone)
        else:
            entry.insert_op_before(clone, anchor)
        for old, new in zip(op.results, clone.results, strict=True):
            old.replace_uses_with_if(new, lambda use: _in_body(use.operation, launch))


def _in_body(op: Operation, launch: LaunchOp) -> bool:
    return op is not launch and launch.is_ancestor(op)


@dataclass(frozen=True)
class SinkIndexComputationsPass(ModulePass):
    """Clone constants used by gpu.launch bodies into the bodies (fewer kernel arguments)."""

    name = "sink-index-computations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for launch in [nested for nested in op.walk() if isinstance(nested, LaunchOp)]:
            sink_into_launch(launch)
