"""`ptxas -arch=sm_90` accepts the PTX of every test program (the corpus and the examples).

The driver also runs ptxas for the cubin, but CPU-device runs skip GPU images, so this checks the
PTX of every program explicitly. Skipped where ptxas is absent (CI machines without CUDA)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from nova.backends.nvptx.ptx import ptxas_path
from nova.compiler.driver import CompileOptions, compile_source

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted([*ROOT.glob("tests/corpus/*.mlir"), *ROOT.glob("examples/*.mlir")])


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas not installed")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_ptxas_accepts_the_ptx(path: Path, tmp_path: Path) -> None:
    options = CompileOptions(emit="ptx", cubin=False, cpu_image=False)
    output = compile_source(path.read_text(), str(path), options).output
    modules = output if isinstance(output, Mapping) else {"module": output}
    assert modules, f"{path.name}: no device module"
    ptxas = ptxas_path() or shutil.which("ptxas")
    for name, ptx in modules.items():
        source = tmp_path / f"{name}.ptx"
        source.write_text(ptx if isinstance(ptx, str) else ptx.decode())
        done = subprocess.run([str(ptxas), "-arch=sm_90", str(source), "-o",
                               str(tmp_path / f"{name}.cubin")],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{path.name} @{name}: {done.stderr}"
