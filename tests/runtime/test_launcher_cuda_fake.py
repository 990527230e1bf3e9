"""Python-kernel launches on the cuda device without a GPU: the native launch path
(nova_cuda_launch_packed) against a native fake driver, and the Python fallback launcher against
the fake cuda bindings. The real driver is exercised by the gpu tests and bench/launch_overhead.py.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from fake_cuda import AnyKernelDriver
from native_fake_driver import NativeFakeDriver

import nova
from nova import config
from nova.errors import CudaError
from nova.lang.api import KernelFunction
from nova.runtime.cuda import device as cuda_device_module
from nova.runtime.cuda.device import CudaDevice
from nova.runtime.cuda.launcher import CudaLauncher
from nova.runtime.launcher import Launcher


@pytest.fixture
def fake(monkeypatch, tmp_path):
    drv = AnyKernelDriver()
    monkeypatch.setattr(cuda_device_module, "load_bindings", lambda: drv)
    with config.scoped(cache_dir=tmp_path):
        yield drv


@pytest.fixture
def gpu(fake) -> CudaDevice:
    return CudaDevice(0)


@pytest.fixture
def native(gpu) -> NativeFakeDriver:
    driver = NativeFakeDriver()
    driver.bind(gpu)
    driver.record_params(6)
    return driver


def _add(x, a):
    i = nova.global_id(0)
    if i < len(x):
        x[i] += a


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def test_cached_and_prepared_launches_go_through_the_native_launch(gpu, fake, native):
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(40, np.float32))
    kern[2, 32](x, np.float32(1.5))
    plan = next(iter(kern._plans.values()))
    assert isinstance(plan.launcher, CudaLauncher)
    kern[2, 32](x, np.float32(2.5))  # the guard path
    words = native.last()
    assert words[0] == 2 and not fake.launches  # nothing went through the Python bindings
    assert words[1] == plan.function.handle
    assert words[2:10] == [2, 1, 1, 32, 1, 1, 0, gpu.default_stream.handle]
    assert words[11:17] == [x.ptr, x.ptr, 0, 40, 1, _bits(2.5)]
    stream = gpu.create_stream()
    run = kern.prepare(x, np.float32(0), grid=(3, 2), block=(16, 2), stream=stream)
    run(x, 4.0)
    words = native.last()
    assert words[0] == 3 and words[2:10] == [3, 2, 1, 16, 2, 1, 0, stream.handle]
    assert words[16] == _bits(4.0)
    assert stream.last_kernel == plan.function.name


def test_large_dynamic_shared_memory_opts_in_once(gpu, fake, native):
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(8, np.float32))
    for _ in range(3):
        kern[1, 8, None, 96 * 1024](x, np.float32(1))
    opt_ins = [c for c in fake.calls if c.startswith("cuFuncSetAttribute")]
    assert opt_ins == ["cuFuncSetAttribute:CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=98304"]
    assert native.last()[0] == 3 and native.last()[8] == 96 * 1024


def test_failed_native_launch_raises_and_loses_the_context(gpu, fake, native):
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(8, np.float32))
    kern[1, 8](x, np.float32(1))
    run = kern.prepare(x, np.float32(1), grid=1, block=8)
    native.fail_with(700)
    with pytest.raises(CudaError, match=r"cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                                        r"\(700\) in kernel @") as info:
        kern[1, 8](x, np.float32(1))
    assert info.value.context_lost and gpu.context_lost
    native.fail_with(0)
    with pytest.raises(CudaError, match="not attempted"):
        kern[1, 8](x, np.float32(1))
    with pytest.raises(CudaError, match="not attempted"):
        run(x, 1.0)
    assert native.last()[0] == 1


def test_substitute_bindings_launch_through_the_python_driver(gpu, fake):
    """Without the native module (tests' fake bindings) the base launcher hands the packed
    parameters to `_launch` and the checked driver wrapper."""
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(8, np.float32))
    kern[1, 8](x, np.float32(1))
    kern.prepare(x, np.float32(1), grid=2, block=4)(x, np.float32(2))
    launcher = next(iter(kern._plans.values())).launcher
    assert type(launcher) is Launcher
    assert [(r["grid"], r["block"]) for r in fake.launches] == [((1, 1, 1), (8, 1, 1)),
                                                                ((2, 1, 1), (4, 1, 1))]


class _ForeignArray:
    """A CUDA array of another library (the interface only): over a Nova buffer's memory."""

    def __init__(self, buf, strides=None, stream=None) -> None:
        self.__cuda_array_interface__ = {
            "shape": buf.shape, "typestr": "<f4", "data": (buf.ptr, False), "version": 3,
            "strides": strides, "stream": stream}


def test_cuda_array_interface_arguments_take_the_guard_path(gpu, fake, native, monkeypatch):
    kern = KernelFunction(_add, device=gpu)  # a foreign array does not say its device
    buf = gpu.to_device(np.zeros(40, np.float32))
    kern[1, 64](_ForeignArray(buf), np.float32(1))
    from nova.lang import api

    monkeypatch.setattr(api, "arg_type", None)  # the general path would fail now
    kern[1, 64](_ForeignArray(buf), np.float32(2))
    assert native.last()[0] == 2 and native.last()[11:16] == [buf.ptr, buf.ptr, 0, 40, 1]
    waits = fake.calls.count("cuStreamWaitEvent")
    kern[1, 64](_ForeignArray(buf, stream=gpu.create_stream().handle), np.float32(2))
    assert fake.calls.count("cuStreamWaitEvent") == waits + 1  # the producer stream is waited for
    monkeypatch.undo()
    with pytest.raises(nova.NovaError, match="C-contiguous"):
        kern[1, 64](_ForeignArray(gpu.to_device(np.zeros((4, 4), np.float32)).view(
            np.float32, (4, 4)), strides=(4, 16)), np.float32(1))


@pytest.fixture(params=["builtin", "ctypes"])
def launch_call(request, gpu, native) -> str:
    """Both ways a launcher calls the native launch: its builtins, or ctypes without them."""
    if request.param == "ctypes":
        gpu.launch_builtins = None
    return request.param


def test_launches_on_every_path_reach_the_driver(gpu, fake, native, launch_call):
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(40, np.float32))
    stream = gpu.create_stream()
    kern[1, 64](x, np.float32(1))  # general path
    kern[1, 64](x, np.float32(2))  # guard path, default stream
    assert native.last()[0] == 2 and native.last()[9] == gpu.default_stream.handle
    kern[1, 64](x, np.float32(2.5))  # the specialised kern[1, 64]
    assert type(kern[1, 64]).__name__ == "_Configured" and kern[1, 64].plan is not None
    words = native.last()
    assert words[0] == 3 and words[9] == gpu.default_stream.handle
    assert words[11:17] == [x.ptr, x.ptr, 0, 40, 1, _bits(2.5)]
    kern[1, 64, stream](x, np.float32(3))  # guard path, another stream
    assert native.last()[0] == 4 and native.last()[9] == stream.handle
    for s in (None, gpu.default_stream, stream):
        run = kern.prepare(x, np.float32(0), grid=2, block=32, stream=s)
        run(x, 4.0)
        words = native.last()
        assert words[2] == 2 and words[5] == 32 and words[16] == _bits(4.0)
        assert words[9] == (stream if s is stream else gpu.default_stream).handle
    launcher = next(iter(kern._plans.values())).launcher
    assert isinstance(launcher, CudaLauncher)
    assert (launcher._builtins is not None) is (launch_call == "builtin")
    stream.close()
    with pytest.raises(nova.NovaError, match="closed"):
        run(x, 1.0)  # the prepared launch on the closed stream
    assert native.last()[0] == 7


def test_the_launch_builtin_checks_its_argument(gpu, fake, native):
    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(40, np.float32))
    kern[1, 64](x, np.float32(1))
    launcher = next(iter(kern._plans.values())).launcher
    config = launcher.config(1, 64)
    call, args = launcher.native_call(config, launcher.pack(x.ptr, x.ptr, 0, 40, 1, 1.0))
    assert args == (args[0],) and call(*args) == 0 and native.last()[0] == 2
    for bad in ((), (args[0], args[0]), (args[0][:-8],), (args[0] + bytes(8),)):
        with pytest.raises(TypeError, match="bad argument"):
            call(*bad)
    with pytest.raises(TypeError, match="expected bytes"):
        call(bytearray(args[0]))
    assert native.last()[0] == 2  # none of them launched


def test_a_launch_builtin_keeps_its_code_alive(gpu, fake, native):
    """A builtin outliving every other reference to its launch module still launches (it
    holds the method definition and the compiled code)."""
    import gc

    kern = KernelFunction(_add)
    x = gpu.to_device(np.zeros(40, np.float32))
    kern[1, 64](x, np.float32(1))
    launcher = next(iter(kern._plans.values())).launcher
    slots = launcher.pack(x.ptr, x.ptr, 0, 40, 1, 1.0)
    call, _ = launcher.native_call(launcher.config(1, 64), slots)
    builtins = gpu.launch_builtins
    del launcher, kern
    gpu.launch_builtins = None
    gpu._native_fake_keepalive = (native, None)
    gc.collect()
    assert call.__module__ is builtins
    del builtins
    gc.collect()
    assert call(slots) == 0 and native.last()[0] == 2


def test_the_launch_module_is_placed_by_objload_from_the_cache(gpu, tmp_path) -> None:
    """The launch module's object is compiled once into <cache_dir>/runtime/ and placed by
    objload (no MCJIT engine, and in a fresh process no llvmlite import); a second device
    places the cached object again."""
    from nova.runtime.objload import LoadedObject

    first = NativeFakeDriver().bind(gpu)
    assert isinstance(first.engine, LoadedObject) and first.launch_packed
    cached = list((tmp_path / "runtime").glob("cuda-launch-*.o"))
    assert len(cached) == 1
    again = NativeFakeDriver().bind(CudaDevice(0))
    assert isinstance(again.engine, LoadedObject) and again.launch_packed != first.launch_packed
    assert list((tmp_path / "runtime").glob("cuda-launch-*.o")) == cached


def test_missing_driver_symbols_are_named(gpu) -> None:
    from nova.errors import DeviceError
    from nova.runtime.cuda.launch_module import compile_launch

    with pytest.raises(DeviceError, match=r"driver symbols missing: .*cuLaunchKernel"):
        compile_launch(gpu, "fake_", {"fake_cuCtxGetCurrent": 1, "fake_cuCtxSetCurrent": 2})


def test_the_cuda_launch_path_imports_no_llvmlite() -> None:
    """What a cuda kernel's first launch imports of the cuda device package (device, module,
    stream, launcher, launch module) pulls in neither llvmlite (the launch module is placed by
    objload) nor dataclasses, concurrent.futures or logging."""
    import os
    import subprocess
    import sys

    code = ("import sys\n"
            "import nova.runtime.cuda.device, nova.runtime.cuda.launcher\n"
            "import nova.runtime.cuda.launch_module\n"
            "print(*sorted({m.split('.')[0] for m in sys.modules} & {'llvmlite', 'dataclasses',"
            " 'concurrent', 'logging', 'xdsl'}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
