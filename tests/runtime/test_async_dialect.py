"""The `async` dialect end to end: a compiled program whose execute regions pass device buffers
and scalars as `!async.value`s, use groups, and keep GPU tokens inside a region computes what
the regions compute in program order (async-to-sync, docs/async.md). Runs on the cpu device
always and on cuda when a GPU is usable (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from async_programs import DEVICES

import nova

SOURCE = """
func.func @scale(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %g = async.create_group %c2 : !async.group
  %t0, %d = async.execute -> !async.value<memref<?xf32>> {
    %w = gpu.wait async
    %b, %t1 = gpu.alloc async [%w] (%n) : memref<?xf32>
    %t2 = gpu.memcpy async [%t1] %b, %x : memref<?xf32>, memref<?xf32>
    gpu.wait [%t2]
    async.yield %b : memref<?xf32>
  }
  %i0 = async.add_to_group %t0, %g : !async.token
  %t3, %s = async.execute -> !async.value<f32> {
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %a, %two : f32
    async.yield %m : f32
  }
  %t4 = async.execute [%t0, %t3] (%d as %b: !async.value<memref<?xf32>>,
                                  %s as %k: !async.value<f32>) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      %v = memref.load %b[%tx] : memref<?xf32>
      %p = arith.mulf %v, %k : f32
      memref.store %p, %y[%tx] : memref<?xf32>
      gpu.terminator
    }
    async.yield
  }
  %i1 = async.add_to_group %t4, %g : !async.token
  async.await_all %g
  %t5 = async.execute [%t4] (%d as %b: !async.value<memref<?xf32>>) {
    gpu.dealloc %b : memref<?xf32>
    async.yield
  }
  async.await %t5 : !async.token
  return
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_execute_regions_compute_in_program_order(device: str) -> None:
    with nova.compile(SOURCE, device=device) as mod:
        for n in (1, 5, 64):
            x = np.arange(n, dtype=np.float32) - 2
            y = np.full(n, -1, np.float32)
            mod.scale(x, y, np.float32(1.5))
            np.testing.assert_array_equal(y, x * 3)
