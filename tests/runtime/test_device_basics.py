"""Device selection, properties and memory information, on every device."""

from __future__ import annotations

import dataclasses

import pytest

import nova
from nova import config
from nova.errors import DeviceError
from nova.runtime.device import DeviceProperties
from nova.runtime.selection import cuda_status, devices, get_device


def test_properties_are_frozen_and_sane(device):
    p = device.properties
    assert isinstance(p, DeviceProperties)
    assert p.kind == device.kind and p.index == device.index and p.name == device.name
    assert p.warp_size == 32
    assert p.max_threads_per_block >= 1024
    assert p.multiprocessor_count >= 1
    assert p.total_memory > 1 << 20
    assert p.max_shared_memory_per_block_optin >= p.max_shared_memory_per_block >= 48 * 1024
    assert len(p.max_grid_dim) == 3 and len(p.max_block_dim) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.name = "x"  # type: ignore[misc]
    if device.kind == "cuda":
        assert p.compute_capability >= (7, 0) and p.arch.startswith("sm_")
    else:
        assert p.arch == "x86_64"


def test_mem_info(device):
    free, total = device.mem_info()
    assert 0 < free <= total == device.properties.total_memory


def test_devices_are_singletons(device):
    assert get_device(device.kind) is device
    assert get_device(f"{device.kind}:0") is device
    assert get_device(device) is device
    assert device in devices()


def test_cpu_is_always_listed_last():
    found = devices()
    assert found[-1].kind == "cpu"
    assert all(d.kind == "cuda" for d in found[:-1])


def test_auto_selection_follows_cuda_availability():
    expected = "cuda" if cuda_status().usable else "cpu"
    with config.scoped(device=""):
        assert get_device().kind == expected
    assert get_device("auto").kind == expected


def test_config_picks_the_device():
    with config.scoped(device="cpu"):
        assert get_device().kind == "cpu"
        assert nova.get_device().kind == "cpu"


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "cpu:1"])
def test_bad_specs_raise_device_error(spec):
    with pytest.raises(DeviceError, match=r"device|cpu"):
        get_device(spec)


def test_cuda_unusable_message():
    status = cuda_status()
    if status.usable:
        pytest.skip("a CUDA device is usable here")
    assert status.reason
    with pytest.raises(DeviceError, match="no usable CUDA device"):
        get_device("cuda")


def test_device_context_manager_synchronizes(device):
    with device as d:
        buf = d.allocate(64)
        d.memset(buf, 1, stream=d.default_stream)
    assert bytes(buf.numpy()) == b"\x01" * 64


def test_auto_falls_back_to_cpu_when_the_gpu_cannot_start(monkeypatch):
    from nova.runtime import selection as device_module
    from nova.runtime.selection import CudaStatus

    monkeypatch.setattr(device_module, "cuda_status", lambda: CudaStatus(True, 1, ""))
    monkeypatch.setattr(device_module, "_devices", {})

    def broken(kind, index, real=device_module._create):
        if kind == "cuda":
            raise DeviceError("cuDevicePrimaryCtxRetain failed: CUDA_ERROR_UNKNOWN (999)")
        return real(kind, index)

    monkeypatch.setattr(device_module, "_create", broken)
    with pytest.warns(RuntimeWarning, match="using the cpu device"):
        assert get_device("auto").kind == "cpu"
    with pytest.raises(DeviceError, match="CUDA_ERROR_UNKNOWN"):
        get_device("cuda")
