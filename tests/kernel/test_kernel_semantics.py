"""Kernel-language semantics against NumPy/Python: integer wrap-around, shifts, floor division
and modulo, promotion of literals and mixed types, floats (incl. float16/bfloat16), math,
control flow, device functions, local arrays, atomics and warp operations."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nova

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@nova.kernel
def int_ops(out, x, y, s):
    i = nova.global_id(0)
    if i < len(x):
        a = x[i]
        b = y[i]
        out[i, 0] = a + b
        out[i, 1] = a - b
        out[i, 2] = a * b
        out[i, 3] = a // b
        out[i, 4] = a % b
        out[i, 5] = a & b
        out[i, 6] = a | b
        out[i, 7] = a ^ b
        out[i, 8] = a << s
        out[i, 9] = a >> s
        out[i, 10] = ~a
        out[i, 11] = -a


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_integer_wraparound_shifts_floor_division(device, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    x = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    x[:4] = [info.min, info.max, 0, 1]
    y = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    y[y == 0] = 3
    if info.min < 0:
        y[(x == info.min) & (y == -1)] = 5  # INT_MIN // -1 overflows in C and NumPy alike
    shift = dtype(3)
    out = np.zeros((64, 12), dtype)
    int_ops.launch(out, x, y, shift, grid=1, block=64, device=device)
    with np.errstate(over="ignore"):
        want = np.stack([x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y,
                         x << shift, x >> shift, ~x, (0 - x).astype(dtype)], 1)
    np.testing.assert_array_equal(out, want)


@nova.kernel
def shift_out_of_range(out, x, amounts):
    i = nova.global_id(0)
    if i < len(amounts):
        out[i, 0] = x[0] << amounts[i]
        out[i, 1] = x[0] >> amounts[i]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_shift_amounts_outside_the_width(device, dtype):
    x = np.array([-12345 if np.dtype(dtype).kind == "i" else 0xF0F0F0F0], dtype)
    bits = np.dtype(dtype).itemsize * 8
    amounts = np.array([0, 1, bits - 1, bits, bits + 5], dtype)
    out = np.zeros((5, 2), dtype)
    shift_out_of_range.launch(out, x, amounts, grid=1, block=8, device=device)
    fill = -1 if x[0] < 0 else 0
    for j, a in enumerate(amounts):
        if a < bits:
            assert out[j, 0] == dtype(x[0] << dtype(a)) and out[j, 1] == x[0] >> dtype(a)
        else:
            assert out[j, 0] == 0 and out[j, 1] == fill


@nova.kernel
def promote(out_f, out_u, out_i, f32, u8, i16, u32):
    out_f[0] = f32[0] * 2 + 1          # literals take the float's type: float32
    out_f[1] = u8[0] + 0.5             # float literal with an integer: float64
    out_u[0] = u8[0] + 250             # int literal takes uint8's type: wraps at 256
    out_u[1] = u32[0] + i16[0]         # uint32 wins over the narrower int16 (C rules)
    out_i[0] = i16[0] * u8[0]          # int16 is wider than uint8: int16
    out_i[1] = 7 // -2                 # constants fold with Python semantics
    out_i[2] = -7 % 3


def test_promotion_rules(device):
    f = np.zeros(2, np.float64)
    u = np.zeros(2, np.uint32)
    i = np.zeros(3, np.int64)
    promote.launch(f, u, i, np.array([1.5], np.float32), np.array([10], np.uint8),
                   np.array([-3], np.int16), np.array([1], np.uint32), grid=1, block=1,
                   device=device)
    assert f.tolist() == [4.0, 10.5]
    assert u.tolist() == [4, (1 - 3) % 2**32]
    assert i.tolist() == [-30, 7 // -2, -7 % 3]
    text = promote.mlir(nova.float64[:], nova.uint32[:], nova.int64[:], nova.float32[:],
                        nova.uint8[:], nova.int16[:], nova.uint32[:])
    assert "math.fma" in text and "arith.constant 2.000000e+00 : f32" in text
    assert "arith.constant -6 : i8" in text  # 250 as an i8 bit pattern


@nova.kernel
def contraction(out, a, b, c):
    out[0] = a[0] * b[0] + c[0]        # float32 product and sum: one fma
    out[1] = c[0] - a[0] * b[0]        # fma(-a, b, c)
    out[2] = a[0] * b[0] + 1.0         # the literal takes float32: fma


@nova.kernel
def no_contraction(out, a, b, d):
    out[0] = a[0] * b[0] + d[0]        # float32 product widened to float64: no fma


def test_multiply_add_contraction(device):
    a, b, c = (np.array([v], np.float32) for v in (1.0 + 2**-12, 1.0 + 2**-12, -1.0))
    out = np.zeros(3, np.float32)
    contraction.launch(out, a, b, c, grid=1, block=1, device=device)
    exact = float(a[0]) * float(b[0])  # exact in float64
    assert out.tolist() == [np.float32(exact - 1.0), np.float32(-1.0 - exact),
                            np.float32(exact + 1.0)]
    assert out[0] != np.float32(a[0] * b[0]) - 1  # the unfused result rounds the product
    text = contraction.mlir(nova.float32[:], nova.float32[:], nova.float32[:], nova.float32[:])
    assert text.count("math.fma") == 3 and "arith.mulf" not in text
    text = no_contraction.mlir(nova.float64[:], nova.float32[:], nova.float32[:],
                               nova.float64[:])
    assert "math.fma" not in text and "arith.mulf" in text


@nova.kernel
def floats(out, x):
    i = nova.global_id(0)
    if i < len(x):
        v = x[i]
        out[i, 0] = v * v + 1
        out[i, 1] = v // 0.75
        out[i, 2] = v % 0.75
        out[i, 3] = -v
        out[i, 4] = abs(v)
        out[i, 5] = max(v, 0.25)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_types(device, dtype):
    np_dtype = getattr(nova, dtype).np_dtype
    x = np.array([-2.5, -1.0, -0.3, 0.0, 0.6, 1.75, 3.0, 10.0], np_dtype)
    out = np.zeros((8, 6), np_dtype)
    floats.launch(out, x, grid=1, block=8, device=device)
    xf = x.astype(np.float64)
    want = np.stack([xf * xf + 1, xf // 0.75, xf % 0.75, -xf, np.abs(xf),
                     np.maximum(xf, 0.25)], 1)
    tol = 1e-2 if np.dtype(np_dtype).itemsize == 2 else 1e-6
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol)


@nova.kernel
def mathk(out, x):
    i = nova.global_id(0)
    if i < len(x):
        v = x[i]
        out[i, 0] = math.sqrt(v)
        out[i, 1] = math.exp(v)
        out[i, 2] = math.log(v)
        out[i, 3] = math.sin(v) + math.cos(v)
        out[i, 4] = math.tanh(v)
        out[i, 5] = np.log2(v)
        out[i, 6] = math.pow(v, 1.5)
        out[i, 7] = math.floor(v)
        out[i, 8] = np.ceil(v)
        out[i, 9] = math.erf(v)
        out[i, 10] = math.erfc(v)
        out[i, 11] = math.pow(v, nova.int32(2)) + math.copysign(1, -v)


def test_math_functions(device):
    x = np.array([0.1, 0.5, 1.0, 2.5, 7.0], np.float32)
    out = np.zeros((5, 12), np.float32)
    mathk.launch(out, x, grid=1, block=8, device=device)
    erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
    want = np.stack([np.sqrt(x), np.exp(x), np.log(x), np.sin(x) + np.cos(x), np.tanh(x),
                     np.log2(x), x ** 1.5, np.floor(x), np.ceil(x), erf(x), erfc(x),
                     x * x - 1], 1)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)
    assert out[4, 10] > 0  # erfc(7) ~ 4e-23: no cancellation to 0


@nova.func
def first_index_of(a, value):
    for j in range(len(a)):
        if a[j] == value:
            return j
    return -1


@nova.kernel
def control(out, a):
    i = nova.global_id(0)
    if i >= len(out):
        return
    total = 0
    k = 0
    while True:
        k += 1
        if k % 3 == 0:
            continue
        if k > 20:
            break
        total += k
    count = 0
    for j in range(10, 0, -2):
        count = count + j if j != 4 else count
    out[i, 0] = total
    out[i, 1] = count
    out[i, 2] = first_index_of(a, i)
    out[i, 3] = 1 if (i % 2 == 0 and a[0] == 5) or i == 3 else 0
    out[i, 4] = i if i < 2 else (i * 10 if i < 4 else -1)


def test_control_flow_and_device_functions(device):
    a = np.array([5, 3, 0, 3, 1, 2], np.int32)
    out = np.zeros((6, 5), np.int64)
    control.launch(out, a, grid=1, block=32, device=device)
    total = sum(k for k in range(1, 21) if k % 3)
    count = sum(j for j in range(10, 0, -2) if j != 4)
    for i in range(6):
        idx = next((j for j in range(6) if a[j] == i), -1)
        flag = 1 if (i % 2 == 0 and a[0] == 5) or i == 3 else 0
        other = i if i < 2 else (i * 10 if i < 4 else -1)
        assert out[i].tolist() == [total, count, idx, flag, other]


@nova.kernel
def locals_and_types(out):
    i = nova.thread_id(0)
    buf = nova.local_array(8, nova.int32)
    for j in range(8):
        buf[j] = j * i
    acc = 0                      # widened to float64 by the later assignment
    for j in range(8):
        acc += buf[j] * 0.5
    small: nova.uint8 = 250
    small += 10                  # declared uint8: wraps
    out[i, 0] = acc
    out[i, 1] = small


def test_local_arrays_and_variable_types(device):
    out = np.zeros((4, 2), np.float64)
    locals_and_types.launch(out, grid=1, block=4, device=device)
    for i in range(4):
        assert out[i].tolist() == [sum(j * i for j in range(8)) * 0.5, 4]


@nova.kernel
def atomics(acc, mins, old, x):
    i = nova.global_id(0)
    if i < len(x):
        nova.atomic_add(acc, 0, x[i])
        nova.atomic_sub(acc, 1, x[i])
        nova.atomic_max(acc, 2, x[i])
        nova.atomic_min(mins, 0, x[i])
        nova.atomic_or(acc, 3, nova.int64(1) << (x[i] % 40))
        old[i] = nova.atomic_add(acc, 4, 1)


def test_atomics(device):
    x = np.random.default_rng(9).integers(-1000, 1000, 300).astype(np.int64)
    acc = np.zeros(5, np.int64)
    mins = np.zeros(1, np.int64) + 10**9
    old = np.zeros(300, np.int64)
    atomics.launch(acc, mins, old, x, grid=3, block=128, device=device)
    bits = 0
    for v in x:
        bits |= 1 << int(v % 40)
    assert acc.tolist() == [x.sum(), -x.sum(), max(0, x.max()), bits, 300]
    assert mins[0] == x.min()
    assert sorted(old.tolist()) == list(range(300))  # each thread saw a distinct old value


@nova.kernel
def cas_claim(owner, slots, winners):
    """Every thread tries to claim slot (i % 8) with compare-and-swap; one wins each slot."""
    i = nova.global_id(0)
    if i < len(owner):
        old = nova.atomic_cas(slots, i % 8, -1, i)
        owner[i] = old
        if old == -1:
            nova.atomic_add(winners, 0, 1)


def test_atomic_compare_and_swap(device):
    owner = np.zeros(100, np.int32)
    slots = np.full(8, -1, np.int32)
    winners = np.zeros(1, np.int32)
    cas_claim.launch(owner, slots, winners, grid=1, block=128, device=device)
    assert winners[0] == 8
    for s in range(8):
        claimants = [i for i in range(100) if i % 8 == s]
        assert slots[s] in claimants
        assert sum(owner[i] == -1 for i in claimants) == 1  # exactly one saw the empty slot
        assert all(owner[i] in (-1, slots[s]) for i in claimants)
    text = cas_claim.mlir(nova.int32[:], nova.int32[:], nova.int32[:])
    assert "memref.generic_atomic_rmw %" in text and "memref.atomic_yield %" in text


@nova.kernel
def atomic_float(acc, x):
    i = nova.global_id(0)
    if i < len(x):
        nova.atomic_add(acc, 0, x[i])
        nova.atomic_max(acc, 1, x[i])


def test_float_atomics(device):
    x = np.arange(256, dtype=np.float32) * 0.5
    acc = np.zeros(2, np.float32)
    atomic_float.launch(acc, x, grid=2, block=128, device=device)
    assert acc.tolist() == [x.sum(), x.max()]


@nova.kernel
def warp_ops(out, x):
    i = nova.global_id(0)
    v = x[i]
    lane = nova.lane_id()
    out[i, 0] = nova.shuffle_xor(v, 1)
    out[i, 1] = nova.shuffle_idx(v, 0)
    out[i, 2] = nova.shuffle_down(v, 4)
    out[i, 3] = nova.warp_reduce_add(v)
    out[i, 4] = nova.warp_reduce_max(v)
    out[i, 5] = nova.warp_reduce_min(v)
    out[i, 6] = nova.ballot(v > 0)
    out[i, 7] = nova.warp_any(v > 90)
    out[i, 8] = nova.warp_all(v > -1000)
    out[i, 9] = nova.shuffle_xor(v, 1, width=8) if lane < 32 else 0


def test_warp_operations(device):
    x = np.random.default_rng(11).integers(-100, 100, 64).astype(np.int64)
    out = np.zeros((64, 10), np.int64)
    warp_ops.launch(out, x, grid=1, block=64, device=device)
    for w in range(2):
        seg = x[32 * w:32 * w + 32]
        ballot = sum(1 << j for j in range(32) if seg[j] > 0)
        for lane in range(32):
            r = out[32 * w + lane]
            down = seg[lane + 4] if lane + 4 < 32 else seg[lane]
            assert r.tolist() == [seg[lane ^ 1], seg[0], down, seg.sum(), seg.max(), seg.min(),
                                  ballot, int((seg > 90).any()), 1, seg[lane ^ 1]]


@nova.kernel
def partial_warp_votes(out, x):
    i = nova.global_id(0)
    out[i, 0] = nova.ballot(x[i] > 0)
    out[i, 1] = nova.warp_all(x[i] > 0)
    out[i, 2] = nova.warp_any(x[i] > 5)


def test_votes_in_a_partial_warp(device):
    """ballot/any/all (one vote.sync on the GPU) count only the lanes that exist: a block of
    40 threads has a last warp of 8 lanes."""
    x = np.arange(1, 41, dtype=np.int64)
    out = np.zeros((40, 3), np.int64)
    partial_warp_votes.launch(out, x, grid=1, block=40, device=device)
    assert (out[:32] == [0xFFFFFFFF, 1, 1]).all()
    assert (out[32:] == [0xFF, 1, 1]).all()


@nova.kernel
def member_warp_ops(out, x):
    i = nova.global_id(0)
    v = x[i]
    full = 0xFFFFFFFF
    out[i, 0] = nova.ballot(v > 0, members=full)
    out[i, 1] = nova.warp_any(v > 90, members=full)
    out[i, 2] = nova.warp_all(v > -1000, members=full)
    out[i, 3] = nova.shuffle_idx(v, 3, members=full)
    out[i, 4] = nova.shuffle_up(v, 2, members=full)
    out[i, 5] = nova.shuffle_down(v, 4, members=full)
    out[i, 6] = nova.shuffle_xor(v, 1, members=full)
    out[i, 7] = nova.shuffle_xor(v, 5, width=8, members=full)
    out[i, 8] = nova.shuffle_up(v, 3, width=8, members=full)


def test_members_mask(device):
    """`members=` (CUDA's mask argument: a constant reaches PTX as an immediate) gives the
    same results as the default on full warps, widths included."""
    x = np.random.default_rng(12).integers(-100, 100, 64).astype(np.int32)
    out = np.zeros((64, 9), np.int64)
    member_warp_ops.launch(out, x, grid=1, block=64, device=device)
    for w in range(2):
        seg = x[32 * w:32 * w + 32].astype(np.int64)
        ballot = sum(1 << j for j in range(32) if seg[j] > 0)
        for lane in range(32):
            up = seg[lane - 2] if lane >= 2 else seg[lane]
            down = seg[lane + 4] if lane + 4 < 32 else seg[lane]
            g = lane & ~7
            x8 = seg[g + ((lane - g) ^ 5)]
            up8 = seg[lane - 3] if lane - 3 >= g else seg[lane]
            assert out[32 * w + lane].tolist() == [
                ballot, int((seg > 90).any()), 1, seg[3], up, down, seg[lane ^ 1], x8, up8]


@nova.kernel
def small_shuffle(out, x):
    i = nova.global_id(0)
    out[i] = nova.shuffle_xor(x[i], 16) + nova.warp_reduce_add(x[i])


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float16, np.float64])
def test_warp_operations_on_narrow_and_wide_types(device, dtype):
    x = (np.arange(32) % 5).astype(dtype)
    out = np.zeros(32, dtype)
    small_shuffle.launch(out, x, grid=1, block=32, device=device)
    want = (x[np.arange(32) ^ 16].astype(np.float64) + x.astype(np.float64).sum()).astype(dtype)
    np.testing.assert_array_equal(out, want)


@nova.kernel
def bit_counts(out, x):
    i = nova.global_id(0)
    if i < len(x):
        out[i, 0] = nova.popc(x[i])
        out[i, 1] = nova.clz(x[i])
        out[i, 2] = nova.ctz(x[i])


def test_bit_counts(device):
    x = np.array([1, 2, 0xF0, 0x80000000, 0xFFFFFFFF, 12345], np.uint32)
    out = np.zeros((6, 3), np.uint32)
    bit_counts.launch(out, x, grid=1, block=8, device=device)
    for v, row in zip(x.tolist(), out.tolist(), strict=True):
        assert row == [bin(v).count("1"), 32 - v.bit_length(), (v & -v).bit_length() - 1]


SCALE = 3


@nova.kernel
def uses_constants(out):
    i = nova.thread_id(0)
    tile = nova.shared_array(SCALE * 4, nova.int32)   # a folded compile-time shape
    tile[i] = i * SCALE
    nova.syncthreads()
    out[i] = tile[(i + 1) % (SCALE * 4)]


def test_compile_time_constants(device):
    out = np.zeros(12, np.int32)
    uses_constants.launch(out, grid=1, block=12, device=device)
    assert out.tolist() == [((i + 1) % 12) * 3 for i in range(12)]
    assert "memref<12xi32, 3>" in uses_constants.mlir(nova.int32[:])


@nova.kernel
def odds_and_ends(out, flags, x, step):
    i = nova.thread_id(0)
    if i > 0:
        return
    a, b = x[0], x[1]
    a, b = b, a                      # tuple unpacking swaps
    out[0] = a * 10 + b
    out[1] = x.size + x.ndim
    total = 0
    for j in range(x.shape[0] - 1, -1, step):   # a run-time (negative) step
        total = total * 10 + x[j]
    out[2] = total
    n = 0
    while (k := n * n) < 50:
        n += 1
    out[3] = k
    count = 0
    for j in range(len(flags)):
        if flags[j]:
            count += 1
        flags[j] = not flags[j]
    out[4] = count


def test_unpacking_runtime_steps_walrus_and_bool_arrays(device):
    out = np.zeros(5, np.int64)
    flags = np.array([True, False, True, True])
    x = np.array([1, 2, 3], np.int64)
    odds_and_ends.launch(out, flags, x, -1, grid=1, block=4, device=device)
    assert out.tolist() == [21, 4, 321, 64, 3]
    assert flags.tolist() == [False, True, False, False]


@nova.kernel
def hello(x):
    i = nova.thread_id(0)
    if i < 2:
        print("thread", i, "of", nova.block_dim(0), "x =", x[i], "u =", nova.uint8(200), "100%")


def test_print_from_kernels(cpu_device, capfd):
    hello.launch(np.array([0.5, -2.0], np.float32), grid=1, block=4, device=cpu_device)
    out = capfd.readouterr().out.splitlines()
    assert sorted(out) == ["thread 0 of 4 x = 0.5 u = 200 100%",
                           "thread 1 of 4 x = -2 u = 200 100%"]
    assert 'gpu.printf "thread %lld of %lld x = %g u = %llu 100%%\\0A", ' in hello.mlir(
        nova.float32[:])


@nova.kernel
def checked(out, limit):
    i = nova.global_id(0)
    assert i < limit, "index past the limit"
    out[i] = i


def test_assert_in_kernels(cpu_device):
    out = np.zeros(64, np.int64)
    checked.launch(out, 64, grid=2, block=32, device=cpu_device)
    assert out.tolist() == list(range(64))
    with pytest.raises(nova.NovaError, match="assertion failed: index past the limit") as info:
        checked.launch(out, 40, grid=2, block=32, device=cpu_device)
    assert "test_kernel_semantics.py:" in str(info.value)
    assert "cf.assert" in checked.mlir(nova.int64[:], nova.int64)


def _nvptx_cases() -> list:
    cases = []
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        t = getattr(nova, name)
        cases += [(int_ops, (t[:, :], t[:], t[:], t)), (shift_out_of_range, (t[:, :], t[:], t[:]))]
    for name in ("float16", "bfloat16", "float32", "float64"):
        t = getattr(nova, name)
        cases += [(floats, (t[:, :], t[:])), (small_shuffle, (t[:], t[:]))]
    return [*cases,
            (mathk, (nova.float32[:, :], nova.float32[:])),
            (control, (nova.int64[:, :], nova.int32[:])),
            (locals_and_types, (nova.float64[:, :],)),
            (atomics, (nova.int64[:],) * 4), (atomic_float, (nova.float32[:],) * 2),
            (warp_ops, (nova.int64[:, :], nova.int64[:])),
            (small_shuffle, (nova.int8[:],) * 2), (small_shuffle, (nova.uint16[:],) * 2),
            (bit_counts, (nova.uint32[:, :], nova.uint32[:])),
            (uses_constants, (nova.int32[:],)), (contraction, (nova.float32[:],) * 4),
            (checked, (nova.int64[:], nova.int64)), (hello, (nova.float32[:],)),
            (cas_claim, (nova.int32[:],) * 3), (cas_claim, (nova.int64[:],) * 3),
            (odds_and_ends, (nova.int64[:], nova.bool_[:], nova.int64[:], nova.int64))]


@pytest.mark.parametrize(("kern", "sig"), _nvptx_cases(),
                         ids=lambda v: getattr(v, "__name__", None) or "-".join(map(str, v)))
def test_every_kernel_compiles_for_nvptx(kern, sig):
    """The GPU path of every kernel above, up to PTX (and a cubin where ptxas exists), so NVPTX
    lowering is checked on machines without a GPU too."""
    images = kern._compile(kern.signature(*sig), "cuda", "sm_90")
    assert f".visible .entry {kern.__name__}(" in images.ptx


@pytest.mark.parametrize(("kern", "sig"), _nvptx_cases(),
                         ids=lambda v: getattr(v, "__name__", None) or "-".join(map(str, v)))
def test_generated_mlir_round_trips(kern, sig):
    """Every kernel's MLIR re-parses with Nova's parser and prints identically (atomic_cas's
    memref.generic_atomic_rmw and math.erfc included)."""
    from nova.ir.parser import parse_mlir, print_mlir

    text = kern.mlir(*sig)
    assert print_mlir(parse_mlir(text, "kernel.mlir")) == text
