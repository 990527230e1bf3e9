"""Async tokens a program never waits for: the streams behind them join the program's default
stream when the entry returns (no stream leaks per call; calls stay stream-ordered)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nova

FIRE_AND_RETURN = """
func.func @bump(%x: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<64xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %x[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}

func.func @double_then_bump(%x: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t0 = gpu.wait async
  %t1 = gpu.launch async [%t0] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<64xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %x[%tx] : memref<64xf32>
    gpu.terminator
  }
  %t2 = gpu.launch async [%t1] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<64xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %x[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}
"""


def _stream_workers() -> int:
    """Live worker threads of cpu streams (one per open stream)."""
    return sum(t.name.startswith("nova-cpu stream") for t in threading.enumerate())


def test_unwaited_launches_are_ordered_across_calls_and_leak_nothing(device):
    mod = nova.compile(FIRE_AND_RETURN, device=device)
    x = device.to_device(np.zeros(64, np.float32))
    workers_before = _stream_workers()
    for _ in range(200):
        mod.bump(x)  # returns without waiting; the next call's stream follows this one's
    mod.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.full(64, 200, np.float32))
    abi = mod._abi
    if device.kind == "cpu":
        assert not abi._streams and not abi._owners and not abi._retired
        # a leak would leave ~200 (one per call); closing workers may take a moment to exit
        assert _stream_workers() <= workers_before + 10
    mod.close()


def test_a_chain_left_in_flight_is_done_before_the_next_call_and_read_back(device):
    mod = nova.compile(FIRE_AND_RETURN, device=device)
    x = device.to_device(np.ones(64, np.float32))
    expect = np.ones(64, np.float32)
    for _ in range(5):
        mod.double_then_bump(x)
        expect = expect * 2 + 1
    np.testing.assert_array_equal(x.numpy(), expect)  # read on the default stream: ordered
    mod.close()


def test_a_fault_in_work_left_in_flight_is_reported_by_synchronize(cpu_device):
    program = """
    func.func @oops(%x: memref<4xi32>) {
      %c1 = arith.constant 1 : index
      %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        %v = memref.load %x[%tx] : memref<4xi32>
        %zero = arith.constant 0 : i32
        %ok = arith.cmpi eq, %v, %zero : i32
        cf.assert %ok, "left in flight and failed"
        gpu.terminator
      }
      return
    }
    """
    mod = nova.compile(program, device=cpu_device)
    x = cpu_device.to_device(np.ones(4, np.int32))
    mod.oops(x)
    with pytest.raises(nova.NovaError, match="left in flight and failed"):
        mod.synchronize()
    mod.close()


def test_threads_calling_one_program_keep_their_own_streams(cpu_device):
    # eight threads, each on its own buffer, calling the same program: every call's stream is
    # joined by the thread that made it and the bookkeeping stays consistent (it raced before)
    mod = nova.compile(FIRE_AND_RETURN, device=cpu_device)
    bufs = [cpu_device.to_device(np.zeros(64, np.float32)) for _ in range(8)]
    errors: list[str] = []

    def work(buf) -> None:
        try:
            for _ in range(100):
                mod.bump(buf)
        except Exception as exc:  # collected: an assertion in a thread would be lost
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(b,)) for b in bufs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mod.synchronize()
    assert errors == []
    for buf in bufs:
        np.testing.assert_array_equal(buf.numpy(), np.full(64, 100, np.float32))
    assert not mod._abi._streams and not mod._abi._retired
    mod.close()
