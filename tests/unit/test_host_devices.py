"""Compiled host code driving real devices through the runtime ABI: the stream/event protocol of
async tokens, device fills and copies, joins and waits, and failures unwinding into NovaErrors.
Runs on the CPU device everywhere and on CUDA where a GPU is usable (marked `gpu`)."""

from __future__ import annotations

import numpy as np
import pytest

from nova.errors import OutOfMemoryError, RuntimeFailure
from nova.runtime.executor import NovaModule
from nova.runtime.selection import cuda_status

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")]),
]

PIPELINE = """
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @scale(%a: memref<?xf32>, %s: f32, %n: index) kernel {
      %b = gpu.block_id x
      %bd = gpu.block_dim x
      %t = gpu.thread_id x
      %o = arith.muli %b, %bd : index
      %i = arith.addi %o, %t : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %a[%i] : memref<?xf32>
        %w = arith.mulf %v, %s : f32
        memref.store %w, %a[%i] : memref<?xf32>
      }
      gpu.return
    }
  }

  // Two streams: %d is filled on one while %h is copied to %e on another; each launch waits for
  // both; a join collects them; copies back run on the joined stream.
  func.func @pipeline(%h: memref<?xf32>, %fill: f32, %s: f32) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %h, %c0 : memref<?xf32>
    %nb = arith.ceildivui %n, %c64 : index
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    %t2 = gpu.memset async [%t1] %d, %fill : memref<?xf32>, f32
    %t3 = gpu.wait async
    %e, %t4 = gpu.alloc async [%t3] (%n) : memref<?xf32>
    %t5 = gpu.memcpy async [%t4] %e, %h : memref<?xf32>, memref<?xf32>
    %t6 = gpu.launch_func async [%t2, %t5] @k::@scale blocks in (%nb, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%d : memref<?xf32>, %s : f32, %n : index)
    %t7 = gpu.launch_func async [%t5, %t6] @k::@scale blocks in (%nb, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%e : memref<?xf32>, %s : f32, %n : index)
    %t8 = gpu.wait async [%t6, %t7]
    %out = memref.alloc(%n) : memref<?xf32>
    %tmp = memref.alloc(%n) : memref<?xf32>
    %t9 = gpu.memcpy async [%t8] %out, %d : memref<?xf32>, memref<?xf32>
    %t10 = gpu.memcpy async [%t9] %tmp, %e : memref<?xf32>, memref<?xf32>
    %t11 = gpu.dealloc async [%t10] %d : memref<?xf32>
    %t12 = gpu.dealloc async [%t11] %e : memref<?xf32>
    gpu.wait [%t12, %t0, %t3, %t8]
    scf.for %i = %c0 to %n step %c1 {
      %a = memref.load %out[%i] : memref<?xf32>
      %b = memref.load %tmp[%i] : memref<?xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %out[%i] : memref<?xf32>
    }
    memref.dealloc %tmp : memref<?xf32>
    return %out : memref<?xf32>
  }

  // Synchronous ops on the default stream, a host-shared buffer the host reads directly.
  func.func @shared(%n: index, %v: i32) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = gpu.alloc host_shared (%n) : memref<?xi32>
    gpu.memset %m, %v : memref<?xi32>, i32
    %last = arith.subi %n, %c1 : index
    %x = memref.load %m[%last] : memref<?xi32>
    gpu.dealloc %m : memref<?xi32>
    return %x : i32
  }

  func.func @huge(%n: index) {
    %d = gpu.alloc (%n) : memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return
  }

  func.func @check(%n: index) -> index {
    %c0 = arith.constant 0 : index
    %ok = arith.cmpi sgt, %n, %c0 : index
    cf.assert %ok, "n must be positive"
    return %n : index
  }
}
"""


@pytest.fixture(scope="module", params=DEVICES)
def program(request: pytest.FixtureRequest) -> NovaModule:
    from nova.compiler.driver import compile as nova_compile

    return nova_compile(PIPELINE, device=request.param)


def test_streams_events_and_joins_order_the_work(program: NovaModule) -> None:
    host = np.arange(1000, dtype=np.float32)
    result = program.pipeline(host, np.float32(1.5), np.float32(2.0))
    np.testing.assert_array_equal(result, 3.0 + 2.0 * host)
    np.testing.assert_array_equal(host, np.arange(1000, dtype=np.float32))  # input untouched


def test_host_shared_memory_is_visible_after_a_sync_fill(program: NovaModule) -> None:
    assert program.shared(37, np.int32(-9)) == -9


def test_failed_allocation_raises_and_the_program_stays_usable(program: NovaModule) -> None:
    with pytest.raises(OutOfMemoryError):
        program.huge(1 << 50)
    assert program.shared(4, np.int32(5)) == 5


def test_host_assert_raises_with_its_message(program: NovaModule) -> None:
    with pytest.raises(RuntimeFailure, match="n must be positive"):
        program.check(-1)
    assert program.check(3) == 3
