"""Graph capture and replay of compiled entries (`NovaModule.capture`): cpu always, cuda marked
gpu. The key property: replaying with fresh inputs gives fresh results."""

from __future__ import annotations

import numpy as np
import pytest
from async_programs import DEVICES, bundle

from nova.errors import ArgumentError, RuntimeFailure
from nova.runtime.selection import get_device

STEPS = """
// out = ((x * a) + 1) * 2, one kernel per step, on one stream (sync launches), then a
// gpu.alloc'ed scratch buffer returned through an async chain.
func.func @steps(%x: memref<?xf32>, %out: memref<?xf32>, %a: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    %r = arith.mulf %v, %a : f32
    memref.store %r, %out[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %out[%bx] : memref<?xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %out[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %out[%bx] : memref<?xf32>
    %two = arith.constant 2.0 : f32
    %r = arith.mulf %v, %two : f32
    memref.store %r, %out[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

func.func @loop(%x: memref<32xf32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %t0 = gpu.wait async
  %tn = scf.for %i = %c0 to %count step %c1 iter_args(%t = %t0) -> (!gpu.async.token) {
    %t1 = gpu.launch async [%t] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%tx] : memref<32xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %x[%tx] : memref<32xf32>
      gpu.terminator
    }
    scf.yield %t1 : !gpu.async.token
  }
  gpu.wait [%tn]
  return
}

func.func @checked(%x: memref<4xf32>, %ok: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t0 = gpu.wait async
  %t1 = gpu.launch async [%t0] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<4xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %x[%tx] : memref<4xf32>
    gpu.terminator
  }
  cf.assert %ok, "capture refused"
  gpu.wait [%t1]
  return
}

func.func @sum_of(%x: memref<4xf32>, %k: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<4xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %x[%tx] : memref<4xf32>
    gpu.terminator
  }
  %r = arith.addi %k, %c1 : index
  return %r : index
}
"""


# Polls before the spinning kernel gives up: it only gives up when the streams were serialized
# (a failure), so the limit bounds the time a failing run takes (GPU atomics are ~1 us apart).
_SPIN_LIMIT = {"cpu": 200_000_000, "cuda": 20_000_000}

@pytest.fixture(scope="module")
def programs() -> tuple[bytes, bytes]:
    return bundle(), bundle(STEPS, "graph_steps.mlir")


def _load(data: bytes, device: str):
    from nova.runtime.executor import load

    return load(data, device)


@pytest.mark.parametrize("device", DEVICES)
def test_replay_with_fresh_inputs_gives_fresh_results(programs, device: str) -> None:
    with _load(programs[1], device) as mod:
        x = np.arange(100, dtype=np.float32)
        out = np.zeros(100, np.float32)
        graph = mod.capture("steps", x, out, 3.0)
        assert graph.kernel_count == 3
        assert (out == 0).all()  # capturing records the work, it does not run it
        rng = np.random.default_rng(0)
        for _ in range(5):
            fresh = rng.standard_normal(100).astype(np.float32)
            result = np.zeros(100, np.float32)
            assert graph(fresh, result, 3.0) is None
            np.testing.assert_allclose(result, (fresh * 3 + 1) * 2, rtol=1e-6)
        graph.close()


@pytest.mark.parametrize("device", DEVICES)
def test_replay_in_place_on_capture_buffers(programs, device: str) -> None:
    dev = get_device(device)
    with _load(programs[1], device) as mod:
        x = dev.to_device(np.ones(64, np.float32))
        out = dev.to_device(np.zeros(64, np.float32))
        with mod.capture("steps", x, out, 0.5) as graph:
            assert graph.buffers[0] is x and graph.buffers[1] is out
            x.copy_from_host(np.full(64, 4, np.float32))
            graph.launch()
            dev.default_stream.synchronize()
            assert out.numpy().tolist() == [6.0] * 64
            other = dev.to_device(np.full(64, 2, np.float32))
            result = dev.to_device(np.zeros(64, np.float32))
            graph.replay(other, result, 0.5)  # device buffers copied in and back out
            assert result.numpy().tolist() == [4.0] * 64


@pytest.mark.parametrize("device", DEVICES)
def test_loop_of_async_launches(programs, device: str) -> None:
    with _load(programs[1], device) as mod:
        x = np.zeros(32, np.float32)
        graph = mod.capture("loop", x, 100)
        assert graph.kernel_count == 100
        for start in (0.0, 5.0):
            y = np.full(32, start, np.float32)
            graph(y, 100)
            assert y.tolist() == [start + 100] * 32


@pytest.mark.parametrize("device", DEVICES)
def test_streams_events_and_allocations_inside_the_graph(programs, device: str) -> None:
    with _load(programs[0], device) as mod:
        n = 50
        z = [np.zeros(n, np.float32) for _ in range(4)]
        fork_join = mod.capture("fork_join", *z)
        chain = mod.capture("chain", z[0], z[1], z[2])
        for k in range(3):
            x = np.arange(n, dtype=np.float32) * (k + 1)
            y, zz, w = (np.zeros(n, np.float32) for _ in range(3))
            fork_join(x, y, zz, w)
            np.testing.assert_array_equal(w, 3 * x + 1)
            out, fill = np.zeros(n, np.float32), np.zeros(n, np.float32)
            chain(x, out, fill)
            np.testing.assert_array_equal(out, 3 * x)
            assert (fill == 7).all()
        fork_join.close()
        chain.close()


@pytest.mark.parametrize("device", DEVICES)
def test_graph_keeps_streams_concurrent(programs, device: str) -> None:
    with _load(programs[0], device) as mod:
        flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
        with mod.capture("spin_pair", flag, out, _SPIN_LIMIT[device]) as graph:
            for _ in range(3):
                flag[:] = 0
                out[:] = 0
                graph(flag, out, _SPIN_LIMIT[device])
                assert out[0] == 1 and flag[0] == 1


@pytest.mark.parametrize("device", DEVICES)
def test_scalars_and_shapes_are_frozen(programs, device: str) -> None:
    with _load(programs[1], device) as mod:
        graph = mod.capture("steps", np.zeros(8, np.float32), np.zeros(8, np.float32), 2.0)
        with pytest.raises(ArgumentError, match=r"baked into the captured graph as 2\.0"):
            graph(np.zeros(8, np.float32), np.zeros(8, np.float32), 3.0)
        with pytest.raises(ArgumentError, match=r"shape \(8,\)"):
            graph(np.zeros(9, np.float32), np.zeros(8, np.float32), 2.0)
        with pytest.raises(ArgumentError, match="expected 3 argument"):
            graph(np.zeros(8, np.float32))
        scalar = mod.capture("sum_of", np.ones(4, np.float32), 41)
        x = np.full(4, 1.5, np.float32)
        assert scalar(x, 41) == 42  # the scalar result computed at capture
        assert x.tolist() == [3.0] * 4
        graph.close()
        with pytest.raises(RuntimeFailure, match="closed"):
            graph(np.zeros(8, np.float32), np.zeros(8, np.float32), 2.0)


def test_capture_of_an_unknown_entry(programs) -> None:
    with _load(programs[1], "cpu") as mod, pytest.raises(KeyError, match="no entry 'nope'"):
        mod.capture("nope")


def test_capture_rejects_wrong_arguments(programs) -> None:
    with _load(programs[1], "cpu") as mod:
        with pytest.raises(ArgumentError, match="expected 3 argument"):
            mod.capture("steps", np.zeros(4, np.float32))
        with pytest.raises(ArgumentError):
            mod.capture("steps", np.zeros(4, np.int32), np.zeros(4, np.float32), 1.0)


@pytest.mark.parametrize("device", DEVICES)
def test_a_failing_capture_raises_and_leaves_the_module_usable(programs, device: str) -> None:
    with _load(programs[1], device) as mod:
        with pytest.raises(RuntimeFailure, match="capture refused"):
            mod.capture("checked", np.ones(4, np.float32), False)
        x = np.ones(4, np.float32)
        mod.checked(x, True)
        assert x.tolist() == [2.0] * 4
        with mod.capture("checked", np.ones(4, np.float32), True) as graph:
            y = np.full(4, 3.0, np.float32)
            graph(y, True)
            assert y.tolist() == [6.0] * 4
