"""Upstream-style dialect test files (tests/filecheck/dialects): each passes through nova-opt
with the flags of its RUN line, and, when mlir-opt 22 is installed, through mlir-opt too, with
the same diagnostics (line, severity and text of every error; mlir-opt's extra `see current
operation` notes aside) and, for files of valid IR, the same printed output: equal text once
SSA value and block names are masked (Nova keeps the source's names, mlir-opt renumbers them),
and mlir-opt reading Nova's output prints exactly what it prints for the file itself."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DIALECTS = Path(__file__).parents[1] / "filecheck" / "dialects"
FILES = sorted(DIALECTS.glob("*.mlir"))
MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
_DIAGNOSTIC = re.compile(r"^.*?:(\d+):\d+: (error|warning|remark|note): (.*)$")
_UNMET = re.compile(r'^expected (error|warning|remark|note) ".*" was not produced$')


def _flags(path: Path) -> list[str]:
    """The nova-opt flags of the file's first RUN line."""
    for line in path.read_text().splitlines():
        if line.startswith("// RUN: nova-opt %s"):
            return shlex.split(line.removeprefix("// RUN: nova-opt %s").split("|")[0])
    raise AssertionError(f"{path.name} has no '// RUN: nova-opt %s' line")


def _nova_opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nova.cli.opt", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _mlir_opt(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(MLIR_OPT) is None:
        pytest.skip("upstream mlir-opt 22 is not installed")
    return subprocess.run([MLIR_OPT, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def diagnostics(stderr: str) -> list[tuple[int, str, str]]:
    """(line, severity, message) of each diagnostic, without mlir-opt's op-dump notes and the
    `expected ... was not produced` reports mlir-opt 22 adds even without --verify-diagnostics."""
    found = []
    for line in stderr.splitlines():
        match = _DIAGNOSTIC.match(line)
        if match and not (match.group(3).startswith("see current operation")
                          or _UNMET.match(match.group(3))):
            found.append((int(match.group(1)), match.group(2), match.group(3)))
    return found


def mask_names(text: str) -> str:
    """SSA values as `%_`, blocks as `^_`; a result group `%x:2 = ` (mlir-opt's numbered form)
    as the list `%_, %_ = ` Nova prints for distinctly named results, `%x#1` as `%_`."""
    text = re.sub(r"([%^])[A-Za-z0-9_$.-]+", r"\1_", text)
    text = re.sub(r"%_:(\d+) = ", lambda m: ", ".join(["%_"] * int(m.group(1))) + " = ", text)
    return re.sub(r"%_#\d+", "%_", text).rstrip() + "\n"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_file_passes_nova_opt(path: Path) -> None:
    done = _nova_opt(str(path), *_flags(path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_same_as_mlir_opt(path: Path) -> None:
    flags = [f for f in _flags(path) if f != "--verify-diagnostics"]
    upstream = _mlir_opt(str(path), *flags)
    ours = _nova_opt(str(path), *flags)
    assert diagnostics(ours.stderr) == diagnostics(upstream.stderr), ours.stderr
    assert ours.returncode == upstream.returncode
    if "--verify-diagnostics" not in _flags(path):
        assert mask_names(ours.stdout) == mask_names(upstream.stdout)
        reread = subprocess.run([MLIR_OPT, "-", *flags], input=ours.stdout,
                                capture_output=True, text=True, timeout=300, check=False)
        assert reread.stdout == upstream.stdout, reread.stderr
    # the upstream tool accepts the file's annotations as they are
    assert _mlir_opt(str(path), *_flags(path)).returncode == 0


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_generic_form_same_as_mlir_opt(path: Path) -> None:
    """Files of valid IR print in the generic form as mlir-opt prints them (properties,
    default-valued ones included, successor lists, #map/#set aliases in its order)."""
    if "--verify-diagnostics" in _flags(path):
        pytest.skip("a file of invalid IR")
    flags = [*_flags(path), "--mlir-print-op-generic"]
    upstream = _mlir_opt(str(path), *flags)
    ours = _nova_opt(str(path), *flags)
    assert ours.returncode == upstream.returncode == 0, ours.stderr
    assert mask_names(ours.stdout) == mask_names(upstream.stdout)


def test_mask_names() -> None:
    assert mask_names("%a:2 = f(%b) ^x %a %arg0#1\n\n") == "%_, %_ = f(%_) ^_ %_ %_\n"


def test_diagnostics_skip_operation_dumps() -> None:
    text = ("f.mlir:3:8: error: 'x' op bad\nf.mlir:3:8: note: see current operation: %0 = ...\n"
            "f.mlir:4:1: note: other\n"
            'f.mlir:5:4: error: expected error "x" was not produced\n')
    assert diagnostics(text) == [(3, "error", "'x' op bad"), (4, "note", "other")]
