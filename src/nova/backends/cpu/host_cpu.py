"""Which x86-64 CPU the CPU device's kernels are compiled for, recorded in the object itself.

Why: generic x86-64 (SSE2, no FMA) leaves most of a modern core unused (a `math.fma` becomes a
call to libm's `fmaf` per element, loops vectorise 4 floats wide at most). By default
(`NOVA_CPU_ARCH=native`) kernels are compiled for the CPU of the machine that compiles them
(AVX2/AVX-512/FMA where present, LLVM's host CPU name and feature list); `NOVA_CPU_ARCH=generic`
gives baseline x86-64 objects that load on any x86-64 machine.

The choice lives in the LLVM IR (docs/cpu-device.md, docs/bundle-format.md):
- every function carries `"target-cpu"` / `"target-features"` attributes, so the object emitter
  (a generic target machine) compiles and vectorises each one for that CPU;
- the module exports `__nova_cpu_target`, a constant NUL-padded C string of
  nova.abi.CPU_TARGET_RECORD_BYTES, `cpu=<name>;features=<+f,+g,...>` (the enabled features).
  The runtime reads it after loading the object and refuses to run kernels on a CPU that
  lacks any of those features (a clear DeviceError naming them, instead of an
  illegal-instruction crash); `nova.runtime.cpu.module.check_cpu_target`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llvmlite import ir

from nova import config
from nova.abi import CPU_TARGET_RECORD_BYTES, CPU_TARGET_SYMBOL
from nova.errors import UnsupportedError

TARGET_SYMBOL = CPU_TARGET_SYMBOL
GENERIC_CPU = "x86-64"


@dataclass(frozen=True)
class CpuTarget:
    """An LLVM CPU name and its feature string (`+avx2,-avx512f,...`; empty for generic)."""

    name: str
    features: str

    @property
    def enabled(self) -> tuple[str, ...]:
        """The enabled features, without their '+' (what a loading machine must have)."""
        return tuple(sorted(f[1:] for f in self.features.split(",") if f.startswith("+")))

    def record(self) -> str:
        """The `__nova_cpu_target` text (see the module docstring)."""
        return f"cpu={self.name};features={','.join('+' + f for f in self.enabled)}"


@functools.cache
def _host() -> CpuTarget:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return CpuTarget(llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())


def cpu_target(arch: str | None = None) -> CpuTarget:
    """The CPU to compile for: `arch` or the config's cpu_arch ('native' or 'generic')."""
    arch = config.get().cpu_arch if arch is None else arch
    if arch == "native":
        return _host()
    if arch == "generic":
        return CpuTarget(GENERIC_CPU, "")
    raise UnsupportedError(f"unknown CPU-device architecture {arch!r} (NOVA_CPU_ARCH): use "
                           "'native' (this machine's CPU) or 'generic' (any x86-64)")


def apply(module: ir.Module, target: CpuTarget) -> None:
    """Put the target attributes on every defined function of `module` and export the
    `__nova_cpu_target` record (llvmlite's attribute sets admit only keyword attributes, hence
    `set.add` for these string attributes)."""
    for fn in module.functions:
        if fn.is_declaration:
            continue
        set.add(fn.attributes, f'"target-cpu"="{target.name}"')
        if target.features:
            set.add(fn.attributes, f'"target-features"="{target.features}"')
    data = target.record().encode()
    if len(data) >= CPU_TARGET_RECORD_BYTES:
        raise UnsupportedError(f"the CPU target record of {target.name} is too long")
    data += b"\0" * (CPU_TARGET_RECORD_BYTES - len(data))  # fixed size: read without a scan
    ty = ir.ArrayType(ir.IntType(8), len(data))
    gv = ir.GlobalVariable(module, ty, TARGET_SYMBOL)
    gv.global_constant = True
    gv.initializer = ir.Constant(ty, bytearray(data))
