"""Module loading and kernel launches on every device (hand-written kernels: PTX on cuda, an
llvmlite-built x86-64 object on cpu)."""

from __future__ import annotations

import ctypes

import device_test_kernels as tk
import numpy as np
import pytest

from nova.errors import ArgumentError, DeviceError, KernelFault
from nova.runtime.device import DeviceFunction, ModuleImages


def test_load_module_is_cached_by_image(device):
    m1 = tk.load(device)
    m2 = device.load_module(tk.images("other-name-same-image"))
    assert m1 is m2
    fn = m1.get_function("scale", tk.KERNELS["scale"])
    assert isinstance(fn, DeviceFunction) and fn.handle != 0 and fn.name == "scale"
    assert m1.get_function("scale") is fn


def test_unknown_kernel(device):
    with pytest.raises(DeviceError, match="nope"):
        tk.load(device).get_function("nope")


def test_module_without_a_usable_image(device):
    with pytest.raises(DeviceError, match="has no"):
        device.load_module(ModuleImages(name="empty"))


def test_bad_cpu_object(cpu_device):
    with pytest.raises(DeviceError, match="cannot load the CPU object"):
        cpu_device.load_module(ModuleImages(name="junk", cpu_object=b"\x7fELF not really"))


def _scale_inputs(device, n: int):
    host = np.arange(n, dtype=np.float32)
    return host, device.to_device(host), device.allocate(host.nbytes)


@pytest.mark.parametrize("grid,block", [(1, 64), (4, 32), (40, 128)])
def test_launch_with_a_value_list(device, grid, block):
    n = 1000
    host, src, dst = _scale_inputs(device, n)
    fn = tk.function(device, "scale")
    device.launch(fn, grid, block, [dst, src, 2.5, n])
    device.synchronize()
    covered = min(n, grid * block)
    out = dst.view(np.float32).numpy()
    np.testing.assert_array_equal(out[:covered], host[:covered] * 2.5)


def test_launch_with_ctypes_values_on_a_stream(device):
    n = 256
    host, src, dst = _scale_inputs(device, n)
    s = device.create_stream()
    params = [ctypes.c_void_p(dst.ptr), ctypes.c_void_p(src.ptr), ctypes.c_float(-1.0),
              ctypes.c_int64(n)]
    device.launch(tk.function(device, "scale"), (2, 1, 1), (128,), params, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(dst.view(np.float32).numpy(), -host)


def _void_pp(values: list) -> tuple[ctypes.Array, list]:
    slots = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    return slots, values


def test_launch_with_a_void_pointer_array_copies_the_values(device):
    """The params array may be gone (or reused) before the kernel runs: values are copied."""
    n = 512
    host, src, dst = _scale_inputs(device, n)
    values = [ctypes.c_void_p(dst.ptr), ctypes.c_void_p(src.ptr), ctypes.c_float(3.0),
              ctypes.c_int64(n)]
    slots, _keep = _void_pp(values)
    s = device.create_stream()
    blocker = device.create_event()
    if device.kind == "cpu":  # hold the stream so the launch surely runs after we scribble
        import threading

        gate = threading.Event()
        s.enqueue(lambda: gate.wait(5), "gate")
    device.launch(tk.function(device, "scale"), 4, 128, ctypes.addressof(slots), stream=s)
    values[2].value = 100.0
    values[0].value = 0
    if device.kind == "cpu":
        gate.set()
    s.record(blocker).synchronize()
    np.testing.assert_array_equal(dst.view(np.float32).numpy(), host * 3.0)


def test_parameter_errors(device):
    fn = tk.function(device, "scale")
    buf = device.allocate(16)
    with pytest.raises(ArgumentError, match="expected 4 parameters, got 2"):
        device.launch(fn, 1, 1, [buf, buf])
    with pytest.raises(ArgumentError, match="float of 4 bytes"):
        device.launch(fn, 1, 1, [buf, buf, ctypes.c_double(1.0), 4])
    with pytest.raises(ArgumentError, match="unsupported type"):
        device.launch(fn, 1, 1, [buf, buf, "x", 4])
    with pytest.raises(ArgumentError, match="grid"):
        device.launch(fn, 0, 1, [buf, buf, 1.0, 4])
    with pytest.raises(ArgumentError, match="threads"):
        device.launch(fn, 1, (1024, 2), [buf, buf, 1.0, 4])
    # no manifest entry: no sizes. Looked up directly: get_function returns the function cached
    # by an earlier test of the worker with its manifest entry, whose launch would then read
    # parameters at the address 12345 (a worker crash seen when test_device_streams ran first)
    unknown = tk.load(device)._lookup("set_flag", None)
    if device.kind == "cpu":
        with pytest.raises(ArgumentError, match="manifest entry"):
            device.launch(unknown, 1, 1, 12345)


def test_dynamic_shared_memory(device):
    grid, shared = 6, 1024
    out = device.allocate(grid * 8)
    fn = tk.function(device, "dyn_shared")
    device.launch(fn, grid, 32, [out], shared_bytes=shared)
    device.synchronize()
    np.testing.assert_array_equal(out.view(np.int64).numpy(), np.arange(grid) + shared)


def test_large_dynamic_shared_memory_opt_in(device):
    shared = 100 * 1024  # above the 48 KiB default: needs the opt-in attribute on cuda
    out = device.allocate(8)
    device.launch(tk.function(device, "dyn_shared"), 1, 32, [out], shared_bytes=shared)
    device.synchronize()
    assert out.view(np.int64).numpy()[0] == shared


def test_max_active_blocks(device):
    """The occupancy query persistent kernels size their grids with: on cuda the driver's
    calculator (sm_90: 2048 threads and 228 KiB of shared memory per SM, at most 32 blocks),
    on cpu one block per worker."""
    fn = tk.function(device, "dyn_shared")
    counts = [device.max_active_blocks(fn, threads, shared)
              for threads, shared in ((128, 0), (1024, 0), (128, 120 * 1024), (32, 0))]
    if device.kind == "cpu":
        assert counts == [1, 1, 1, 1]
    else:
        assert counts == [16, 2, 1, 32]
    assert device.max_active_blocks(fn, 1024, 0) == counts[1]  # cached per shape
    with pytest.raises(ArgumentError, match="shared_bytes"):
        device.max_active_blocks(fn, 128, -1)
    with pytest.raises(ArgumentError, match="block_threads"):
        device.max_active_blocks(fn, 4096, 0)


def test_cpu_kernel_fault_is_raised_at_synchronize(cpu_device):
    fn = tk.function(cpu_device, "fault")
    s = cpu_device.create_stream()
    cpu_device.launch(fn, 8, 1, [], stream=s)
    with pytest.raises(KernelFault, match=r"kernel @fault failed: assertion failed: block 3"):
        s.synchronize()
    cpu_device.launch(fn, 3, 1, [], stream=s)  # blocks 0..2 pass; the stream works again
    s.synchronize()


def test_cpu_too_much_shared_memory(cpu_device):
    fn = tk.function(cpu_device, "dyn_shared")
    with pytest.raises(DeviceError, match="shared memory"):
        cpu_device.launch(fn, 1, 1, [cpu_device.allocate(8)], shared_bytes=1 << 20)


def test_cpu_launch_spreads_blocks_over_workers(cpu_device):
    n = 64 * 1000
    host, src, dst = _scale_inputs(cpu_device, n)
    cpu_device.launch(tk.function(cpu_device, "scale"), 1000, 64, [dst, src, 0.5, n])
    cpu_device.synchronize()
    np.testing.assert_array_equal(dst.view(np.float32).numpy(), host * 0.5)


def test_cluster_launch(device):
    if device.kind == "cuda" and device.properties.compute_capability < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    flag = device.allocate(4)
    device.memset(flag, 0)
    fn = tk.function(device, "set_flag")
    device.launch(fn, (4, 2), 32, [flag], cluster=(2, 1))
    device.synchronize()
    assert flag.view(np.int32).numpy()[0] == 1
    with pytest.raises(ArgumentError, match="not a multiple of the cluster shape"):
        device.launch(fn, 3, 32, [flag], cluster=2)


def test_images_from_a_descriptor(device):
    from nova.abi import ABI_VERSION, DeviceModuleDescriptor

    ptx = tk.PTX.encode() + b"\0"
    obj = tk.cpu_object()
    ptx_buf = ctypes.create_string_buffer(ptx, len(ptx))
    obj_buf = ctypes.create_string_buffer(obj, len(obj))
    desc = DeviceModuleDescriptor(ABI_VERSION, b"from_desc", ctypes.addressof(ptx_buf),
                                  len(ptx) - 1, None, 0, ctypes.addressof(obj_buf), len(obj))
    images = ModuleImages.from_descriptor(desc, "sm_90")
    assert images.name == "from_desc" and images.ptx == tk.PTX and images.cubin is None
    assert images.cpu_object == obj and images.cubin_arch == "sm_90"
    assert device.load_module(images) is tk.load(device)  # same image: the cached module
