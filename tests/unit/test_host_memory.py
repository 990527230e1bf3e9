"""Host lowering of gpu memory ops (alloc, dealloc, memcpy, memset, host_register) and host
memref allocation, run against the recording ABI, whose 'device' memory is host memory: the tests
check both the ABI calls and the bytes that moved."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from host_trace import (
    HANDLE_BASES,
    HostJit,
    TraceRuntime,
    array_of,
    descriptor_class,
    memref_of,
)

from nova.backends.host.lower import lower_host
from nova.errors import UnsupportedError
from nova.ir.parser import parse_mlir

STREAM1 = HANDLE_BASES["nova_rt_stream_create"] + 1


def jit(source: str, fail: dict[str, int] | None = None) -> tuple[HostJit, TraceRuntime]:
    lowering = lower_host(parse_mlir(source, "test.mlir"))
    runtime = TraceRuntime(fail=fail or {})
    return HostJit(str(lowering.llvm_module), runtime, lowering.device_modules), runtime


ROUNDTRIP = """
func.func @roundtrip(%h: memref<2x3xf32>, %out: memref<2x3xf32>, %v: f32) {
  %d = gpu.alloc () : memref<2x3xf32>
  gpu.memcpy %d, %h : memref<2x3xf32>, memref<2x3xf32>
  gpu.memcpy %out, %d : memref<2x3xf32>, memref<2x3xf32>
  gpu.memset %d, %v : memref<2x3xf32>, f32
  gpu.memcpy %h, %d : memref<2x3xf32>, memref<2x3xf32>
  gpu.dealloc %d : memref<2x3xf32>
  return
}
"""


def test_sync_alloc_copy_fill_free_roundtrip() -> None:
    engine, rt = jit(ROUNDTRIP)
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((2, 3), np.float32)
    assert engine.call("roundtrip", [memref_of(host), memref_of(out), ctypes.c_float(-2.5)]) == 0
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(host, np.full((2, 3), -2.5, np.float32))
    sync = "nova_rt_stream_synchronize"
    # allocation and free are stream-ordered by the runtime: no host synchronization after them;
    # the copies and the fill follow each other on one stream: one wait, after the last, moved
    # past the free (queued on the same stream, so the host enqueues it while the device works)
    assert rt.names() == ["nova_rt_mem_alloc", "nova_rt_memcpy", "nova_rt_memcpy",
                          "nova_rt_memset32", "nova_rt_memcpy", "nova_rt_mem_free", sync]
    alloc = rt.of("nova_rt_mem_alloc")[0]
    assert (alloc.arg("size"), alloc.arg("stream"), alloc.arg("host_shared")) == (24, 0, 0)
    device = ctypes.addressof(rt.buffers[0])
    copy_in, copy_out, copy_back = rt.of("nova_rt_memcpy")
    assert copy_in.args == (device, host.ctypes.data, 24, 0)
    assert copy_out.args == (out.ctypes.data, device, 24, 0)
    assert copy_back.args == (host.ctypes.data, device, 24, 0)
    fill = rt.of("nova_rt_memset32")[0]
    bits = int(np.array(-2.5, np.float32).view(np.uint32))
    assert (fill.arg("dst"), fill.arg("value") & 0xFFFFFFFF, fill.arg("count")) == (device, bits, 6)
    assert rt.of("nova_rt_mem_free")[0].args == (device, 0)


def test_async_alloc_with_dynamic_size_and_16_bit_fill() -> None:
    source = """
func.func @fill(%n: index, %v: i16) -> memref<?xi16> {
  %t0 = gpu.wait async
  %d, %t1 = gpu.alloc async [%t0] (%n) : memref<?xi16>
  %t2 = gpu.memset async [%t1] %d, %v : memref<?xi16>, i16
  gpu.wait [%t2]
  return %d : memref<?xi16>
}
"""
    engine, rt = jit(source)
    result = descriptor_class(1)()
    assert engine.call("fill", [ctypes.c_int64(5), ctypes.c_int16(-3)], [result]) == 0
    assert rt.names() == ["nova_rt_stream_create", "nova_rt_mem_alloc", "nova_rt_memset16",
                          "nova_rt_stream_synchronize", "nova_rt_stream_destroy"]
    alloc = rt.of("nova_rt_mem_alloc")[0]
    assert (alloc.arg("size"), alloc.arg("stream")) == (10, STREAM1)
    fill = rt.of("nova_rt_memset16")[0]
    assert (fill.arg("value"), fill.arg("count"), fill.arg("stream")) == (0xFFFD, 5, STREAM1)
    assert result.allocated == result.aligned == ctypes.addressof(rt.buffers[0])
    assert (result.offset, result.sizes[0], result.strides[0]) == (0, 5, 1)
    np.testing.assert_array_equal(array_of(result, np.int16, 1), np.full(5, -3, np.int16))


def test_host_shared_alloc_and_byte_fill() -> None:
    source = """
func.func @shared(%v: i8) -> memref<4x2xi8> {
  %d = gpu.alloc host_shared () : memref<4x2xi8>
  gpu.memset %d, %v : memref<4x2xi8>, i8
  return %d : memref<4x2xi8>
}
"""
    engine, rt = jit(source)
    result = descriptor_class(2)()
    assert engine.call("shared", [ctypes.c_int8(7)], [result]) == 0
    assert rt.of("nova_rt_mem_alloc")[0].arg("host_shared") == 1
    assert rt.of("nova_rt_memset8")[0].arg("count") == 8
    assert list(result.strides) == [2, 1]
    np.testing.assert_array_equal(array_of(result, np.int8, 2), np.full((4, 2), 7, np.int8))


def test_memcpy_uses_the_offset_of_a_subview() -> None:
    source = """
func.func @tail(%h: memref<8xf32>, %out: memref<4xf32>) {
  %s = memref.subview %h[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  gpu.memcpy %out, %s : memref<4xf32>, memref<4xf32, strided<[1], offset: 4>>
  return
}
"""
    engine, rt = jit(source)
    host = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    assert engine.call("tail", [memref_of(host), memref_of(out)]) == 0
    np.testing.assert_array_equal(out, [4, 5, 6, 7])
    assert rt.of("nova_rt_memcpy")[0].args[1:3] == (host.ctypes.data + 16, 16)


def test_memcpy_of_strided_memref_is_rejected() -> None:
    source = """
func.func @bad(%h: memref<8xf32>, %out: memref<4xf32>) {
  %s = memref.subview %h[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  gpu.memcpy %out, %s : memref<4xf32>, memref<4xf32, strided<[2]>>
  return
}
"""
    with pytest.raises(UnsupportedError, match="non-contiguous memref") as info:
        lower_host(parse_mlir(source, "bad.mlir"))
    assert str(info.value).startswith("bad.mlir:4:3: error:")


def test_memset_of_64_bit_elements_is_rejected() -> None:
    source = """
func.func @bad(%d: memref<4xf64>, %v: f64) {
  gpu.memset %d, %v : memref<4xf64>, f64
  return
}
"""
    with pytest.raises(UnsupportedError, match=r"gpu\.memset of f64"):
        lower_host(parse_mlir(source, "bad.mlir"))


def test_host_register_passes_data_pointer_and_size() -> None:
    source = """
func.func @pin(%h: memref<3x5xi32>) {
  %u = memref.cast %h : memref<3x5xi32> to memref<*xi32>
  gpu.host_register %u : memref<*xi32>
  gpu.host_unregister %u : memref<*xi32>
  return
}
"""
    engine, rt = jit(source)
    host = np.zeros((3, 5), np.int32)
    assert engine.call("pin", [memref_of(host)]) == 0
    assert rt.names() == ["nova_rt_host_register", "nova_rt_host_unregister"]
    assert rt.of("nova_rt_host_register")[0].args == (host.ctypes.data, 60)
    assert rt.of("nova_rt_host_unregister")[0].args == (host.ctypes.data,)


def test_failed_alloc_raises_before_copying() -> None:
    engine, rt = jit(ROUNDTRIP, fail={"nova_rt_mem_alloc": 1})
    host = np.zeros((2, 3), np.float32)
    out = np.zeros((2, 3), np.float32)
    assert engine.call("roundtrip", [memref_of(host), memref_of(out), ctypes.c_float(1)]) == 1
    assert rt.names() == ["nova_rt_mem_alloc"]


def test_host_memref_alloc_honours_alignment() -> None:
    source = """
func.func @make(%n: index) -> (memref<?xf64>, memref<3xi32>) {
  %a = memref.alloc(%n) {alignment = 128} : memref<?xf64>
  %b = memref.alloc() : memref<3xi32>
  %c0 = arith.constant 0 : index
  %x = arith.constant 42 : i32
  memref.store %x, %b[%c0] : memref<3xi32>
  return %a, %b : memref<?xf64>, memref<3xi32>
}
"""
    engine, rt = jit(source)
    first, second = descriptor_class(1)(), descriptor_class(1)()
    assert engine.call("make", [ctypes.c_int64(3)], [first, second]) == 0
    assert first.aligned % 128 == 0 and first.sizes[0] == 3
    assert array_of(second, np.int32, 1)[0] == 42
    assert rt.calls == []  # host memory never goes through the device ABI
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(first.allocated)
    libc.free(second.allocated)


def test_host_globals_and_memref_copy() -> None:
    source = """
memref.global "private" constant @table : memref<2x2xi32> = dense<[[1, 2], [3, 4]]>
memref.global "private" @scratch : memref<4xf32> = uninitialized
func.func @read(%out: memref<2x2xi32>) -> f32 {
  %t = memref.get_global @table : memref<2x2xi32>
  memref.copy %t, %out : memref<2x2xi32> to memref<2x2xi32>
  %s = memref.get_global @scratch : memref<4xf32>
  %c3 = arith.constant 3 : index
  %x = arith.constant 0.5 : f32
  memref.store %x, %s[%c3] : memref<4xf32>
  %y = memref.load %s[%c3] : memref<4xf32>
  return %y : f32
}
"""
    engine, rt = jit(source)
    out = np.zeros((2, 2), np.int32)
    result = ctypes.c_float()
    assert engine.call("read", [memref_of(out)], [result]) == 0
    np.testing.assert_array_equal(out, [[1, 2], [3, 4]])
    assert result.value == 0.5
    assert rt.calls == []


def test_async_host_shared_alloc_is_ordered_by_its_token() -> None:
    """An async `gpu.alloc host_shared` (what async-region makes of one) allocates managed memory
    at once, with its first dependency's stream as its token after joining the others (events),
    so the fill that depends on the token runs after both dependencies."""
    source = """
func.func @shared(%v: i8) -> memref<4xi8> {
  %a = gpu.wait async
  %b = gpu.wait async
  %d, %t = gpu.alloc async [%a, %b] host_shared () : memref<4xi8>
  %t2 = gpu.memset async [%t] %d, %v : memref<4xi8>, i8
  gpu.wait [%t2]
  return %d : memref<4xi8>
}
"""
    engine, rt = jit(source)
    result = descriptor_class(1)()
    assert engine.call("shared", [ctypes.c_int8(-4)], [result]) == 0
    assert rt.names() == ["nova_rt_stream_create", "nova_rt_stream_create",
                          "nova_rt_event_create", "nova_rt_event_record",
                          "nova_rt_stream_wait_event", "nova_rt_event_destroy",
                          "nova_rt_mem_alloc", "nova_rt_memset8",
                          "nova_rt_stream_synchronize", "nova_rt_stream_destroy"]
    alloc = rt.of("nova_rt_mem_alloc")[0]
    assert (alloc.arg("size"), alloc.arg("stream"), alloc.arg("host_shared")) == (4, STREAM1, 1)
    stream2 = HANDLE_BASES["nova_rt_stream_create"] + 2
    record = rt.of("nova_rt_event_record")[0]
    assert record.arg("stream") == stream2
    assert rt.of("nova_rt_stream_wait_event")[0].arg("stream") == STREAM1
    assert rt.of("nova_rt_memset8")[0].arg("stream") == STREAM1
    assert rt.of("nova_rt_stream_synchronize")[0].arg("stream") == STREAM1
    np.testing.assert_array_equal(array_of(result, np.int8, 1), np.full(4, -4, np.int8))
