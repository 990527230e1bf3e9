"""Bundles compiled for the cpu device only: `nova-run --device cpu` on MLIR builds no PTX and no
cubin (only the CPU objects, still a valid bundle), such a bundle runs on cpu, and loading it on
cuda fails at once with a clear BundleFormatError (checked against a fake CUDA driver, so it runs
without a GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeDriver

from nova.bundle.format import PayloadKind
from nova.bundle.reader import read_bundle
from nova.errors import BundleFormatError, DeviceError
from nova.runtime.cuda import device as cuda_device_module
from nova.runtime.device import ModuleImages

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

SOURCE = """
func.func @double(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %x[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def _kinds(data: bytes) -> set[PayloadKind]:
    bundle = read_bundle(data, None, "cpu-only.nova")
    return {p.kind for m in bundle.manifest.modules for p in m.payloads}


def test_nova_run_for_cpu_compiles_no_gpu_images() -> None:
    from nova.cli.run import _bundle, _device_for_compiling

    data = (CORPUS / "host-shared-alloc.mlir").read_bytes()
    cpu = _device_for_compiling("cpu")
    assert cpu is not None and cpu.kind == "cpu"
    assert _kinds(_bundle(data, "host-shared-alloc.mlir", None, cpu)) == {PayloadKind.CPU_OBJECT}
    # for cuda (resolved after compiling) every image is built
    assert _device_for_compiling("cuda") is None
    assert PayloadKind.PTX in _kinds(_bundle(data, "host-shared-alloc.mlir", None, None))


def test_a_cpu_only_bundle_runs_on_cpu() -> None:
    from nova.compiler.driver import CompileOptions, compile_to_bundle
    from nova.runtime.executor import load

    data = compile_to_bundle(SOURCE, "double.mlir", CompileOptions(ptx=False, cubin=False))
    assert _kinds(data) == {PayloadKind.CPU_OBJECT}
    x = np.arange(9, dtype=np.float32)
    with load(data, "cpu") as mod:
        mod.double(x)
    np.testing.assert_array_equal(x, 2 * np.arange(9, dtype=np.float32))


@pytest.fixture
def fake_gpu(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(cuda_device_module, "load_bindings", lambda: drv)
    return cuda_device_module.CudaDevice(0)


def test_loading_a_cpu_only_bundle_on_cuda_says_how_to_fix_it(fake_gpu) -> None:
    from nova.compiler.driver import CompileOptions, compile_to_bundle
    from nova.runtime.executor import NovaModule

    data = compile_to_bundle(SOURCE, "double.mlir", CompileOptions(ptx=False, cubin=False))
    with pytest.raises(BundleFormatError, match=r"double\.nova: this bundle was built without "
                                                r"GPU images .*recompile it with PTX enabled"):
        NovaModule(data, fake_gpu, "double.nova")


def test_device_layer_names_the_missing_gpu_image(fake_gpu) -> None:
    with pytest.raises(DeviceError, match=r"no GPU image .*built for the cpu device only"):
        fake_gpu.load_module(ModuleImages("m", cpu_object=b"\x7fELF"))
