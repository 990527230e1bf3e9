"""Cold start of the command-line tools with a warm cache: the quick argument parsers agree with
argparse (so a quick cache lookup uses the very key the full path would), and in a fresh process a
`nova-translate` cache hit and a `nova-run` of a cached .nova import neither xDSL, llvmlite,
argparse nor (nova-run on the cpu device) NumPy. bench/cold_start.py times these paths."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from nova import config
from nova.cli import run as run_cli
from nova.cli import translate as translate_cli

PROGRAM = """\
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %buf = gpu.alloc host_shared () : memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %i = arith.index_cast %tx : index to i32
    %f = arith.sitofp %i : i32 to f32
    %sq = arith.mulf %f, %f : f32
    memref.store %sq, %buf[%tx] : memref<8xf32>
    gpu.terminator
  }
  %c3 = arith.constant 3 : index
  %v = memref.load %buf[%c3] : memref<8xf32>
  vector.print %v : f32
  return
}
"""

TRANSLATE_LINES = [
    ["in.mlir", "-o", "out.nova"],
    ["in.mlir", "--output=out.nova", "--no-ptx"],
    ["-o", "out.nova", "in.mlir", "--arch", "sm_80", "-O", "1", "--check-bounds"],
    ["in.mlir", "-o", "out.nova", "--emit=bundle", "--no-cubin", "--no-cpu-image", "-O2"],
    ["in.mlir", "-o", "out.nova", "--emit", "nova", "--arch=sm_90"],
]


@pytest.mark.parametrize("argv", TRANSLATE_LINES)
def test_translate_quick_arguments_match_argparse(argv: list[str]) -> None:
    quick = translate_cli._quick_args(argv)
    if argv[-1] == "-O2":  # argparse reads "-O2" too; the quick parser leaves it to argparse
        assert quick is None
        return
    assert quick is not None
    full = translate_cli.build_parser().parse_args(argv)
    assert (quick.input, quick.output) == (full.input, full.output)
    assert asdict(translate_cli._options(quick)) == asdict(translate_cli._options(full))
    assert translate_cli._quick_option_values(quick) == asdict(translate_cli._options(full))
    with config.scoped(arch="sm_80", check_bounds=True):  # the defaults come from the config
        assert translate_cli._quick_option_values(quick) == asdict(translate_cli._options(full))


@pytest.mark.parametrize("argv", [
    ["in.mlir"], ["in.mlir", "-o", "-"], ["-", "-o", "x.nova"], ["in.mlir", "-o", "x", "--timings"],
    ["in.mlir", "-o", "x", "--emit=ptx"], ["in.mlir", "-o", "x", "--sign", "k"], ["-h"],
    ["in.mlir", "-o", "x", "-O", "7"], ["in.mlir", "-o"], ["a.mlir", "b.mlir", "-o", "x"],
    ["in.mlir", "-o", "x", "--split-input-file"], ["in.mlir", "-o", "x", "--arch="],
])
def test_translate_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    assert translate_cli._quick_args(argv) is None


@pytest.mark.parametrize("argv", [
    ["p.nova"], ["p.nova", "--device", "cpu"], ["--device=cuda", "p.mlir", "-e", "f"],
    ["p.mlir", "--entry-point", "g", "--arch", "sm_80", "--check-bounds"], ["-", "--entry=h"],
])
def test_run_quick_arguments_match_argparse(argv: list[str]) -> None:
    quick = run_cli._quick_args(argv)
    assert quick is not None
    assert vars(quick) == vars(run_cli._parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    [], ["p.nova", "--device", "tpu"], ["p.nova", "--input", "x.npy"], ["p.nova", "-h"],
    ["p.nova", "q.nova"], ["p.nova", "--entry-point-result=i32"], ["p.nova", "-e"],
])
def test_run_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    assert run_cli._quick_args(argv) is None


WATCHED = ("xdsl", "llvmlite", "argparse", "numpy", "dataclasses", "inspect", "hashlib",
           "concurrent", "logging", "typing", "platform", "base64", "threading", "tempfile",
           "shutil", "subprocess", "pathlib")
"""Modules (top-level names) whose import the cold-start paths avoid; see the tests below."""

PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('loaded:', *sorted({{m.split('.')[0] for m in sys.modules"
         " if m.split('.')[0] in {watched!r}}}), file=sys.stderr))\n"
         "from nova.cli.{tool} import main\n"
         "sys.exit(main(sys.argv[1:]))\n")


def _tool(tool: str, args: list[str], cache: Path) -> tuple[str, str]:
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache), "NOVA_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    for name in ("NOVA_CACHE", "NOVA_DUMP_DIR", "NOVA_OVERRIDE_DIR"):
        env.pop(name, None)
    probe = PROBE.format(tool=tool, watched=WATCHED)
    done = subprocess.run([sys.executable, "-c", probe, *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    loaded = [line for line in done.stderr.splitlines() if line.startswith("loaded:")]
    return done.stdout, loaded[-1]


def test_cache_hits_import_only_what_they_use(tmp_path: Path) -> None:
    source, bundle, cache = tmp_path / "p.mlir", tmp_path / "p.nova", tmp_path / "cache"
    source.write_text(PROGRAM)
    _, cold = _tool("translate", [str(source), "-o", str(bundle)], cache)
    assert "xdsl" in cold  # compiled
    first = bundle.read_bytes()
    bundle.unlink()
    _, hit = _tool("translate", [str(source), "-o", str(bundle)], cache)
    # no xDSL, llvmlite, argparse or NumPy; not even dataclasses (inspect), OpenSSL (hashlib),
    # typing, threading, pathlib or the compiler's stage table
    assert hit == "loaded:"
    assert bundle.read_bytes() == first
    out, _ = _tool("run", [str(bundle), "--device", "cpu"], cache)  # fills the runtime objects
    assert out == "9\n"
    out, warm = _tool("run", [str(bundle), "--device", "cpu"], cache)
    assert out == "9\n"
    loaded = set(warm.split()[1:])
    assert not loaded & {"xdsl", "llvmlite", "argparse", "numpy", "concurrent", "logging",
                         "platform", "tempfile", "shutil", "subprocess", "hashlib",
                         "base64"}, warm  # no signature checks without a trust policy
