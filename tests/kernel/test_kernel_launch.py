"""Launch API, caches and ahead-of-time bundles of Python kernels."""

from __future__ import annotations

import time

import kernel_programs as P
import numpy as np
import pytest

import nova
from nova import config
from nova.lang import compiler
from nova.lang.api import KernelFunction


def _scale(out, x, f):
    i = nova.global_id(0)
    if i < len(x):
        out[i] = x[i] * f


scale = nova.kernel(_scale)


def test_both_launch_forms_and_device_buffers_in_place(device):
    x = nova.to_device(np.arange(100, dtype=np.float32), device)
    out = nova.to_device(np.zeros(100, np.float32), device)
    scale[4, 32](out, x, np.float32(2))
    device.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(100) * 2)
    stream = device.create_stream()
    scale.launch(out, x, np.float32(3), grid=(4,), block=(32, 1, 1), stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(100) * 3)
    scale[4, 32, stream, 0](out, x, np.float32(4))
    stream.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(100) * 4)
    scale[np.int64(4), [np.int32(32)]](out, x, np.float32(5))  # NumPy integers as sizes
    device.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(100) * 5)
    with pytest.raises(nova.NovaError, match="grid must be"):
        scale[2.5, 32](out, x, np.float32(5))


def test_max_active_blocks_of_a_specialisation(device):
    """kern.max_active_blocks: the device's occupancy count for the compiled signature (cuda:
    the driver's calculator, at most 2048 threads per SM on sm_90; cpu: one block per worker),
    from example arguments or types; bad block sizes are ArgumentErrors."""
    sig = (nova.float32[:], nova.float32[:], nova.float32)
    small = scale.max_active_blocks(*sig, block=128, device=device)
    large = scale.max_active_blocks(*sig, block=1024, device=device)
    if device.kind == "cpu":
        assert (small, large) == (1, 1)
    else:
        assert 1 <= large <= 2 and large <= small <= 16
    x = nova.to_device(np.zeros(8, np.float32), device)
    assert scale.max_active_blocks(x, x, np.float32(1), block=128, device=device) == small
    with pytest.raises(nova.NovaError, match="block_threads"):
        scale.max_active_blocks(*sig, block=0, device=device)
    with pytest.raises(nova.NovaError, match="shared_bytes"):
        scale.max_active_blocks(*sig, block=32, shared_bytes=-1, device=device)


def test_signatures_are_inferred_and_cached_per_signature(cpu_device, monkeypatch, tmp_path):
    kern = KernelFunction(_scale)
    calls = []
    real = compiler.build_module
    monkeypatch.setattr(compiler, "build_module", lambda *a: calls.append(a[1]) or real(*a))
    with config.scoped(cache_dir=tmp_path):  # a cold disk cache: every signature is built once
        for dtype in (np.float32, np.float64, np.float32, np.int32, np.float64):
            x = np.arange(10, dtype=dtype)
            out = np.zeros_like(x)
            kern.launch(out, x, dtype(3), grid=1, block=32, device=cpu_device)
            np.testing.assert_array_equal(out, x * 3)
    assert [str(s[0]) for s in calls] == ["array(float32, 1d)", "array(float64, 1d)",
                                          "array(int32, 1d)"]
    plan = kern._plans[(cpu_device, kern.signature(np.zeros(1, np.float32),
                                                   np.zeros(1, np.float32), np.float32(1)),
                        kern.check_bounds)]
    before = plan.launcher
    kern.launch(np.zeros(3, np.float32), np.ones(3, np.float32), np.float32(1), grid=1,
                block=32, device=cpu_device)
    assert plan.launcher is before  # the launcher (and its checked configurations) is reused


def test_disk_cache_is_used_by_a_fresh_kernel_object(cpu_device, tmp_path, monkeypatch):
    with config.scoped(cache_dir=tmp_path, cache_enabled=True):
        x = np.arange(8, dtype=np.float32)
        out = np.zeros_like(x)
        KernelFunction(_scale).launch(out, x, np.float32(2), grid=1, block=8,
                                      device=cpu_device)
        entries = list((tmp_path / "kernels").rglob("*.img"))
        assert len(entries) == 2  # under the source key and under the MLIR key

        def no_compiler(*args):
            raise AssertionError("compiled again instead of using the disk cache")

        monkeypatch.setattr(compiler, "lower", no_compiler)
        monkeypatch.setattr(compiler, "build_module", no_compiler)
        out[:] = 0
        KernelFunction(_scale).launch(out, x, np.float32(5), grid=1, block=8,
                                      device=cpu_device)  # the source key: nothing is built
        np.testing.assert_array_equal(out, x * 5)
        monkeypatch.undo()
        monkeypatch.setattr(compiler, "lower", no_compiler)
        for entry in entries:  # a corrupt entry reads as a miss (and is removed)
            entry.write_bytes(b"corrupt")
        with pytest.raises(AssertionError, match="compiled again"):
            KernelFunction(_scale).launch(out, x, np.float32(5), grid=1, block=8,
                                          device=cpu_device)


FACTOR = 2


def _uses_global(out):
    out[0] = FACTOR


def test_cache_key_covers_captured_constants(monkeypatch):
    global FACTOR
    a = KernelFunction(_uses_global).mlir(nova.int64[:])
    monkeypatch.setattr(__import__(__name__), "FACTOR", 7)
    b = KernelFunction(_uses_global).mlir(nova.int64[:])
    assert "arith.constant 2 : i64" in a and "arith.constant 7 : i64" in b
    assert compiler._cache_key(a, "cpu", "x86_64") != compiler._cache_key(b, "cpu", "x86_64")


def test_ptx_and_cubin_for_every_program():
    sigs = {P.block_sum: (nova.float32[:],) * 2, P.histogram: (nova.int32[:], nova.uint8[:]),
            P.warp_scan: (nova.int32[:],) * 2, P.matmul: (nova.float32[:, :],) * 3,
            P.rle: (nova.uint8[:], nova.int32[:], nova.int64[:], nova.uint8[:]),
            P.grid2d: (nova.int64[:, :],), P.grid3d: (nova.int32[:, :, :],)}
    for kern, sig in sigs.items():
        ptx = kern.ptx(*sig, arch="sm_90")
        assert f".visible .entry {kern.__name__}(" in ptx
    assert "shfl.sync.up.b32" in P.warp_scan.ptx(*sigs[P.warp_scan])
    assert "bar.sync" in P.matmul.ptx(*sigs[P.matmul])
    assert "atom.global.add" in P.histogram.ptx(*sigs[P.histogram])


def test_save_bundle_runs_through_the_executor(device, tmp_path):
    path = nova.kernel.save_bundle(tmp_path / "k.nova", [
        (scale, (nova.float32[:], nova.float32[:], nova.float32)),
        (scale, (nova.float64[:], nova.float64[:], nova.float64)),
        (P.block_sum, (nova.float32[:], nova.float32[:])),
    ])
    mod = nova.load(path, device=device)
    x = np.arange(50, dtype=np.float64)
    out = np.zeros_like(x)
    mod._scale_1(out, x, 0.5, 2, 1, 1, 32, 1, 1)
    np.testing.assert_array_equal(out, x * 0.5)
    data = np.random.default_rng(0).random(5000, dtype=np.float32)
    sums = np.zeros(4, np.float32)
    mod.block_sum(sums, data, 4, 1, 1, P.TPB, 1, 1)
    np.testing.assert_allclose(sums, P.block_sum_expected(data, 4), rtol=1e-5)


def test_bundle_source_names_entries(tmp_path):
    text = nova.kernel.bundle_source([(scale, (nova.int32[:], nova.int32[:], nova.int32))])
    assert "func.func @_scale(%a0: memref<?xi32>, %a1: memref<?xi32>, %a2: i32" in text
    assert "gpu.launch_func @nova_kernels::@_scale blocks in (%gx, %gy, %gz)" in text


@pytest.mark.gpu
def test_cuda_arrays_are_used_in_place(cuda_device):
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(64, dtype=cupy.float32)
    out = cupy.zeros(64, dtype=cupy.float32)
    scale[2, 32](out, x, np.float32(2))  # waits for CuPy's stream (CAI v3 'stream')
    cuda_device.synchronize()
    assert cupy.asnumpy(out).tolist() == (np.arange(64) * 2).tolist()


@pytest.mark.gpu
def test_torch_cuda_tensors_are_used_in_place(cuda_device):
    torch = pytest.importorskip("torch")
    x = torch.arange(64, dtype=torch.float32, device="cuda")
    out = torch.zeros(64, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    scale[2, 32](out, x, np.float32(2))
    cuda_device.synchronize()
    assert out.cpu().tolist() == (np.arange(64) * 2).tolist()
    with pytest.raises(nova.NovaError, match="C-contiguous"):
        scale[2, 32](torch.zeros((8, 8), device="cuda").t()[0], x, np.float32(2))


def test_cached_launch_overhead(device):
    x = nova.to_device(np.zeros(32, np.float32), device)
    scale[1, 32](x, x, np.float32(1))
    device.synchronize()
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        scale[1, 32](x, x, np.float32(1))
    per_launch = (time.perf_counter() - start) / n
    device.synchronize()
    print(f"cached launch on {device.kind}: {per_launch * 1e6:.1f} us")
    assert per_launch < 5e-3  # generous: a regression to recompiling would take >100 ms


def _make_kernels(scale_by: int):
    """Kernels and device functions built in a closure: captured values are constants."""

    @nova.func
    def half_or_value(v):
        if v % 2 == 0:
            return v // 2
        return v * 0.5          # the two returns unify to float64

    @nova.func
    def twice(v):
        return half_or_value(v) * scale_by

    @nova.kernel(device="cpu")
    def apply(out, x):
        i = nova.global_id(0)
        if i < len(x):
            out[i] = twice(x[i])

    return apply


def test_closures_nested_device_functions_and_decorator_device():
    apply = _make_kernels(3)
    x = np.arange(6, dtype=np.int64)
    out = np.zeros(6, np.float64)
    apply[1, 32](out, x)       # the decorator's device (cpu) is used
    assert out.tolist() == [(v // 2 if v % 2 == 0 else v * 0.5) * 3 for v in range(6)]
    assert "arith.constant 3.000000e+00 : f64" in apply.mlir(nova.float64[:], nova.int64[:])


def test_concurrent_launches_from_threads(cpu_device):
    """Threads launching one kernel share its launch plan; the parameter block is packed and
    handed to the device under the plan's lock, so no launch sees another's arguments."""
    from concurrent.futures import ThreadPoolExecutor

    kern = KernelFunction(_scale)

    def work(k: int) -> bool:
        x = np.arange(64, dtype=np.float32) + k
        out = np.zeros_like(x)
        for _ in range(20):
            kern.launch(out, x, np.float32(k), grid=2, block=32, device=cpu_device)
            if not np.array_equal(out, x * k):
                return False
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(1, 9)))
