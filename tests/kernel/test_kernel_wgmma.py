"""`nova.wgmma` (Hopper warpgroup MMA) in Python kernels: on the CPU device (exact emulation)
and on CUDA (marked gpu; needs compute capability 9.0) against NumPy, for every swizzle mode and
both B layouts, and the located errors of misuse.

The operand tiles are packed on the host into the shared memory images the descriptors address
(tests/kernel/wgmma_layouts.py) and copied into shared memory unchanged, so the GPU run checks
the layout model (and the CPU emulation, which decodes descriptors by the same rules) against
the tensor cores. Inputs are small integers: every sum is exact in float32."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from wgmma_layouts import operand_layout, pack

import nova
from nova.lang.source import KernelTypeError

SIG = (nova.float32[:], nova.float16[:], nova.float16[:])


def _skip_unless_hopper(device: nova.Device) -> None:
    if device.kind == "cuda" and device.properties.compute_capability != (9, 0):
        pytest.skip(f"wgmma needs compute capability 9.0, this GPU is {device.arch}")


def _kernel(n: int, swizzle: int, b_major: str, steps: int, accumulate: bool):
    la = operand_layout(64, swizzle, k_major=True)
    lb = operand_layout(n, swizzle, k_major=b_major == "k")
    layout_b = "col" if b_major == "k" else "row"

    @nova.kernel
    def kern(c, a, b):
        sa = nova.dynamic_shared_array(nova.float16, steps * la.elements)
        sb = nova.dynamic_shared_array(nova.float16, steps * lb.elements,
                                       2 * steps * la.elements)
        t = nova.thread_id(0)
        for i in range(t, steps * la.elements, 128):
            sa[i] = a[i]
        for i in range(t, steps * lb.elements, 128):
            sb[i] = b[i]
        nova.wgmma.fence_shared()
        nova.syncthreads()
        acc = nova.wgmma.zero(n)
        nova.wgmma.store(c, 0, acc, n)  # zeros first: the accumulate=False MMA must drop them
        nova.wgmma.fence()
        da = nova.wgmma.descriptor(sa, 0, swizzle, la.lbo, la.sbo)
        db = nova.wgmma.descriptor(sb, 0, swizzle, lb.lbo, lb.sbo)
        acc = nova.wgmma.mma(acc, da, db, layout_b=layout_b, accumulate=accumulate)
        for s in range(1, steps):
            da = nova.wgmma.descriptor(sa, s * la.elements, swizzle, la.lbo, la.sbo)
            db = nova.wgmma.descriptor(sb, s * lb.elements, swizzle, lb.lbo, lb.sbo)
            acc = nova.wgmma.mma(acc, da, db, layout_b=layout_b)
        nova.wgmma.commit()
        nova.wgmma.wait(0)
        nova.wgmma.store(c, 0, acc, n)

    return kern, la, lb


def _run(device: nova.Device, n: int, swizzle: int, b_major: str, steps: int = 1,
         accumulate: bool = True) -> None:
    _skip_unless_hopper(device)
    kern, la, lb = _kernel(n, swizzle, b_major, steps, accumulate)
    rng = np.random.default_rng(n + swizzle)
    a = rng.integers(-4, 5, (64, 16 * steps)).astype(np.float16)
    b = rng.integers(-4, 5, (16 * steps, n)).astype(np.float16)
    pa = np.concatenate([pack(a[:, 16 * s:16 * s + 16], la, 0) for s in range(steps)])
    pb = np.concatenate([pack(b[16 * s:16 * s + 16], lb, 1) for s in range(steps)])
    c = np.full(64 * n, np.nan, np.float32)
    kern.launch(c, pa, pb, grid=1, block=128, shared_bytes=2 * (pa.size + pb.size),
                device=device)
    np.testing.assert_array_equal(c.reshape(64, n), a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("b_major", ["k", "n"])
@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_every_swizzle_mode_and_layout(device, swizzle, b_major):
    _run(device, 16, swizzle, b_major)


@pytest.mark.parametrize("n", [8, 256])
def test_widths(device, n):
    _run(device, n, 128, "n" if n > 8 else "k")


def test_k_steps_accumulate_and_scale_d_zero(device):
    """Two chained MMAs of one group; the first with accumulate=False ignores the stored
    accumulator."""
    _run(device, 64, 64, "n", steps=2, accumulate=False)


@pytest.mark.gpu
def test_bench_kernel_ptxas_report(cuda_device, python_mma):
    """The bench kernel's PTX targets sm_90a and ptxas's register and spill report (printed,
    for the bench's tuning: pytest -s shows it)."""
    _skip_unless_hopper(cuda_device)
    for text in ("128x256x64s4g8w", "128x128x64s4g8w"):
        ptx = python_mma.make_kernel(4096, 4096, 4096, python_mma.Config.parse(text)).ptx(*SIG)
        assert ".target sm_90a" in ptx and "wgmma.mma_async.sync.aligned" in ptx
        ptxas = shutil.which("ptxas")
        if ptxas is not None:
            out = subprocess.run([ptxas, "-arch=sm_90a", "-v", "-", "-o", "/dev/null"],
                                 input=ptx, capture_output=True, text=True, check=False)
            print(f"ptxas -v {text}:\n{out.stdout}{out.stderr}")
            assert out.returncode == 0


def _compile_error(body) -> str:
    with pytest.raises(KernelTypeError) as info:
        nova.kernel(body).mlir(*SIG)
    return str(info.value)


def _bad_global(c, a, b):
    nova.wgmma.descriptor(a, 0)


def _bad_swizzle(c, a, b):
    s = nova.shared_array(1024, nova.float16)
    nova.wgmma.descriptor(s, 0, 48)


def _bad_n(c, a, b):
    nova.wgmma.zero(12)


def _bad_acc(c, a, b):
    s = nova.shared_array(1024, nova.float16)
    d = nova.wgmma.descriptor(s, 0)
    nova.wgmma.mma(1.0, d, d)


def _bad_desc(c, a, b):
    nova.wgmma.mma(nova.wgmma.zero(8), 1.5, 2)


def _bad_dtype(c, a, b):
    s = nova.shared_array(1024, nova.float16)
    d = nova.wgmma.descriptor(s, 0)
    nova.wgmma.mma(nova.wgmma.zero(8), d, d, dtype=nova.float32)


def _bad_wait(c, a, b):
    nova.wgmma.wait(c[0])


def _bad_store(c, a, b):
    nova.wgmma.store(a, 0, nova.wgmma.zero(8), 8)


def _divergent(c, a, b):
    if nova.thread_id(0) < 3:
        nova.wgmma.fence()


@pytest.mark.parametrize("body, text", [
    (_bad_global, "float16 or bfloat16 shared array"),
    (_bad_swizzle, "swizzle must be a constant, one of 0, 128, 64, 32"),
    (_bad_n, "n must be a constant"),
    (_bad_acc, "the accumulator must come from nova.wgmma.zero"),
    (_bad_desc, "a must be a matrix descriptor"),
    (_bad_dtype, "dtype must be nova.float16 or nova.bfloat16"),
    (_bad_wait, "n must be a constant integer"),
    (_bad_store, "1-D float32 array"),
    (_divergent, "warp-collective"),
], ids=lambda x: getattr(x, "__name__", "")[:20])
def test_misuse_is_located(body, text):
    message = _compile_error(body)
    assert text in message
    assert "test_kernel_wgmma.py" in message


def test_wgmma_on_a_non_hopper_target_is_located():
    """The NVPTX lowering refuses wgmma for an arch other than sm_90 / sm_90a."""
    kern, _, _ = _kernel(8, 0, "k", 1, True)
    with pytest.raises(nova.NovaError, match=r"needs a compute capability 9.0 .*sm_80"):
        kern.ptx(*SIG, arch="sm_80")


def test_module_targets_sm_90a():
    kern, _, _ = _kernel(8, 128, "n", 1, True)
    ptx = kern.ptx(*SIG, arch="sm_90")
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16" in ptx
    assert "wgmma.wait_group.sync.aligned" in ptx and "wgmma.fence.sync.aligned" in ptx
    assert "fence.proxy.async.shared::cta" in ptx


@pytest.mark.parametrize("swizzle, mode", [(0, 0), (128, 1), (64, 2), (32, 3)])
def test_descriptor_fields(cpu_device, swizzle, mode):
    """The descriptor's bit fields: the shared (window) address >> 4 of the tile, LBO >> 4,
    SBO >> 4 and the swizzle mode; dynamic shared memory starts at window address 0."""
    @nova.kernel
    def kern(out, a, b):
        s = nova.dynamic_shared_array(nova.float16, 4096)
        if nova.thread_id(0) == 0:
            out[0] = nova.wgmma.descriptor(s, 520, swizzle, 4096, 1024)

    out = np.zeros(1, np.int64)
    kern.launch(out, np.zeros(1, np.float16), np.zeros(1, np.float16), grid=1, block=1,
                shared_bytes=8192, device=cpu_device)
    value = int(out[0]) & (1 << 64) - 1
    assert value & 0x3FFF == 520 * 2 >> 4
    assert (value >> 16) & 0x3FFF == 4096 >> 4 and (value >> 32) & 0x3FFF == 1024 >> 4
    assert value >> 62 == mode and (value >> 46) & 0xFFFF == 0


def test_static_shared_tiles(device):
    """Tiles in static shared arrays (after the dynamic memory in the CPU device's window)."""
    _skip_unless_hopper(device)
    la, lb = operand_layout(64, 64, k_major=True), operand_layout(32, 64, k_major=False)

    @nova.kernel
    def kern(c, a, b):
        sa = nova.shared_array(la.elements, nova.float16)
        sb = nova.shared_array(lb.elements, nova.float16)
        t = nova.thread_id(0)
        for i in range(t, la.elements, 128):
            sa[i] = a[i]
        for i in range(t, lb.elements, 128):
            sb[i] = b[i]
        nova.wgmma.fence_shared()
        nova.syncthreads()
        nova.wgmma.fence()
        acc = nova.wgmma.mma(nova.wgmma.zero(32), nova.wgmma.descriptor(sa, 0, 64, la.lbo, la.sbo),
                             nova.wgmma.descriptor(sb, 0, 64, lb.lbo, lb.sbo), layout_b="row")
        nova.wgmma.commit()
        nova.wgmma.wait(0)
        nova.wgmma.store(c, 0, acc, 32)

    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, (64, 16)).astype(np.float16)
    b = rng.integers(-4, 5, (16, 32)).astype(np.float16)
    c = np.full(64 * 32, np.nan, np.float32)
    kern.launch(c, pack(a, la, 0), pack(b, lb, 1), grid=1, block=128, shared_bytes=256,
                device=device)
    np.testing.assert_array_equal(c.reshape(64, 32), a.astype(np.float32) @ b.astype(np.float32))
