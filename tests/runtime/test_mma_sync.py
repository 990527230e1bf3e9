"""`nvgpu.ldmatrix` and `nvgpu.mma.sync` kernels on the CPU device (exact PTX lane layouts) and on
CUDA (marked gpu), against NumPy: each lane's fragment elements against the PTX ISA's documented
m16n8k16 / ldmatrix layouts, and a small GEMM written with ldmatrix + mma.sync.

Inputs are small integers, so every product and partial sum is exact in float32 (and in
float16 for the f16-accumulator case): results compare exactly on both devices."""

from __future__ import annotations

import numpy as np
import pytest

from nova.backends.device import DeviceTarget, lower_device_module
from nova.ir.parser import parse_mlir
from nova.runtime.device import ModuleImages

# ruff: noqa: E501  (the kernels below are MLIR text, one op per line as mlir-opt prints it)

SH = "#gpu.address_space<workgroup>"


def _run(device, source: str, name: str, arrays: list[np.ndarray], block: int = 32) -> None:
    """Compile `source` (one gpu.module) for `device`, launch kernel `name` with one block of
    `block` threads on `arrays` (1-D or 2-D memrefs, copied back afterwards)."""
    gpu_module = parse_mlir(source, f"{name}.mlir").body.block.first_op
    if device.kind == "cpu":
        from nova.backends.x86 import emit_object

        lowered = lower_device_module(gpu_module, DeviceTarget.CPU)
        images = ModuleImages(name, cpu_object=emit_object(str(lowered.llvm_module)))
    else:
        from nova.backends.nvptx.ptx import emit_ptx

        lowered = lower_device_module(gpu_module, DeviceTarget.NVPTX)
        images = ModuleImages(name, ptx=emit_ptx(str(lowered.llvm_module)))
    function = device.load_module(images).get_function(name, lowered.kernels[0])
    params: list[object] = []
    buffers = []
    for arr in arrays:
        buf = device.allocate(arr.nbytes)
        device.copy_htod(buf, arr)
        buffers.append(buf)
        strides = [s // arr.itemsize for s in arr.strides]
        params += [buf, buf, 0, *arr.shape, *strides]
    device.launch(function, (1, 1, 1), (block, 1, 1), params)
    device.synchronize()
    for arr, buf in zip(arrays, buffers, strict=True):
        device.copy_dtoh(arr, buf)


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float16) -> np.ndarray:
    return rng.integers(-4, 5, shape).astype(dtype)


# ---- per-lane layouts --------------------------------------------------------------------------

LAYOUT = f"""
gpu.module @m {{
  gpu.func @layout(%a: memref<16x16xf16>, %b: memref<16x8xf16>, %c: memref<32x4xf32>,
                   %oa: memref<32x8xf16>, %obt: memref<32x4xf16>, %ob: memref<32x4xf16>,
                   %o1: memref<32x2xf16>, %od: memref<32x4xf32>, %odh: memref<32x4xf16>)
      workgroup(%sa : memref<16x16xf16, {SH}>, %sb : memref<16x8xf16, {SH}>,
                %sbt : memref<8x16xf16, {SH}>) kernel {{
    %lane = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c16 step %c1 {{
      scf.for %j = %c0 to %c16 step %c1 {{
        %lt = arith.cmpi eq, %lane, %c0 : index
        scf.if %lt {{
          %v = memref.load %a[%i, %j] : memref<16x16xf16>
          memref.store %v, %sa[%i, %j] : memref<16x16xf16, {SH}>
          %in8 = arith.cmpi ult, %j, %c8 : index
          scf.if %in8 {{
            %w = memref.load %b[%i, %j] : memref<16x8xf16>
            memref.store %w, %sb[%i, %j] : memref<16x8xf16, {SH}>
            memref.store %w, %sbt[%j, %i] : memref<8x16xf16, {SH}>
          }}
        }}
      }}
    }}
    gpu.barrier
    %r16 = arith.remui %lane, %c16 : index
    %q16 = arith.divui %lane, %c16 : index
    %col = arith.muli %q16, %c8 : index
    %fa = nvgpu.ldmatrix %sa[%r16, %col] {{numTiles = 4 : i32, transpose = false}} : memref<16x16xf16, {SH}> -> vector<4x2xf16>
    %r8 = arith.remui %lane, %c8 : index
    %q8 = arith.divui %lane, %c8 : index
    %c2 = arith.constant 2 : index
    %half = arith.remui %q8, %c2 : index
    %kc = arith.muli %half, %c8 : index
    %fbt = nvgpu.ldmatrix %sbt[%r8, %kc] {{numTiles = 2 : i32, transpose = false}} : memref<8x16xf16, {SH}> -> vector<2x2xf16>
    %brow = arith.addi %r8, %kc : index
    %fb = nvgpu.ldmatrix %sb[%brow, %c0] {{numTiles = 2 : i32, transpose = true}} : memref<16x8xf16, {SH}> -> vector<2x2xf16>
    %f1 = nvgpu.ldmatrix %sa[%r8, %c8] {{numTiles = 1 : i32, transpose = false}} : memref<16x16xf16, {SH}> -> vector<1x2xf16>
    %cv = vector.load %c[%lane, %c0] : memref<32x4xf32>, vector<4xf32>
    %cf = vector.shape_cast %cv : vector<4xf32> to vector<2x2xf32>
    %d = nvgpu.mma.sync(%fa, %fb, %cf) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %ch = arith.truncf %cf : vector<2x2xf32> to vector<2x2xf16>
    %dh = nvgpu.mma.sync(%fa, %fbt, %ch) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
    %va = vector.shape_cast %fa : vector<4x2xf16> to vector<8xf16>
    vector.store %va, %oa[%lane, %c0] : memref<32x8xf16>, vector<8xf16>
    %vbt = vector.shape_cast %fbt : vector<2x2xf16> to vector<4xf16>
    vector.store %vbt, %obt[%lane, %c0] : memref<32x4xf16>, vector<4xf16>
    %vb = vector.shape_cast %fb : vector<2x2xf16> to vector<4xf16>
    vector.store %vb, %ob[%lane, %c0] : memref<32x4xf16>, vector<4xf16>
    %v1 = vector.shape_cast %f1 : vector<1x2xf16> to vector<2xf16>
    vector.store %v1, %o1[%lane, %c0] : memref<32x2xf16>, vector<2xf16>
    %d00 = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %d01 = vector.extract %d[0, 1] : f32 from vector<2x2xf32>
    %d1 = vector.extract %d[1] : vector<2xf32> from vector<2x2xf32>
    %d10 = vector.extract %d1[0] : f32 from vector<2xf32>
    %d11 = vector.extract %d1[1] : f32 from vector<2xf32>
    %vd = vector.from_elements %d00, %d01, %d10, %d11 : vector<4xf32>
    vector.store %vd, %od[%lane, %c0] : memref<32x4xf32>, vector<4xf32>
    %vdh = vector.shape_cast %dh : vector<2x2xf16> to vector<4xf16>
    vector.store %vdh, %odh[%lane, %c0] : memref<32x4xf16>, vector<4xf16>
    gpu.return
  }}
}}
"""


def _a_layout(a: np.ndarray) -> np.ndarray:
    """PTX m16n8k16 A fragment of each lane: register i, half h = A[g + 8 (i % 2),
    2t + 8 (i // 2) + h] (g = lane / 4, t = lane % 4)."""
    out = np.zeros((32, 8), a.dtype)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(4):
            for h in range(2):
                out[lane, 2 * i + h] = a[g + 8 * (i % 2), 2 * t + 8 * (i // 2) + h]
    return out


def _b_layout(b: np.ndarray) -> np.ndarray:
    """B fragment (16x8, k x n): register i, half h = B[2t + 8i + h, g]."""
    out = np.zeros((32, 4), b.dtype)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(2):
            for h in range(2):
                out[lane, 2 * i + h] = b[2 * t + 8 * i + h, g]
    return out


def _c_layout(c: np.ndarray) -> np.ndarray:
    """C/D fragment (16x8): register i, half h = C[g + 8i, 2t + h]."""
    out = np.zeros((32, 4), c.dtype)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(2):
            for h in range(2):
                out[lane, 2 * i + h] = c[g + 8 * i, 2 * t + h]
    return out


def _c_matrix(frags: np.ndarray) -> np.ndarray:
    """Inverse of _c_layout: the 16x8 matrix of the lanes' C fragments."""
    out = np.zeros((16, 8), frags.dtype)
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(2):
            for h in range(2):
                out[g + 8 * i, 2 * t + h] = frags[lane, 2 * i + h]
    return out


def test_lane_layouts_match_ptx(device):
    """Every lane's ldmatrix registers (x4, x2 from B^T, x2.trans from B, x1) and mma.sync
    results (f32 and f16 accumulators) sit where the PTX ISA says."""
    rng = np.random.default_rng(7)
    a, b = _ints(rng, (16, 16)), _ints(rng, (16, 8))
    c = _ints(rng, (16, 8), np.float32)
    c_frag = _c_layout(c)
    outs = [np.zeros((32, 8), np.float16), np.zeros((32, 4), np.float16),
            np.zeros((32, 4), np.float16), np.zeros((32, 2), np.float16),
            np.zeros((32, 4), np.float32), np.zeros((32, 4), np.float16)]
    _run(device, LAYOUT, "layout", [a, b, c_frag, *outs])
    oa, obt, ob, o1, od, odh = outs
    np.testing.assert_array_equal(oa, _a_layout(a))
    np.testing.assert_array_equal(ob, _b_layout(b))
    np.testing.assert_array_equal(obt, _b_layout(b))
    # x1: tile 0 = rows 0..7 (lanes 0..7 addresses) at column 8: lane gets row l/4, 2(l%4)+h
    want1 = np.array([[a[lane // 4, 8 + 2 * (lane % 4) + h] for h in range(2)]
                      for lane in range(32)], np.float16)
    np.testing.assert_array_equal(o1, want1)
    ref = a.astype(np.float32) @ b.astype(np.float32) + c
    np.testing.assert_array_equal(od, _c_layout(ref))
    np.testing.assert_array_equal(_c_matrix(od), ref)
    np.testing.assert_array_equal(odh, _c_layout(ref.astype(np.float16)))


# ---- a small GEMM ------------------------------------------------------------------------------

def _gemm(m: int, n: int, k: int) -> str:
    """C[m, n] = A[m, k] @ B[k, n], f16 in, f32 out: warp w owns rows 16 (w % (m/16)) and
    columns 16 (w / (m/16)) (two n8 blocks); A by ldmatrix.x4, B by ldmatrix.x4.trans (registers
    0-1: columns n0..n0+7, 2-3: n0+8..n0+15), mma.sync per n8 block, fragments stored by lane."""
    mt = m // 16
    return f"""
gpu.module @m {{
  gpu.func @gemm(%a: memref<{m}x{k}xf16>, %b: memref<{k}x{n}xf16>, %c: memref<{m}x{n}xf32>)
      workgroup(%sa : memref<{m}x{k + 8}xf16, {SH}>, %sb : memref<{k}x{n + 8}xf16, {SH}>)
      kernel {{
    %tid = gpu.thread_id x
    %nt = gpu.block_dim x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %cm = arith.constant {m} : index
    %cn = arith.constant {n} : index
    %ck = arith.constant {k} : index
    %cmt = arith.constant {mt} : index
    scf.for %i = %tid to %cm step %nt {{
      scf.for %j = %c0 to %ck step %c1 {{
        %v = memref.load %a[%i, %j] : memref<{m}x{k}xf16>
        memref.store %v, %sa[%i, %j] : memref<{m}x{k + 8}xf16, {SH}>
      }}
    }}
    scf.for %i = %tid to %ck step %nt {{
      scf.for %j = %c0 to %cn step %c1 {{
        %v = memref.load %b[%i, %j] : memref<{k}x{n}xf16>
        memref.store %v, %sb[%i, %j] : memref<{k}x{n + 8}xf16, {SH}>
      }}
    }}
    gpu.barrier
    %warp = arith.divui %tid, %c32 : index
    %lane = arith.remui %tid, %c32 : index
    %wm = arith.remui %warp, %cmt : index
    %wn = arith.divui %warp, %cmt : index
    %row0 = arith.muli %wm, %c16 : index
    %col0 = arith.muli %wn, %c16 : index
    %l16 = arith.remui %lane, %c16 : index
    %l8 = arith.remui %lane, %c8 : index
    %q16 = arith.divui %lane, %c16 : index
    %q8 = arith.divui %lane, %c8 : index
    %hk = arith.remui %q8, %c2 : index
    %koff = arith.muli %hk, %c8 : index
    %noff = arith.muli %q16, %c8 : index
    %arow = arith.addi %row0, %l16 : index
    %bcol = arith.addi %col0, %noff : index
    %zero = arith.constant dense<0.0> : vector<2x2xf32>
    %acc:2 = scf.for %kk = %c0 to %ck step %c16 iter_args(%d0 = %zero, %d1 = %zero) -> (vector<2x2xf32>, vector<2x2xf32>) {{
      %acol = arith.addi %kk, %noff : index
      %fa = nvgpu.ldmatrix %sa[%arow, %acol] {{numTiles = 4 : i32, transpose = false}} : memref<{m}x{k + 8}xf16, {SH}> -> vector<4x2xf16>
      %l8k = arith.addi %l8, %koff : index
      %brow = arith.addi %kk, %l8k : index
      %fb = nvgpu.ldmatrix %sb[%brow, %bcol] {{numTiles = 4 : i32, transpose = true}} : memref<{k}x{n + 8}xf16, {SH}> -> vector<4x2xf16>
      %flat = vector.shape_cast %fb : vector<4x2xf16> to vector<8xf16>
      %lo = vector.shuffle %flat, %flat [0, 1, 2, 3] : vector<8xf16>, vector<8xf16>
      %hi = vector.shuffle %flat, %flat [4, 5, 6, 7] : vector<8xf16>, vector<8xf16>
      %b0 = vector.shape_cast %lo : vector<4xf16> to vector<2x2xf16>
      %b1 = vector.shape_cast %hi : vector<4xf16> to vector<2x2xf16>
      %e0 = nvgpu.mma.sync(%fa, %b0, %d0) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %e1 = nvgpu.mma.sync(%fa, %b1, %d1) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      scf.yield %e0, %e1 : vector<2x2xf32>, vector<2x2xf32>
    }}
    %g = arith.divui %lane, %c4 : index
    %t = arith.remui %lane, %c4 : index
    %t2 = arith.muli %t, %c2 : index
    %r0 = arith.addi %row0, %g : index
    %r1 = arith.addi %r0, %c8 : index
    {_store_fragment("%acc#0", 0, m, n)}
    {_store_fragment("%acc#1", 8, m, n)}
    gpu.return
  }}
}}
"""


def _store_fragment(value: str, col_offset: int, m: int, n: int) -> str:
    """Store a lane's 16x8 D fragment (rows g, g + 8; columns 2t, 2t + 1) of the warp's tile."""
    lines = []
    for i in range(2):
        for h in range(2):
            tag = f"{col_offset}_{i}{h}"
            lines += [f"%x{tag} = vector.extract {value}[{i}, {h}] : f32 from vector<2x2xf32>",
                      f"%co{tag} = arith.constant {col_offset + h} : index",
                      f"%cc{tag} = arith.addi %col0, %co{tag} : index",
                      f"%col{tag} = arith.addi %cc{tag}, %t2 : index",
                      f"memref.store %x{tag}, %c[%r{i}, %col{tag}] : memref<{m}x{n}xf32>"]
    return "\n    ".join(lines)


@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 32, 48), (64, 16, 32)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemm_ldmatrix_mma_sync(device, shape):
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a, b = _ints(rng, (m, k)), _ints(rng, (k, n))
    c = np.full((m, n), np.nan, np.float32)
    warps = (m // 16) * (n // 16)
    _run(device, _gemm(m, n, k), "gemm", [a, b, c], block=32 * warps)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
