"""gpu.binary: pre-compiled device code (as upstream's gpu-module-to-binary leaves it) embedded in
a bundle and launched by gpu.launch_func (nova.backends.gpu_binary). The PTX of
gpu_binary_fill.mlir was produced by mlir-opt 22; on CUDA it runs, on the CPU device the launch
fails saying why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nova.bundle.format import PayloadKind
from nova.bundle.reader import read_bundle
from nova.compiler.driver import compile_source
from nova.compiler.stages import CompileOptions
from nova.errors import LoweringError, UnsupportedError, VerifyError
from nova.ir.parser import parse_mlir, print_mlir

PROGRAM = Path(__file__).parent / "gpu_binary_fill.mlir"


def _run(device: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nova", "run", str(PROGRAM), "--device", device],
                          capture_output=True, text=True, timeout=300, check=False)


def test_bundle_embeds_the_ptx_and_the_launch_signature() -> None:
    bundle = read_bundle(compile_source(PROGRAM.read_text(), str(PROGRAM),
                                        CompileOptions(cubin=False)).bundle)
    (module,) = bundle.manifest.modules
    assert module.name == "kernels"
    ptx = bundle.payload("kernels", PayloadKind.PTX)
    assert ptx is not None and b".visible .entry fill(" in ptx and b".target sm_80" in ptx
    (kernel,) = module.kernels
    assert kernel.name == "fill"
    assert [p.llvm_type for p in kernel.params] == ["ptr", "ptr", "i64", "i64", "i64", "float"]
    assert [p.arg_index for p in kernel.params] == [0, 0, 0, 0, 0, 1]


def test_cpu_device_launch_fails_saying_why() -> None:
    done = _run("cpu")
    assert done.returncode == 1
    assert ("kernel @fill comes from gpu.binary @kernels, which holds pre-compiled NVVM code "
            "(PTX/cubin) only: the CPU device cannot run it") in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.gpu
def test_cuda_runs_the_precompiled_kernel() -> None:
    from nova.runtime.selection import cuda_status

    if not cuda_status().usable:
        pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    done = _run("cuda")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[0.5,  1.5,  2.5,  3.5]"


def test_round_trip_prints_as_mlir_opt() -> None:
    text = PROGRAM.read_text()
    printed = print_mlir(parse_mlir(text, "p.mlir"))
    assert print_mlir(parse_mlir(printed, "p.mlir")) == printed
    binary_line = next(line for line in text.splitlines() if "gpu.binary @" in line)
    assert binary_line in printed  # escapes, properties, format keyword and spacing kept


def _binary(objects: str, handler: str = "") -> str:
    return ("module attributes {gpu.container_module} {\n"
            f"  gpu.binary @b {handler} [{objects}]\n"
            "  func.func @main(%m: memref<?xf32>) {\n"
            "    %c1 = arith.constant 1 : index\n"
            "    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) "
            "args(%m : memref<?xf32>)\n"
            "    return\n  }\n}\n")


@pytest.mark.parametrize(("text", "error", "message"), [
    (_binary('#gpu.object<#nvvm.target, offload = "BC">'), UnsupportedError,
     "an object of format 'offload' (LLVM bitcode) is not supported"),
    (_binary('#gpu.object<#nvvm.target, "x">', "<#gpu.select_object<3>>"), LoweringError,
     "#gpu.select_object<3> but the binary has 1 object(s)"),
    (_binary(""), VerifyError,
     "'gpu.binary' op attribute 'objects' failed to satisfy constraint: an array of GPU object "
     "attributes with at least 1 elements"),
    (_binary('#gpu.object<#nvvm.target, assembly = "x">').replace(
        "    return\n", "    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, "
        "%c1, %c1) args(%c1 : index)\n    return\n"), LoweringError,
     "gpu.launch_func of @b::@k passes (index) but an earlier launch passes (memref<?xf32>)"),
])
def test_bad_binaries_are_located_errors(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=None) as info:
        compile_source(text, "bad.mlir", CompileOptions(cubin=False))
    assert message in str(info.value)
    assert "bad.mlir:" in str(info.value)
