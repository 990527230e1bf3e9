"""Target-independent LLVM code generation steps shared by the NVPTX and x86-64 emitters:
parse and verify LLVM IR text for a target, and run LLVM's optimisation pipeline at a level."""

from __future__ import annotations

import llvmlite.binding as llvm

from nova.errors import BackendError


def optimize(module: llvm.ModuleRef, tm: llvm.TargetMachine, level: int = 3) -> None:
    """Run LLVM's default O`level` module pipeline on `module` in place."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = level >= 2
    pto.slp_vectorization = level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(module, pb)


def parse_verified(llvm_ir: str, triple: str, data_layout: str, what: str) -> llvm.ModuleRef:
    """Parse LLVM IR text for a target and verify it; BackendError('invalid <what>: ...')."""
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.triple = triple
        module.data_layout = data_layout
        module.verify()
    except RuntimeError as exc:
        raise BackendError(f"invalid {what}: {exc}") from exc
    return module
