"""The checked launch builtins (nova.runtime.cuda.py_checked): prepared and specialised cached
launches whose checks, packing and launch run natively, against the native fake driver.

Each case checks which path took the call — a builtin made with the same spec and a counting
fallback says whether the native code took it — and, for arguments it does not take, that the
launch raises exactly what the Python call (the path before the builtins) raises.
"""

from __future__ import annotations

import struct
import threading
import types

import numpy as np
import pytest
from fake_cuda import AnyKernelDriver
from native_fake_driver import NativeFakeDriver

import nova
from nova import config
from nova.errors import ArgumentError, CudaError, DeviceError
from nova.lang.api import KernelFunction
from nova.lang.guard import checked_spec
from nova.runtime.cuda import device as cuda_device_module
from nova.runtime.cuda import py_checked
from nova.runtime.cuda.device import CudaDevice
from nova.runtime.selection import get_device


@pytest.fixture
def gpu(monkeypatch, tmp_path) -> CudaDevice:
    drv = AnyKernelDriver()
    monkeypatch.setattr(cuda_device_module, "load_bindings", lambda: drv)
    with config.scoped(cache_dir=tmp_path):
        yield CudaDevice(0)


@pytest.fixture
def native(gpu) -> NativeFakeDriver:
    driver = NativeFakeDriver()
    driver.bind(gpu)
    driver.record_params(6)  # no more than the smallest kernel's slots: the rest is not there
    return driver


def _scale(out, x, a):
    i = nova.global_id(0)
    if i < len(x):
        out[i] = x[i] * a


def _axpb(out, a, b):
    i = nova.global_id(0)
    if i < len(out):
        out[i] = out[i] * a + b


class _Counted:
    """A builtin of `run`'s spec whose fallback counts, then runs `run`'s Python call."""

    def __init__(self, run, exact: bool = False) -> None:
        self.fallbacks = 0
        python = run.python_call

        def fallback(*args):
            self.fallbacks += 1
            return python(*args)

        spec = checked_spec(run.signature, run.device, fallback, exact=exact)
        self.call = run.launcher.checked_call(run.config, run.stream, spec)
        assert self.call is not None


def _is_builtin(obj) -> bool:
    return isinstance(type(obj).__call__, types.BuiltinFunctionType)


def _same_error(run, args, error):
    """`run(*args)` raises `error` with the message the Python call raises."""
    with pytest.raises(error) as native_error:
        run(*args)
    with pytest.raises(error) as python_error:
        run.python_call(*args)
    assert str(native_error.value) == str(python_error.value)
    return native_error.value


def test_the_layout_the_builtin_reads_is_checked_here():
    assert py_checked.available()


def test_prepared_launches_pack_like_struct(gpu, native):
    kern = KernelFunction(_axpb)
    native.record_params(7)
    out = gpu.to_device(np.zeros(40, np.float32))
    for a_type, b_type in ((np.float32, np.int8), (np.float64, np.uint16), (np.float32, np.int32),
                           (np.float64, np.uint32), (np.float32, np.int64),
                           (np.float64, np.uint64), (np.float32, np.int16),
                           (np.float32, np.uint8)):
        run = kern.prepare(out, a_type(0), b_type(0), grid=1, block=64)
        assert _is_builtin(run)
        run(out, 1.0, 1)  # the Python call accepts `out` first (its `_accepted` record)
        counted = _Counted(run)
        info = np.iinfo(b_type)
        for a, b in ((1.5, 3), (a_type(-2.25), b_type(info.max)), (-0.0, int(info.min)),
                     (float("inf"), b_type(info.min)), (3.4e38, 7), (float("nan"), 0)):
            counted.call(out, a, b)
            got = native.last()
            expected = run.launcher.pack(out.ptr, out.ptr, 0, 40, 1, a, b)
            assert struct.pack("<7Q", *got[11:18]) == expected
        assert counted.fallbacks == 0
        count = native.last()[0]
        run(out, 1.0, 1)
        assert native.last()[0] == count + 1


@pytest.mark.parametrize(("value", "why"), [
    (np.float64(1.0), "another NumPy type"), (1, "an int for a float"), (True, "a bool"),
    (3.5e38, "a float32 overflow")])
def test_scalars_it_does_not_take_go_to_the_python_call(gpu, native, value, why):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(8, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=8)
    run(out, x, 1.0)
    counted = _Counted(run)
    count = native.last()[0]
    if why == "a float32 overflow":
        _same_error(run, (out, x, value), ArgumentError)
        with pytest.raises(ArgumentError, match="does not fit its type"):
            counted.call(out, x, value)
        assert native.last()[0] == count
    else:
        counted.call(out, x, value)
        assert native.last()[0] == count + 1
    assert counted.fallbacks == 1


@pytest.mark.parametrize("code", ["b", "h", "i", "B", "H", "I", "q", "Q"])
def test_out_of_range_integers_raise_the_python_error(gpu, native, code):
    native.record_params(11)  # _scale's slots
    kern = KernelFunction(_scale)
    ty = np.dtype(code).type
    out = gpu.to_device(np.zeros(8, ty))
    x = gpu.to_device(np.zeros(8, ty))
    run = kern.prepare(out, x, ty(1), grid=1, block=8)
    info = np.iinfo(ty)
    run(out, x, 1)
    counted = _Counted(run)
    count = native.last()[0]
    for bad in (int(info.max) + 1, int(info.min) - 1, 1 << 70):
        error = _same_error(run, (out, x, bad), ArgumentError)
        assert "does not fit its type" in str(error)
        with pytest.raises(ArgumentError):
            counted.call(out, x, bad)
    assert native.last()[0] == count
    if code == "Q":  # natively only below 2**63: the Python call packs the rest
        counted.call(out, x, 1 << 63)
        assert native.last()[11 + 10] == 1 << 63 and counted.fallbacks == 4
    else:
        assert counted.fallbacks == 3


def test_arrays_it_does_not_take_go_to_the_python_call(gpu, native):
    native.record_params(11)  # _scale's slots
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    run(out, x, 1.0)
    counted = _Counted(run)
    counted.call(out, x, 2.0)
    assert counted.fallbacks == 0
    # another dtype or rank: the general launch compiles that signature
    counted.call(out, gpu.to_device(np.zeros(16, np.float64)), 2.0)
    assert counted.fallbacks == 1
    _same_error(run, (out, gpu.to_device(np.zeros((4, 4), np.float32)), 2.0), nova.NovaError)
    counted.call(out, gpu.to_device(np.zeros(16, np.float32)), 2.0)  # a new buffer: checked
    assert counted.fallbacks == 2
    # a view (no `_accepted` record) and a buffer whose shape changed
    counted.call(out, x.view(np.float32, (8,)), 2.0)
    x.shape = (8,)
    counted.call(out, x, 2.0)
    assert counted.fallbacks == 4 and native.last()[11 + 5 + 3] == 8
    counted.call(out, x, 2.0)  # accepted again with its new shape
    assert counted.fallbacks == 4
    # wrong kinds and counts raise what the Python call raises
    _same_error(run, (out, "x", 2.0), ArgumentError)
    _same_error(run, (out, x), nova.NovaError)
    _same_error(run, (out, x, 2.0, 3.0), nova.NovaError)
    _same_error(run, (out, x, "2"), ArgumentError)


def test_a_freed_buffer_raises_the_python_error(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    run(out, x, 1.0)
    count = native.last()[0]
    x.free()
    error = _same_error(run, (out, x, 1.0), DeviceError)
    assert "use of a freed Buffer" in str(error) and native.last()[0] == count


def test_a_buffer_of_another_device_is_the_python_calls(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    other = get_device("cpu").to_device(np.zeros(16, np.float32))
    for _ in range(2):  # the second launch: accepted by the cpu device's guard
        kern[1, 16](other, other, np.float32(1))
    assert other._accepted is not None
    _same_error(run, (out, other, 1.0), nova.NovaError)


def test_overlapping_noalias_arrays_go_to_the_python_call(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    assert run.signature[0].noalias and run.signature[1].noalias
    run(out, x, 1.0)
    counted = _Counted(run)
    count = native.last()[0]
    counted.call(x, x, 1.0)  # the general launch compiles the aliasing signature
    assert counted.fallbacks == 1 and native.last()[0] == count + 1
    assert len(kern._plans) == 2


def test_a_misaligned_pointer_of_an_aligned_signature_goes_to_the_python_call(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    assert run.signature[1].align == 16
    x._ptr += 4  # as a buffer wrapping misaligned memory would be
    x._accepted = None
    x._words = None
    counted = _Counted(run)
    counted.call(out, x, 1.0)  # accepted by the guard's record, refused by the fact
    assert counted.fallbacks == 1
    x._ptr -= 4


def test_a_closed_stream_and_a_lost_context_raise_the_python_error(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    stream = gpu.create_stream()
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16, stream=stream)
    assert _is_builtin(run)
    run(out, x, 1.0)
    assert native.last()[9] == stream.handle and stream.last_kernel == run.launcher.name
    count = native.last()[0]
    stream.close()
    error = _same_error(run, (out, x, 1.0), nova.NovaError)
    assert "closed" in str(error)
    on_default = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    gpu.driver.mark_lost("an earlier test error", "CUDA_ERROR_ILLEGAL_ADDRESS", 700)
    error = _same_error(on_default, (out, x, 1.0), CudaError)
    assert "not attempted" in str(error) and native.last()[0] == count


def test_a_failed_launch_raises_from_the_builtin(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    run(out, x, 1.0)
    counted = _Counted(run)
    native.fail_with(700)
    with pytest.raises(CudaError, match=r"CUDA_ERROR_ILLEGAL_ADDRESS \(700\) in kernel @"):
        counted.call(out, x, 1.0)
    assert counted.fallbacks == 0 and gpu.context_lost
    native.fail_with(0)
    with pytest.raises(CudaError, match="not attempted"):
        counted.call(out, x, 1.0)
    assert counted.fallbacks == 1


def test_unsupported_parameter_types_keep_the_python_call(gpu, native):
    def flag(out, f):
        i = nova.global_id(0)
        if f:
            out[i] = 1.0

    kern = KernelFunction(flag)
    out = gpu.to_device(np.zeros(8, np.float32))
    run = kern.prepare(out, True, grid=1, block=8)
    assert not _is_builtin(run)
    run(out, False)
    assert native.last()[0] == 1


def test_cached_launches_take_the_exact_checks_natively(gpu, native):
    native.record_params(11)  # _scale's slots
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    for _ in range(3):
        kern[1, 16](out, x, np.float32(2))
    configured = kern[1, 16]
    assert _is_builtin(configured)
    count = native.last()[0]
    configured(out, x, np.float32(3))
    assert native.last()[0] == count + 1
    assert native.last()[11 + 10] == struct.unpack("<I", struct.pack("<f", 3.0))[0]
    # exact: a Python float infers float64, another signature (the general path)
    configured(out, x, 3.0)
    assert len(kern._plans) == 2
    # the bounds-checking setting the class was made for
    with config.scoped(check_bounds=True):
        kern[1, 16](out, x, np.float32(2))
    assert len(kern._plans) == 3
    with pytest.raises(ArgumentError):
        kern[1, 16](out, "x", np.float32(2))
    x.free()
    with pytest.raises(DeviceError, match="freed"):
        kern[1, 16](out, x, np.float32(2))


def test_cached_exact_alignment_and_scalar_types(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    kern[1, 16](out, x, np.float32(2))
    plan = next(iter(kern._plans.values()))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    run(out, x, 1.0)
    exact = _Counted(run, exact=True)
    exact.call(out, x, np.float32(1))
    assert exact.fallbacks == 0
    exact.call(out, x, 1.0)  # float: not exactly float32's type
    assert exact.fallbacks == 1
    assert checked_spec(plan.sig, gpu, print, exact=True).exact_align


def test_concurrent_native_launches(gpu, native):
    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16)
    count = native.last()[0]
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            for k in range(2000):
                run(out, x, float(k))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=loop) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and native.last()[0] == count + 8000


def test_the_module_calls_no_libc(gpu):
    """The word copy stays a loop (no memcpy call): the launch module binds the driver alone."""
    from nova.runtime.cuda.native import LAUNCH_PACKED, launch_ir
    from nova.runtime.linker import undefined_symbols
    from nova.runtime.objload import compiled_ir

    assert py_checked.PY_CHECKED in launch_ir() and LAUNCH_PACKED in launch_ir()
    assert set(undefined_symbols(compiled_ir("cuda-launch", launch_ir()))) == {
        "cuCtxGetCurrent", "cuCtxSetCurrent", "cuLaunchKernel"}


def test_native_calls_leave_reference_counts_as_they_were(gpu, native):
    """Every reference the builtin takes (attribute reads, the status, None) is given back, on
    the launch path and on each way to the fallback."""
    import sys

    kern = KernelFunction(_scale)
    out, x = (gpu.to_device(np.zeros(16, np.float32)) for _ in range(2))
    stream = gpu.create_stream()
    run = kern.prepare(out, x, np.float32(1), grid=1, block=16, stream=stream)
    run(out, x, 1.0)
    value, big = 2.5, 1 << 200  # big: beyond float32
    watched = [out, x, x._accepted, x.shape, x._accepted[3], stream, run.launcher.name, value,
               big, False, stream._closed]

    def counts() -> list[int]:
        return [sys.getrefcount(obj) for obj in watched]

    def same(now: list[int], then: list[int]) -> bool:
        """Equal counts, except False's (`stream._closed` too), which any other thread of the
        process moves on Python 3.11 (immortal from 3.12): a leak per call would move it by
        hundreds here, other threads by a few."""
        return all(abs(a - b) < 50 if obj is False else a == b
                   for obj, a, b in zip(watched, now, then, strict=True))

    before = counts()
    for _ in range(1000):
        run(out, x, value)
    assert same(counts(), before), (counts(), before)
    view = x.view(np.float32, (16,))
    for args in ((out, view, value), (out, x, np.float64(1.0))):  # the Python call launches
        for _ in range(100):
            run(*args)
    for _ in range(100):
        with pytest.raises(ArgumentError):
            run(out, x, big)
    del view, args
    assert same(counts(), before), (counts(), before)
