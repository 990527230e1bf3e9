"""Which kernel values differ between the lanes of a warp, to catch warp-collective tensor-core
calls (`nova.mma`) that only some lanes of a warp reach.

A conservative, syntax-directed analysis over the values the translator emits. Each SSA value
has a level:

- UNIFORM (the default): the same on every lane of a warp (constants, block indices, array
  sizes, loop counters of uniform loops, `thread_id(0) // 32`, ...);
- LANE: `thread_id(0)`, `global_id(0)`, `lane_id()` and those plus or minus a constant multiple
  of 32: the value is a 32-aligned uniform base plus the lane (blocks are whole warps, as
  tensor-core kernels need);
- VARYING: anything else computed from a LANE or VARYING value.

A LANE value divided (`//`) by a positive multiple of 32, shifted right by 5 or more, masked
with a constant whose low 5 bits are clear, or compared with a constant multiple of 32 is
uniform again (`warp = t // 32`, `if t < 64:`). Variables (rank-0 slots) take the highest level
stored into them; array contents are not tracked (an element read at a uniform index is
uniform). The analysis can miss divergence (a value a loop makes varying after its first use, a
branch inside `x if c else y`), but what it reports is divergent unless `block_dim(0)` is not a
multiple of 32 or the code relies on data being equal across lanes.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.ir import Operation, SSAValue

from nova.errors import SourceLocation

UNIFORM, LANE, VARYING = 0, 1, 2

_CONVERSIONS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
_WARP_WIDE = frozenset({"nvvm.vote.sync", "gpu.subgroup_reduce"})


class LaneLevels:
    """The level of every SSA value of one translation, and the divergent regions entered."""

    def __init__(self) -> None:
        self.levels: dict[SSAValue, int] = {}
        self.regions: list[SourceLocation | None] = []  # conditions of enclosing branches

    def of(self, value: SSAValue) -> int:
        return self.levels.get(value, UNIFORM)

    def set(self, value: SSAValue, level: int) -> None:
        if level == UNIFORM:
            self.levels.pop(value, None)
        else:
            self.levels[value] = level

    def emitted(self, op: Operation) -> None:
        """Propagate through an op just emitted: conversions and variable reads keep their
        operand's level, a variable store raises its slot's, anything else computed from a
        non-uniform operand is VARYING (binary() refines the arithmetic cases)."""
        level = max((self.of(v) for v in op.operands), default=UNIFORM)
        if op.name in _WARP_WIDE:
            return  # votes and reductions give every lane the same result
        if isinstance(op, memref.StoreOp) and not op.indices:
            slot = op.memref
            self.set(slot, max(self.of(slot), self.of(op.value)))
            return
        if level == UNIFORM:
            return
        keep = isinstance(op, _CONVERSIONS) or (isinstance(op, memref.LoadOp)
                                                and not op.indices)
        for result in op.results:
            self.set(result, level if keep else VARYING)


def _multiple_of_32(value: object) -> bool:
    return type(value) is int and value % 32 == 0


def binary_level(op: str, left: int, right: int, left_const: object,
                 right_const: object) -> int | None:
    """The level of `a op b` from the operands' levels and constant values (None for constants
    that are not known); None when the generic rule (VARYING if any operand is not uniform)
    applies."""
    if left == LANE and right == UNIFORM:
        if op == "//" and _multiple_of_32(right_const) and right_const > 0:  # type: ignore[operator]
            return UNIFORM
        if op == ">>" and type(right_const) is int and right_const >= 5:
            return UNIFORM
        if op == "&" and type(right_const) is int and right_const & 31 == 0:
            return UNIFORM
        if op in ("+", "-") and _multiple_of_32(right_const):
            return LANE
        if op in ("<", "<=", ">", ">=", "==", "!=") and _multiple_of_32(right_const):
            # t < 64 holds for whole warps; t <= 63 does not look like it, so only multiples
            return UNIFORM if op in ("<", ">=") else VARYING
    if right == LANE and left == UNIFORM:
        if op == "+" and _multiple_of_32(left_const):
            return LANE
        if op in ("<=", ">") and _multiple_of_32(left_const):   # 64 <= t, 64 > t
            return UNIFORM
    return None
