"""PTX and cubin emission for NVPTX device modules.

`emit_ptx(llvm_ir, arch)` parses the device LLVM IR with llvmlite, verifies it, runs LLVM's O3
pipeline (new pass manager, NVPTX target machine) and prints PTX for `arch` (sm_XX).
Modules that use Hopper's warpgroup MMA (`wgmma.*`, nova.backends.nvptx.wgmma) are emitted and
assembled for `sm_90a` when `arch` is `sm_90` (`wgmma_arch`): ptxas accepts wgmma only for the
architecture-specific target, whose cubin runs on compute capability 9.0 devices only.
`assemble_cubin(ptx, arch)` runs `ptxas` (the one external tool Nova uses) when it is on PATH
and returns the cubin bytes, or None when ptxas is absent; ptxas errors raise BackendError
with ptxas's own message.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from nova.backends.llvm.codegen import optimize, parse_verified
from nova.backends.nvptx.target import DATA_LAYOUT, TRIPLE
from nova.errors import BackendError

_ARCH = re.compile(r"^sm_(\d+)a?$")


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def _check_arch(arch: str) -> str:
    if not _ARCH.match(arch):
        raise BackendError(f"invalid GPU architecture {arch!r} (expected e.g. 'sm_90')")
    return arch


WGMMA_MARK = "wgmma."
"""What the device LLVM IR of a module using warpgroup MMA contains (intrinsic names and the
inline PTX of nova.backends.nvptx.wgmma)."""


def wgmma_arch(arch: str) -> str:
    """The target for a module using wgmma when `arch` is the requested one: `sm_90a` for sm_90
    or sm_90a; BackendError for other architectures (wgmma exists on sm_90a only)."""
    if arch in ("sm_90", "sm_90a"):
        return "sm_90a"
    raise BackendError(f"this module uses Hopper warpgroup MMA (wgmma), which needs target "
                       f"sm_90a (compute capability 9.0); the target is {arch}")


def module_arch(text: str, arch: str) -> str:
    """`arch`, or sm_90a for a module (LLVM IR or PTX) that uses wgmma."""
    return wgmma_arch(arch) if WGMMA_MARK in text else arch


def ptx_version(arch: str) -> int:
    """The PTX ISA version to emit for `arch` (x10): 8.0 up to sm_90a, newer for Blackwell."""
    match = _ARCH.match(_check_arch(arch))
    assert match is not None
    number = int(match.group(1))
    if number >= 120:
        return 87
    if number >= 100:
        return 86
    return 80


@functools.cache
def target_machine(arch: str, opt_level: int = 3) -> llvm.TargetMachine:
    """The NVPTX target machine for `arch` at O`opt_level`."""
    _init()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=_check_arch(arch),
                                        features=f"+ptx{ptx_version(arch)}", opt=opt_level)


def emit_ptx(llvm_ir: str, arch: str = "sm_90", opt_level: int = 3) -> str:
    """Optimize device LLVM IR (LLVM's O`opt_level` pipeline, 0-3) and print it as PTX for
    `arch` (sm_90a for a module using wgmma, `module_arch`)."""
    tm = target_machine(module_arch(llvm_ir, arch), opt_level)
    module = parse_verified(llvm_ir, TRIPLE, DATA_LAYOUT, "device LLVM IR")
    try:
        optimize(module, tm, opt_level)
        return tm.emit_assembly(module)
    except RuntimeError as exc:
        raise BackendError(f"NVPTX code generation failed: {exc}") from exc


def ptxas_path() -> str | None:
    """The ptxas executable on PATH, or None."""
    return shutil.which("ptxas")


def assemble_cubin(ptx: str, arch: str = "sm_90", opt_level: int = 3) -> bytes | None:
    """Assemble PTX to a cubin with ptxas (`-O<opt_level>`, for `module_arch`); None when ptxas
    is not installed."""
    exe = ptxas_path()
    if exe is None:
        return None
    arch = module_arch(ptx, _check_arch(arch))
    with tempfile.TemporaryDirectory(prefix="nova-ptxas-") as tmp:
        src = os.path.join(tmp, "module.ptx")
        out = os.path.join(tmp, "module.cubin")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(ptx)
        try:
            proc = subprocess.run([exe, f"-arch={arch}", f"-O{opt_level}", src, "-o", out],
                                  capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"could not run ptxas: {exc}") from exc
        if proc.returncode != 0:
            message = (proc.stderr or proc.stdout).strip().replace(src, "<ptx>")
            raise BackendError(f"ptxas failed (exit {proc.returncode}): {message}")
        with open(out, "rb") as fh:
            return fh.read()
