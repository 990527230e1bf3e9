"""Closing a module while another thread is inside one of its calls: the call finishes, later
calls raise, nothing is released under the running program."""

from __future__ import annotations

import threading
import time

import numpy as np

import nova
from nova.errors import RuntimeFailure

SLOW = """
func.func @slow(%x: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = arith.constant 100000 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {
      %b = arith.addi %a, %c1 : index
      scf.yield %b : index
    }
    %f = arith.index_cast %r : index to i64
    %g = arith.sitofp %f : i64 to f32
    memref.store %g, %x[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}
"""


def test_close_waits_for_calls_in_flight_and_later_calls_raise(device):
    mod = nova.compile(SLOW, device=device)
    x = device.to_device(np.zeros(64, np.float32))
    mod.slow(x)  # compiled, loaded and warm
    outcomes: list[str] = []
    started = threading.Event()

    def caller() -> None:
        try:
            for _ in range(50):
                started.set()
                mod.slow(x)
            outcomes.append("finished")
        except RuntimeFailure as exc:
            outcomes.append(str(exc))

    thread = threading.Thread(target=caller)
    thread.start()
    started.wait()
    time.sleep(0.01)
    mod.close()
    thread.join()
    assert len(outcomes) == 1
    assert outcomes[0] == "finished" or outcomes[0].endswith("was closed")
    np.testing.assert_array_equal(x.numpy(), np.full(64, 100000, np.float32))
