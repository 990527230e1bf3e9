"""The executor on programs compiled by Nova's own compiler (skipped until the compiler lands)."""

from __future__ import annotations

import numpy as np
import pytest

from nova.errors import ArgumentError
from nova.runtime.selection import cuda_status, get_device

SOURCE = """
func.func @saxpy(%a: f32, %x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %xv = memref.load %x[%bx] : memref<?xf32>
    %yv = memref.load %y[%bx] : memref<?xf32>
    %p = arith.mulf %a, %xv : f32
    %s = arith.addf %p, %yv : f32
    memref.store %s, %y[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

func.func @iota(%n: index) -> memref<?xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc(%n) : memref<?xi64>
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i64
    memref.store %v, %m[%i] : memref<?xi64>
  }
  return %m : memref<?xi64>
}

func.func @at(%m: memref<2x3xf64>, %i: index, %j: index) -> f64 {
  %v = memref.load %m[%i, %j] : memref<2x3xf64>
  return %v : f64
}
"""

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")]),
]


@pytest.fixture(scope="module")
def bundle() -> bytes:
    from nova.compiler.driver import compile_to_bundle  # imported: a renamed one fails

    return compile_to_bundle(SOURCE, "compiled.mlir")


@pytest.mark.parametrize("device", DEVICES)
def test_saxpy_with_numpy_and_device_buffers(bundle: bytes, device: str) -> None:
    from nova.runtime.executor import load

    with load(bundle, device) as mod:
        x = np.arange(5, dtype=np.float32)
        y = np.ones(5, np.float32)
        assert mod.saxpy(2.0, x, y) is None
        assert y.tolist() == [1, 3, 5, 7, 9]
        dx = get_device(device).to_device(x)
        dy = get_device(device).to_device(np.zeros(5, np.float32))
        mod.saxpy(0.5, dx, dy)
        assert dy.numpy().tolist() == [0, 0.5, 1, 1.5, 2]


@pytest.mark.parametrize("device", DEVICES)
def test_memref_result(bundle: bytes, device: str) -> None:
    from nova.runtime.executor import load

    with load(bundle, device) as mod:
        result = mod.iota(6)
        assert result.dtype == np.int64 and result.tolist() == [0, 1, 2, 3, 4, 5]


def test_static_shape_and_layout_on_cpu(bundle: bytes) -> None:
    from nova.runtime.executor import load

    with load(bundle, "cpu") as mod:
        a = np.arange(6.0).reshape(2, 3)
        assert mod.at(a, 1, 2) == 5.0
        assert mod.at(np.asfortranarray(a), 1, 2) == 5.0  # copied to row-major for the call
        with pytest.raises(ArgumentError, match=r"at: argument 0: expected memref<2x3xf64>"):
            mod.at(np.zeros((3, 2)), 0, 0)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")
@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_foreign_device_arrays_are_used_in_place(bundle: bytes, library: str) -> None:
    from nova.runtime.executor import load

    lib = pytest.importorskip(library)
    with load(bundle, "cuda") as mod:
        if library == "cupy":
            x, y = lib.arange(5, dtype=lib.float32), lib.ones(5, dtype=lib.float32)
        else:
            x = lib.arange(5, dtype=lib.float32, device="cuda")
            y = lib.ones(5, dtype=lib.float32, device="cuda")
        mod.saxpy(2.0, x, y)
        host = y.get() if library == "cupy" else y.cpu().numpy()
        assert host.tolist() == [1, 3, 5, 7, 9]
