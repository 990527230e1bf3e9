"""GPU faults end a call, never the process: errors name the kernel and say the context is lost.

A kernel that stores to an illegal address (CUDA_ERROR_ILLEGAL_ADDRESS) or fails a `cf.assert`
(CUDA_ERROR_ASSERT) destroys the CUDA context for the rest of the process. Every GPU case therefore
runs in a child process (the pytest process's context must stay usable for other tests):
`nova-run --device cuda` must exit 1 with a message naming the kernel and saying what to do, and
in-process `nova.compile(...).main()` must raise CudaError/KernelFault naming the kernel, with a
second call saying plainly that the context is lost. The error bookkeeping of the native cuda ABI
(`cuda_abi._report`) is also checked without a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from nova.errors import CudaError
from nova.runtime.cuda import abi as cuda_abi
from nova.runtime.cuda.driver_api import CudaDriver
from nova.runtime.native_support import clear_error, take_error
from nova.runtime.selection import cuda_status

CORPUS = Path(__file__).parents[1] / "corpus"

ILLEGAL_ADDRESS = """
func.func @main() {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %far = arith.constant 1099511627776 : index
  %f = arith.constant 1.0 : f32
  %m = gpu.alloc(%c32) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %j = arith.addi %tx, %far : index
    memref.store %f, %m[%j] : memref<?xf32>
    gpu.terminator
  }
  gpu.dealloc %m : memref<?xf32>
  vector.print str "unreachable: the launch failed"
  return
}
"""

ASSERT_FAIL = (CORPUS / "assert-fail-kernel.mlir").read_text()

PROGRAMS = {"illegal-address": ILLEGAL_ADDRESS, "assert": ASSERT_FAIL}

needs_gpu = pytest.mark.skipif(not cuda_status().usable,
                               reason=f"no usable CUDA device: {cuda_status().reason}")


def _write(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.mlir"
    path.write_text(PROGRAMS[kind])
    return path


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("kind", sorted(PROGRAMS))
def test_nova_run_exits_1_naming_the_kernel(tmp_path: Path, kind: str) -> None:
    done = subprocess.run([sys.executable, "-m", "nova.cli.run", str(_write(tmp_path, kind)),
                           "--device", "cuda"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "@main_kernel" in done.stderr, done.stderr
    assert "context is lost" in done.stderr and "start a new process" in done.stderr, done.stderr
    assert "unreachable" not in done.stdout
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    if kind == "assert":
        assert "CUDA_ERROR_ASSERT" in done.stderr, done.stderr
    else:
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in done.stderr, done.stderr


_IN_PROCESS = textwrap.dedent("""
    import json, sys
    import nova
    from nova.errors import CudaError, KernelFault, NovaError
    mod = nova.compile(open(sys.argv[1]).read(), device="cuda")
    report = {}
    for attempt in ("first", "second"):
        try:
            mod.main()
            report[attempt] = {"raised": None}
        except NovaError as exc:
            report[attempt] = {"raised": type(exc).__name__, "text": str(exc),
                               "fault_type": isinstance(exc, (CudaError, KernelFault)),
                               "context_lost": getattr(exc, "context_lost", None)}
    report["device_lost"] = mod.device.context_lost
    print("REPORT " + json.dumps(report), flush=True)
""")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("kind", sorted(PROGRAMS))
def test_in_process_call_raises_then_reports_the_lost_context(tmp_path: Path, kind: str) -> None:
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(_write(tmp_path, kind))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr)
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT "))
    report = json.loads(line.removeprefix("REPORT "))
    first, second = report["first"], report["second"]
    assert first["raised"] and first["fault_type"], report
    assert "@main_kernel" in first["text"], first["text"]
    assert first["context_lost"] is True, report
    assert "context is lost" in first["text"], first["text"]
    assert second["raised"], report  # nothing runs on a lost context
    assert second["context_lost"] is True, report
    assert "context is lost" in second["text"], second["text"]
    assert "already lost" in second["text"] or "not attempted" in second["text"], second["text"]
    assert "@main_kernel" in second["text"], second["text"]  # who destroyed it
    assert report["device_lost"] is True


# ---- the native ABI's error bookkeeping, without a GPU ---------------------------------------

def test_sticky_error_at_a_sync_names_the_latest_kernel_and_later_calls_say_lost() -> None:
    function = 0x5EED
    cuda_abi._kernel_names[function] = "main_kernel"
    driver = CudaDriver(raw=None, label="cuda:0")  # never reaches the bindings once lost
    device = SimpleNamespace(driver=driver)
    try:
        clear_error()
        cuda_abi._report(device, b"cuStreamSynchronize", 700, None, function)
        first = take_error()
        assert isinstance(first, CudaError) and first.context_lost
        assert first.error_name == "CUDA_ERROR_ILLEGAL_ADDRESS"
        assert "the latest kernel launched was @main_kernel" in str(first)
        assert "start a new process" in str(first)
        assert driver.context_lost
        # the device layer refuses further driver calls, naming the error and the kernel
        with pytest.raises(CudaError) as later:
            driver.call("cuMemAlloc_v2", 16)
        assert later.value.error_name == "CUDA_ERROR_ILLEGAL_ADDRESS" and later.value.code == 700
        assert "not attempted" in str(later.value) and "@main_kernel" in str(later.value)
        # a later native call of the program fails with the sticky error: not "found here"
        cuda_abi._report(device, b"cuMemAllocAsync", 700, None, function)
        second = take_error()
        assert isinstance(second, CudaError) and second.context_lost
        assert "already lost" in str(second) and "@main_kernel" in str(second)
        assert "found here" not in str(second)
    finally:
        cuda_abi._kernel_names.pop(function, None)
        clear_error()


def test_sticky_error_at_a_launch_names_it_and_blames_earlier_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches are asynchronous: a sticky error cuLaunchKernel returns is a fault of GPU work
    enqueued before it (unless CUDA_LAUNCH_BLOCKING=1), found when launching @trap_kernel."""
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    function = 0x5EEE
    cuda_abi._kernel_names[function] = "trap_kernel"
    driver = CudaDriver(raw=None, label="cuda:0")
    try:
        clear_error()
        cuda_abi._report(SimpleNamespace(driver=driver), b"cuLaunchKernel", 710, function,
                         function)
        error = take_error()
        assert isinstance(error, CudaError) and error.kernel == "trap_kernel"
        assert error.error_name == "CUDA_ERROR_ASSERT" and error.context_lost
        assert "the fault is in GPU work enqueued before this launch" in str(error)
        with pytest.raises(CudaError, match=r"not attempted: an earlier CUDA_ERROR_ASSERT from "
                                            r"cuLaunchKernel when launching @trap_kernel \(the "
                                            r"fault is in GPU work enqueued before it\)"):
            driver.call("cuCtxSynchronize")
    finally:
        cuda_abi._kernel_names.pop(function, None)
        clear_error()
