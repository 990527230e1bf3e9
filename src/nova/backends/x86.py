"""x86-64 object emission for host code and CPU-device kernels.

`emit_object(llvm_ir)` parses and verifies the LLVM IR, runs LLVM's O3 pipeline and emits an
ELF relocatable object for x86_64-unknown-linux-gnu in the large code model, static relocations
(the runtime loads it into MCJIT or embeds it in the bundle). Why large: MCJIT's memory manager
maps each section on its own, and in a process where CUDA has reserved huge address ranges a data
section (the embedded PTX/cubin images, constants) can land more than 2 GiB from the code, which a
small-code-model PC32 relocation cannot reach: RuntimeDyldELF then fails an assertion and aborts
the process (seen on an H100: `resolveX86_64Relocation ... isInt<32>(RealOffset)`). The large
model addresses everything with 64-bit absolute relocations, which RuntimeDyld resolves anywhere.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from nova.backends.llvm.codegen import optimize, parse_verified
from nova.errors import BackendError

TRIPLE = "x86_64-unknown-linux-gnu"


@functools.cache
def _target() -> llvm.Target:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # Inline asm (the CPU device's fiber switch) needs the asm parser, or LLVM aborts the process.
    llvm.initialize_native_asmparser()
    return llvm.Target.from_triple(TRIPLE)


def target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A new x86-64 target machine (generic x86-64 CPU, large code model, O`opt_level`; see the
    module docstring). Not shared between emissions (creating one costs ~40 us): an LLVM target
    machine keeps state across `emit_object` calls, and reusing one made the same host IR give
    different objects later in a process."""
    return _target().create_target_machine(cpu="x86-64", opt=opt_level, reloc="static",
                                           codemodel="large")


def emit_object(llvm_ir: str, opt_level: int = 3) -> bytes:
    """Optimize LLVM IR (LLVM's O`opt_level` pipeline, 0-3) and emit an x86-64 ELF relocatable
    object."""
    tm = target_machine(opt_level)
    module = parse_verified(llvm_ir, TRIPLE, str(tm.target_data), "LLVM IR")
    try:
        optimize(module, tm, opt_level)
        return tm.emit_object(module)
    except RuntimeError as exc:
        raise BackendError(f"x86-64 code generation failed: {exc}") from exc
