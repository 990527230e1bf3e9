"""Kernels lowered by Nova, executed: on the GPU (PTX/cubin from the NVPTX target, marked `gpu`,
skipped without a usable CUDA device) and on the CPU device (the CPU kernel target), against
numpy references. Collectives are checked for awkward shapes: partial warps, 3-D blocks, block
sizes that are not multiples of 32."""

from __future__ import annotations

import numpy as np
import pytest

from nova.backends.device import DeviceTarget, lower_device_module
from nova.backends.nvptx.ptx import assemble_cubin, emit_ptx
from nova.ir.parser import parse_mlir
from nova.runtime.device import ModuleImages
from nova.runtime.selection import cuda_status, get_device

_CUDA = cuda_status()
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}"),
    ]),
]


def build(device_kind: str, body: str, name: str):  # type: ignore[no-untyped-def]
    """Compile a gpu.module body for `device_kind` and load it: (device, module, lowering)."""
    text = f"module attributes {{gpu.container_module}} {{\n gpu.module @{name} {{\n{body}\n }}\n}}"
    module = parse_mlir(text, f"{name}.mlir")
    gpu_module = next(op for op in module.body.block.ops if op.name == "gpu.module")
    device = get_device(device_kind)
    if device_kind == "cuda":
        lowering = lower_device_module(gpu_module, DeviceTarget.NVPTX, "sm_90")
        ptx = emit_ptx(str(lowering.llvm_module), "sm_90")
        images = ModuleImages(name=name, ptx=ptx, cubin=assemble_cubin(ptx, "sm_90"),
                              cubin_arch="sm_90")
    else:
        from nova.backends.x86 import emit_object

        lowering = lower_device_module(gpu_module, DeviceTarget.CPU)
        images = ModuleImages(name=name, cpu_object=emit_object(str(lowering.llvm_module)))
    return device, device.load_module(images), lowering


def run(device_kind: str, body: str, name: str, kernel: str, grid, block,  # type: ignore[no-untyped-def]
        arrays: list[np.ndarray], scalars: tuple = ()) -> list[np.ndarray]:
    """Launch `kernel` with 1-D memref arguments for `arrays` (then `scalars`); return copies."""
    device, module, lowering = build(device_kind, body, name)
    meta = next(k for k in lowering.kernels if k.name == kernel)
    fn = module.get_function(kernel, meta)
    buffers = [device.to_device(a) for a in arrays]
    params: list[object] = []
    for buf, a in zip(buffers, arrays, strict=True):
        params += [buf, buf, 0, a.size, 1]
    params += list(scalars)
    device.launch(fn, grid, block, params)
    device.synchronize()
    return [b.view(a.dtype).numpy().reshape(a.shape) for b, a in zip(buffers, arrays, strict=True)]


ALL_REDUCE = """
gpu.func @sum(%x: memref<?xf32>, %mx: memref<?xi32>, %cu: memref<?xf32>) kernel {
  %tx = gpu.thread_id x
  %ty = gpu.thread_id y
  %tz = gpu.thread_id z
  %bx = gpu.block_dim x
  %by = gpu.block_dim y
  %bid = gpu.block_id x
  %yz = arith.muli %tz, %by : index
  %yz2 = arith.addi %yz, %ty : index
  %l1 = arith.muli %yz2, %bx : index
  %lin = arith.addi %l1, %tx : index
  %bdz = gpu.block_dim z
  %n1 = arith.muli %bx, %by : index
  %n = arith.muli %n1, %bdz : index
  %base = arith.muli %bid, %n : index
  %g = arith.addi %base, %lin : index
  %v = memref.load %x[%g] : memref<?xf32>
  %iv = memref.load %mx[%g] : memref<?xi32>
  %s = gpu.all_reduce add %v uniform {} : (f32) -> f32
  %m = gpu.all_reduce maxsi %iv uniform {} : (i32) -> i32
  %c = gpu.all_reduce %v {
  ^bb0(%a: f32, %b: f32):
    %r = arith.minimumf %a, %b : f32
    gpu.yield %r : f32
  } : (f32) -> f32
  memref.store %s, %x[%g] : memref<?xf32>
  memref.store %m, %mx[%g] : memref<?xi32>
  memref.store %c, %cu[%g] : memref<?xf32>
  gpu.return
}"""


@pytest.mark.parametrize("device_kind", DEVICES)
@pytest.mark.parametrize("block", [(1, 1, 1), (17, 1, 1), (32, 1, 1), (33, 1, 1), (100, 1, 1),
                                   (1024, 1, 1), (7, 5, 3), (8, 8, 16)])
def test_all_reduce_any_block_shape(device_kind: str, block: tuple[int, int, int]) -> None:
    grid = 3
    n = block[0] * block[1] * block[2]
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, grid * n).astype(np.float32)
    mx = rng.integers(-(2**31), 2**31 - 1, grid * n).astype(np.int32)
    cu = np.zeros(grid * n, dtype=np.float32)
    out_x, out_mx, out_cu = run(device_kind, ALL_REDUCE, "allreduce", "sum", grid, block,
                                [x.copy(), mx.copy(), cu])
    for b in range(grid):
        part = slice(b * n, (b + 1) * n)
        np.testing.assert_array_equal(out_x[part], np.full(n, x[part].sum(), np.float32))
        np.testing.assert_array_equal(out_mx[part], np.full(n, mx[part].max(), np.int32))
        np.testing.assert_array_equal(out_cu[part], np.full(n, x[part].min(), np.float32))


SUBGROUP = """
gpu.func @sg(%x: memref<?xi32>, %y: memref<?xi32>) kernel {
  %t = gpu.thread_id x
  %v = memref.load %x[%t] : memref<?xi32>
  %s = gpu.subgroup_reduce add %v : (i32) -> i32
  %c = gpu.subgroup_reduce add %v cluster(size = 4, stride = 2) : (i32) -> i32
  memref.store %s, %x[%t] : memref<?xi32>
  memref.store %c, %y[%t] : memref<?xi32>
  gpu.return
}"""


@pytest.mark.parametrize("device_kind", DEVICES)
@pytest.mark.parametrize("threads", [5, 32, 50, 96])
def test_subgroup_reduce_with_partial_warps(device_kind: str, threads: int) -> None:
    x = np.arange(1, threads + 1, dtype=np.int32) ** 2
    out_s, out_c = run(device_kind, SUBGROUP, "subgroup", "sg", 1, threads,
                       [x.copy(), np.zeros(threads, np.int32)])
    for t in range(threads):
        warp = slice(t // 32 * 32, min(threads, t // 32 * 32 + 32))
        assert out_s[t] == x[warp].sum(), t
        lane = t % 32
        members = [t - lane + ((lane & ~6) | (j * 2)) for j in range(4)]
        assert out_c[t] == sum(x[m] for m in members if m < threads), t


SHUFFLE = """
gpu.func @shfl(%x: memref<?xf32>, %xo: memref<?xf32>, %uo: memref<?xf32>, %do: memref<?xf32>,
               %io: memref<?xf32>, %ok: memref<?xi32>, %w: i32) kernel {
  %t = gpu.thread_id x
  %v = memref.load %x[%t] : memref<?xf32>
  %c3 = arith.constant 3 : i32
  %a, %va = gpu.shuffle xor %v, %c3, %w : f32
  %b, %vb = gpu.shuffle up %v, %c3, %w : f32
  %c, %vc = gpu.shuffle down %v, %c3, %w : f32
  %d, %vd = gpu.shuffle idx %v, %c3, %w : f32
  memref.store %a, %xo[%t] : memref<?xf32>
  memref.store %b, %uo[%t] : memref<?xf32>
  memref.store %c, %do[%t] : memref<?xf32>
  memref.store %d, %io[%t] : memref<?xf32>
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %ia = arith.select %va, %one, %zero : i32
  %ib = arith.select %vb, %one, %zero : i32
  %s1 = arith.shli %ib, %one : i32
  %m1 = arith.ori %ia, %s1 : i32
  memref.store %m1, %ok[%t] : memref<?xi32>
  gpu.return
}"""


@pytest.mark.parametrize("device_kind", DEVICES)
def test_full_width_shuffles(device_kind: str) -> None:
    n = 64
    x = np.arange(n, dtype=np.float32) * 1.5
    outs = run(device_kind, SHUFFLE, "shuffle", "shfl", 1, n,
               [x, *[np.zeros(n, np.float32) for _ in range(4)], np.zeros(n, np.int32)],
               (np.int32(32),))
    xo, uo, do, io, ok = outs[1:]
    for t in range(n):
        lane, base = t % 32, t - t % 32
        assert xo[t] == x[base + (lane ^ 3)]
        assert uo[t] == (x[t - 3] if lane >= 3 else x[t])
        assert do[t] == (x[t + 3] if lane + 3 < 32 else x[t])
        assert io[t] == x[base + 3]
        assert ok[t] == 1 | ((lane >= 3) << 1)


MATH_UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh",
              "erf", "erfc", "sin", "cos", "tan", "atan", "asin", "acos", "cbrt"]
MATH_BINARY = {"powf": "pow", "atan2": "atan2"}


def _math_kernel(op: str, binary: bool) -> str:
    args = "%v, %w" if binary else "%v"
    return f"""
gpu.func @k_{op}(%x: memref<?xf32>, %x2: memref<?xf32>, %y: memref<?xf32>, %n: index) kernel {{
  %i = gpu.global_id x
  %ok = arith.cmpi slt, %i, %n : index
  scf.if %ok {{
    %v = memref.load %x[%i] : memref<?xf32>
    %w = memref.load %x2[%i] : memref<?xf32>
    %r = math.{op} {args} : f32
    memref.store %r, %y[%i] : memref<?xf32>
  }}
  gpu.return
}}"""


@pytest.mark.gpu
@pytest.mark.skipif(not _CUDA.usable, reason=f"no usable CUDA device: {_CUDA.reason}")
def test_f32_math_on_the_gpu_is_the_host_measured_code_bit_for_bit() -> None:
    """The f32 math (math32.py) on the GPU gives exactly the results its host JIT gives, over a
    million bit patterns and the special values, so the accuracy measured on the host
    (test_nvptx_math.py, math32.MEASURED_ULP) holds on the GPU: no FMA contraction, no
    flush-to-zero, no approximate instruction differs."""
    from tests.unit.test_llvm_jit_support import array_function
    from tests.unit.test_nvptx_math import SPECIALS, bit_sweep

    from nova.backends.nvptx.math32 import Math32

    rng = np.random.default_rng(11)
    x = np.concatenate([bit_sweep(), SPECIALS, rng.uniform(-100, 100, 100_000).astype(np.float32)])
    x2 = rng.permutation(x)
    ops = [(op, False, op) for op in MATH_UNARY] + [(op, True, m) for op, m in MATH_BINARY.items()]
    body = "\n".join(_math_kernel(op, binary) for op, binary, _ in ops)
    device, module, lowering = build("cuda", body, "mathk")
    n = x.size
    for op, binary, method in ops:
        meta = next(k for k in lowering.kernels if k.name == f"k_{op}")
        fn = module.get_function(f"k_{op}", meta)
        bufs = [device.to_device(a) for a in (x, x2, np.zeros_like(x))]
        params: list[object] = []
        for buf in bufs:
            params += [buf, buf, 0, n, 1]
        device.launch(fn, ((n + 255) // 256, 1, 1), (256, 1, 1), [*params, n])
        device.synchronize()
        got = bufs[2].view(np.float32).numpy().reshape(n)
        host = array_function(lambda fe, xs, m=method: getattr(Math32(fe), m)(*xs),
                              2 if binary else 1)
        want = host(x, x2) if binary else host(x)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (op, x[~same][:4], got[~same][:4], want[~same][:4])


ATOMICS = """
gpu.func @atom(%g: memref<?xf32>, %out: memref<?xi32>) workgroup(%sh: memref<1xi32, 3>) kernel {
  %c0 = arith.constant 0 : index
  %t = gpu.thread_id x
  %z = arith.constant 0 : i32
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {
    memref.store %z, %sh[%c0] : memref<1xi32, 3>
  }
  gpu.barrier
  %one = arith.constant 1.0 : f32
  %ione = arith.constant 1 : i32
  %o1 = memref.atomic_rmw addf %one, %g[%c0] : (f32, memref<?xf32>) -> f32
  %o2 = memref.atomic_rmw addi %ione, %sh[%c0] : (i32, memref<1xi32, 3>) -> i32
  gpu.barrier
  scf.if %is0 {
    %v = memref.load %sh[%c0] : memref<1xi32, 3>
    %b = gpu.block_id x
    memref.store %v, %out[%b] : memref<?xi32>
  }
  gpu.return
}"""


@pytest.mark.parametrize("device_kind", DEVICES)
def test_atomics_on_global_and_shared_memory(device_kind: str) -> None:
    g, out = run(device_kind, ATOMICS, "atomics", "atom", 4, 200,
                 [np.zeros(1, np.float32), np.zeros(4, np.int32)])
    assert g[0] == 800.0
    np.testing.assert_array_equal(out, [200] * 4)
