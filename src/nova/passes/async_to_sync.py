"""`async-to-sync`: run every `async.execute` region inline, where it is written, in program
order, and remove the rest of the `async` dialect (docs/async.md, "The async dialect").

Each `async.execute` is replaced by its body: the entry block's arguments become the unwrapped
values of its `!async.value` operands, its `async.yield` operands become its value results,
and its token disappears. `async.await` of a token, `async.await_all`, `async.create_group` and
`async.add_to_group` (whose rank result must be unused) are removed; `async.await` of a value
becomes that value.

Why this is sound: program order is a valid schedule of the execute regions. Every dependency
token and every `!async.value` operand of a region is defined by an op that dominates it, so
it comes from an earlier region (or an earlier op), which has already run to completion when
the region starts; `async.await` then never waits. The async semantics allow a region to start
as soon as its inputs are ready, at any time before its results are awaited, so running it at
once, to completion, is one of the allowed executions. A program whose result depends on two
regions running concurrently (one spinning on a flag that the other sets, say) is racy under
the async semantics already, and is not supported.

What it gives up: concurrency between execute regions on the host (the host thread runs them
one after another, the way upstream's runtime would with a single worker thread). GPU work
inside a region is untouched: `gpu.wait async` / `async [%t]` tokens in it still map onto
streams and events, so device-side overlap is as written.

Unsupported forms are located PassErrors naming the op: an async value, token or group that
escapes into a non-async op (a `func.return`, a `func.call`, an `scf.yield`, a block argument
or a function signature), a used `async.add_to_group` rank, and async ops inside kernels. The
coroutine and runtime ops (`async.func`, `async.call`, `async.coro.*`, ...) are rejected by the
parser already.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nova.errors import PassError
from nova.ir.dialects.async_ import ASYNC_TYPES, AddToGroupOp, AwaitOp, ExecuteOp, YieldOp
from nova.ir.locations import location_of

_KERNEL_OPS = frozenset({"gpu.launch", "gpu.func", "gpu.module"})


def _error(op: Operation, message: str) -> PassError:

    return PassError(f"async-to-sync: '{op.name}' op {message}", location_of(op))


def _is_async_type(ty: Attribute) -> bool:
    return isinstance(ty, ASYNC_TYPES)


def _is_async_op(op: Operation) -> bool:
    return op.name.startswith("async.")


class AsyncToSyncPass(ModulePass):
    """Run `async.execute` regions inline in program order and drop tokens, values and groups
    (see the module docstring for why this is a valid schedule)."""

    name = "async-to-sync"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ops = list(op.walk())
        for each in ops:
            _check(each)
        values: dict[SSAValue, SSAValue] = {}
        for each in ops:
            if isinstance(each, ExecuteOp):
                _inline_execute(each, values)
        for each in reversed(ops):
            if _is_async_op(each) and not isinstance(each, YieldOp):
                _erase_async(each, values)


# ---- checks: everything the rewrite cannot map is rejected before anything changes -----------


def _check(op: Operation) -> None:
    """Reject `op` if the rewrite cannot map what it does with async types."""
    if _is_async_op(op):
        _check_async_op(op)
        return
    for operand in op.operands:
        if _is_async_type(operand.type):
            raise _error(op, f"uses a {operand.type} value: async-to-sync maps async values, "
                         "tokens and groups only through async ops, not through other ops")
    for result in op.results:
        if _is_async_type(result.type):
            raise _error(op, f"produces a {result.type} value, which async-to-sync cannot map")
    _check_signatures(op)


def _check_signatures(op: Operation) -> None:
    """Block arguments and function types of async types (an async value that crosses a
    function or loop boundary) cannot be mapped to anything."""
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                if _is_async_type(arg.type):
                    raise _error(op, f"has a region argument of type {arg.type}, which "
                                 "async-to-sync cannot map")
    ftype = op.properties.get("function_type")
    if isinstance(ftype, FunctionType) and any(
            _is_async_type(t) for t in (*ftype.inputs.data, *ftype.outputs.data)):
        raise _error(op, f"has async types in its signature {ftype}, which async-to-sync "
                     "cannot map")


def _check_async_op(op: Operation) -> None:
    ancestor = op.parent_op()
    while ancestor is not None:
        if ancestor.name in _KERNEL_OPS:
            raise _error(op, f"inside '{ancestor.name}' is not supported: the async dialect "
                         "is host code")
        ancestor = ancestor.parent_op()
    if isinstance(op, AddToGroupOp) and op.rank.uses:
        raise _error(op, "result (the token's rank in the group) is used; async-to-sync "
                     "does not compute it")


# ---- the rewrite ---------------------------------------------------------------------------


def _inline_execute(op: ExecuteOp, values: dict[SSAValue, SSAValue]) -> None:
    """Move `op`'s body before it, its arguments bound to the unwrapped operands; record the
    values its yield returns as its results' unwrapped values."""
    block = op.bodyRegion.blocks[0]
    terminator = block.last_op
    assert isinstance(terminator, YieldOp), "verified: the body ends in async.yield"
    for result, value in zip(op.bodyResults, terminator.operands, strict=True):
        values[result] = value
    Rewriter.erase_op(terminator)
    arguments = [values[operand] for operand in op.bodyOperands]
    Rewriter.inline_block(block, InsertPoint.before(op), arguments)


def _erase_async(op: Operation, values: dict[SSAValue, SSAValue]) -> None:
    """Erase a (now body-less) execute or an await/group op; an awaited value is replaced by
    its unwrapped value. Called in reverse program order, so users go before definers."""
    if isinstance(op, AwaitOp) and op.result is not None:
        op.result.replace_all_uses_with(values[op.operand])
    Rewriter.erase_op(op)
