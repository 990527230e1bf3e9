"""nova-run: hand-made bundles, error reporting, and the corpus programs end to end (cpu)."""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from executor_bundles import build_bundle

CORPUS = Path(__file__).parents[1] / "corpus"
COMPILER_PIECES = ("nova.backends.device", "nova.backends.host.lower", "nova.backends.x86",
                   "nova.backends.nvptx.ptx", "nova.ir.parser")


def nova_run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nova", "run", *args], input=stdin,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "prog.nova"
    path.write_bytes(build_bundle())
    return str(path)


def test_runs_an_entry_and_prints(program: str) -> None:
    done = nova_run(program, "--device", "cpu", "-e", "show")
    assert (done.returncode, done.stdout, done.stderr) == (0, "42\n", "")


def test_mlir_runner_flags_are_accepted(program: str) -> None:
    done = nova_run(program, "--device=cpu", "-e", "show", "--entry-point-result=void",
                    "--shared-libs=libmlir_runner_utils.so")
    assert done.returncode == 0 and done.stdout == "42\n"


@pytest.mark.parametrize(("args", "message"), [
    (("-e", "nope"), "has no entry 'nope' (entries: main, fill_async, show, add"),
    (("-e", "add"), "entry 'add' takes 2 argument(s); nova-run runs entries without arguments"),
    (("-e", "bad_free"), "nova_rt_mem_free: 0x1234 was not allocated by nova_rt_mem_alloc"),
    (("-e", "fault"), "kernel @faulty failed: block 0 thread 0: oops"),
])
def test_failures_are_one_line_errors(program: str, args: tuple[str, ...], message: str) -> None:
    done = nova_run(program, "--device", "cpu", *args)
    assert done.returncode == 1
    assert done.stderr.startswith("nova-run: error: ")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_and_corrupt_inputs(tmp_path: Path) -> None:
    done = nova_run(str(tmp_path / "missing.nova"))
    assert done.returncode == 1
    assert "cannot read" in done.stderr and "Traceback" not in done.stderr
    corrupt = tmp_path / "corrupt.nova"
    corrupt.write_bytes(b"\x7fELF" + b"\0" * 60)
    done = nova_run(str(corrupt), "--device", "cpu")
    assert done.returncode == 1
    assert done.stderr.startswith("nova-run: error: ") and "Traceback" not in done.stderr


def test_source_errors_are_located_with_a_caret(tmp_path: Path) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text("func.func @main() {\n  %x = arith.addi %a, %b : i32\n  return\n}\n")
    done = nova_run(str(source), "--device", "cpu")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"{source}:2:")
    assert ": error: " in lines[0]
    assert lines[1] == "  %x = arith.addi %a, %b : i32"
    assert lines[2].strip() == "^"


def _filecheck() -> str | None:
    """FileCheck beside the interpreter (a venv's, also when not activated), else on PATH."""
    here = os.path.dirname(sys.executable)
    return next((found for name in ("filecheck", "FileCheck") for path in (here, None)
                 if (found := shutil.which(name, path=path))), None)


def _compiler_ready() -> str | None:
    """Why the corpus cannot run here (None: it can). The compiler's modules are imported, not
    probed (a renamed one fails instead of skipping the corpus); only FileCheck, a tool outside
    the project, may be missing."""
    for name in COMPILER_PIECES:
        importlib.import_module(name)
    if _filecheck() is None:
        return "FileCheck (the filecheck package) is not installed"
    return None


def _corpus_cases() -> list[tuple[Path, str]]:
    cases = []
    for path in sorted(CORPUS.glob("*.mlir")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("// RUN:") and "nova-run" in line and "--device cpu" in line:
                cases.append((path, line.removeprefix("// RUN:").strip()))
                break
    return cases


_CASES = _corpus_cases()


@pytest.mark.parametrize(("path", "run"), _CASES, ids=[p.name for p, _ in _CASES])
def test_corpus_program_on_cpu(path: Path, run: str) -> None:
    reason = _compiler_ready()
    if reason is not None:
        pytest.skip(reason)
    command, _, check = run.partition("|")
    words = shlex.split(command.replace("%s", str(path)))
    expect_failure = words[0] == "not"
    words = words[1:] if expect_failure else words
    merge = "2>&1" in words
    words = [w for w in words if w != "2>&1"]
    assert words[0] == "nova-run", f"unexpected RUN line: {run}"
    done = nova_run(*words[1:])
    output = done.stdout + done.stderr if merge else done.stdout
    if expect_failure:
        assert done.returncode == 1, output
        assert "Traceback" not in done.stderr
    else:
        assert done.returncode == 0, done.stderr
    check_words = shlex.split(check.replace("%s", str(path)))
    filecheck = _filecheck()
    assert filecheck is not None
    checked = subprocess.run([filecheck, *check_words[1:]], input=output,
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stderr + "\n--- output ---\n" + output


@pytest.mark.gpu
@pytest.mark.parametrize(("path", "run"), _CASES, ids=[p.name for p, _ in _CASES])
def test_corpus_program_on_cuda(path: Path, run: str) -> None:
    """The same programs and CHECK lines on the GPU (each in its own nova-run process)."""
    from nova.runtime.selection import cuda_status

    if not cuda_status().usable:
        pytest.skip(f"no usable CUDA device: {cuda_status().reason}")
    test_corpus_program_on_cpu(path, run.replace("--device cpu", "--device cuda"))
