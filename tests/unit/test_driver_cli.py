"""nova-translate and nova-opt as command-line tools: outputs, exit codes, diagnostics."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nova import config
from nova.cli import opt, translate
from nova.cli.opt import split_input

KERNEL = """\
func.func @k(%buf: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %buf[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
"""
BAD = "func.func @f() {\n  %0 = arith.constant : i32\n  return\n}\n"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    return path


def test_translate_emit_outlined_to_file(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    assert translate.main([str(source), "--emit=outlined", "-o", str(out)]) == 0
    text = out.read_text()
    assert "gpu.launch_func  @k_kernel::@k_kernel" in text and "gpu.module @k_kernel" in text


def test_translate_timings_go_to_stderr(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert translate.main([str(source), "--emit=outlined", "--timings"]) == 0
    captured = capsys.readouterr()
    assert "gpu.module @k_kernel" in captured.out
    lines = captured.err.splitlines()
    assert lines[0].split() == ["stage", "ms"]
    assert [line.split()[0] for line in lines[1:]] == ["parse", "outline", "total"]


def test_translate_reports_located_errors(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD)
    assert translate.main([str(bad), "--emit=outlined"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:23: error: ")
    assert "  %0 = arith.constant : i32\n" + " " * 22 + "^" in err
    assert "Traceback" not in err


def test_missing_input_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert translate.main([str(tmp_path / "nope.mlir")]) == 1
    assert "error: cannot read" in capsys.readouterr().err


def test_internal_errors_exit_2_with_traceback_only_in_debug(
        source: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import nova.compiler.driver

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(nova.compiler.driver, "compile_source", boom)
    with config.scoped(debug=False):
        assert translate.main([str(source)]) == 2
    err = capsys.readouterr().err
    assert "nova-translate: internal error: RuntimeError: kaboom" in err
    assert "Traceback" not in err
    with config.scoped(debug=True):
        assert translate.main([str(source)]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_python_dash_m_nova_translate(source: Path) -> None:
    env = {**os.environ, "NOVA_CACHE": "0"}
    proc = subprocess.run([sys.executable, "-m", "nova", "translate", str(source),
                           "--emit=outlined"], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "gpu.module @k_kernel" in proc.stdout


# ---- nova-opt ---------------------------------------------------------------------------------

def test_opt_runs_pipeline_from_flag_or_option(source: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert opt.main([str(source), "-p", "outline-kernels"]) == 0
    by_option = capsys.readouterr().out
    assert opt.main([str(source), "--outline-kernels"]) == 0
    assert capsys.readouterr().out == by_option
    assert "gpu.module @k_kernel" in by_option


def test_opt_without_passes_round_trips(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt.main([str(source)]) == 0
    assert "gpu.launch blocks" in capsys.readouterr().out


def test_opt_generic_form(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt.main([str(source), "-p", "outline-kernels", "--mlir-print-op-generic"]) == 0
    assert '"gpu.launch_func"' in capsys.readouterr().out


def test_opt_unknown_pass(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt.main([str(source), "-p", "outline-kernels,nope"]) == 1
    assert "error: unknown pass 'nope'" in capsys.readouterr().err


def test_split_input_keeps_line_numbers() -> None:
    parts = split_input("a\n// -----\nb\nc\n// ----- trailing\nd")
    assert parts == ["a\n", "\n\nb\nc\n", "\n\n\n\n\nd"]


def test_opt_split_input_file_continues_after_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "split.mlir"
    path.write_text(KERNEL + "// -----\n" + BAD + "// -----\n" + KERNEL)
    assert opt.main([str(path), "-p", "outline-kernels", "--split-input-file"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("gpu.module @k_kernel") == 2
    assert captured.out.count("// -----") == 2
    bad_line = KERNEL.count("\n") + 2 + 1  # the separator, then line 2 of BAD
    assert captured.err.startswith(f"{path}:{bad_line}:23: error: ")


def test_opt_accepts_mlir_opt_spellings(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt.main([str(source), "-p", "outline-kernels"]) == 0
    expected = capsys.readouterr().out
    assert opt.main([str(source), "--gpu-kernel-outlining"]) == 0
    assert capsys.readouterr().out == expected
    assert opt.main([str(source), "--pass-pipeline=builtin.module(outline-kernels)"]) == 0
    assert capsys.readouterr().out == expected
    assert opt.unwrap_pipeline(" builtin.module( a,b ) ") == " a,b "
    assert opt.unwrap_pipeline("a,b") == "a,b"


# ---- --verify-diagnostics ---------------------------------------------------------------------

def test_expectation_lines_and_kinds() -> None:
    from nova.cli.verify_diagnostics import parse_expectations

    text = ("a // expected-error {{same line}}\n"
            "// expected-error @+2 {{two below}}\n"
            "// expected-note @above {{previous}}\n"
            "// expected-warning@below {{next}}\n"
            "x // expected-error-re {{v[0-9]+}}\n"
            "// expected-error @unknown {{nowhere}}\n")
    got = [(e.kind, e.line, e.text, e.regex) for e in parse_expectations(text)]
    assert got == [("error", 1, "same line", False), ("error", 4, "two below", False),
                   ("note", 2, "previous", False), ("warning", 5, "next", False),
                   ("error", 5, "v[0-9]+", True), ("error", None, "nowhere", False)]


def _verify(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "v.mlir"
    path.write_text(text)
    status = opt.main([str(path), "-p", "outline-kernels", "--split-input-file",
                       "--verify-diagnostics"])
    return status, capsys.readouterr().err


def test_verify_diagnostics_accepts_expected_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BAD.replace("  %0 = arith.constant : i32\n",
                       "  %0 = arith.constant : i32 // expected-error {{attribute expected}}\n")
    assert _verify(tmp_path, text + "// -----\n" + KERNEL, capsys) == (0, "")


def test_verify_diagnostics_reports_mismatches(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong_text = BAD.replace("  %0 = arith.constant : i32\n",
                             "  %0 = arith.constant : i32 // expected-error {{other text}}\n")
    status, err = _verify(tmp_path, wrong_text, capsys)
    assert status == 1
    assert f"{tmp_path / 'v.mlir'}:2:23: error: unexpected error: attribute expected" in err
    assert 'v.mlir:2:32: error: expected error "other text" was not produced' in err
    status, err = _verify(tmp_path, KERNEL + "// expected-error @-1 {{never}}\n", capsys)
    assert status == 1 and 'expected error "never" was not produced' in err
