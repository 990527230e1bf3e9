"""Test helper: turn an llvmlite IR module for the CPU device into callable native code.

Emits an x86-64 PIC object (through `nova.backends.x86.emit_object` when it exists, else an
equivalent local target machine), loads it with llvmlite's MCJIT `add_object_file` exactly as the
CPU device does, and hands out ctypes function pointers. Keeps the engine alive with the module.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite import ir


def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def emit_object(llvm_ir: str) -> bytes:
    """x86-64 ELF relocatable of `llvm_ir` (O2, PIC)."""
    try:
        from nova.backends.x86 import emit_object as nova_emit  # type: ignore[import-not-found]
    except ImportError:
        nova_emit = None
    if nova_emit is not None:
        return nova_emit(llvm_ir)
    _init()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    tm = llvm.Target.from_triple("x86_64-unknown-linux-gnu").create_target_machine(
        opt=2, reloc="pic", codemodel="default")
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


@dataclass
class LoadedObject:
    """An object file linked into its own MCJIT engine."""

    engine: llvm.ExecutionEngine
    keep: list = field(default_factory=list)

    def function(self, name: str, restype: object, *argtypes: object) -> ctypes._CFuncPtr:
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"symbol {name!r} not in the object")
        return ctypes.CFUNCTYPE(restype, *argtypes)(address)


def load_object(obj: bytes) -> LoadedObject:
    """Link an object into a fresh MCJIT engine (libc resolved from the process)."""
    _init()
    tm = llvm.Target.from_default_triple().create_target_machine()
    backing = llvm.parse_assembly("")
    engine = llvm.create_mcjit_compiler(backing, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return LoadedObject(engine, [backing])


def jit_module(module: ir.Module) -> LoadedObject:
    """emit_object + load_object of an llvmlite IR module."""
    return load_object(emit_object(str(module)))
