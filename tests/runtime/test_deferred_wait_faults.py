"""A kernel fault found at a deferred host wait is still reported against the kernel that failed.

Synchronous stream ops wait once per chain (gpu_ops._wait_site: `launch; launch; free; return`
waits once, after the free), and a program through the async-region pass (upstream's
gpu-async-region, not run by the compile pipeline: docs/async.md) waits once at its `gpu.wait`.
Either way the first kernel's failed `cf.assert` surfaces at that later wait, after the second
kernel was enqueued: the report must still name the first kernel and its assertion's location,
and the second kernel must not run. cpu: the KernelFault names @main_kernel (not @main_kernel_0)
and the assertion's file:line:col; cuda (a child process: the assert loses the context; marked
gpu): the device's assert report names the assertion's file:line, while the CudaError can only
name the latest kernel launched, saying the fault may be in work before it (docs/debugging.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nova.runtime.selection import cuda_status

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]

CHAIN = """\
func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %d = gpu.alloc(%c8) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %ok = arith.cmpi ne, %tx, %c3 : index
    cf.assert %ok, "first kernel fails"
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    memref.store %f, %d[%tx] : memref<?xf32>
    gpu.printf "second kernel ran\\n"
    gpu.terminator
  }
  gpu.dealloc %d : memref<?xf32>
  vector.print str "unreachable: the launch failed"
  return
}
"""


def _async_region(text: str) -> str:
    from nova.ir.parser import parse_mlir, print_mlir
    from nova.passes.registry import run_pipeline

    module = parse_mlir(text, "chain.mlir")
    run_pipeline(module, "outline-kernels,async-region")
    return print_mlir(module)


def _host_syncs(text: str) -> int:
    """How many host waits the host code of `text` makes (nova_rt_stream_synchronize calls)."""
    from nova.backends.host.lower import lower_host
    from nova.ir.parser import parse_mlir
    from nova.passes.registry import run_pipeline

    module = parse_mlir(text, "chain.mlir")
    if "gpu.launch " in text:
        run_pipeline(module, "outline-kernels")
    return str(lower_host(module).llvm_module).count("call i32 @\"nova_rt_stream_synchronize\"")


def _run(tmp_path: Path, text: str, device: str) -> subprocess.CompletedProcess[str]:
    if device == "cuda" and not cuda_status().usable:
        pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    path = tmp_path / "prog.mlir"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "nova", "run", str(path), "--device", device],
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("variant", ["default", "async-region"])
@pytest.mark.parametrize("device", DEVICES)
def test_fault_at_a_deferred_wait_names_the_failing_kernel(tmp_path: Path, device: str,
                                                          variant: str) -> None:
    text = CHAIN if variant == "default" else _async_region(CHAIN)
    assert _host_syncs(text) == 1  # both launches are covered by one wait, after the free
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "cf.assert" in s)
    column = text.splitlines()[line - 1].index("cf.assert") + 1
    done = _run(tmp_path, text, device)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    prog = tmp_path / "prog.mlir"
    assert (f"{prog}:{line}: (unknown): block: [0,0,0], thread: [3,0,0] "
            "Assertion `first kernel fails` failed.") in done.stderr, output
    assert "second kernel ran" not in output and "unreachable" not in output
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, output
    if device == "cpu":
        pattern = (rf"kernel @main_kernel failed: assertion failed: first kernel fails "
                   rf"\({re.escape(str(prog))}:{line}:{column}\) in block \(0,0,0\), "
                   rf"thread \(3,0,0\)")
        assert re.search(pattern, done.stderr), output
    else:
        assert "CUDA_ERROR_ASSERT" in done.stderr and "context is lost" in done.stderr, output
        # found at the wait, or at the second launch when the first had already trapped; the
        # second launch is @main_kernel_0::@main_kernel (outlining names its module, not its func)
        assert ("the latest kernel launched was @main_kernel_0::@main_kernel (the fault is in "
                "it or in GPU work enqueued before it)" in done.stderr
                or "in kernel @main_kernel_0::@main_kernel: the fault is in GPU work enqueued "
                "before this launch" in done.stderr), output
