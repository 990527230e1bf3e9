"""Automatic graphs (nova.runtime.autograph): repeated identical calls of a replayable entry run
as one recorded graph. cpu (automatic graphs switched on with NOVA_AUTO_GRAPHS=1) always, cuda
(on by default) marked gpu. The key property: every call's results equal the direct calls' and
NumPy's, whatever changes between calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from async_programs import DEVICES

import nova
from nova.errors import RuntimeFailure
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
def program(device: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NOVA_AUTO_GRAPHS", "1")
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
    recordings, replays = program.axpy.graph_counts()
    # a run of identical calls records once its key repeats and replays from then on: new
    # scalars are seen on their first call (5 -> 2 direct, then 3 -> 1 direct), new buffers
    # are bound by the first call and seen by the second (4 -> 2 direct); the last call binds
    assert recordings == 3
    assert replays == 3 + 3 + 2


@pytest.mark.parametrize("device", DEVICES)
def test_loops_steered_by_scalars_and_scalar_results(device: str, program) -> None:
    (x,) = _buffers(device, np.zeros(16, np.float32))
    total = 0
    for count in [3, 3, 3, 3, 5, 5, 5, 0, 0, 0]:
        assert program.bump(x, count) == 16 * count
        total += count
    program.synchronize()  # @bump leaves its work in flight: its replays do not wait either
    np.testing.assert_array_equal(x.numpy(), np.full(16, total, np.float32))
    assert program.bump.graph_counts() == (3, 2 + 2 + 2)


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
    for round_ in range(20):  # a new recording every 3 calls: the old one is released
        buf = x if round_ % 2 else other
        for _ in range(3):
            program.axpy(buf, y, 1.0)
    dev.synchronize()
    assert dev.pool.stats().bytes_in_use == before.bytes_in_use
    np.testing.assert_array_equal(y.numpy(), np.full(256, 63, np.float32))


def test_numpy_arguments_never_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_AUTO_GRAPHS", "1")
    with nova.compile(PROGRAM, device="cpu") as mod:
        x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
        for _ in range(4):
            mod.axpy(x, y, 1.0)
        np.testing.assert_array_equal(y, np.full(8, 4, np.float32))
        assert mod.axpy.graph_counts() == (0, 0)


@pytest.mark.parametrize("setting, expected", [("0", False), ("1", True), (None, "device")])
@pytest.mark.parametrize("device", DEVICES)
def test_the_setting(device: str, setting: str | None, expected: object,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    if setting is None:
        monkeypatch.delenv("NOVA_AUTO_GRAPHS", raising=False)
        expected = get_device(device).auto_graphs
    else:
        monkeypatch.setenv("NOVA_AUTO_GRAPHS", setting)
    with nova.compile(PROGRAM, device=device) as mod:
        assert mod.axpy.auto_graphs is expected
        assert not mod.single.auto_graphs
    assert get_device("cpu").auto_graphs is False


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
