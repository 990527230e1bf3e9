"""Invalid launch shapes fail with a clear error naming the kernel, on cpu as on cuda.

A zero block or grid dimension, or a block of more threads than the device allows, is rejected
by cuLaunchKernel with CUDA_ERROR_INVALID_VALUE; the cpu device rejects the same launches (it
used to run >1024-thread blocks, and named no kernel for a zero dimension). The module stays
usable, and nova-run exits 1 with the message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import device_test_kernels as tk
import numpy as np
import pytest

import nova
from device_params import DEVICE_PARAMS
from nova.errors import ArgumentError, NovaError
from nova.runtime.device import Device

LAUNCH = """
func.func @shape(%gx: index, %bx: index, %by: index, %out: memref<?xi32>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %gx, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %bx, %s1 = %by, %s2 = %c1) {
    %c0 = arith.constant 0 : index
    %old = memref.atomic_rmw addi %one, %out[%c0] : (i32, memref<?xi32>) -> i32
    gpu.terminator
  }
  return
}
"""


@pytest.fixture(scope="module", params=DEVICE_PARAMS)
def shape_module(request: pytest.FixtureRequest) -> nova.NovaModule:
    return nova.compile(LAUNCH, device=request.param)


@pytest.mark.parametrize(("gx", "bx", "by", "expected"), [
    pytest.param(1, 0, 1, r"block size \(0, 1, 1\)|CUDA_ERROR_INVALID_VALUE", id="zero-block"),
    pytest.param(0, 4, 1, r"grid size \(0, 1, 1\)|CUDA_ERROR_INVALID_VALUE", id="zero-grid"),
    pytest.param(1, 1025, 1, r"too many threads per block|CUDA_ERROR_INVALID_VALUE",
                 id="1025-threads"),
    pytest.param(1, 64, 32, r"too many threads per block|CUDA_ERROR_INVALID_VALUE",
                 id="64x32-threads"),
])
def test_invalid_launch_shape_names_the_kernel(shape_module: nova.NovaModule, gx: int, bx: int,
                                               by: int, expected: str) -> None:
    out = np.zeros(1, np.int32)
    with pytest.raises(NovaError, match=expected) as info:
        shape_module.shape(gx, bx, by, out)
    assert "@shape_kernel" in str(info.value)
    assert out[0] == 0  # nothing ran
    shape_module.shape(2, 32, 2, out)  # the module is still usable
    assert out[0] == 2 * 32 * 2


def test_cpu_messages_say_what_was_launched() -> None:
    mod = nova.compile(LAUNCH, device="cpu")
    out = np.zeros(1, np.int32)
    with pytest.raises(NovaError) as info:
        mod.shape(1, 0, 1, out)
    assert str(info.value) == ("kernel @shape_kernel: block size (0, 1, 1): every dimension "
                               "must be >= 1")
    with pytest.raises(NovaError) as info:
        mod.shape(1, 2048, 1, out)
    assert str(info.value) == ("kernel @shape_kernel: block size (2048, 1, 1) has 2048 "
                               "threads, more than the device's 1024 per block (too many "
                               "threads per block)")
    mod.shape(1, 1024, 1, out)  # exactly the limit runs
    assert out[0] == 1024


def test_device_layer_launch_checks_each_dimension(device: Device) -> None:
    """Device.launch (both devices) names the kernel and the shape; per-axis limits too."""
    fn = tk.function(device, "scale")
    buf = device.allocate(16)
    params = [buf, buf, 1.0, 4]
    with pytest.raises(ArgumentError, match=r"^kernel @scale: grid size \(4, 0, 1\): every "
                       r"dimension must be >= 1$"):
        device.launch(fn, (4, 0), 1, params)
    with pytest.raises(ArgumentError, match=r"^kernel @scale: block size \(1, 1, 65\): z = 65 "
                       r"exceeds the device limit of 64 "):
        device.launch(fn, 1, (1, 1, 65), params)
    with pytest.raises(ArgumentError, match=r"^kernel @scale: block size must be 1 to 3 ints"):
        device.launch(fn, 1, (1, 1, 1, 1), params)
    device.launch(fn, 1, 4, params)
    device.synchronize()


ZERO_BLOCK = """
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)
             threads(%t0, %t1, %t2) in (%s0 = %c0, %s1 = %c1, %s2 = %c1) {
    gpu.terminator
  }
  return
}
"""


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_nova_run_exits_1_naming_the_kernel(tmp_path: Path, device: str) -> None:
    path = tmp_path / "zero.mlir"
    path.write_text(ZERO_BLOCK)
    done = subprocess.run([sys.executable, "-m", "nova.cli.run", str(path), "--device", device],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "nova-run: error: " in done.stderr and "@main_kernel" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
