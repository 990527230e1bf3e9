"""The cached-launch guard path and prepared launches (nova.lang.guard, nova.lang.prepared,
nova.runtime.launcher): same results and errors as the general path, misses fall back to it."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import nova
from nova.errors import ArgumentError, DeviceError, NovaError
from nova.lang import api
from nova.lang import types as T
from nova.lang.api import KernelFunction
from nova.lang.guard import guard_source, make_guard
from nova.runtime.memory import Buffer


def _axpy(out, a, x, y):
    i = nova.global_id(0)
    if i < len(out):
        out[i] = a * x[i] + y[i]


def _grid2(out, x, k):
    i = nova.global_id(0)
    j = nova.global_id(1)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * k + i * 10 + j


def _count(counter, step):
    if nova.global_id(0) == 0:
        counter[0] += step


def _offset_view(base: Buffer, first: int, count: int) -> Buffer:
    return Buffer.wrap(base.device, base.ptr + 4 * first, 4 * count, np.float32, (count,),
                       owner=base)


@pytest.fixture
def forbid_general_path(monkeypatch):
    """Make the general (inferring) launch path fail: launches must take the guard path."""
    def boom(*args):
        raise AssertionError("the general launch path ran")

    def forbid() -> None:
        monkeypatch.setattr(api, "arg_type", boom)
    return forbid


@pytest.mark.parametrize(("dtype", "scalar"), [
    (np.float32, np.float32(2.5)), (np.float64, 2.5), (np.int32, np.int32(-3)), (np.int64, 7),
    (np.uint8, np.uint8(3)), (ml_dtypes.bfloat16, ml_dtypes.bfloat16(1.5)),
])
def test_guard_path_matches_numpy(device, forbid_general_path, dtype, scalar):
    kern = KernelFunction(_axpy)
    n = 70
    x = (np.arange(n) % 11).astype(dtype)
    y = (np.arange(n) % 5).astype(dtype)
    dx, dy = nova.to_device(x, device), nova.to_device(y, device)
    out = nova.to_device(np.zeros(n, dtype), device)
    kern[3, 32](out, scalar, dx, dy)  # first launch: general path, compiles
    forbid_general_path()
    for k in range(3):
        dy.copy_from_host(y + dtype(k))
        kern[3, 32](out, scalar, dx, dy)
        expect = (np.asarray(scalar).astype(dtype) * x + (y + dtype(k))).astype(dtype)
        np.testing.assert_array_equal(out.numpy(), expect)


def test_guard_path_two_dimensional_arrays(device, forbid_general_path):
    kern = KernelFunction(_grid2)
    x = np.arange(12 * 7, dtype=np.float32).reshape(12, 7)
    dx = nova.to_device(x, device)
    out = nova.to_device(np.zeros((12, 7), np.float32), device)
    kern[(2, 1), (8, 8)](out, dx, np.float32(3))
    forbid_general_path()
    kern[(2, 1), (8, 8)](out, dx, np.float32(2))
    i, j = np.indices((12, 7))
    np.testing.assert_array_equal(out.numpy(), x * 2 + i * 10 + j)


def test_guard_misses_specialise_like_the_general_path(cpu_device):
    """A dtype, alignment or overlap the recent signatures do not have takes the general path
    and compiles that signature, exactly as without the guards."""
    kern = KernelFunction(_axpy)
    base = nova.to_device(np.arange(40, dtype=np.float32), cpu_device)
    a, b = _offset_view(base, 0, 16), _offset_view(base, 20, 16)  # aligned, disjoint
    out = nova.to_device(np.zeros(16, np.float32), cpu_device)
    kern[1, 32](out, np.float32(1), a, b)
    kern[1, 32](out, np.float32(1), a, _offset_view(base, 21, 16))  # misaligned y
    kern[1, 32](out, np.float32(1), a, _offset_view(base, 8, 16))  # y overlaps x
    kern[1, 32](out, np.float32(1), a, b)  # the first signature again: no new plan
    np.testing.assert_array_equal(out.numpy(), base.numpy()[:16] + base.numpy()[20:36])
    facts = sorted(tuple((t.align, t.noalias) for t in sig if isinstance(t, T.ArrayType))
                   for (_, sig, _) in kern._plans)
    assert facts == [((16, True), (16, False), (16, False)),
                     ((16, True), (16, True), (0, True)),
                     ((16, True), (16, True), (16, True))]


def test_guard_refuses_what_the_general_path_rejects(cpu_device):
    kern = KernelFunction(_axpy)
    x = nova.to_device(np.zeros(8, np.float32), cpu_device)
    kern[1, 8](x, np.float32(1), x, x)
    freed = nova.to_device(np.zeros(8, np.float32), cpu_device)
    freed.free()
    with pytest.raises(DeviceError, match="freed Buffer"):
        kern[1, 8](freed, np.float32(1), x, x)
    with pytest.raises(NovaError, match="grid must be"):
        kern[True, 8](x, np.float32(1), x, x)  # True == 1 must not find 1's configuration
    with pytest.raises(NovaError, match="grid must be"):
        kern[1.0, 8](x, np.float32(1), x, x)
    with pytest.raises(ArgumentError, match="too many threads"):
        kern[1, 2048](x, np.float32(1), x, x)
    with pytest.raises(ArgumentError, match="exceeds the device limit"):
        kern[(1, 70000), 8](x, np.float32(1), x, x)


def test_int_out_of_range_is_an_argument_error_on_the_guard_path(cpu_device):
    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int32), cpu_device)
    kern[1, 1](counter, np.int32(5))
    with pytest.raises(ArgumentError, match="does not fit"):
        kern.prepare(counter, np.int32(0), grid=1, block=1)(counter, 2**40)
    cpu_device.synchronize()
    assert counter.numpy()[0] == 5


def test_each_configuration_is_checked_once(cpu_device, monkeypatch):
    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), cpu_device)
    calls = []
    real = cpu_device.check_launch
    monkeypatch.setattr(cpu_device, "check_launch", lambda *a: calls.append(a[1:3]) or real(*a))
    for _ in range(5):
        kern[1, 32](counter, 1)
        kern[(2, 1), (32, 1)](counter, 1)
    cpu_device.synchronize()
    assert counter.numpy()[0] == 10
    assert calls == [(1, 32), ((2, 1), (32, 1))]


def test_prepared_launch_runs_and_counts(device):
    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), device)
    run = kern.prepare(counter, 0, grid=4, block=64)
    for k in range(100):
        run(counter, k)
    device.synchronize()
    assert counter.numpy()[0] == sum(range(100))
    assert "prepared launch of _count" in repr(run)


def test_prepared_launch_converts_scalars_to_the_prepared_types(device):
    kern = KernelFunction(_axpy)
    x = nova.to_device(np.arange(8, dtype=np.float32), device)
    out = nova.to_device(np.zeros(8, np.float32), device)
    run = kern.prepare(nova.float32[:], nova.float32, nova.float32[:], nova.float32[:],
                       grid=1, block=8, device=device)
    assert run.signature[1] == T.float32
    run(out, 2, x, x)  # a Python int into the float32 slot
    run(out, 0.5, x, out)
    device.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(8) * 3.5)  # 2x + x, then 0.5x + 3x
    assert len(kern._plans) == 1  # no float64/int64 signature was compiled


def test_prepared_launch_falls_back_for_what_its_guard_does_not_take(device):
    kern = KernelFunction(_axpy)
    base = nova.to_device(np.arange(40, dtype=np.float32), device)
    x = nova.to_device(np.arange(16, dtype=np.float32), device)
    out = nova.to_device(np.zeros(16, np.float32), device)
    run = kern.prepare(out, np.float32(1), x, x, grid=1, block=32)
    assert run.signature[0].align == 16
    run(_offset_view(base, 1, 16), np.float32(1), x, x)  # misaligned out: general path
    np.testing.assert_array_equal(base.numpy()[1:17], 2 * np.arange(16))
    host = np.zeros(16, np.float32)
    run(host, np.float32(3), np.arange(16, dtype=np.float32), x)  # NumPy arrays: staged
    np.testing.assert_array_equal(host, 4 * np.arange(16))
    with pytest.raises(ArgumentError, match="must be arrays"):
        run("text", np.float32(1), x, x)


@pytest.mark.parametrize(("dtype", "values"), [
    (np.int8, [3, np.int8(-4), -128]), (np.uint32, [7, np.uint32(4000000000), 0]),
    (np.float32, [2.5, np.float32(-1.25), 3]), (np.float64, [0.5, np.float64(1e300), -2])])
def test_prepared_scalars_of_every_kind_match_numpy(device, dtype, values):
    """On cuda the checked builtin packs these (an int into a float slot takes the Python
    call); every path must give NumPy's result."""
    def fill(out, v):
        i = nova.global_id(0)
        if i < len(out):
            out[i] = v

    kern = KernelFunction(fill)
    out = nova.to_device(np.zeros(8, dtype), device)
    run = kern.prepare(out, dtype(0), grid=1, block=8)
    for value in values:
        run(out, value)
        device.synchronize()
        np.testing.assert_array_equal(out.numpy(), np.full(8, value, dtype))
    bad, message = ((1 << 70, "does not fit its type") if np.issubdtype(dtype, np.integer)
                    else (1e300, "does not fit its type") if dtype is np.float32
                    else ("x", "must be arrays"))
    with pytest.raises(ArgumentError, match=message):
        run(out, bad)
    out.free()
    with pytest.raises(DeviceError, match="freed"):
        run(out, values[0])


def test_prepare_checks_its_configuration_and_stream_once(cpu_device):
    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), cpu_device)
    with pytest.raises(ArgumentError, match="too many threads"):
        kern.prepare(counter, 1, grid=1, block=4096)
    with pytest.raises(NovaError, match="grid must be"):
        kern.prepare(counter, 1, grid=2.5, block=1)
    stream = cpu_device.create_stream()
    run = kern.prepare(counter, 1, grid=1, block=1, stream=stream)
    run(counter, 3)
    stream.synchronize()
    assert counter.numpy()[0] == 3
    stream.close()
    with pytest.raises(DeviceError, match=r"closed|not an open"):
        run(counter, 3)
    with pytest.raises(DeviceError, match=r"closed|not an open"):
        kern.prepare(counter, 1, grid=1, block=1, stream=stream)


def test_prepared_launches_from_threads_do_not_mix_arguments(cpu_device):
    kern = KernelFunction(_axpy)
    n = 64
    run = kern.prepare(nova.float32[:], nova.float32, nova.float32[:], nova.float32[:],
                       grid=2, block=32, device=cpu_device)

    def work(k: int) -> bool:
        stream = cpu_device.create_stream()
        x = nova.to_device(np.arange(n, dtype=np.float32) + k, cpu_device)
        out = nova.to_device(np.zeros(n, np.float32), cpu_device)
        good = True
        for step in range(10):
            prepared = kern.prepare(out, np.float32(0), x, x, grid=2, block=32, stream=stream)
            prepared(out, np.float32(k + step), x, x)
            stream.synchronize()
            good &= bool(np.array_equal(out.numpy(), (np.arange(n) + k) * (k + step + 1)))
            run(out, float(k), x, x)
            cpu_device.synchronize()
            good &= bool(np.array_equal(out.numpy(), (np.arange(n) + k) * (k + 1)))
        stream.close()
        return good

    results: list[bool] = []
    threads = [threading.Thread(target=lambda k=k: results.append(work(k))) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4


def test_guard_source_checks_what_the_signature_says():
    sig = (T.ArrayType(T.float32, 1, align=16, noalias=True), T.float32,
           T.ArrayType(T.float32, 2, align=0, noalias=False),
           T.ArrayType(T.float32, 1, align=16, noalias=False))
    kern = KernelFunction(_axpy)
    from nova.runtime.selection import get_device

    dev = get_device("cpu")
    launcher = dev.launcher(kern._plan(dev, kern.signature(
        nova.float32[:], nova.float32, nova.float32[:], nova.float32[:]), False).function,
        "q" * 16)
    exact, _ = guard_source(sig, True, launcher)
    prepared, _ = guard_source(sig, False, launcher)
    assert "(p0 & 15) == 0) is not True" in exact and "(p2 & 15) == 0) is not False" in exact
    assert "if p0 & 15:" in prepared and "p2 & 15" not in prepared
    assert "if not (o0_2 or o2_3):" in exact and "o0_2 or o2_3" not in prepared.replace(
        "if o0_2 or o0_3", "")
    assert "s2[1], 1" in exact  # the 2-D array's strides: (shape[1], 1)
    guard = make_guard(sig, True, launcher)
    assert guard((1, 2), dev, None) is None  # wrong count: a miss, not an error


def _specialised(kern: KernelFunction, config: tuple) -> bool:
    return type(kern[config]) is not api._Configured


def test_a_repeated_configuration_specialises_and_keeps_every_check(cpu_device, monkeypatch,
                                                                    forbid_general_path):
    """`kern[grid, block]` launching one signature twice in a row becomes its specialised
    class: the same results, and the same errors for what the signature's guard refuses."""
    kern = KernelFunction(_axpy)
    n = 16
    x = nova.to_device(np.arange(n, dtype=np.float32), cpu_device)
    out = nova.to_device(np.zeros(n, np.float32), cpu_device)
    kern[1, 32](out, np.float32(2), x, x)
    assert not _specialised(kern, (1, 32))
    kern[1, 32](out, np.float32(2), x, x)
    assert _specialised(kern, (1, 32)) and not _specialised(kern, (2, 32))
    forbid_general_path()
    for k in range(3):
        kern[1, 32](out, np.float32(k), x, x)
        cpu_device.synchronize()
        np.testing.assert_array_equal(out.numpy(), np.arange(n) * (k + 1))
    freed = nova.to_device(np.zeros(n, np.float32), cpu_device)
    freed.free()
    with pytest.raises(DeviceError, match="freed Buffer"):
        kern[1, 32](freed, np.float32(1), x, x)
    monkeypatch.undo()  # the errors below are the general path's
    with pytest.raises(ArgumentError, match="must be arrays"):
        kern[1, 32](out, np.float32(1), x, "text")
    assert _specialised(kern, (1, 32))  # errors leave it as it was
    count = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), cpu_device)
    for _ in range(2):
        count[1, 1](counter, 5)
    assert _specialised(count, (1, 1))
    with pytest.raises(ArgumentError, match="does not fit"):
        count[1, 1](counter, 2**70)
    cpu_device.synchronize()
    assert counter.numpy()[0] == 10


def test_a_specialised_configuration_falls_back_like_the_general_path(cpu_device):
    kern = KernelFunction(_axpy)
    base = nova.to_device(np.arange(40, dtype=np.float32), cpu_device)
    x = nova.to_device(np.arange(16, dtype=np.float32), cpu_device)
    out = nova.to_device(np.zeros(16, np.float32), cpu_device)
    for _ in range(2):
        kern[1, 32](out, np.float32(1), x, x)
    assert _specialised(kern, (1, 32))
    kern[1, 32](_offset_view(base, 1, 16), np.float32(1), x, x)  # misaligned: another plan
    np.testing.assert_array_equal(base.numpy()[1:17], 2 * np.arange(16))
    host = np.zeros(16, np.float32)
    kern[1, 32](host, np.float32(3), np.arange(16, dtype=np.float32), x)  # staged
    np.testing.assert_array_equal(host, 4 * np.arange(16))
    d = nova.to_device(np.arange(16, dtype=np.float64), cpu_device)
    dout = nova.to_device(np.zeros(16, np.float64), cpu_device)
    for k in range(4):  # two signatures in turn: both stay correct, one class per plan
        kern[1, 32](out, np.float32(k), x, x)
        kern[1, 32](dout, float(k), d, d)
        cpu_device.synchronize()
        np.testing.assert_array_equal(out.numpy(), np.arange(16) * (k + 1))
        np.testing.assert_array_equal(dout.numpy(), np.arange(16) * (k + 1))
    assert all(len(plan.configured) <= 1 for plan in kern._plans.values())


def test_a_specialised_configuration_follows_the_bounds_check_setting(cpu_device):
    from nova import config

    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), cpu_device)
    for _ in range(2):
        kern[1, 32](counter, 1)
    assert _specialised(kern, (1, 32))
    with config.scoped(check_bounds=not config.get().check_bounds):
        kern[1, 32](counter, 1)  # another plan, compiled with the other setting
    kern[1, 32](counter, 1)
    cpu_device.synchronize()
    assert counter.numpy()[0] == 4
    assert sorted(checked for (_, _, checked) in kern._plans) == [False, True]


def test_only_kept_default_stream_configurations_specialise(cpu_device):
    kern = KernelFunction(_count)
    counter = nova.to_device(np.zeros(1, np.int64), cpu_device)
    stream = cpu_device.create_stream()
    for _ in range(3):
        kern[1, 32, stream](counter, 1)
        kern.launch(counter, 1, grid=1, block=32)
    stream.synchronize()
    cpu_device.synchronize()
    assert counter.numpy()[0] == 6
    assert all(not plan.configured for plan in kern._plans.values())
    stream.close()


def test_a_buffer_given_a_new_shape_launches_with_it(cpu_device):
    """The guards use a Buffer's cached slot words only while its shape is the same object."""
    kern = KernelFunction(_count)
    buf = nova.to_device(np.zeros(4, np.int64), cpu_device)
    run = kern.prepare(buf, 1, grid=1, block=1)
    for _ in range(3):
        kern[1, 1](buf, 1)
        run(buf, 1)
    buf._retype(np.int64, (2,))
    kern[1, 1](buf, 10)
    run(buf, 10)
    cpu_device.synchronize()
    assert buf.numpy().tolist() == [26, 0]
    assert buf._words is not None and buf._words[0] is buf.shape


def test_a_buffer_keeps_the_guards_record_only_while_it_holds(cpu_device):
    """A Buffer the guards accepted carries `_accepted` (nova.lang.guard._array): later launches
    read it instead of checking again, so everything that changes what was checked must drop
    it: freeing, retyping, a new shape; a guard of other requirements checks for itself, and a
    view (whose base may be freed) gets no record."""
    kern = KernelFunction(_count)
    buf = nova.to_device(np.zeros(4, np.int64), cpu_device)
    run = kern.prepare(buf, 1, grid=1, block=1)
    run(buf, 1)
    record = buf._accepted
    assert record is not None and record[1] is buf.shape and record[2] == buf.ptr
    assert record[3] == buf.memref_words()
    kern[1, 1](buf, 1)
    kern[1, 1](buf, 1)  # the specialised call reads the same record
    assert buf._accepted is record
    buf.shape = (2,)  # a new shape: checked again, recorded again
    run(buf, 1)
    assert buf._accepted is not record and buf._accepted[1] == (2,)
    cpu_device.synchronize()
    assert buf.numpy().tolist() == [4, 0]
    as_int32 = nova.to_device(np.zeros(8, np.int32), cpu_device)
    run32 = kern.prepare(as_int32, 1, grid=1, block=1)
    run32(buf, 5)  # an int64 buffer at an int32 launch: not taken from the record
    cpu_device.synchronize()
    assert buf.numpy().tolist() == [9, 0] and as_int32.numpy().sum() == 0
    buf._retype(np.int32, buf.shape)
    assert buf._accepted is None
    view = buf.view(np.int32, (2,))
    run32(view, 1)
    assert view._accepted is None
    buf.free()
    assert buf._accepted is None
    with pytest.raises(DeviceError, match="freed Buffer"):
        run(buf, 1)
    with pytest.raises(DeviceError, match="freed Buffer"):
        kern[1, 1](buf, 1)
