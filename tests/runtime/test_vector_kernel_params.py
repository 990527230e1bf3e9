"""Vector kernel parameters through `Device.launch` (docs/vector.md): a `<N x T>` parameter
takes a NumPy array of N lanes (padded to LLVM's size of the vector) or a void** slot of that
size, on the CPU device and on CUDA, with the parameter records the device lowering computes; and a
captured graph (which records the parameter bytes at capture) replays them."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from async_programs import DEVICES, bundle

from nova.backends.device import DeviceTarget, lower_device_module
from nova.bundle.format import Kernel, KernelParam
from nova.errors import ArgumentError
from nova.ir.parser import parse_mlir
from nova.runtime.device import ModuleImages

KERNEL = """
gpu.module @vk {
  gpu.func @k(%v: vector<3xi32>, %w: vector<4xf64>, %out: memref<7xf64>) kernel {
    %t = gpu.thread_id x
    %c3 = arith.constant 3 : index
    %small = arith.cmpi ult, %t, %c3 : index
    scf.if %small {
      %x = vector.extract %v[%t] : i32 from vector<3xi32>
      %f = arith.sitofp %x : i32 to f64
      memref.store %f, %out[%t] : memref<7xf64>
    }
    %y = vector.extract %w[%t] : f64 from vector<4xf64>
    %i = arith.addi %t, %c3 : index
    memref.store %y, %out[%i] : memref<7xf64>
    gpu.return
  }
}
"""


def _images(kind: str) -> tuple[ModuleImages, Kernel]:
    """The test module compiled for a device of `kind`, and its manifest kernel record."""
    gpu_module = parse_mlir(KERNEL, "vk.mlir").body.block.first_op
    if kind == "cpu":
        from nova.backends.x86 import emit_object

        lowered = lower_device_module(gpu_module, DeviceTarget.CPU)
        return ModuleImages("vk", cpu_object=emit_object(str(lowered.llvm_module))), \
            lowered.kernels[0]
    from nova.backends.nvptx.ptx import emit_ptx

    lowered = lower_device_module(gpu_module, DeviceTarget.NVPTX)
    return ModuleImages("vk", ptx=emit_ptx(str(lowered.llvm_module))), lowered.kernels[0]


def test_vector_param_records() -> None:
    _, kernel = _images("cpu")
    assert _images("cuda")[1] == kernel
    assert kernel.params[:2] == (KernelParam("<3 x i32>", 16, 0, 16),
                                 KernelParam("<4 x double>", 32, 1, 32))
    assert [a.kind for a in kernel.args] == ["vector", "vector", "memref"]
    assert kernel.args[0].shape == (3,) and kernel.args[1].dtype == "f64"


def _launch(device, params) -> np.ndarray:
    images, kernel = _images(device.kind)
    function = device.load_module(images).get_function("k", kernel)
    out = device.allocate(7 * 8)
    memref = [out, out, 0, 7, 1]
    device.launch(function, (1, 1, 1), (4, 1, 1), [*params, *memref] if isinstance(params, list)
                  else params(memref))
    device.synchronize()
    result = np.empty(7, np.float64)
    device.copy_dtoh(result, out)
    return result


EXPECTED = np.array([-1.0, 2.0, 7.0, 0.5, 1.5, -2.5, 1e300])
V = np.array([-1, 2, 7], np.int32)
W = np.array([0.5, 1.5, -2.5, 1e300])


def test_vector_params_from_arrays(device) -> None:
    np.testing.assert_array_equal(_launch(device, [V, W]), EXPECTED)


def test_vector_params_from_a_void_pointer_array(device) -> None:
    slots = [ctypes.create_string_buffer(V.tobytes() + bytes(4), 16),
             ctypes.create_string_buffer(W.tobytes(), 32)]

    def array(memref: list) -> int:
        values = [ctypes.c_uint64(memref[0].ptr), ctypes.c_uint64(memref[1].ptr),
                  *(ctypes.c_int64(v) for v in memref[2:])]
        pointers = [*(ctypes.addressof(s) for s in slots), *(ctypes.addressof(v) for v in values)]
        array.keep = (values, (ctypes.c_void_p * 7)(*pointers))  # type: ignore[attr-defined]
        return ctypes.addressof(array.keep[1])  # type: ignore[attr-defined]

    np.testing.assert_array_equal(_launch(device, array), EXPECTED)


def test_vector_param_shape_is_checked(cpu_device) -> None:
    with pytest.raises(ArgumentError, match=r"parameter 0 is <3 x i32>, got an array of shape "
                                            r"\(4,\) and dtype int32"):
        _launch(cpu_device, [np.arange(4, dtype=np.int32), W])
    with pytest.raises(ArgumentError, match="parameter 1 is <4 x double>"):
        _launch(cpu_device, [V, np.ones(4, np.float32)])


CAPTURED = """
// out[t] = x[t] * v[t] + w[t mod 3]: v and w are captured vector constants (kernel arguments).
func.func @vgraph(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %v = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %w = arith.constant dense<[10, 20, 30]> : vector<3xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %xv = memref.load %x[%tx] : memref<4xf32>
    %a = vector.extract %v[%tx] : f32 from vector<4xf32>
    %lane = arith.remui %tx, %c3 : index
    %b = vector.extract %w[%lane] : i32 from vector<3xi32>
    %bf = arith.sitofp %b : i32 to f32
    %p = arith.mulf %xv, %a : f32
    %y = arith.addf %p, %bf : f32
    memref.store %y, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_graph_replay_keeps_vector_params(device: str) -> None:
    from nova.runtime.executor import load

    with load(bundle(CAPTURED, "vgraph.mlir"), device) as mod:
        out = np.zeros(4, np.float32)
        mod.vgraph(np.ones(4, np.float32), out)
        np.testing.assert_array_equal(out, [11, 22, 33, 14])
        with mod.capture("vgraph", np.ones(4, np.float32), out) as graph:
            for scale in (2.0, -0.5):
                result = np.zeros(4, np.float32)
                graph(np.full(4, scale, np.float32), result)
                np.testing.assert_array_equal(
                    result, np.float32(scale) * np.arange(1, 5, dtype=np.float32)
                    + np.array([10, 20, 30, 10], np.float32))
