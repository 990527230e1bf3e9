"""check_bounds: out-of-bounds memref accesses fail with a located message, on every device.

An MLIR program and a Python kernel that read past (or before) an array raise an error naming the
kernel, the index, the dimension and its size, the op and its source location (the MLIR line or
the Python line), and the block and thread; the same programs in bounds give NumPy's results.
Host code fails through nova_rt_raise with the same message. On the GPU a failed check is a
device-side assert that destroys the CUDA context, so those cases run in a child process (as in
test_gpu_faults.py): the located message is printed by the device, the raised CudaError names
the kernel. The option is part of every cache key.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import nova
from nova import config
from nova.compiler.cache import cache_key
from nova.compiler.driver import CompileOptions, compile_until
from nova.errors import KernelFault, NovaError
from nova.lang import compiler
from nova.runtime.executor import NovaModule

HERE = Path(__file__)

# Block b squares row b of x shifted by k columns: x[b, t + k]. k = 1 reads one past the last
# column in the last thread; k = -1 reads column -1 in thread 0.
SHIFT = """\
func.func @shift(%k: index, %x: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %rows, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %cols, %sy = %c1, %sz = %c1) {
    %j = arith.addi %tx, %k : index
    %v = memref.load %x[%bx, %j] : memref<?x?xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %out[%bx, %tx] : memref<?x?xf32>
    gpu.terminator
  }
  return
}
"""
SHIFT_LOAD = "9:10"  # line:column of the memref.load op (its name) in SHIFT

# Host code reading element i of a 4-element host buffer.
HOST = """\
func.func @pick(%i: index) -> f32 {
  %c4 = arith.constant 4 : index
  %f = arith.constant 2.5 : f32
  %m = memref.alloc(%c4) : memref<?xf32>
  memref.store %f, %m[%i] : memref<?xf32>
  %v = memref.load %m[%i] : memref<?xf32>
  memref.dealloc %m : memref<?xf32>
  return %v : f32
}
"""


@nova.kernel(check_bounds=True)
def shifted_square(out, x, k):
    i = nova.global_id(0)
    out[i] = x[i + k] * x[i + k]  # the checked load


@nova.kernel
def plain_square(out, x):
    i = nova.global_id(0)
    out[i] = x[i] * x[i]


def _line_of(marker: str) -> int:
    return next(n for n, line in enumerate(HERE.read_text().splitlines(), 1) if marker in line)


KERNEL_LOAD_LINE = _line_of("# the checked load")


def _program(tmp_path: Path, text: str, name: str, device: str,
             check: bool | None = True) -> NovaModule:
    """`text` compiled from a file in `tmp_path` (check None: the configuration decides)."""
    path = tmp_path / name
    path.write_text(text)
    options = {} if check is None else {"check_bounds": check}
    return nova.compile(str(path), device=device, **options)


def _shift_input() -> np.ndarray:
    return np.arange(3 * 8, dtype=np.float32).reshape(3, 8)


# ---- in bounds: NumPy's results --------------------------------------------------------------

def test_mlir_program_in_bounds_matches_numpy(device, tmp_path: Path) -> None:
    x = _shift_input()
    out = np.zeros_like(x)
    with _program(tmp_path, SHIFT, "shift.mlir", device.kind) as mod:
        mod.shift(0, x, out)
    np.testing.assert_array_equal(out, x * x)


def test_python_kernel_in_bounds_matches_numpy(device) -> None:
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(32, dtype=np.float32)
    shifted_square.launch(out, x, 5, grid=1, block=32, device=device)
    np.testing.assert_array_equal(out, x[5:37] * x[5:37])


def test_host_code_in_bounds(device, tmp_path: Path) -> None:
    with _program(tmp_path, HOST, "host.mlir", device.kind) as mod:
        assert mod.pick(3) == 2.5


# ---- out of bounds: the located error ------------------------------------------------------

def _report(exc: BaseException) -> dict[str, object]:
    return {"raised": type(exc).__name__, "text": str(exc)}


def shift_oob(device: str, directory: str, k: int) -> dict[str, object]:
    """Run SHIFT with column shift `k` on `device`; what it raised (for the child process)."""
    x = _shift_input()
    try:
        with _program(Path(directory), SHIFT, "shift.mlir", device) as mod:
            mod.shift(k, x, np.zeros_like(x))
    except NovaError as exc:
        return _report(exc)
    return {"raised": None}


def kernel_oob(device: str) -> dict[str, object]:
    """Launch shifted_square one element past the end of x on `device`."""
    x = np.arange(32, dtype=np.float32)
    try:
        shifted_square.launch(np.zeros(32, np.float32), x, 1, grid=1, block=32, device=device)
    except NovaError as exc:
        return _report(exc)
    return {"raised": None}


_CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_bounds_check as t
    report = getattr(t, sys.argv[2])(*sys.argv[3:4], *map(eval, sys.argv[4:]))
    print("REPORT " + json.dumps(report), flush=True)
""")


def _run(device: str, function: str, *args: object) -> tuple[dict[str, object], str]:
    """(report, device output): in process on the cpu device; on cuda in a child process,
    whose context the failed device assert destroys."""
    if device == "cpu":
        return globals()[function](device, *args), ""
    argv = [sys.executable, "-c", _CHILD, str(HERE.parent), function, device,
            *(repr(a) for a in args)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr)
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT "))
    return json.loads(line.removeprefix("REPORT ")), done.stdout + done.stderr


def _expect_failure(device: str, report: dict[str, object], output: str, kernel: str,
                    message: str, thread: int) -> None:
    """The error names the kernel; the located message, then the block and thread, are in the
    error on the cpu device and in the device's printed output on cuda."""
    text = str(report["text"])
    assert report["raised"], report
    assert f"@{kernel}" in text, text
    if device == "cpu":
        assert report["raised"] == KernelFault.__name__, report
    else:
        assert "CUDA_ERROR_ASSERT" in text, text
        text = output
    assert re.search(re.escape(message) + r".* block \(\d+,0,0\), thread \(" + str(thread)
                     + r",0,0\)", text), text


@pytest.mark.parametrize(("k", "index", "thread"), [(1, 8, 7), (-1, -1, 0)])
def test_mlir_program_out_of_bounds_raises_located_error(device, tmp_path: Path, k: int,
                                                         index: int, thread: int) -> None:
    report, output = _run(device.kind, "shift_oob", str(tmp_path), k)
    where = f"(memref.load at {tmp_path / 'shift.mlir'}:{SHIFT_LOAD})"
    _expect_failure(device.kind, report, output, "shift_kernel",
                    f"index {index} out of bounds for dimension 1 of size 8 {where}", thread)


def test_python_kernel_out_of_bounds_names_the_python_line(device) -> None:
    report, output = _run(device.kind, "kernel_oob")
    where = f"(memref.load at {HERE}:{KERNEL_LOAD_LINE}:"
    _expect_failure(device.kind, report, output, "shifted_square",
                    f"index 32 out of bounds for dimension 0 of size 32 {where}", 31)


def test_host_code_out_of_bounds_raises_through_the_runtime(device, tmp_path: Path) -> None:
    with _program(tmp_path, HOST, "host.mlir", device.kind) as mod, \
            pytest.raises(NovaError) as info:
        mod.pick(4)
    text = str(info.value)
    assert ("index 4 out of bounds for dimension 0 of size 4 "
            f"(memref.store on %m at {tmp_path / 'host.mlir'}:5:3)") in text, text
    with _program(tmp_path, HOST, "host.mlir", device.kind) as mod, pytest.raises(NovaError):
        mod.pick(-3)


HOST_2D = """\
func.func @pick2(%i: index, %j: index) -> f32 {
  %c3 = arith.constant 3 : index
  %f = arith.constant 1.5 : f32
  %m = memref.alloc(%c3) : memref<?x4xf32>
  memref.store %f, %m[%i, %j] : memref<?x4xf32>
  memref.dealloc %m : memref<?x4xf32>
  return %f : f32
}
"""


@pytest.mark.parametrize(("i", "j", "failure"), [
    (2, 3, None),
    (3, 1, "index 3 out of bounds for dimension 0 of size 3"),
    (1, 4, "index 4 out of bounds for dimension 1 of size 4"),
    (5, -9, "index 5 out of bounds for dimension 0 of size 3"),  # the first bad dimension
    (0, -1, "index -1 out of bounds for dimension 1 of size 4"),
])
def test_message_names_the_first_failing_dimension(cpu_device, tmp_path: Path, i: int, j: int,
                                                    failure: str | None) -> None:
    with _program(tmp_path, HOST_2D, "host2d.mlir", "cpu") as mod:
        if failure is None:
            assert mod.pick2(i, j) == 1.5
            return
        with pytest.raises(NovaError) as info:
            mod.pick2(i, j)
    assert f"{failure} (memref.store on %m at {tmp_path / 'host2d.mlir'}:5:3)" in str(info.value)


def test_config_switch_checks_mlir_programs(cpu_device, tmp_path: Path) -> None:
    with config.scoped(check_bounds=True), \
            _program(tmp_path, HOST, "host.mlir", "cpu", check=None) as mod, \
            pytest.raises(NovaError, match="index 4 out of bounds"):
        mod.pick(4)


def test_config_switch_checks_plain_kernels(cpu_device) -> None:
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(32, dtype=np.float32)
    with config.scoped(check_bounds=True), pytest.raises(KernelFault) as info:
        plain_square.launch(out, x, grid=1, block=32, device=cpu_device)
    assert "index 16 out of bounds for dimension 0 of size 16 (memref.load at" in str(info.value)
    plain_square.launch(out, x, grid=1, block=16, device=cpu_device)  # unchecked again: fine
    np.testing.assert_array_equal(out[:16], x * x)


# ---- cache keys ---------------------------------------------------------------------------------

def test_option_is_part_of_every_cache_key() -> None:
    on, off = CompileOptions(check_bounds=True), CompileOptions(check_bounds=False)
    assert cache_key(SHIFT, "a.mlir", asdict(on)) != cache_key(SHIFT, "a.mlir", asdict(off))
    text = plain_square.mlir(np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert (compiler._cache_key(text, "cpu", "x86_64", True)
            != compiler._cache_key(text, "cpu", "x86_64", False))
    sig = plain_square.signature(np.zeros(4, np.float32), np.zeros(4, np.float32))
    checked = plain_square._compile(sig, "cpu", "x86_64", True)
    unchecked = plain_square._compile(sig, "cpu", "x86_64", False)
    assert checked is not unchecked and checked.cpu_object != unchecked.cpu_object
    assert checked.kernel.uses_barriers and not unchecked.kernel.uses_barriers  # fibers


def test_option_follows_the_configuration() -> None:
    assert config.Config.from_environ({"NOVA_CHECK_BOUNDS": "1"}).check_bounds
    assert not config.Config.from_environ({}).check_bounds
    with config.scoped(check_bounds=True):
        assert CompileOptions().check_bounds
        ir = compile_until(SHIFT, "s.mlir", CompileOptions(), "cpu-llvm")
        assert "bounds.fail" in str(ir)
    assert "bounds.fail" not in str(compile_until(SHIFT, "s.mlir", CompileOptions(), "cpu-llvm"))
