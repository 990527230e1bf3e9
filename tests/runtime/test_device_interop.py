"""Zero-copy exchange: DLPack with NumPy (cpu) and PyTorch/CuPy (cuda), CUDA array interface."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import nova
from nova.errors import ArgumentError
from nova.runtime import dlpack
from nova.runtime.memory import Buffer


def test_dlpack_device(device):
    buf = device.allocate(8)
    expected = (dlpack.KDL_CUDA, device.index) if device.kind == "cuda" else (dlpack.KDL_CPU, 0)
    assert buf.__dlpack_device__() == expected


def test_numpy_views_a_cpu_buffer_without_copying(cpu_device):
    buf = nova.to_device(np.arange(12, dtype=np.int32).reshape(3, 4), cpu_device)
    view = np.from_dlpack(buf)
    assert view.shape == (3, 4) and view.dtype == np.int32
    assert view.ctypes.data == buf.ptr
    view[1, 1] = -5
    assert buf.numpy()[1, 1] == -5
    del buf
    gc.collect()
    assert view[1, 1] == -5  # the view keeps the memory alive


def test_exported_capsules_are_released(cpu_device):
    gc.collect()
    before = len(dlpack._exported)
    for versioned in (None, (1, 0)):
        capsule = nova.to_device(np.ones(3), cpu_device).__dlpack__(max_version=versioned)
        assert len(dlpack._exported) == before + 1
        del capsule  # never consumed: the capsule destructor frees it
        gc.collect()
        assert len(dlpack._exported) == before
    view = np.from_dlpack(nova.to_device(np.ones(3), cpu_device))
    assert len(dlpack._exported) == before + 1
    del view
    gc.collect()
    assert len(dlpack._exported) == before


def test_from_dlpack_wraps_numpy_without_copying(cpu_device):
    host = np.arange(6, dtype=np.float64).reshape(2, 3)
    buf = nova.from_dlpack(host)
    assert isinstance(buf, Buffer) and buf.device is cpu_device
    assert buf.ptr == host.ctypes.data and buf.shape == (2, 3) and buf.dtype == np.float64
    host[0, 0] = 42.0
    assert buf.numpy()[0, 0] == 42.0
    buf.free()


def test_from_dlpack_rejects_strided_and_foreign(cpu_device):
    with pytest.raises(ArgumentError, match="C-contiguous"):
        nova.from_dlpack(np.arange(10)[::2])
    with pytest.raises(ArgumentError, match="DLPack"):
        nova.from_dlpack([1, 2, 3])


def test_cuda_array_interface_only_on_cuda(device):
    buf = device.allocate(16)
    if device.kind == "cpu":
        assert not hasattr(buf, "__cuda_array_interface__")
        return
    cai = buf.view(np.float32, (4,)).__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"] == (buf.ptr, False)
    assert cai["shape"] == (4,) and cai["typestr"] == "<f4" and cai["stream"] not in (None, 0)


@pytest.mark.gpu
def test_torch_shares_cuda_buffers(cuda_device):
    torch = pytest.importorskip("torch")
    buf = nova.to_device(np.arange(8, dtype=np.float32), cuda_device)
    t = torch.from_dlpack(buf)
    assert t.is_cuda and t.data_ptr() == buf.ptr
    t.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(buf.numpy(), np.arange(8, dtype=np.float32) * 2)
    back = nova.from_dlpack(torch.arange(5, device="cuda", dtype=torch.int64))
    assert back.device is cuda_device
    np.testing.assert_array_equal(back.numpy(), np.arange(5))


@pytest.mark.gpu
def test_cupy_shares_cuda_buffers(cuda_device):
    cp = pytest.importorskip("cupy")
    buf = nova.to_device(np.arange(6, dtype=np.int32), cuda_device)
    arr = cp.asarray(buf)  # through __cuda_array_interface__
    assert arr.data.ptr == buf.ptr
    arr += 1
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(buf.numpy(), np.arange(6) + 1)
    via_dlpack = cp.from_dlpack(buf)
    assert via_dlpack.data.ptr == buf.ptr
    src = cp.arange(4, dtype=cp.float64)
    wrapped = Buffer.from_cuda_array_interface(src)
    assert wrapped.ptr == src.data.ptr and wrapped.shape == (4,)
    np.testing.assert_array_equal(wrapped.numpy(), np.arange(4.0))
    np.testing.assert_array_equal(nova.from_dlpack(src).numpy(), np.arange(4.0))
