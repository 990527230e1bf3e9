"""Warp and block collectives on the CPU device: gpu.shuffle (every mode, widths below 32, partial
warps), gpu.all_reduce (every kind, custom regions, 3-D blocks), gpu.subgroup_reduce (clusters),
against Python models of MLIR's op semantics; hypothesis varies the block shapes."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np
import pytest
from cpu_jit import compile_cpu
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

I32 = ctypes.c_int32
WARP = 32


def _module(body: str) -> str:
    return "module attributes {gpu.container_module} {\n  gpu.module @m {\n" + body + "\n  }\n}\n"


_LINEAR = """
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %tz = gpu.thread_id z
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %dz = gpu.block_dim z
      %l0 = arith.muli %tz, %dy : index
      %l1 = arith.addi %l0, %ty : index
      %l2 = arith.muli %l1, %dx : index
      %l = arith.addi %l2, %tx : index
      %bid = gpu.block_id x
      %n0 = arith.muli %dx, %dy : index
      %n = arith.muli %n0, %dz : index
      %g0 = arith.muli %bid, %n : index
      %g = arith.addi %g0, %l : index
"""


# ---- shuffle ---------------------------------------------------------------------------------

def _shuffle_source(ty: str) -> str:
    value = {
        "i32": "%v = arith.index_cast %g : index to i32",
        "i64": "%v = arith.index_cast %g : index to i64",
        "f32": "%vi = arith.index_cast %g : index to i32\n"
               "      %v = arith.sitofp %vi : i32 to f32",
        "f64": "%vi = arith.index_cast %g : index to i32\n"
               "      %v = arith.sitofp %vi : i32 to f64",
    }[ty]
    kernels = []
    for mode in ("xor", "up", "down", "idx"):
        kernels.append(f"""
    gpu.func @shfl_{mode}(%res: memref<?x{ty}>, %ok: memref<?xi32>, %off: i32, %w: i32) kernel {{
{_LINEAR}
      {value}
      %r, %valid = gpu.shuffle {mode} %v, %off, %w : {ty}
      memref.store %r, %res[%g] : memref<?x{ty}>
      %vi32 = arith.extui %valid : i1 to i32
      memref.store %vi32, %ok[%g] : memref<?xi32>
      gpu.return
    }}""")
    return _module("\n".join(kernels))


@functools.cache
def _shuffle_module(ty: str):  # type: ignore[no-untyped-def]
    return compile_cpu(_shuffle_source(ty))


def shuffle_model(mode: str, n: int, offset: int, width: int) -> tuple[list[int], list[bool]]:
    """MLIR gpu.shuffle over one block of n threads (values = global ids of block 0): the source
    lane, or the lane itself where `valid` is false."""
    src_of: list[int] = []
    valid: list[bool] = []
    for linear in range(n):
        lane, base = linear % WARP, linear - linear % WARP
        lanes = min(WARP, n - base)
        w = min(width, WARP)
        src = {"xor": lane ^ offset, "down": lane + offset, "up": lane - offset,
               "idx": offset}[mode]
        ok = lane < w and 0 <= src < w and src < lanes
        src_of.append(base + src if ok else linear)
        valid.append(ok)
    return src_of, valid


def _run_shuffle(ty: str, mode: str, block: tuple[int, int, int], offset: int, width: int,
                 grid: int = 2) -> None:
    mod = _shuffle_module(ty)
    n = block[0] * block[1] * block[2]
    dtype = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}[ty]
    res = np.full(grid * n, -99, dtype)
    ok = np.full(grid * n, 7, np.int32)
    mod.launch(f"shfl_{mode}", [res, ok, I32(offset), I32(width)], grid=(grid, 1, 1),
               block=block)
    src, valid = shuffle_model(mode, n, offset, width)
    for b in range(grid):
        expected = np.array(src, dtype) + b * n
        got = res[b * n:(b + 1) * n]
        assert ok[b * n:(b + 1) * n].tolist() == [int(v) for v in valid], (mode, offset, width)
        np.testing.assert_array_equal(got, expected, err_msg=f"{mode} {offset} {width}")


@pytest.mark.parametrize("ty", ["i32", "i64", "f32", "f64"])
@pytest.mark.parametrize(("mode", "offset"), [("xor", 1), ("xor", 5), ("up", 1), ("up", 3),
                                              ("down", 2), ("down", 7), ("idx", 0), ("idx", 6)])
@pytest.mark.parametrize("width", [8, 16, 32])
def test_shuffle_modes_with_widths(ty: str, mode: str, offset: int, width: int) -> None:
    # 48 threads: a full warp and a partial one of 16 lanes
    _run_shuffle(ty, mode, (48, 1, 1), offset, width)


def test_shuffle_known_values() -> None:
    """Hand-checked cases of MLIR's semantics (independent of the model)."""
    mod = _shuffle_module("i32")
    res = np.zeros(40, np.int32)
    ok = np.zeros(40, np.int32)
    mod.launch("shfl_down", [res, ok, I32(4), I32(16)], block=(40, 1, 1))
    assert res[0] == 4 and ok[0] == 1  # lane 0 reads lane 4
    assert res[11] == 15 and ok[11] == 1
    assert res[12] == 12 and ok[12] == 0  # 12 + 4 = 16 is outside width 16: own value, invalid
    assert res[20] == 20 and ok[20] == 0  # lane 20 is beyond width 16
    assert res[33] == 37 and ok[33] == 1  # second (partial, 8-lane) warp: lane 1 reads lane 5
    assert res[36] == 36 and ok[36] == 0  # lane 4 + 4 = 8: no such lane in a warp of 8
    mod.launch("shfl_xor", [res, ok, I32(1), I32(32)], block=(40, 1, 1))
    assert res[:8].tolist() == [1, 0, 3, 2, 5, 4, 7, 6] and ok[:32].all()
    mod.launch("shfl_up", [res, ok, I32(1), I32(32)], block=(40, 1, 1))
    assert res[0] == 0 and ok[0] == 0 and res[5] == 4 and ok[5] == 1 and res[32] == 32


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mode=st.sampled_from(["xor", "up", "down", "idx"]),
       bx=st.integers(1, 40), by=st.integers(1, 4), bz=st.integers(1, 3),
       offset=st.integers(0, 40), width=st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_shuffle_property(mode: str, bx: int, by: int, bz: int, offset: int, width: int) -> None:
    _run_shuffle("i32", mode, (bx, by, bz), offset, width)


# ---- all_reduce ------------------------------------------------------------------------------

INT_KINDS = ["add", "mul", "minsi", "maxsi", "minui", "maxui", "and", "or", "xor"]
FLOAT_KINDS = ["add", "mul", "minnumf", "maxnumf", "minimumf", "maximumf"]


def _reduce_kernel(name: str, op_text: str, ty: str) -> str:
    return f"""
    gpu.func @{name}(%in: memref<?x{ty}>, %out: memref<?x{ty}>) kernel {{
{_LINEAR}
      %v = memref.load %in[%g] : memref<?x{ty}>
      %r = {op_text}
      memref.store %r, %out[%g] : memref<?x{ty}>
      gpu.return
    }}"""


def _all_reduce_source() -> str:
    kernels = [_reduce_kernel(f"ar_i32_{k}", f"gpu.all_reduce {k} %v uniform {{}} : (i32) -> i32",
                              "i32") for k in INT_KINDS]
    kernels += [_reduce_kernel(f"ar_f32_{k}", f"gpu.all_reduce {k} %v {{}} : (f32) -> f32", "f32")
                for k in FLOAT_KINDS]
    kernels.append(_reduce_kernel("ar_custom", """gpu.all_reduce %v {
        ^bb0(%a: i32, %b: i32):
          %s = arith.addi %a, %b : i32
          %two = arith.constant 2 : i32
          %p = arith.muli %s, %two : i32
          %q = arith.subi %p, %s : i32
          gpu.yield %q : i32
        } : (i32) -> i32""", "i32"))
    kernels.append(_reduce_kernel("ar_cfg_max", """gpu.all_reduce %v {
        ^bb0(%a: i32, %b: i32):
          %gt = arith.cmpi sgt, %a, %b : i32
          cf.cond_br %gt, ^bb1, ^bb2
        ^bb1:
          gpu.yield %a : i32
        ^bb2:
          gpu.yield %b : i32
        } : (i32) -> i32""", "i32"))
    kernels.append(_reduce_kernel("ar_i64_add", "gpu.all_reduce add %v {} : (i64) -> i64", "i64"))
    return _module("\n".join(kernels))


@functools.cache
def _all_reduce_module():  # type: ignore[no-untyped-def]
    return compile_cpu(_all_reduce_source())


def _np_reduce(kind: str, values: np.ndarray) -> object:
    ops: dict[str, Callable[[np.ndarray], object]] = {
        "add": np.sum, "mul": np.prod, "minsi": np.min, "maxsi": np.max,
        "minnumf": np.min, "maxnumf": np.max, "minimumf": np.min, "maximumf": np.max,
        "minui": lambda v: v.view(np.uint32).min().astype(np.uint32).view(np.int32),
        "maxui": lambda v: v.view(np.uint32).max().astype(np.uint32).view(np.int32),
        "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce,
        "xor": np.bitwise_xor.reduce,
    }
    return ops[kind](values)


def _inputs(kind: str, ty: str, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if ty == "f32":
        if kind == "mul":
            return rng.uniform(0.9, 1.1, count).astype(np.float32)
        return rng.standard_normal(count).astype(np.float32)
    if kind == "mul":
        return rng.choice(np.array([1, 1, 1, -1, 2], np.int32), count)
    if kind in ("and",):
        return (rng.integers(0, 2**31 - 1, count) | 0x10204).astype(np.int32)
    return rng.integers(-(2**31), 2**31 - 1, count, dtype=np.int64).astype(np.int32)


def _run_all_reduce(ty: str, kind: str, block: tuple[int, int, int], grid: int = 3,
                    seed: int = 0) -> None:
    mod = _all_reduce_module()
    n = block[0] * block[1] * block[2]
    data = _inputs(kind, ty, grid * n, seed)
    out = np.zeros_like(data)
    name = "ar_custom" if kind == "custom" else f"ar_{ty}_{kind}"
    mod.launch(name, [data, out], grid=(grid, 1, 1), block=block)
    for b in range(grid):
        chunk = data[b * n:(b + 1) * n]
        expected = _np_reduce("add" if kind == "custom" else kind, chunk)
        got = out[b * n:(b + 1) * n]
        if ty == "f32" and kind in ("add", "mul"):
            np.testing.assert_allclose(got, np.full(n, expected, np.float32), rtol=2e-5,
                                       atol=1e-4)
        else:
            np.testing.assert_array_equal(got, np.full(n, expected, data.dtype), err_msg=kind)


@pytest.mark.parametrize("kind", [*INT_KINDS, "custom"])
def test_all_reduce_int_kinds_on_6x5x3_block(kind: str) -> None:
    _run_all_reduce("i32", kind, (6, 5, 3))


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_all_reduce_float_kinds_on_6x5x3_block(kind: str) -> None:
    _run_all_reduce("f32", kind, (6, 5, 3))


def test_all_reduce_nan_semantics() -> None:
    """minnumf ignores NaN, minimumf propagates it (llvm.minnum vs llvm.minimum)."""
    mod = _all_reduce_module()
    data = np.arange(40, dtype=np.float32)
    data[17] = np.nan
    out = np.zeros_like(data)
    mod.launch("ar_f32_minnumf", [data, out], block=(40, 1, 1))
    assert (out == 0).all()
    mod.launch("ar_f32_minimumf", [data, out], block=(40, 1, 1))
    assert np.isnan(out).all()


def test_all_reduce_i64_large_block() -> None:
    mod = _all_reduce_module()
    data = np.arange(2 * 1024, dtype=np.int64) * (2**33)
    out = np.zeros_like(data)
    mod.launch("ar_i64_add", [data, out], grid=(2, 1, 1), block=(16, 16, 4), os_threads=2)
    assert (out[:1024] == data[:1024].sum()).all() and (out[1024:] == data[1024:].sum()).all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from([*INT_KINDS, "custom"]), bx=st.integers(1, 70),
       by=st.integers(1, 3), bz=st.integers(1, 3), seed=st.integers(0, 1000))
def test_all_reduce_property(kind: str, bx: int, by: int, bz: int, seed: int) -> None:
    _run_all_reduce("i32", kind, (bx, by, bz), grid=2, seed=seed)


# ---- subgroup_reduce -------------------------------------------------------------------------

CLUSTERS = [(None, 1), (4, 1), (8, 2), (2, 16), (32, 1), (1, 1)]


def _cluster_text(size: int | None, stride: int) -> str:
    if size is None:
        return ""
    return f" cluster(size = {size}, stride = {stride})" if stride != 1 else \
        f" cluster(size = {size})"


def _sg_name(kind: str, size: int | None, stride: int) -> str:
    return f"sg_{kind}_{size or 0}_{stride}"


@functools.cache
def _subgroup_module():  # type: ignore[no-untyped-def]
    kernels = []
    for kind in ("add", "maxsi", "xor"):
        for size, stride in CLUSTERS:
            text = f"gpu.subgroup_reduce {kind} %v{_cluster_text(size, stride)} : (i32) -> i32"
            kernels.append(_reduce_kernel(_sg_name(kind, size, stride), text, "i32"))
    kernels.append(_reduce_kernel("sg_f32_add", "gpu.subgroup_reduce add %v : (f32) -> f32",
                                  "f32"))
    return compile_cpu(_module("\n".join(kernels)))


def subgroup_model(kind: str, data: np.ndarray, size: int | None, stride: int) -> np.ndarray:
    n = len(data)
    size = size or WARP
    out = np.zeros_like(data)
    for linear in range(n):
        lane, base = linear % WARP, linear - linear % WARP
        lanes = min(WARP, n - base)
        span = size * stride
        start = lane // span * span + lane % stride
        members = [base + start + j * stride for j in range(size) if start + j * stride < lanes]
        out[linear] = _np_reduce(kind, data[members])
    return out


@pytest.mark.parametrize(("size", "stride"), CLUSTERS)
@pytest.mark.parametrize("kind", ["add", "maxsi", "xor"])
@pytest.mark.parametrize("n", [32, 50, 7])
def test_subgroup_reduce(kind: str, size: int | None, stride: int, n: int) -> None:
    mod = _subgroup_module()
    data = np.random.default_rng(n).integers(-1000, 1000, 2 * n).astype(np.int32)
    out = np.zeros_like(data)
    mod.launch(_sg_name(kind, size, stride), [data, out], grid=(2, 1, 1), block=(n, 1, 1))
    for b in range(2):
        np.testing.assert_array_equal(out[b * n:(b + 1) * n],
                                      subgroup_model(kind, data[b * n:(b + 1) * n], size, stride))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 100), cluster=st.sampled_from(CLUSTERS), seed=st.integers(0, 99))
def test_subgroup_reduce_property(n: int, cluster: tuple[int | None, int], seed: int) -> None:
    mod = _subgroup_module()
    size, stride = cluster
    data = np.random.default_rng(seed).integers(-50, 50, n).astype(np.int32)
    out = np.zeros_like(data)
    mod.launch(_sg_name("add", size, stride), [data, out], block=(n, 1, 1))
    np.testing.assert_array_equal(out, subgroup_model("add", data, size, stride))


def test_subgroup_reduce_f32() -> None:
    mod = _subgroup_module()
    data = np.random.default_rng(3).standard_normal(70).astype(np.float32)
    out = np.zeros_like(data)
    mod.launch("sg_f32_add", [data, out], block=(70, 1, 1))
    expected = np.concatenate([np.full(32, data[:32].sum()), np.full(32, data[32:64].sum()),
                               np.full(6, data[64:].sum())]).astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block", [(35, 1, 1), (6, 5, 3), (1, 1, 1)])
def test_all_reduce_multi_block_region(block: tuple[int, int, int]) -> None:
    mod = _all_reduce_module()
    n = block[0] * block[1] * block[2]
    data = ((np.arange(2 * n) * 13) % 97 - 40).astype(np.int32)
    out = np.zeros_like(data)
    mod.launch("ar_cfg_max", [data, out], grid=(2, 1, 1), block=block)
    assert (out[:n] == data[:n].max()).all() and (out[n:] == data[n:].max()).all()


BUTTERFLY = _module("""
    func.func @warp_sum(%v: f32) -> f32 {
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %c0 = arith.constant 0 : index
      %w = arith.constant 32 : i32
      %r = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %v) -> (f32) {
        %ii = arith.index_cast %i : index to i32
        %one = arith.constant 1 : i32
        %off = arith.shli %one, %ii : i32
        %o, %ok = gpu.shuffle xor %acc, %off, %w : f32
        %s = arith.addf %acc, %o : f32
        scf.yield %s : f32
      }
      return %r : f32
    }
    func.func @sync_then_read(%buf: memref<64xf32, 3>, %i: index) -> f32 {
      gpu.barrier
      %v = memref.load %buf[%i] : memref<64xf32, 3>
      return %v : f32
    }
    gpu.func @warp_sums(%in: memref<?xf32>, %out: memref<?xf32>)
        workgroup(%buf: memref<64xf32, 3>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %g0 = arith.muli %b, %d : index
      %g = arith.addi %g0, %t : index
      %v = memref.load %in[%g] : memref<?xf32>
      %s = func.call @warp_sum(%v) : (f32) -> f32
      memref.store %s, %buf[%t] : memref<64xf32, 3>
      %c1 = arith.constant 1 : index
      %last = arith.subi %d, %c1 : index
      %m = arith.subi %last, %t : index
      %r = func.call @sync_then_read(%buf, %m) : (memref<64xf32, 3>, index) -> f32
      memref.store %r, %out[%g] : memref<?xf32>
      gpu.return
    }
""")


def test_butterfly_warp_sum_and_barrier_in_device_functions() -> None:
    mod = compile_cpu(BUTTERFLY)
    assert mod.kernel("warp_sums").uses_barriers
    blocks, block = 6, 64
    data = np.random.default_rng(5).integers(-8, 8, blocks * block).astype(np.float32)
    out = np.zeros_like(data)
    mod.launch("warp_sums", [data, out], grid=(blocks, 1, 1), block=(block, 1, 1), os_threads=2)
    sums = data.reshape(blocks, 2, 32).sum(axis=2)  # exact: small integers
    expected = np.repeat(sums, 32, axis=1)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(out, expected)
