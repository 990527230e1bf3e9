"""`nova.mma`: tensor-core fragments in Python kernels, on the CPU device (exact emulation) and
on CUDA (marked gpu), against NumPy; the MLIR they build (upstream's gpu.subgroup_mma_* ops,
fragment variables as block arguments) and the located errors of misuse.

Inputs are small integers, so every product and partial sum is exact in float32 (and float16
for the float16-accumulator test): the results are compared exactly on both devices."""

from __future__ import annotations

import kernel_programs as P
import numpy as np
import pytest

import nova
from nova.ir.parser import parse_mlir
from nova.lang.intrinsics import KernelCallError
from nova.lang.source import KernelTypeError

F16_2D, F32_2D = nova.float16[:, :], nova.float32[:, :]


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float16) -> np.ndarray:
    return rng.integers(-4, 5, shape).astype(dtype)


def _ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) @ b.astype(np.float32)


@pytest.mark.parametrize("shape", [(32, 16, 32), (50, 37, 41), (64, 80, 96), (1, 1, 1),
                                   (17, 33, 15)], ids=lambda s: "x".join(map(str, s)))
def test_tiled_matmul_any_shape(device, shape):
    """The staged kernel (shared tiles, zero fill and guarded stores at the edges)."""
    got, want = P.run_mma_matmul(device, *shape)
    np.testing.assert_array_equal(got, want)


def _global_kernel(m: int, k: int, n: int, a_layout: str, b_layout: str):
    """Each warp: one 16x16 tile of c = a @ b, fragments loaded straight from global memory.
    `ld` must be a compile-time constant, so the row lengths are closure constants. With
    layout "col" the kernel gets the operand transposed (a as [k, m], b as [n, k])."""
    lda = k if a_layout == "row" else m
    ldb = n if b_layout == "row" else k

    @nova.kernel
    def kern(c, a, b):
        w = nova.block_id(0) * (nova.block_dim(0) // 32) + nova.thread_id(0) // 32
        i = (w // (n // 16)) * 16
        j = (w % (n // 16)) * 16
        acc = nova.mma.load(c, (i, j), "c", ld=n)          # c += a @ b
        for kk in range(0, k, 16):
            if a_layout == "row":
                x = nova.mma.load(a, (i, kk), "a", ld=lda)
            else:
                x = nova.mma.load(a, (kk, i), "a", ld=lda, layout="col")
            if b_layout == "row":
                y = nova.mma.load(b, (kk, j), "b", ld=ldb)
            else:
                y = nova.mma.load(b, (j, kk), "b", ld=ldb, layout="col")
            acc = nova.mma.mma(x, y, acc)
        nova.mma.store(c, (i, j), acc, ld=n)

    return kern


@pytest.mark.parametrize("layouts", [("row", "row"), ("row", "col"), ("col", "row"),
                                     ("col", "col")], ids="-".join)
def test_global_fragments_layouts_and_c_input(device, layouts):
    m, k, n = 32, 48, 64
    rng = np.random.default_rng(1)
    a, b = _ints(rng, (m, k)), _ints(rng, (k, n))
    c0 = _ints(rng, (m, n), np.float32)
    a_arg = a if layouts[0] == "row" else np.ascontiguousarray(a.T)
    b_arg = b if layouts[1] == "row" else np.ascontiguousarray(b.T)
    c = c0.copy()
    kern = _global_kernel(m, k, n, *layouts)
    kern.launch(c, a_arg, b_arg, grid=(m // 16) * (n // 16) // 4, block=128, device=device)
    np.testing.assert_array_equal(c, c0 + _ref(a, b))


@nova.func
def _mma_twice(x, y, acc):
    acc = nova.mma.mma(x, y, acc)      # a reassigned fragment parameter
    return nova.mma.mma(x, y, acc)     # a device function returning a fragment


@nova.kernel
def _half_accumulator(out, a, b, split):
    """float16 accumulators; a loop whose warp-uniform branch updates one of two fragments
    (block arguments at the join); a device function taking and returning fragments."""
    even = nova.mma.fill(0, nova.float16)
    odd = nova.mma.fill(nova.float16(0), dtype=nova.float16)
    for kk in range(0, a.shape[1], 16):
        x = nova.mma.load(a, (0, kk), "a", ld=64)
        y = nova.mma.load(b, (kk, 0), "b", ld=16)
        if kk < split:
            even = _mma_twice(x, y, even)
        else:
            odd = nova.mma.mma(x, y, odd)
    nova.mma.store(out, (0, 0), even, ld=16)
    nova.mma.store(out, (16, 0), odd, ld=16)


def test_half_accumulators_branches_and_device_functions(device):
    rng = np.random.default_rng(2)
    a, b = _ints(rng, (16, 64)), _ints(rng, (64, 16))
    out = np.zeros((32, 16), np.float16)
    _half_accumulator.launch(out, a, b, 32, grid=1, block=32, device=device)
    want_even = 2 * _ref(a[:, :32], b[:32])
    want_odd = _ref(a[:, 32:], b[32:])
    np.testing.assert_array_equal(out.astype(np.float32), np.vstack([want_even, want_odd]))


@nova.kernel
def _loop_with_break(out, a, b):
    """A fragment carried around a `while True` loop left by `break`, then updated after it."""
    c = nova.mma.fill(1.0)
    k = 0
    while True:
        if k >= a.shape[1]:
            break
        c = nova.mma.mma(nova.mma.load(a, (0, k), "a", ld=64),
                         nova.mma.load(b, (k, 0), "b", ld=16), c)
        k += 16
    c = nova.mma.mma(nova.mma.load(a, (0, 0), "a", ld=64), nova.mma.load(b, (0, 0), "b", ld=16),
                     c)
    nova.mma.store(out, (0, 0), c, ld=16)


def test_fragment_through_break(device):
    rng = np.random.default_rng(6)
    a, b = _ints(rng, (16, 64)), _ints(rng, (64, 16))
    out = np.zeros((16, 16), np.float32)
    _loop_with_break.launch(out, a, b, grid=1, block=32, device=device)
    np.testing.assert_array_equal(out, 1 + _ref(a, b) + _ref(a[:, :16], b[:16]))


def test_mlir_uses_upstream_ops_and_block_arguments():
    text = P.mma_matmul.mlir(F32_2D, F16_2D, F16_2D)
    parse_mlir(text, "mma.mlir")
    assert text.count("gpu.subgroup_mma_compute") == 2
    # the two accumulators flow around the k loop as block arguments; no placeholders remain
    assert 'cf.br ^bb2(%' in text and "nova_lang" not in text
    assert "gpu.subgroup_mma_load_matrix" in text and "gpu.subgroup_mma_store_matrix" in text


def test_ptx_has_wmma():
    sig = (F32_2D, F16_2D, F16_2D)
    ptx = P.mma_matmul.ptx(*sig)
    assert "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32" in ptx
    assert "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16" in ptx
    kern = _global_kernel(32, 32, 32, "col", "col")
    ptx = kern.ptx(F32_2D, F16_2D, F16_2D)
    assert "wmma.mma.sync.aligned.col.col.m16n16k16.f32.f32" in ptx


def test_called_outside_a_kernel():
    with pytest.raises(KernelCallError, match=r"nova.mma.load\(\) can only be called inside"):
        nova.mma.load(np.zeros((16, 16), np.float16), (0, 0), "a")


# --- misuse: located KernelTypeErrors ----------------------------------------------------------

def _err_load_kind(out, a, b):
    nova.mma.load(a, (0, 0), "x", ld=16)


def _err_load_f32_a(out, a, b):
    nova.mma.load(out, (0, 0), "a", ld=16)


def _err_order(out, a, b):
    x = nova.mma.load(a, (0, 0), "a", ld=16)
    y = nova.mma.load(b, (0, 0), "b", ld=16)
    nova.mma.mma(y, x, nova.mma.fill(0.0))


def _err_acc_not_c(out, a, b):
    x = nova.mma.load(a, (0, 0), "a", ld=16)
    y = nova.mma.load(b, (0, 0), "b", ld=16)
    nova.mma.mma(x, y, x)


def _err_store_dtype(out, a, b):
    nova.mma.store(a, (0, 0), nova.mma.fill(0.0), ld=16)


def _err_store_not_c(out, a, b):
    nova.mma.store(a, (0, 0), nova.mma.load(a, (0, 0), "a", ld=16), ld=16)


def _err_shape(out, a, b):
    nova.mma.load(a, (0, 0), "a", ld=16, shape=(32, 8, 16))


def _err_ld_missing(out, a, b):
    nova.mma.load(a, (0, 0), "a")


def _err_ld_runtime(out, a, b):
    nova.mma.load(a, (0, 0), "a", ld=a.shape[1])


def _err_ld_small(out, a, b):
    nova.mma.load(a, (0, 0), "a", ld=12)


def _err_ld_huge(out, a, b):
    nova.mma.load(a, (0, 0), "a", ld=1 << 40)


def _err_ld_unaligned(out, a, b):
    nova.mma.store(out, (0, 0), nova.mma.fill(0.0), ld=18)


def _err_ld_missing_1d(out, a, b):
    s = nova.shared_array(512, nova.float16)
    nova.mma.load(s, 0, "a")


def _err_layout(out, a, b):
    nova.mma.load(a, (0, 0), "a", ld=16, layout="diag")


def _err_index_count(out, a, b):
    nova.mma.load(a, 0, "a", ld=16)


def _err_static_bounds(out, a, b):
    s = nova.shared_array((32, 16), nova.float16)
    nova.mma.load(s, (24, 0), "a")


def _err_static_align(out, a, b):
    s = nova.shared_array((32, 24), nova.float16)
    nova.mma.load(s, (0, 8), "a")


def _err_fill_dtype(out, a, b):
    nova.mma.fill(0, nova.int32)


def _err_fill_value(out, a, b):
    nova.mma.fill(out)


def _err_reassign_kind(out, a, b):
    c = nova.mma.fill(0.0)
    c = nova.mma.fill(0.0, nova.float16)
    nova.mma.store(out, (0, 0), c, ld=16)


def _err_scalar_to_fragment(out, a, b):
    c = 0.0
    c = nova.mma.fill(0.0)
    nova.mma.store(out, (0, 0), c, ld=16)


def _err_arith(out, a, b):
    out[0, 0] = nova.mma.fill(0.0) + 1


def _err_element_store(out, a, b):
    out[0, 0] = nova.mma.fill(0.0)


def _err_a_b_not_array(out, a, b):
    nova.mma.load(3, (0, 0), "a", ld=16)


ERRORS = {
    _err_load_kind: r"kind must be one of 'a', 'b', 'c'",
    _err_load_f32_a: r"'a' fragments load from float16 arrays, got a array\(float32, 2d\)",
    _err_order: r"the first operand must be an 'a' fragment .*got mma fragment \(b, float16",
    _err_acc_not_c: r"the accumulator must be a 'c' fragment",
    _err_store_dtype: r"a float32 accumulator is stored into float32 arrays, got a "
                      r"array\(float16, 2d\)",
    _err_store_not_c: r"the stored value must be a 'c' fragment",
    _err_shape: r"shape must be \(16, 16, 16\)",
    _err_ld_missing: r"pass ld= ",
    _err_ld_missing_1d: r"pass ld= ",
    _err_ld_runtime: r"ld must be a compile-time integer constant",
    _err_ld_small: r"ld=12 is not a valid leading dimension for float16: it must be at least 16",
    _err_ld_huge: r"ld=1099511627776 is not a valid leading dimension .* below 2\*\*31",
    _err_ld_unaligned: r"ld=18 .* multiple of 4",
    _err_layout: r"layout must be one of 'row', 'col'",
    _err_index_count: r"on a 2-d array needs 2 indices",
    _err_static_bounds: r"the 16x16 tile at \(24, 0\) with ld=16 ends at element 639",
    _err_static_align: r"starts at byte 16 .* 32-byte aligned",
    _err_fill_dtype: r"dtype must be nova.float32 or nova.float16",
    _err_fill_value: r"expected a float32 scalar",
    _err_reassign_kind: r"'c' holds an mma fragment \(c, float32\) and is assigned mma "
                        r"fragment \(c, float16\)",
    _err_scalar_to_fragment: r"'c' holds a float64 and is assigned an mma fragment",
    _err_arith: r"operands must be numbers, got mma fragment",
    _err_element_store: r"expected a float32 scalar, got mma fragment",
    _err_a_b_not_array: r"nova.mma.load\(\) needs an array first, got 3",
}


@pytest.mark.parametrize("fn", list(ERRORS), ids=lambda f: f.__name__.removeprefix("_err_"))
def test_misuse_is_a_located_error(fn):
    kern = nova.kernel(fn)
    with pytest.raises(KernelTypeError, match=ERRORS[fn]) as info:
        kern.mlir(F32_2D, F16_2D, F16_2D)
    assert "test_kernel_mma.py:" in str(info.value)  # file:line:col of the call


# --- warp-collective calls only some lanes reach (nova.lang.lanes) -----------------------------

def _div_if_thread(out, a, b):
    t = nova.thread_id(0)
    if t < a.shape[0]:
        nova.mma.load(a, (0, 0), "a", ld=16)


def _div_lane_return(out, a, b):
    if nova.lane_id() == 0:
        return
    nova.mma.store(out, (0, 0), nova.mma.fill(0.0), ld=16)


def _div_global_loop(out, a, b):
    c = nova.mma.fill(0.0)
    i = nova.global_id(0) * 2
    while i < 64:
        x = nova.mma.load(a, (0, 0), "a", ld=16)
        c = nova.mma.mma(x, nova.mma.load(b, (0, 0), "b", ld=16), c)
        i += 16


@nova.func
def _store_zero(out):
    nova.mma.store(out, (0, 0), nova.mma.fill(0.0), ld=16)


def _div_in_device_function(out, a, b):
    if nova.thread_id(0) % 32 < 16:
        _store_zero(out)


DIVERGENT = {
    _div_if_thread: r"test_kernel_mma.py:\d+:\d+ depends on the lane",
    _div_lane_return: r"nova.mma.store\(\) is warp-collective",
    _div_global_loop: r"nova.mma.load\(\) is warp-collective",
    _div_in_device_function: r"nova.mma.store\(\) is warp-collective",
}


@pytest.mark.parametrize("fn", list(DIVERGENT), ids=lambda f: f.__name__.removeprefix("_div_"))
def test_call_reached_by_some_lanes_is_an_error(fn):
    with pytest.raises(KernelTypeError, match=DIVERGENT[fn]):
        nova.kernel(fn).mlir(F32_2D, F16_2D, F16_2D)


def _uniform_conditions(out, a, b):
    """Warp-uniform conditions that mention lane-dependent values: no error."""
    t = nova.thread_id(0)
    warp = t // 32
    lane = nova.lane_id()
    c = nova.mma.fill(0.0)
    if warp == 1 and t >= 32 and (t >> 5) < 4 and (t & ~31) != 64:
        c = nova.mma.mma(nova.mma.load(a, (0, 0), "a", ld=16),
                         nova.mma.load(b, (0, 0), "b", ld=16), c)
    if nova.warp_any(lane == 3) and nova.thread_id(1) == 0 and t + 32 < 128:
        nova.mma.store(out, (warp * 16, 0), c, ld=16)
    for e in range(t, 256, 128):  # a lane-dependent loop is fine when it ends before the call
        out[e // 16, e % 16] = 0.0
    nova.syncthreads()
    nova.mma.store(out, (0, 0), c, ld=16)


def test_uniform_conditions_are_accepted():
    text = nova.kernel(_uniform_conditions).mlir(F32_2D, F16_2D, F16_2D)
    assert text.count("gpu.subgroup_mma_store_matrix") == 2
