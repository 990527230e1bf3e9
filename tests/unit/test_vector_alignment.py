"""vector.load/store's `alignment` attribute (upstream MLIR's promise about the address): the
LLVM access takes it when it says more than the element size; a bad value is a located error."""

from __future__ import annotations

import re

import pytest

from nova.compiler.driver import CompileOptions, compile_until
from nova.errors import NovaError

PROGRAM = """\
func.func @copy(%src: memref<64xf16>, %dst: memref<64xf16>) {{
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {{
    %i = arith.muli %tx, %c8 : index
    %v = vector.load %src[%i] {load} : memref<64xf16>, vector<8xf16>
    vector.store %v, %dst[%i] {store} : memref<64xf16>, vector<8xf16>
    gpu.terminator
  }}
  return
}}
"""


def _accesses(load: str, store: str, stage: str) -> list[str]:
    text = compile_until(PROGRAM.format(load=load, store=store), "copy.mlir",
                         CompileOptions(), stage)
    assert isinstance(text, str)
    return re.findall(r"(?:load|store) <8 x half>.*?align \d+", text)


@pytest.mark.parametrize("stage", ["device-llvm", "cpu-llvm"])
def test_alignment_attribute_sets_the_access_alignment(stage: str) -> None:
    accesses = _accesses("{alignment = 16 : i64}", "{alignment = 8}", stage)
    assert len(accesses) == 2
    assert accesses[0].startswith("load") and accesses[0].endswith("align 16")
    assert accesses[1].startswith("store") and accesses[1].endswith("align 8")


def test_without_the_attribute_accesses_keep_the_element_alignment() -> None:
    accesses = _accesses("", "{alignment = 1}", "device-llvm")  # 1 < the element's 2 bytes
    assert [a.rsplit(" ", 1)[1] for a in accesses] == ["2", "2"]


def test_alignment_not_a_power_of_two_is_a_located_error() -> None:
    with pytest.raises(NovaError, match="alignment 12 is not a positive power of two") as info:
        _accesses("{alignment = 12}", "", "device-llvm")
    assert "copy.mlir" in str(info.value)
