"""Automatic graphs (nova.runtime.autograph): repeated identical calls of a replayable entry run
as one recorded graph. cpu (automatic graphs switched on: config auto_graphs, NOVA_AUTO_GRAPHS)
always, cuda (on by default) marked gpu. The key property: every call's results equal the direct
calls' and NumPy's, whatever changes between calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from async_programs import DEVICES

import nova
from nova import config
from nova.errors import ArgumentError, RuntimeFailure
from nova.runtime.selection import cuda_status, get_device

PROGRAM = """
module attributes {gpu.container_module} {
  // y = a * x + y through a gpu.alloc'ed copy of x: three stream operations, one wait
  func.func @axpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %d[%bx] : memref<?xf32>
      %w = memref.load %y[%bx] : memref<?xf32>
      %p = arith.mulf %v, %a : f32
      %r = arith.addf %p, %w : f32
      memref.store %r, %y[%bx] : memref<?xf32>
      gpu.terminator
    }
    gpu.dealloc %d : memref<?xf32>
    return
  }

  // x += 1, `count` times (a loop of launches steered by a scalar), no wait at the end
  func.func @bump(%x: memref<?xf32>, %count: index) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %t0 = gpu.wait async
    %tn = scf.for %i = %c0 to %count step %c1 iter_args(%t = %t0) -> (!gpu.async.token) {
      %t1 = gpu.launch async [%t] blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        %v = memref.load %x[%bx] : memref<?xf32>
        %one = arith.constant 1.0 : f32
        %r = arith.addf %v, %one : f32
        memref.store %r, %x[%bx] : memref<?xf32>
        gpu.terminator
      }
      scf.yield %t1 : !gpu.async.token
    }
    %total = arith.muli %n, %count : index
    return %total : index
  }

  // two launches made by a private helper: calls of module functions are replayable too
  func.func private @add_one(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%bx] : memref<?xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%bx] : memref<?xf32>
      gpu.terminator
    }
    return
  }
  func.func @add_two(%x: memref<?xf32>) {
    call @add_one(%x) : (memref<?xf32>) -> ()
    call @add_one(%x) : (memref<?xf32>) -> ()
    return
  }

  // one launch: nothing to batch, always runs directly
  func.func @single(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%bx] : memref<?xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%bx] : memref<?xf32>
      gpu.terminator
    }
    return
  }
}
"""


@pytest.fixture
def program(device: str):
    with config.scoped(auto_graphs=True):  # read when the program loads
        mod = nova.compile(PROGRAM, device=device)
    yield mod
    mod.close()


def _buffers(device: str, *arrays: np.ndarray) -> list:
    dev = get_device(device)
    return [dev.to_device(a) for a in arrays]


@pytest.mark.parametrize("device", DEVICES)
def test_replayed_calls_match_numpy_through_every_change(device: str, program) -> None:
    rng = np.random.default_rng(7)
    x0, y0, x1 = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    x, y, other = _buffers(device, x0, y0, x1)
    expect_y = y0.copy()
    assert program.axpy.auto_graphs
    calls = [(x, x0, 2.0)] * 5 + [(x, x0, -0.5)] * 4 + [(other, x1, -0.5)] * 4 + [(x, x0, 2.0)]
    for buf, host, a in calls:
        program.axpy(buf, y, a)
        expect_y = (np.float32(a) * host + expect_y).astype(np.float32)
        np.testing.assert_array_equal(y.numpy(), expect_y)
    # the first run records on its third call (the first binds the Buffers, the second starts
    # the run) and replays twice more; released after 3 replays it did not pay for itself, so
    # the plan now waits for runs longer than 4 calls, which the later runs are not
    assert program.axpy.graph_counts() == (1, 3)


@pytest.mark.parametrize("device", DEVICES)
def test_long_runs_keep_recording_short_ones_back_off(device: str, program) -> None:
    from nova.runtime.autograph import MAX_THRESHOLD, PAYBACK_REPLAYS

    x, y = _buffers(device, np.ones(8, np.float32), np.zeros(8, np.float32))
    total = 0.0
    for a in [1.0, 2.0]:  # two runs that pay for their recordings
        for _ in range(PAYBACK_REPLAYS + 2):
            program.axpy(x, y, a)
            total += a
    # run 1: bind, count, record + 65 replays; run 2: count, record + 65 replays
    assert program.axpy.graph_counts() == (2, 2 * (PAYBACK_REPLAYS - 1) + 1 + 2)
    (state,) = [p.graph_state for p in program.axpy._plans]
    assert state.threshold == 1
    for _ in range(6):  # runs of 3 identical calls: the first records, then the plan backs off
        for a in [3.0, 4.0]:
            for _ in range(3):
                program.axpy(x, y, a)
                total += a
    recordings, _ = program.axpy.graph_counts()
    assert recordings == 3
    assert 4 <= state.threshold <= MAX_THRESHOLD
    np.testing.assert_array_equal(y.numpy(), np.full(8, total, np.float32))


RECIP = """
module attributes {gpu.container_module} {
  // y = 1 / a after a fill: the sign of a zero scalar decides the result
  func.func @recip(%y: memref<?xf32>, %a: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %y, %c0 : memref<?xf32>
    gpu.memset %y, %zero : memref<?xf32>, f32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %one = arith.constant 1.0 : f32
      %r = arith.divf %one, %a : f32
      %v = memref.load %y[%bx] : memref<?xf32>
      %w = arith.addf %v, %r : f32
      memref.store %w, %y[%bx] : memref<?xf32>
      gpu.terminator
    }
    return
  }
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_scalars_compare_by_their_bits(device: str) -> None:
    with config.scoped(auto_graphs=True):
        mod = nova.compile(RECIP, device=device)
    with mod:
        (y,) = _buffers(device, np.zeros(4, np.float32))
        for a, expected in [(0.0, np.inf)] * 3 + [(-0.0, -np.inf)] + [(np.nan, np.nan)] * 8:
            mod.recip(y, a)
            np.testing.assert_array_equal(y.numpy(), np.full(4, expected, np.float32))
        # +0.0 recorded on the third call; -0.0 ended that run (and backed off to runs longer
        # than 4); NaN equals itself bit for bit, so its run of 8 records too
        recordings, _ = mod.recip.graph_counts()
        assert recordings == 2


@pytest.mark.parametrize("device", DEVICES)
def test_loops_steered_by_scalars_and_scalar_results(device: str, program) -> None:
    (x,) = _buffers(device, np.zeros(16, np.float32))
    total = 0
    for count in [3, 3, 3, 3, 5, 5, 5, 0, 0, 0]:
        assert program.bump(x, count) == 16 * count
        total += count
    program.synchronize()  # @bump leaves its work in flight: its replays do not wait either
    np.testing.assert_array_equal(x.numpy(), np.full(16, total, np.float32))
    if device == "cuda":  # one recording (third call), two replays, then the plan backs off
        assert program.bump.graph_counts() == (1, 2)
        assert program.bump.auto_graphs
    else:  # its chain forks a stream: the cpu device runs it directly from then on
        assert program.bump.graph_counts() == (0, 0)
        assert not program.bump.auto_graphs


@pytest.mark.parametrize("device", DEVICES)
def test_calls_of_module_functions_replay(device: str, program) -> None:
    (x,) = _buffers(device, np.zeros(8, np.float32))
    assert program.add_two.auto_graphs
    for _ in range(6):
        program.add_two(x)
    np.testing.assert_array_equal(x.numpy(), np.full(8, 12, np.float32))
    assert program.add_two.graph_counts() == (1, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_a_single_operation_entry_runs_directly(device: str, program) -> None:
    (x,) = _buffers(device, np.zeros(8, np.float32))
    assert not program.single.auto_graphs
    for _ in range(4):
        program.single(x)
    np.testing.assert_array_equal(x.numpy(), np.full(8, 4, np.float32))
    assert program.single.graph_counts() == (0, 0)


@pytest.mark.parametrize("device", DEVICES)
def test_switching_off_drops_recordings_and_runs_directly(device: str, program) -> None:
    x, y = _buffers(device, np.ones(8, np.float32), np.zeros(8, np.float32))
    for _ in range(3):
        program.axpy(x, y, 1.0)
    assert program.axpy.graph_counts() == (1, 1)
    program.axpy.auto_graphs = False
    assert program.axpy.graph_counts() == (1, 1)  # counted, but the recording is released
    assert all(p.graph_state is None or p.graph_state.graph is None
               for p in program.axpy._plans)
    for _ in range(3):
        program.axpy(x, y, 1.0)
    np.testing.assert_array_equal(y.numpy(), np.full(8, 6, np.float32))
    assert program.axpy.graph_counts() == (1, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_a_failed_recording_falls_back_to_direct_calls(device: str, program,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    dev = get_device(device)

    def refuse(request: object) -> None:
        raise RuntimeFailure("recording refused by the test")

    monkeypatch.setattr(dev, "record_graph", refuse)
    x, y = _buffers(device, np.ones(8, np.float32), np.zeros(8, np.float32))
    for _ in range(4):
        program.axpy(x, y, 2.0)
    np.testing.assert_array_equal(y.numpy(), np.full(8, 8, np.float32))
    assert not program.axpy.auto_graphs
    assert program.axpy.graph_counts() == (0, 0)


@pytest.mark.parametrize("device", DEVICES)
def test_memory_stays_flat_across_recordings(device: str, program) -> None:
    dev = get_device(device)
    x, y, other = _buffers(device, np.ones(256, np.float32), np.zeros(256, np.float32),
                           np.ones(256, np.float32))
    for _ in range(3):
        program.axpy(x, y, 1.0)
    dev.synchronize()
    before = dev.pool.stats()
    for round_ in range(20):  # new Buffers every 3 calls: each recording is released
        buf = x if round_ % 2 else other
        for _ in range(3):
            program.axpy(buf, y, 1.0)
    dev.synchronize()
    assert dev.pool.stats().bytes_in_use == before.bytes_in_use
    np.testing.assert_array_equal(y.numpy(), np.full(256, 63, np.float32))


def test_numpy_arguments_never_record() -> None:
    with config.scoped(auto_graphs=True):
        mod = nova.compile(PROGRAM, device="cpu")
    with mod:
        x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
        for _ in range(4):
            mod.axpy(x, y, 1.0)
        np.testing.assert_array_equal(y, np.full(8, 4, np.float32))
        assert mod.axpy.graph_counts() == (0, 0)


@pytest.mark.parametrize("setting", [False, True, None])
@pytest.mark.parametrize("device", DEVICES)
def test_the_setting(device: str, setting: bool | None) -> None:
    expected = get_device(device).auto_graphs if setting is None else setting
    with config.scoped(auto_graphs=setting):
        mod = nova.compile(PROGRAM, device=device)
    with mod:
        assert mod.axpy.auto_graphs is expected
        assert not mod.single.auto_graphs
        mod.axpy.auto_graphs = True  # on for one entry, whatever the module's setting
        assert mod.axpy.auto_graphs
        with pytest.raises(ArgumentError, match=r"@single cannot run as an automatic graph"):
            mod.single.auto_graphs = True
    assert get_device("cpu").auto_graphs is False


@pytest.mark.parametrize("value, expected", [
    ("", None), ("1", True), ("on", True), ("yes", True), ("TRUE", True),
    ("0", False), ("off", False), ("no", False), ("False", False), (" 0 ", False)])
def test_nova_auto_graphs_spellings(value: str, expected: bool | None) -> None:
    assert config.Config.from_environ({"NOVA_AUTO_GRAPHS": value}).auto_graphs is expected
    assert config.Config.from_environ({}).auto_graphs is None


CHECKED = """
module attributes {gpu.container_module} {
  // a host-side check of a scalar before two launches (x += k, twice)
  func.func @add_k(%x: memref<?xf32>, %k: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %ok = arith.cmpf one, %k, %zero : f32
    cf.assert %ok, "k must not be zero"
    %n = memref.dim %x, %c0 : memref<?xf32>
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%bx] : memref<?xf32>
      %w = arith.addf %v, %k : f32
      memref.store %w, %d[%bx] : memref<?xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %d[%bx] : memref<?xf32>
      %w = arith.addf %v, %k : f32
      memref.store %w, %x[%bx] : memref<?xf32>
      gpu.terminator
    }
    gpu.dealloc %d : memref<?xf32>
    return
  }
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_the_host_codes_own_errors_leave_automatic_graphs_on(device: str) -> None:
    with config.scoped(auto_graphs=True):
        mod = nova.compile(CHECKED, device=device)
    with mod:
        x = get_device(device).to_device(np.zeros(256, np.float32))
        for _ in range(4):
            with pytest.raises(nova.errors.NovaError, match="k must not be zero"):
                mod.add_k(x, 0.0)
        assert mod.add_k.auto_graphs
        for _ in range(5):
            mod.add_k(x, 1.0)
        np.testing.assert_array_equal(x.numpy(), np.full(256, 10, np.float32))
        # the failed calls bound x (and ended their runs): the first good call starts a run,
        # the second records
        assert mod.add_k.graph_counts() == (1, 4)
        dev = get_device(device)
        dev.synchronize()
        in_use = dev.pool.stats().bytes_in_use
        mod.release_graphs()  # the recording's gpu.alloc memory goes with it
        dev.synchronize()
        mod.release_graphs()  # closes what the device has finished
        assert not mod.add_k._retired
        assert dev.pool.stats().bytes_in_use <= in_use


FAULT = """
module attributes {gpu.container_module} {
  // counts calls in x[0] and fails an assertion on the call that finds 5 there
  func.func @count(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %five = arith.constant 5.0 : f32
    %one = arith.constant 1.0 : f32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%c0] : memref<?xf32>
      %ok = arith.cmpf olt, %v, %five : f32
      cf.assert %ok, "count reached five"
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%c0] : memref<?xf32>
      %w = arith.addf %v, %one : f32
      memref.store %w, %x[%c0] : memref<?xf32>
      gpu.terminator
    }
    return
  }
}
"""

FAULT_SCRIPT = """
import sys
import numpy as np
import nova
from nova.errors import NovaError
mod = nova.compile(open(sys.argv[1]).read(), device=sys.argv[2])
x = mod.device.to_device(np.zeros(4, np.float32))
try:
    for i in range(8):
        mod.count(x)
        print("call", i, "ok", flush=True)
except NovaError as exc:
    print("recordings, replays:", mod.count.graph_counts(), flush=True)
    print(type(exc).__name__ + ":", exc, flush=True)
    sys.exit(3)
"""


FAULT_ASYNC = FAULT.replace("@count", "@count_async").replace(
    "    gpu.launch blocks", "    %t1 = gpu.launch async blocks", 1).replace(
    "    gpu.launch blocks", "    %t2 = gpu.launch async [%t1] blocks", 1)
"""The same two launches, each async with its token left unwaited: no host wait in the entry,
so the fault is found by a later call or by the program's synchronize."""

FAULT_ASYNC_SCRIPT = FAULT_SCRIPT.replace("mod.count(x)", "mod.count_async(x)").replace(
    'print("call", i, "ok", flush=True)', 'print("call", i, "ok", flush=True)\n    '
    'mod.synchronize() if i == 7 else None').replace("mod.count.graph_counts",
                                                      "mod.count_async.graph_counts")


@pytest.mark.gpu
def test_a_fault_in_an_unwaited_replay_names_the_graph(tmp_path: Path) -> None:
    if not cuda_status().usable:
        pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    prog = tmp_path / "count.mlir"
    prog.write_text(FAULT_ASYNC)
    script = tmp_path / "run.py"
    script.write_text(FAULT_ASYNC_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(prog), "cuda"], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**__import__("os").environ, "NOVA_AUTO_GRAPHS": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert "Traceback" not in done.stderr, output
    assert "count reached five" in output, output
    assert "count_async (automatic graph)" in done.stdout, output


@pytest.mark.parametrize("device", DEVICES)
def test_a_fault_in_a_replay_is_reported_at_its_wait(tmp_path: Path, device: str) -> None:
    if device == "cuda" and not cuda_status().usable:
        pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    prog = tmp_path / "count.mlir"
    prog.write_text(FAULT)
    script = tmp_path / "run.py"
    script.write_text(FAULT_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(prog), device], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**__import__("os").environ, "NOVA_AUTO_GRAPHS": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert "call 4 ok" in done.stdout and "call 5 ok" not in done.stdout, output
    assert "Traceback" not in done.stderr, output
    assert "count reached five" in output, output
    if device == "cuda":
        assert "count (automatic graph)" in done.stdout, output
    else:
        assert "KernelFault" in done.stdout, output
