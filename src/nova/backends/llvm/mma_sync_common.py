"""What the NVPTX and CPU lowerings of `nvgpu.mma.sync` / `nvgpu.ldmatrix` share: the support
check, so both devices report one located error text."""

from __future__ import annotations

from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter
from nova.errors import UnsupportedError
from nova.ir.dialects.nvgpu_mma import (
    LdMatrixOp,
    MmaSyncOp,
    ldmatrix_lowering_error,
    mma_sync_lowering_error,
)


def check(fe: FunctionEmitter, op: Operation) -> None:
    """Raise a located UnsupportedError when the backends cannot lower `op`
    (nova.ir.dialects.nvgpu_mma's *_lowering_error)."""
    problem = (ldmatrix_lowering_error(op) if isinstance(op, LdMatrixOp)
               else mma_sync_lowering_error(op) if isinstance(op, MmaSyncOp) else None)
    if problem is not None:
        raise UnsupportedError(f"{op.name}: {problem}", fe.location(op))
