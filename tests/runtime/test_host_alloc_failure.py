"""A host `memref.alloc` that cannot be satisfied raises OutOfMemoryError; it never segfaults.

The host lowering checks malloc's result (and, for dynamic sizes, that no size is negative and
the byte size does not overflow i64) and reports through `nova_rt_host_alloc_failed`, then
unwinds; the module stays usable. Runs on cpu and (gpu-marked) cuda: the callback is
device-independent. nova-run exits 1 with the message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nova
from device_params import DEVICE_PARAMS
from nova.errors import OutOfMemoryError

# The memref is returned, so the allocation escapes and LLVM cannot elide malloc.
BIG = """
func.func @big(%n: index) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.5 : f32
  %m = memref.alloc(%n) : memref<?xf32>
  memref.store %f, %m[%c0] : memref<?xf32>
  return %m : memref<?xf32>
}

func.func @big_aligned(%n: index, %k: index) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %f = arith.constant 2.5 : f64
  %m = memref.alloc(%n, %k) {alignment = 64} : memref<?x?xf64>
  memref.store %f, %m[%c0, %c0] : memref<?x?xf64>
  return %m : memref<?x?xf64>
}
"""

PETABYTE_FLOATS = 250 * 2**40  # 1000 TiB of f32: more than any host has, fits in i64


@pytest.fixture(scope="module", params=DEVICE_PARAMS)
def big(request: pytest.FixtureRequest) -> nova.NovaModule:
    return nova.compile(BIG, device=request.param)


def test_huge_alloc_raises_out_of_memory_and_the_module_goes_on(big: nova.NovaModule) -> None:
    with pytest.raises(OutOfMemoryError) as info:
        big.big(PETABYTE_FLOATS)
    assert str(info.value) == ("host memref.alloc of 1099511627776000 bytes failed "
                               "(out of host memory)")
    out = np.asarray(big.big(3))
    assert out.shape == (3,) and out[0] == 1.5


@pytest.mark.parametrize("sizes", [
    pytest.param((-1,), id="negative"),
    pytest.param((2**62,), id="bytes-overflow-i64"),
])
def test_negative_or_overflowing_size_raises(big: nova.NovaModule, sizes: tuple[int]) -> None:
    with pytest.raises(OutOfMemoryError, match="a dynamic size is negative or the allocation's "
                       "byte size overflows 64 bits"):
        big.big(*sizes)
    assert np.asarray(big.big(1))[0] == 1.5


@pytest.mark.parametrize(("n", "k", "expected"), [
    pytest.param(2**30, 2**30, "overflows 64 bits", id="product-overflow"),
    pytest.param(-2, -3, "negative", id="two-negatives-multiply-to-a-positive"),
    pytest.param(2**40, 2**10, "host memref.alloc of 9007199254740992 bytes failed", id="huge"),
])
def test_aligned_alloc_is_checked_too(big: nova.NovaModule, n: int, k: int,
                                      expected: str) -> None:
    with pytest.raises(OutOfMemoryError, match=expected):
        big.big_aligned(n, k)
    out = np.asarray(big.big_aligned(2, 3))
    assert out.shape == (2, 3) and out[0, 0] == 2.5


NOVA_RUN = """
func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %n = arith.constant 274877906944000 : index
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.5 : f32
  %m = memref.alloc(%n) : memref<?xf32>
  memref.store %f, %m[%c0] : memref<?xf32>
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
"""


def test_nova_run_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "big.mlir"
    path.write_text(NOVA_RUN)
    done = subprocess.run([sys.executable, "-m", "nova.cli.run", str(path), "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert ("nova-run: error: host memref.alloc of 1099511627776000 bytes failed (out of host "
            "memory)") in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
