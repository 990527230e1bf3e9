"""MLIR programs with asynchronous GPU ops (tokens, several streams), shared by the async-semantics
and graph-capture tests, and a compile helper (bundles cached per process)."""

from __future__ import annotations

import functools
import importlib

import pytest

from nova.runtime.selection import cuda_status

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not cuda_status().usable, reason="no usable CUDA device")]),
]

_1D = ("blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1) "
       "threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)")
_ONE = ("blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) "
        "threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)")

SOURCE = f"""
// y = 2x on stream A and z = x + 1 on stream B (concurrently), then w = y + z on a stream that
// joins both (gpu.wait async [a, b]: events), then the host waits.
func.func @fork_join(%x: memref<?xf32>, %y: memref<?xf32>, %z: memref<?xf32>,
                     %w: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a0 = gpu.wait async
  %a1 = gpu.launch async [%a0] {_1D} {{
    %v = memref.load %x[%bx] : memref<?xf32>
    %two = arith.constant 2.0 : f32
    %r = arith.mulf %v, %two : f32
    memref.store %r, %y[%bx] : memref<?xf32>
    gpu.terminator
  }}
  %b0 = gpu.wait async
  %b1 = gpu.launch async [%b0] {_1D} {{
    %v = memref.load %x[%bx] : memref<?xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %z[%bx] : memref<?xf32>
    gpu.terminator
  }}
  %j = gpu.wait async [%a1, %b1]
  %j1 = gpu.launch async [%j] {_1D} {{
    %p = memref.load %y[%bx] : memref<?xf32>
    %q = memref.load %z[%bx] : memref<?xf32>
    %r = arith.addf %p, %q : f32
    memref.store %r, %w[%bx] : memref<?xf32>
    gpu.terminator
  }}
  gpu.wait [%j1]
  return
}}

// A token chain through device scratch memory: alloc, copy in, kernel (x3), copy out, memset of
// a second output to 7, dealloc, all ordered by tokens only.
func.func @chain(%x: memref<?xf32>, %out: memref<?xf32>, %fill: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seven = arith.constant 7.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %t0 = gpu.wait async
  %buf, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
  %t2 = gpu.memcpy async [%t1] %buf, %x : memref<?xf32>, memref<?xf32>
  %t3 = gpu.launch async [%t2] {_1D} {{
    %v = memref.load %buf[%bx] : memref<?xf32>
    %three = arith.constant 3.0 : f32
    %r = arith.mulf %v, %three : f32
    memref.store %r, %buf[%bx] : memref<?xf32>
    gpu.terminator
  }}
  %t4 = gpu.memcpy async [%t3] %out, %buf : memref<?xf32>, memref<?xf32>
  %t5 = gpu.memset async [%t4] %fill, %seven : memref<?xf32>, f32
  %t6 = gpu.dealloc async [%t5] %buf : memref<?xf32>
  gpu.wait [%t6]
  return
}}

// Two streams that must run concurrently: the kernel on stream A spins (atomically) until the
// kernel on stream B sets flag[0]; out[0] = 1 when it saw the flag, 2 when it gave up after
// `limit` polls (which only happens if the streams were serialized).
func.func @spin_pair(%flag: memref<1xi32>, %out: memref<1xi32>, %limit: i32) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a0 = gpu.wait async
  %a1 = gpu.launch async [%a0] {_ONE} {{
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    %polls, %seen = scf.while (%i = %zero) : (i32) -> (i32, i32) {{
      %f = memref.atomic_rmw addi %zero, %flag[%c0] : (i32, memref<1xi32>) -> i32
      %unset = arith.cmpi eq, %f, %zero : i32
      %left = arith.cmpi slt, %i, %limit : i32
      %more = arith.andi %unset, %left : i1
      %next = arith.addi %i, %one : i32
      scf.condition(%more) %next, %f : i32, i32
    }} do {{
    ^bb0(%i: i32, %f: i32):
      scf.yield %i : i32
    }}
    %got = arith.cmpi ne, %seen, %zero : i32
    %res = arith.select %got, %one, %two : i32
    memref.store %res, %out[%c0] : memref<1xi32>
    gpu.terminator
  }}
  %b0 = gpu.wait async
  %b1 = gpu.launch async [%b0] {_ONE} {{
    %one = arith.constant 1 : i32
    %old = memref.atomic_rmw addi %one, %flag[%c0] : (i32, memref<1xi32>) -> i32
    gpu.terminator
  }}
  gpu.wait [%a1, %b1]
  return
}}

// A synchronous program (no tokens) for the async-region pass: two kernels and a copy.
func.func @sync_steps(%x: memref<?xf32>, %y: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %tmp = gpu.alloc (%n) : memref<?xf32>
  gpu.memcpy %tmp, %x : memref<?xf32>, memref<?xf32>
  gpu.launch {_1D} {{
    %v = memref.load %tmp[%bx] : memref<?xf32>
    %r = arith.mulf %v, %v : f32
    memref.store %r, %tmp[%bx] : memref<?xf32>
    gpu.terminator
  }}
  gpu.launch {_1D} {{
    %v = memref.load %tmp[%bx] : memref<?xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.subf %v, %one : f32
    memref.store %r, %y[%bx] : memref<?xf32>
    gpu.terminator
  }}
  gpu.dealloc %tmp : memref<?xf32>
  return
}}
"""


def _need_compiler() -> None:
    """The compiler's modules, imported (not probed: a renamed one fails instead of skipping)."""
    for name in ("nova.compiler.driver", "nova.backends.device", "nova.backends.host.lower"):
        importlib.import_module(name)


@functools.cache
def bundle(text: str = SOURCE, name: str = "async_programs.mlir") -> bytes:
    """The compiled .nova bytes of `text` (cached for the test session)."""
    _need_compiler()
    from nova.compiler.driver import compile_to_bundle

    return compile_to_bundle(text, name)
