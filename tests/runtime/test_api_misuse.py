"""API misuse gets a NovaError naming the argument, and read-only arrays are never written
(issue 12 reproducers api2 and api3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nova
from nova.errors import ArgumentError, InputError

FILL = """
func.func @fill(%c: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %c, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %one, %c[%i] : memref<?xf32>
  }
  return
}
"""


@pytest.mark.parametrize("value", [None, 3, 1.5, ["module {}"], object()])
def test_compile_names_what_it_got(value: object) -> None:
    with pytest.raises(ArgumentError, match=f"expected MLIR text.*got {type(value).__name__}"):
        nova.compile(value, device="cpu")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, 7, object()])
def test_load_names_what_it_got(value: object) -> None:
    with pytest.raises(ArgumentError, match=f"expected a path.*got {type(value).__name__}"):
        nova.load(value, device="cpu")  # type: ignore[arg-type]


def test_compile_accepts_utf8_bytes_and_path_objects(tmp_path: Path) -> None:
    module = nova.compile(FILL.encode(), device="cpu")
    c = np.zeros(3, np.float32)
    module.fill(c)
    assert c.tolist() == [1.0, 1.0, 1.0]
    path = tmp_path / "fill.mlir"
    path.write_text(FILL)
    assert list(nova.compile(path, device="cpu").entries) == ["fill"]


def test_compile_refuses_bytes_that_are_not_utf8() -> None:
    with pytest.raises(InputError, match="not UTF-8"):
        nova.compile(b"\xff\xfe module {}", device="cpu")


def test_read_only_array_is_not_written(device) -> None:
    """api2: on the cpu device a NumPy array is used in place; a read-only one gets a copy
    instead (what the program writes is dropped, as on cuda and in kernel launches)."""
    module = nova.compile(FILL, device=device)
    c = np.zeros(4, np.float32)
    c.setflags(write=False)
    module.fill(c)
    assert c.tolist() == [0.0] * 4
    w = np.zeros(4, np.float32)  # a writable one is still written in place
    module.fill(w)
    assert w.tolist() == [1.0] * 4
