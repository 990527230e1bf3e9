"""async-region: make host-side GPU ops asynchronous, threading one `!gpu.async.token` through them.

Upstream MLIR's `gpu-async-region` (its token-threading part; the `async.execute` parts do not
apply, Nova has no `async` dialect). In each block of each `func.func`, a `gpu.wait async` starts
a token chain; every `gpu.alloc`/`dealloc`/`memcpy`/`memset`/`launch_func` becomes async and
depends on the current token (inserted first among its dependencies); an existing `gpu.wait`
joins the chain; before a terminator or any op with (possible) side effects a `gpu.wait [%tok]`
synchronizes the host and ends the chain. Ops that already return a token keep it.

A `gpu.alloc host_shared` becomes async like any other alloc (as upstream's pass does). Managed
memory is not stream-ordered: the host lowering allocates it at once and its token is the stream
of its dependencies, so the memory exists before anything ordered after the token runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator, is_side_effect_free

from nova.errors import PassError
from nova.ir.gpu import AsyncTokenType, LaunchOp, WaitOp
from nova.ir.locations import location_of
from nova.passes.launch_utils import copy_location

_OpT = TypeVar("_OpT", bound=Operation)

# Ops implementing MLIR's gpu::AsyncOpInterface (gpu.wait is handled on its own).
ASYNC_OPS = frozenset({"gpu.alloc", "gpu.dealloc", "gpu.memcpy", "gpu.memset", "gpu.launch_func"})
_SEGMENTS = "operandSegmentSizes"


def _depends_on(op: Operation, token: SSAValue) -> bool:
    return token in getattr(op, "asyncDependencies", ())


def _make_async(op: Operation, token: SSAValue) -> Operation:
    """A copy of `op` that depends on `token` (first, unless it already does) and returns an
    async token (last result)."""
    properties = dict(op.properties)
    segments = properties.get(_SEGMENTS)
    extra = [] if _depends_on(op, token) else [token]
    if isinstance(segments, DenseArrayBase) and extra:
        sizes = list(segments.get_values())
        sizes[0] += 1  # asyncDependencies is the first operand group
        properties[_SEGMENTS] = DenseArrayBase.from_list(i32, sizes)
    result_types = list(op.result_types)
    if getattr(op, "asyncToken", None) is None:
        result_types.append(AsyncTokenType())
    new = type(op).create(operands=[*extra, *op.operands], result_types=result_types,
                          properties=properties, attributes=dict(op.attributes),
                          successors=list(op.successors))
    copy_location(op, new)
    for old, fresh in zip(op.results, new.results, strict=False):
        fresh.name_hint = old.name_hint
        old.replace_all_uses_with(fresh)
    return new


class _TokenThreader:
    """MLIR's ThreadTokenCallback: the current token lives from a `gpu.wait async` to the next
    host synchronization."""

    def __init__(self) -> None:
        self.token: SSAValue | None = None

    def block(self, block: Block) -> None:
        for op in list(block.ops):
            self._visit(block, op)

    def _wait(self, block: Block, before: Operation, deps: list[SSAValue],
              is_async: bool) -> SSAValue | None:
        wait = WaitOp(deps, is_async)
        copy_location(before, wait)
        block.insert_op_before(wait, before)
        return wait.asyncToken

    def _visit(self, block: Block, op: Operation) -> None:
        if isinstance(op, LaunchOp):

            raise PassError("async-region: 'gpu.launch' op replace with gpu.launch_func first "
                            "(run outline-kernels)", location_of(op))
        if isinstance(op, WaitOp):
            if self.token is not None and not _depends_on(op, self.token):
                op = self._replace(block, op, _make_async_wait(op, self.token))
            self.token = op.asyncToken
            return
        if op.name in ASYNC_OPS:
            if self.token is None:
                self.token = self._wait(block, op, [], True)
            assert self.token is not None
            new = self._replace(block, op, _make_async(op, self.token))
            self.token = new.results[-1]
            return
        if self.token is None:
            return
        if op.has_trait(IsTerminator) or not is_side_effect_free(op):
            self.token = self._wait(block, op, [self.token], False)

    @staticmethod
    def _replace(block: Block, old: Operation, new: _OpT) -> _OpT:
        block.insert_op_before(new, old)
        block.erase_op(old)
        return new


def _make_async_wait(wait: WaitOp, token: SSAValue) -> WaitOp:
    """`gpu.wait` with `token` as its first dependency (async-ness unchanged)."""
    new = WaitOp([token, *wait.asyncDependencies], wait.asyncToken is not None)
    new.attributes.update(wait.attributes)
    copy_location(wait, new)
    if wait.asyncToken is not None and new.asyncToken is not None:
        new.asyncToken.name_hint = wait.asyncToken.name_hint
        wait.asyncToken.replace_all_uses_with(new.asyncToken)
    return new


def _blocks_post_order(op: Operation) -> list[Block]:
    """The blocks nested in `op`, each after the blocks nested in its ops (MLIR's walk order)."""
    order: list[Block] = []
    for region in op.regions:
        for block in region.blocks:
            for nested in block.ops:
                order.extend(_blocks_post_order(nested))
            order.append(block)
    return order


@dataclass(frozen=True)
class AsyncRegionPass(ModulePass):
    """Make GPU ops async and thread a token through them (upstream gpu-async-region)."""

    name = "async-region"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.body.block.ops if f.name == "func.func"]:
            threader = _TokenThreader()
            for block in _blocks_post_order(func):
                threader.block(block)
