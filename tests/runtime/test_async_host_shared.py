"""An async `gpu.alloc host_shared` (as the async-region pass now produces, like upstream's):
managed memory exists at once, and its token orders the work after both of its dependencies.
Run on the cpu device always and on cuda when a GPU is usable (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from async_programs import DEVICES, bundle

from nova.runtime.executor import load

_1D = ("blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1) "
       "threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)")

SOURCE = f"""
// d = 2x on stream A (copy in, kernel); stream B starts empty. The managed buffer h depends on
// both; the kernel that fills h = d + 1 depends on h's token, the host then reads h directly.
func.func @shared_after_two(%x: memref<?xf32>, %out: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a0 = gpu.wait async
  %d, %a1 = gpu.alloc async [%a0] (%n) : memref<?xf32>
  %a2 = gpu.memcpy async [%a1] %d, %x : memref<?xf32>, memref<?xf32>
  %a3 = gpu.launch async [%a2] {_1D} {{
    %v = memref.load %d[%bx] : memref<?xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %d[%bx] : memref<?xf32>
    gpu.terminator
  }}
  %b0 = gpu.wait async
  %h, %t = gpu.alloc async [%b0, %a3] host_shared (%n) : memref<?xf32>
  %t2 = gpu.launch async [%t] {_1D} {{
    %v = memref.load %d[%bx] : memref<?xf32>
    %one = arith.constant 1.0 : f32
    %r = arith.addf %v, %one : f32
    memref.store %r, %h[%bx] : memref<?xf32>
    gpu.terminator
  }}
  %t3 = gpu.dealloc async [%t2] %d : memref<?xf32>
  gpu.wait [%t3]
  scf.for %i = %c0 to %n step %c1 {{
    %v = memref.load %h[%i] : memref<?xf32>
    memref.store %v, %out[%i] : memref<?xf32>
  }}
  gpu.dealloc %h : memref<?xf32>
  return
}}

// The same synchronous program after the async-region pass: every op async, host_shared too.
func.func @sync_shared(%x: memref<?xf32>, %out: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %h = gpu.alloc host_shared (%n) : memref<?xf32>
  gpu.memcpy %h, %x : memref<?xf32>, memref<?xf32>
  gpu.launch {_1D} {{
    %v = memref.load %h[%bx] : memref<?xf32>
    %r = arith.mulf %v, %v : f32
    memref.store %r, %h[%bx] : memref<?xf32>
    gpu.terminator
  }}
  scf.for %i = %c0 to %n step %c1 {{
    %v = memref.load %h[%i] : memref<?xf32>
    memref.store %v, %out[%i] : memref<?xf32>
  }}
  gpu.dealloc %h : memref<?xf32>
  return
}}
"""


def _async_region(text: str) -> str:
    from nova.ir.parser import parse_mlir, print_mlir
    from nova.passes.registry import run_pipeline

    module = parse_mlir(text, "host-shared-async.mlir")
    run_pipeline(module, "outline-kernels,async-region")
    return print_mlir(module)


@pytest.fixture(scope="module")
def converted() -> bytes:
    text = _async_region(SOURCE)
    sync_part = text[text.index("func.func @sync_shared"):]
    assert "host_shared" in sync_part and "gpu.alloc async" in sync_part
    assert "gpu.alloc  host_shared" not in sync_part  # none left synchronous
    return bundle(text, "host-shared-async.mlir")


@pytest.mark.parametrize("device", DEVICES)
def test_async_host_shared_alloc_orders_work_after_its_dependencies(converted: bytes,
                                                                    device: str) -> None:
    with load(converted, device) as mod:
        for n in (1, 5, 4096):
            x = np.linspace(-3, 3, n, dtype=np.float32)
            out = np.full(n, np.nan, np.float32)
            mod.shared_after_two(x, out)
            np.testing.assert_array_equal(out, 2 * x + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_async_region_keeps_a_host_shared_program_correct(converted: bytes, device: str) -> None:
    x = np.arange(-7, 300, dtype=np.float32)
    with load(converted, device) as mod:
        for _ in range(3):
            out = np.zeros_like(x)
            mod.sync_shared(x, out)
            np.testing.assert_array_equal(out, x * x)
