"""Differential tests: Nova's passes against upstream mlir-opt on the same inputs.

For every program of the integration corpus (tests/corpus/*.mlir) and every case of the passes'
golden tests, `nova-opt -p <pass>` must produce the same IR as `mlir-opt --<upstream pass>`, up to
SSA value names: mlir-opt's output is parsed with Nova's parser and compared structurally (same
ops, operands, attributes, regions and block structure). Skipped where mlir-opt is absent.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nova.cli.opt import split_input
from nova.errors import VerifyError
from nova.ir.parser import parse_mlir, print_mlir
from nova.passes.registry import run_pipeline

TESTS = Path(__file__).resolve().parent.parent
MLIR_OPT = shutil.which("mlir-opt") or next(
    (p for p in ("/usr/lib/llvm-22/bin/mlir-opt",) if Path(p).exists()), None)

# Nova pipeline -> the equivalent mlir-opt flags.
PIPELINES = {
    "outline-kernels": ["--gpu-kernel-outlining"],
    "sink-index-computations": ["--gpu-launch-sink-index-computations"],
    "sink-index-computations,outline-kernels": ["--gpu-launch-sink-index-computations",
                                                "--gpu-kernel-outlining"],
    "async-region": ["--gpu-async-region"],
    "outline-kernels,async-region": ["--gpu-kernel-outlining", "--gpu-async-region"],
    "lower-affine": ["--lower-affine"],
    "lower-affine,outline-kernels": ["--lower-affine", "--gpu-kernel-outlining"],
}


def _inputs() -> list[tuple[str, str]]:
    """(id, text) of each corpus program and each split part of the passes' golden tests."""
    inputs = [(f"corpus/{p.name}", p.read_text())
              for p in sorted((TESTS / "corpus").glob("*.mlir"))]
    for golden in sorted((TESTS / "filecheck" / "passes").glob("*.mlir")):
        for index, part in enumerate(split_input(golden.read_text())):
            if "gpu.launch" in part or "affine." in part:
                inputs.append((f"{golden.stem}#{index}", part))
    return inputs


_INLINE_LAUNCH = re.compile(r"gpu\.launch\s")


def _cases() -> list[pytest.param]:
    """(text, pipeline) pairs; async-region alone only on inputs without inline launches, the
    lower-affine pipelines only on inputs with affine ops (elsewhere they change nothing).

    async-region is not compared on inputs with `async.execute`: upstream threads GPU tokens
    across execute regions as `!async.value<!gpu.async.token>` results, Nova's pass waits at
    the end of each region instead (docs/async.md, known gaps); the driver runs async-to-sync
    before any of this, so only `nova-opt -p async-region` sees the difference."""
    return [pytest.param(text, pipeline, id=f"{name}-{pipeline}")
            for name, text in _inputs() for pipeline in PIPELINES
            if not (pipeline == "async-region" and _INLINE_LAUNCH.search(text))
            and not ("async-region" in pipeline and "async.execute" in text)
            and ("affine." in text or not pipeline.startswith("lower-affine"))]


def _normalized(text: str) -> str:
    """Printed IR with SSA names replaced by their order of first appearance (for diffs)."""
    names: dict[str, str] = {}
    return re.sub(r"%[\w$.-]+", lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), text)


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt (upstream oracle) not installed")
@pytest.mark.parametrize(("text", "pipeline"), _cases())
def test_matches_mlir_opt(text: str, pipeline: str, tmp_path: Path) -> None:
    source = tmp_path / "input.mlir"
    source.write_text(text)
    upstream = subprocess.run([MLIR_OPT, *PIPELINES[pipeline], str(source)],
                              capture_output=True, text=True, check=False)
    if upstream.returncode != 0:
        pytest.skip(f"mlir-opt rejects this input: {upstream.stderr.strip()[:200]}")
    try:
        expected = parse_mlir(upstream.stdout, "mlir-opt-output.mlir")
    except VerifyError as exc:  # output Nova does not accept: reported as a skip
        pytest.skip(f"mlir-opt's output is not valid Nova IR: {exc.message}")

    ours = parse_mlir(text, str(source))
    run_pipeline(ours, pipeline)

    if not ours.is_structurally_equivalent(expected):
        diff = "\n".join(difflib.unified_diff(
            _normalized(print_mlir(expected)).splitlines(),
            _normalized(print_mlir(ours)).splitlines(),
            "mlir-opt", "nova-opt", lineterm=""))
        pytest.fail(f"nova-opt -p {pipeline} differs from mlir-opt:\n{diff}")
