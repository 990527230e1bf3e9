"""Where a synchronous stream op's host wait goes (`gpu_ops._wait_site`): covered by the next
synchronous stream op, moved past the synchronous gpu.alloc/gpu.dealloc that follow it (so the
host enqueues them while the device works), or kept right after the op. Run against the
recording ABI, which also checks the bytes that moved."""

from __future__ import annotations

import ctypes

import numpy as np
from host_trace import HostJit, TraceRuntime, memref_of

from nova.backends.host.lower import lower_host
from nova.ir.parser import parse_mlir

SYNC = "nova_rt_stream_synchronize"


def run(body: str, fail: dict[str, int] | None = None) -> tuple[int, TraceRuntime, np.ndarray]:
    source = f"""
func.func @f(%h: memref<4xf32>) -> f32 {{
  %c0 = arith.constant 0 : index
{body}
}}
"""
    lowering = lower_host(parse_mlir(source, "test.mlir"))
    runtime = TraceRuntime(fail=fail or {})
    engine = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    host = np.arange(4, dtype=np.float32)
    result = ctypes.c_float()
    return engine.call("f", [memref_of(host)], [result]), runtime, host


TWO_FREES = """
  %a = gpu.alloc () : memref<4xf32>
  %b = gpu.alloc () : memref<4xf32>
  gpu.memcpy %a, %h : memref<4xf32>, memref<4xf32>
  gpu.memcpy %b, %a : memref<4xf32>, memref<4xf32>
  gpu.memcpy %h, %b : memref<4xf32>, memref<4xf32>
  gpu.dealloc %a : memref<4xf32>
  %one = arith.constant 1.0 : f32
  gpu.dealloc %b : memref<4xf32>
{tail}
"""


def test_wait_moves_past_the_trailing_frees() -> None:
    status, rt, host = run(TWO_FREES.format(tail="  return %one : f32"))
    assert status == 0
    np.testing.assert_array_equal(host, np.arange(4, dtype=np.float32))
    assert rt.names() == ["nova_rt_mem_alloc", "nova_rt_mem_alloc", "nova_rt_memcpy",
                          "nova_rt_memcpy", "nova_rt_memcpy", "nova_rt_mem_free",
                          "nova_rt_mem_free", SYNC]
    assert rt.of(SYNC)[0].arg("stream") == 0


def test_wait_stays_before_a_host_load() -> None:
    """The wait moves past the frees but not past a host access of memory."""
    tail = """  %v = memref.load %h[%c0] : memref<4xf32>
  gpu.memcpy %h, %h : memref<4xf32>, memref<4xf32>
  return %v : f32"""
    status, rt, _ = run(TWO_FREES.format(tail=tail))
    assert status == 0
    assert rt.names()[5:] == ["nova_rt_mem_free", "nova_rt_mem_free", SYNC,
                              "nova_rt_memcpy", SYNC]


def test_next_sync_op_after_the_frees_covers_the_wait() -> None:
    tail = """  gpu.memset %h, %one : memref<4xf32>, f32
  return %one : f32"""
    status, rt, host = run(TWO_FREES.format(tail=tail))
    assert status == 0
    np.testing.assert_array_equal(host, np.ones(4, np.float32))
    assert rt.names()[5:] == ["nova_rt_mem_free", "nova_rt_mem_free", "nova_rt_memset32", SYNC]


def test_wait_moves_past_an_allocation_too() -> None:
    body = """
  gpu.memset %h, %c : memref<4xf32>, f32
  %d = gpu.alloc () : memref<4xf32>
  %t = gpu.wait async
  %t2 = gpu.dealloc async [%t] %d : memref<4xf32>
  gpu.wait [%t2]
  return %c : f32"""
    status, rt, host = run("  %c = arith.constant 2.0 : f32" + body)
    assert status == 0
    np.testing.assert_array_equal(host, np.full(4, 2.0, np.float32))
    # the async dealloc is not host-invisible: the run (memset, alloc) ends there
    assert rt.names() == ["nova_rt_memset32", "nova_rt_mem_alloc", SYNC,
                          "nova_rt_stream_create", "nova_rt_mem_free", SYNC,
                          "nova_rt_stream_destroy"]


def test_failed_free_before_the_moved_wait_raises() -> None:
    """A free that fails fails the call at once (the wait it carried never runs)."""
    status, rt, _ = run(TWO_FREES.format(tail="  return %one : f32"),
                        fail={"nova_rt_mem_free": 1})
    assert status == 1
    assert rt.names()[-1] == "nova_rt_mem_free"
    assert SYNC not in rt.names()


def test_failed_wait_after_the_frees_raises() -> None:
    status, rt, _ = run(TWO_FREES.format(tail="  return %one : f32"), fail={SYNC: 1})
    assert status == 1
    assert rt.names()[-3:] == ["nova_rt_mem_free", "nova_rt_mem_free", SYNC]
