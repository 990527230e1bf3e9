"""Host lowering of memref.alloc checks the allocation: a null malloc result for a nonzero size,
a negative dynamic size, or a byte size overflowing i64 calls `nova_rt_host_alloc_failed(size)`
(size -1 for the last two) and unwinds; nothing after the alloc runs. Static shapes get only the
null check. Traced through the host JIT (no device)."""

from __future__ import annotations

import ctypes

import pytest
from host_trace import HostJit, TraceRuntime

from nova.backends.host.lower import lower_host
from nova.ir.parser import parse_mlir

SOURCE = """
func.func private @printMemrefF32(memref<*xf32>)
func.func @alloc(%n: index, %k: index) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %m = memref.alloc(%n, %k) : memref<?x?xf32>
  memref.store %f, %m[%c0, %c0] : memref<?x?xf32>
  %u = memref.cast %m : memref<?x?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %m : memref<?x?xf32>
  return
}
"""


def run(n: int, k: int) -> TraceRuntime:
    lowering = lower_host(parse_mlir(SOURCE, "alloc.mlir"))
    runtime = TraceRuntime()
    engine = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    status = engine.call("alloc", [ctypes.c_int64(n), ctypes.c_int64(k)])
    assert status == (0 if runtime.names() == ["nova_rt_print_memref_f32"] else 1)
    return runtime


@pytest.mark.parametrize(("n", "k", "reported"), [
    pytest.param(2**40, 2**20, 2**62, id="malloc-returns-null"),
    pytest.param(-1, 4, -1, id="negative"),
    pytest.param(-2, -3, -1, id="negatives-whose-product-is-positive"),
    pytest.param(2**31, 2**31, -1, id="byte-size-overflows"),
])
def test_failed_alloc_reports_its_size_and_unwinds(n: int, k: int, reported: int) -> None:
    runtime = run(n, k)
    assert runtime.names() == ["nova_rt_host_alloc_failed"]  # the store and print never ran
    assert runtime.calls[0].arg("size") == reported


def test_a_valid_alloc_runs() -> None:
    assert run(2, 3).names() == ["nova_rt_print_memref_f32"]


def test_static_shapes_get_only_the_null_check() -> None:
    source = """
func.func @f() -> f32 {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<4xf32>
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}"""
    text = str(lower_host(parse_mlir(source, "static.mlir")).llvm_module)
    assert "with.overflow" not in text
    assert text.count('call i32 @"nova_rt_host_alloc_failed"(') == 1
    assert "nova_rt_host_alloc_failed\"(i64 -1)" not in text
