"""Test helper: turn an llvmlite IR module for the CPU device into callable native code.

Emits an x86-64 PIC object through `nova.backends.x86.emit_object`, loads it with llvmlite's
MCJIT `add_object_file` exactly as the CPU device does, and hands out ctypes function pointers.
Keeps the engine alive with the module.
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
    """x86-64 ELF relocatable of `llvm_ir`, by the CPU device's own emitter (imported, not
    probed: a renamed emitter must fail these tests, not be replaced by a local copy)."""
    from nova.backends.x86 import emit_object as nova_emit

    return nova_emit(llvm_ir)


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


# ---- MLIR kernels on the CPU device ------------------------------------------------------------

class KernelFailed(AssertionError):
    """A kernel entry returned nonzero; carries launch->error."""


@dataclass
class CpuModule:
    """One gpu.module lowered for the CPU device and linked; `launch` runs a kernel like the CPU
    device runtime does (block ranges, optionally split over several OS threads)."""

    lowering: object
    loaded: LoadedObject

    def kernel(self, name: str):  # type: ignore[no-untyped-def]
        return next(k for k in self.lowering.kernels if k.name == name)  # type: ignore[attr-defined]

    def launch(self, name: str, args: list, grid=(1, 1, 1), block=(1, 1, 1),  # type: ignore[no-untyped-def]
               os_threads: int = 1, dynamic_shared: int = 0, cluster=(0, 0, 0),
               check: bool = True) -> tuple[int, str]:
        """Run kernel `name` over the whole grid; returns (status, error of the first failure).
        Arrays become memref descriptors (allocated, aligned, offset, sizes, strides); ints and
        floats must be given as ctypes values of the kernel's scalar types."""
        import threading

        import numpy as np

        storage: list = []
        for a in args:
            if isinstance(a, np.ndarray):
                ptr = ctypes.c_void_p(a.ctypes.data)
                storage += [ptr, ctypes.c_void_p(a.ctypes.data), ctypes.c_int64(0)]
                storage += [ctypes.c_int64(s) for s in a.shape]
                storage += [ctypes.c_int64(s // a.itemsize) for s in a.strides]
            else:
                storage.append(a)
        params = (ctypes.c_void_p * max(len(storage), 1))(
            *[ctypes.addressof(v) for v in storage])
        fn = self.loaded.function(name, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
        total = grid[0] * grid[1] * grid[2]
        bounds = [total * i // os_threads for i in range(os_threads + 1)]
        results: list[tuple[int, str]] = [(0, "")] * os_threads
        shared = [ctypes.create_string_buffer(max(dynamic_shared, 1)) for _ in range(os_threads)]

        def run(i: int) -> None:
            from nova.abi import CpuLaunch

            launch = CpuLaunch()
            launch.grid[:] = grid
            launch.block[:] = block
            launch.cluster[:] = cluster
            launch.block_begin, launch.block_end = bounds[i], bounds[i + 1]
            launch.dynamic_shared = ctypes.addressof(shared[i])
            launch.dynamic_shared_bytes = dynamic_shared
            status = fn(ctypes.addressof(params), ctypes.addressof(launch))
            results[i] = (status, launch.error.decode())

        if os_threads == 1:
            run(0)
        else:
            workers = [threading.Thread(target=run, args=(i,)) for i in range(os_threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        failed = [r for r in results if r[0] != 0]
        result = failed[0] if failed else (0, "")
        if check and result[0] != 0:
            raise KernelFailed(result[1])
        return result


def compile_cpu(source: str, **options: object) -> CpuModule:
    """Parse MLIR text holding one gpu.module, lower it for the CPU device, JIT it."""
    from nova.backends.cpu.target import lower_cpu_module
    from nova.ir.parser import parse_mlir

    module = parse_mlir(source, "<test>")
    gpu_module = next(op for op in module.walk() if op.name == "gpu.module")
    lowering = lower_cpu_module(gpu_module, **options)  # type: ignore[arg-type]
    return CpuModule(lowering, jit_module(lowering.llvm_module))
