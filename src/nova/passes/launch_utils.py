"""Helpers shared by the passes that rewrite `gpu.launch`: captured values, constants, locations.

`captured_values` reproduces MLIR's `getUsedValuesDefinedAbove` order (a post-order walk of the
launch body, operands left to right, first use wins), which decides the order of kernel arguments
and of sunk constants, so Nova's outlined IR matches mlir-opt's.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import ConstantLike

from nova.ir.locations import location_of, set_location


def defining_op(value: SSAValue) -> Operation | None:
    """The op that defines `value` (None for block arguments)."""
    return value.op if isinstance(value, OpResult) else None


def _owner(value: SSAValue) -> Operation | None:
    """The innermost op whose regions contain `value`'s definition (its defining op for
    results)."""
    if isinstance(value, OpResult):
        return value.op
    assert isinstance(value, BlockArgument)
    return value.block.parent_op()


def defined_inside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined within one of `op`'s regions."""
    owner = _owner(value)
    if owner is None:
        return False
    if isinstance(value, OpResult) and owner is op:
        return False  # op's own results are defined outside its regions
    return op.is_ancestor(owner)


def captured_values(op: Operation) -> list[SSAValue]:
    """Values used inside `op`'s regions but defined outside them, in MLIR's order."""
    seen: dict[SSAValue, None] = {}
    for region in op.regions:
        for nested in region.walk(region_first=True):
            for operand in nested.operands:
                if operand not in seen and not defined_inside(operand, op):
                    seen[operand] = None
    return list(seen)


def is_constant(op: Operation) -> bool:
    """MLIR's `m_Constant()` on an op: a ConstantLike op without operands."""
    return op.has_trait(ConstantLike) and not op.operands and len(op.results) == 1


def constant_int(value: SSAValue) -> tuple[int, int] | None:
    """`(value, bit width)` when `value` is an integer/index constant (MLIR's m_ConstantInt)."""
    op = defining_op(value)
    if op is None or not is_constant(op):
        return None
    attr = op.get_attr_or_prop("value")
    if not isinstance(attr, IntegerAttr):
        return None
    type_ = attr.type
    if isinstance(type_, IntegerType):
        return attr.value.data, type_.width.data
    assert isinstance(type_, IndexType)
    return attr.value.data, 64


def copy_location(source: Operation, target: Operation) -> None:
    """Give `target` the source location of `source` (for diagnostics on rewritten IR)."""

    location = location_of(source)
    if location is not None:
        set_location(target, location)
