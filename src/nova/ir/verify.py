"""`verify_located(op)`: xDSL verification that reports the failing op and its source location.

xDSL's `Operation.verify()` raises from deep inside a walk with a message that reprints the
whole IR and without saying which op failed; this walk checks each op on its own (structure,
then the op's IRDL constraints and custom verifier, then `nova.ir.rules`' extra checks for
xDSL ops whose verifiers accept what MLIR rejects) and raises `nova.errors.VerifyError` located
at the first failing op (its location, else its nearest located ancestor's).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    SameOperandsAndResultType,
)
from xdsl.utils.exceptions import DiagnosticException

from nova.errors import NovaError, SourceLocation, VerifyError
from nova.ir.locations import location_of, nearest_location
from nova.ir.rules import RuleError, check_rules
from nova.ir.upstream_checks import check_first

_XDSL_PARENT = re.compile(r"^('[\w.]+') expects parent op")
"""xDSL's HasParent message lacks MLIR's ` op` after the op name."""


_ARITH_SAME_TYPE = frozenset(f"arith.{name}" for name in (
    "addi", "subi", "muli", "divsi", "divui", "ceildivsi", "ceildivui", "floordivsi", "remsi",
    "remui", "andi", "ori", "xori", "shli", "shrsi", "shrui", "maxsi", "maxui", "minsi", "minui",
    "addf", "subf", "mulf", "divf", "remf", "maxnumf", "minnumf", "maximumf", "minimumf", "negf"))
"""arith ops with upstream's SameOperandsAndResultType (xDSL states it as a type variable)."""


def _same_type_op(op: Operation) -> bool:
    return op.name in _ARITH_SAME_TYPE or op.has_trait(SameOperandsAndResultType)


def _name(op: Operation) -> str:
    """The op's name as diagnostics show it (an unregistered op's own, not xDSL's class's)."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


class _StructureError(DiagnosticException):
    """A block-structure violation (its message is complete, without an op-name prefix)."""


def _check_structure(op: Operation) -> None:
    """The block-structure rules xDSL's `Operation.verify` checks before `verify_`."""
    block = op.parent
    region = None if block is None else block.parent
    if op.successors:
        if block is None or region is None or block.last_op is not op:
            raise DiagnosticException(f"'{_name(op)}' op with successors must terminate its "
                                      "parent block")
        for succ in op.successors:
            if succ.parent is not region:
                raise DiagnosticException(f"'{_name(op)}' op branches to a block of another "
                                          "region")
    if not op.has_trait(NoTerminator):
        for own_region in op.regions:
            if any(blk.first_op is None for blk in own_region.blocks):
                raise _StructureError(f"'{_name(op)}' op has an empty block: expect at least a "
                                      "terminator")
    if block is None or region is None or block.last_op is not op:
        return
    parent = region.parent
    needs_terminator = len(region.blocks) > 1 or (
        parent is not None and not parent.has_trait(NoTerminator))
    if needs_terminator and not op.has_trait(IsTerminator, value_if_unregistered=True):
        raise _StructureError(f"block with no terminator, has '{_name(op)}' as its last "
                                      "op")


class _Dominance:
    """SSA dominance (xDSL does not check it): a value must be defined before each use, in the
    same block or a dominating block of the same region, or in an enclosing region."""

    def __init__(self) -> None:
        self._order: dict[Block, dict[Operation, int]] = {}
        self._dominators: dict[Region, dict[Block, set[Block]]] = {}

    def check(self, op: Operation) -> None:
        for index, value in enumerate(op.operands):
            if isinstance(value, OpResult):
                definer: Operation | None = value.op
                block = value.op.parent
            elif isinstance(value, BlockArgument):
                definer, block = None, value.block
            else:
                continue
            region = None if block is None else block.parent
            if block is None or region is None:
                continue
            user: Operation | None = op
            while user is not None and user.parent_region() is not region:
                user = user.parent_op()
            if user is None or not self._dominates(definer, block, user):
                raise VerifyError(f"operand #{index} does not dominate this use",
                                  nearest_location(op), (_defined_here(op, value),))

    def _dominates(self, definer: Operation | None, block: Block, user: Operation) -> bool:
        user_block = user.parent
        assert user_block is not None and block.parent is not None
        if user_block is not block:
            return block in self._region_dominators(block.parent)[user_block]
        if definer is None:
            return True
        order = self._order.get(block)
        if order is None:
            order = self._order[block] = {o: i for i, o in enumerate(block.ops)}
        return order[definer] < order[user]

    def _region_dominators(self, region: Region) -> dict[Block, set[Block]]:
        found = self._dominators.get(region)
        if found is not None:
            return found
        blocks = list(region.blocks)
        preds: dict[Block, list[Block]] = {b: [] for b in blocks}
        for b in blocks:
            last = b.last_op
            for succ in () if last is None else last.successors:
                if succ in preds:
                    preds[succ].append(b)
        every = set(blocks)
        dom = {b: ({b} if i == 0 else set(every)) for i, b in enumerate(blocks)}
        changed = True
        while changed:
            changed = False
            for b in blocks[1:]:
                incoming = [dom[p] for p in preds[b]]
                new = (set.intersection(*incoming) if incoming else set(every)) | {b}
                if new != dom[b]:
                    dom[b], changed = new, True
        self._dominators[region] = dom
        return dom


def _relation(user: Region | None, definer: Region | None) -> str:
    """Where the region of a value's definition lies from the using op's region, in upstream's
    words: `same`, `parent`, `child` or `neither`."""
    if user is definer:
        return "same"
    if definer is not None and user is not None and _encloses(definer, user):
        return "parent"
    if definer is not None and user is not None and _encloses(user, definer):
        return "child"
    return "neither"


def _encloses(outer: Region, inner: Region) -> bool:
    """True when `inner` lies (properly) inside `outer`."""
    current = inner.parent_region()
    while current is not None:
        if current is outer:
            return True
        current = current.parent_region()
    return False


def _defined_here(op: Operation, value: SSAValue) -> tuple[str, SourceLocation | None]:
    """Upstream's note on an operand that does not dominate its use: where the value is
    defined and how that place relates to the use (Verifier.cpp's
    `diagnoseInvalidOperandDominance`)."""
    user_region = None if op.parent is None else op.parent.parent
    if isinstance(value, OpResult):
        block = value.op.parent
        region = None if block is None else block.parent
        if block is op.parent:
            where = "(op in the same block)"
        else:
            where = {"same": "(op in the same region)", "parent": "(op in a parent region)",
                     "child": "(op in a child region)",
                     "neither": "(op is neither in a parent nor in a child region)"}[
                         _relation(user_region, region)]
        return f"operand defined here {where}", location_of(value.op)
    assert isinstance(value, BlockArgument)
    owner = value.block
    region = owner.parent
    parent = owner.parent_op()
    loc = None if parent is None else location_of(parent)
    if region is None:
        return " (block without parent)", loc
    index = list(region.blocks).index(owner)
    where = {"same": "in the same region", "parent": "in a parent region",
             "child": "in a child region",
             "neither": "neither in a parent nor in a child region"}[
                 _relation(user_region, region)]
    return f"operand defined as a block argument (block #{index} {where})", loc


def verify_located(root: Operation) -> None:
    """Verify `root` and everything nested; raise a located VerifyError on the first failure."""
    errors = verify_all(root)
    if errors:
        raise errors[0]


def verify_all(root: Operation) -> list[VerifyError]:
    """Every verifier error mlir-opt reports for `root`, in op order: as MLIR's verifier, the
    ops of one isolated-from-above op (module, function, gpu.module) are checked in pre-order
    up to the first failure; its isolated-from-above children are verified independently (each
    may report one error), but only when the rest of their parent verified."""
    errors: list[VerifyError] = []
    _verify_tree(root, _Dominance(), errors)
    return errors


def _verify_tree(root: Operation, dominance: _Dominance, errors: list[VerifyError]) -> None:
    isolated: list[Operation] = []
    pending: list[tuple[Operation, bool]] = [(root, False)]
    while pending:
        op, leaving = pending.pop()
        error = _verify_regions(op) if leaving else _verify_one(op, dominance)
        if error is not None:
            errors.append(error)
            return
        if leaving:
            continue
        pending.append((op, True))
        nested = [child for region in op.regions for block in region.blocks
                  for child in block.ops]
        for child in reversed(nested):
            if child.regions and child.has_trait(IsolatedFromAbove):
                isolated.append(child)
            else:
                pending.append((child, False))
    for child in sorted(isolated, key=_order_key(root)):
        _verify_tree(child, dominance, errors)


def _order_key(root: Operation) -> Callable[[Operation], int]:
    order = {op: i for i, op in enumerate(root.walk())}
    return lambda op: order[op]


def _verify_regions(op: Operation) -> VerifyError | None:
    """An op's checks of its regions' contents (`verify_regions_`), run as MLIR's
    `verifyRegions` after the nested ops verified, so that a bad nested op (a misplaced
    terminator) is reported at itself rather than at its parent."""
    check = getattr(op, "verify_regions_", None)
    return None if check is None else _diagnose(op, check)


def _verify_one(op: Operation, dominance: _Dominance) -> VerifyError | None:
    """The op's own checks (structure, dominance, xDSL's verifier, nova.ir.rules)."""
    def checks() -> None:
        _check_structure(op)
        dominance.check(op)
        check_first(op)
        op.verify_()
        check_rules(op)

    return _diagnose(op, checks)


def _diagnose(op: Operation, checks: Callable[[], None]) -> VerifyError | None:
    """Run `checks`; their failure as a VerifyError located at `op`."""
    try:
        checks()
    except VerifyError as err:
        return err
    except NovaError:
        raise
    except Exception as err:  # some xDSL verifiers raise a bare Exception
        # One line, as MLIR diagnostics are (IRDL constraint messages span several).
        message = " ".join(str(err).split())
        prefix = "Operation does not verify: "
        if message.startswith(prefix):
            message = message[len(prefix):]
        message = _XDSL_PARENT.sub(r"\1 op expects parent op", message)
        if "expected from variable 'T'" in message and _same_type_op(op):
            message = f"'{op.name}' op requires the same type for all operands and results"
        unprefixed = isinstance(err, _StructureError | RuleError) or getattr(
            err, "unprefixed", False)
        if not message.startswith("'") and not unprefixed:
            message = f"'{_name(op)}' op {message}"
        return VerifyError(message, nearest_location(op))
    return None
