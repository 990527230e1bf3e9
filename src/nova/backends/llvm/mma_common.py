"""What the NVPTX and CPU lowerings of `gpu.subgroup_mma_*` share: the support check (one located
error text for both devices) and the element-wise arithmetic, which works on scalars and on LLVM
vectors alike (NVPTX applies it per fragment register, the CPU device to the whole tile).
"""

from __future__ import annotations

import math

from llvmlite import ir
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter
from nova.errors import UnsupportedError
from nova.ir.gpu.mma_ops import MMAElementwiseOp, mma_lowering_error


def check_supported(fe: FunctionEmitter, op: Operation) -> None:
    """Raise a located UnsupportedError when the backends cannot lower `op` (see
    nova.ir.gpu.mma_ops.mma_lowering_error)."""
    problem = mma_lowering_error(op)  # type: ignore[arg-type]
    if problem is not None:
        raise UnsupportedError(f"{op.name}: {problem}", fe.location(op))


def lead_dimension(op: Operation) -> int:
    """The op's `leadDimension` (elements between rows of the tile in memory)."""
    attr = op.properties["leadDimension"]
    assert isinstance(attr, IntegerAttr)
    return int(attr.value.data)


def is_transposed(op: Operation, name: str = "transpose") -> bool:
    """True when the unit property `name` is set."""
    return op.properties.get(name) is not None


def _splat(ty: ir.Type, value: float) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def _nan_propagating(b: ir.IRBuilder, pred: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """Upstream's maxf/minf lowering: `x pred y ? x : y`, NaN when either is NaN."""
    pick = b.select(b.fcmp_ordered(pred, x, y), x, y)
    return b.select(b.fcmp_unordered("uno", x, y), _splat(x.type, math.nan), pick)


def elementwise(b: ir.IRBuilder, kind: MMAElementwiseOp, args: list[ir.Value],
                result_type: ir.Type) -> ir.Value:
    """One float element-wise op on scalars or vectors (`result_type` is used by extf)."""
    if kind == MMAElementwiseOp.NEGATEF:
        return b.fneg(args[0])
    if kind == MMAElementwiseOp.EXTF:
        return b.fpext(args[0], result_type)
    x, y = args
    if kind == MMAElementwiseOp.ADDF:
        return b.fadd(x, y)
    if kind == MMAElementwiseOp.SUBF:
        return b.fsub(x, y)
    if kind == MMAElementwiseOp.MULF:
        return b.fmul(x, y)
    if kind == MMAElementwiseOp.DIVF:
        return b.fdiv(x, y)
    if kind == MMAElementwiseOp.MAXF:
        return _nan_propagating(b, ">", x, y)
    if kind == MMAElementwiseOp.MINF:
        return _nan_propagating(b, "<", x, y)
    raise AssertionError(f"unchecked element-wise kind {kind}")  # check_supported rejects it
