"""What the NVPTX and CPU lowerings of `nvvm.wgmma.mma_async` and `nvvm.fence.proxy` share: the
support checks (one located error text on both devices) and the PTX transpose bits of the
operand layouts."""

from __future__ import annotations

from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter
from nova.errors import UnsupportedError
from nova.ir.dialects.nvvm_wgmma import (
    FenceProxyOp,
    MMALayout,
    WgmmaMmaAsyncOp,
    fence_proxy_lowering_error,
    mma_async_lowering_error,
)


def check(fe: FunctionEmitter, op: Operation) -> WgmmaMmaAsyncOp:
    """`op` as a WgmmaMmaAsyncOp; a located UnsupportedError when the backends cannot lower
    it."""
    assert isinstance(op, WgmmaMmaAsyncOp)
    problem = mma_async_lowering_error(op)
    if problem is not None:
        raise UnsupportedError(f"{op.name}: {problem}", fe.location(op))
    return op


def check_fence(fe: FunctionEmitter, op: Operation) -> FenceProxyOp:
    """`op` as a FenceProxyOp; a located UnsupportedError for kinds the backends do not lower."""
    assert isinstance(op, FenceProxyOp)
    problem = fence_proxy_lowering_error(op)
    if problem is not None:
        raise UnsupportedError(f"{op.name}: {problem}", fe.location(op))
    return op


def transposed(op: WgmmaMmaAsyncOp) -> tuple[bool, bool]:
    """PTX's imm-trans-a / imm-trans-b: A `row` and B `col` are K-major (0), the other layouts
    MN-major (1)."""
    return (MMALayout(op.layoutA.data) != MMALayout.ROW,
            MMALayout(op.layoutB.data) != MMALayout.COL)
