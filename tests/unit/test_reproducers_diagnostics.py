"""The compiler-side reproducers of issue 12 (../shared/repro/reliability-2026-11-26/: d1*, d2*,
d3, d4, d5, f1, s1-s3, info-gpu-printf-format) are located diagnostics now.

Each was an internal error (exit 2), a memory blow-up or silently accepted invalid IR. Here each
one (trimmed) goes through nova-opt, nova-translate (in-process) and nova-run (a subprocess):
exit status 1, `file:line:col: error: <message>` with the source line and a caret, no traceback.
Where upstream rejects the input, the message is mlir-opt 22's (checked against mlir-opt itself
when it is installed). tests/filecheck/invalid/{verify-rules,unsupported-limits,
gpu-printf-format}.mlir cover the neighbouring cases of each class, and
tests/filecheck/backends/verify-rules-valid.mlir the valid neighbours.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_robustness_cli import check_outcome, invoke

from nova import config
from nova.cli import opt, translate
from nova.ir.gpu.kernel_ops import printf_conversions

MLIR_OPT = shutil.which("mlir-opt", path="/usr/lib/llvm-22/bin") or shutil.which("mlir-opt")


@dataclass(frozen=True)
class Repro:
    text: str
    message: str
    verifier: bool = True
    """Refused by the verifier (so by nova-opt too); False: by the LLVM lowering only (upstream
    accepts the IR, so nova-opt does as mlir-opt)."""
    upstream: bool = True
    """mlir-opt rejects it with the same message."""


_KERNEL = """module attributes {{gpu.container_module}} {{
  func.func @main() {{
    %c1 = arith.constant 1 : index
    %a = gpu.alloc(%c1) : memref<?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {{
      {body}
      gpu.terminator
    }}
    return
  }}
}}
"""

REPROS: dict[str, Repro] = {
    # memref.dim with a constant index >= rank: "internal error: IndexError" in lower_dim.
    "d1": Repro("""func.func @f(%a: memref<?xf32>) -> index {
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c1 : memref<?xf32>
  return %n : index
}
""", "memref.dim index 1 is out of range for memref<?xf32> of rank 1 (a constant index must be "
        "in [0, 1))", verifier=False, upstream=False),
    # ... inside a gpu.launch body (the kernel lowerings).
    "d1b": Repro(_KERNEL.format(body="%c3 = arith.constant 3 : index\n"
                                "      %n = memref.dim %a, %c3 : memref<?xf32>"),
                 "memref.dim index 3 is out of range for memref<?xf32> of rank 1",
                 verifier=False, upstream=False),
    # ... a negative constant: "IndexError: cannot fit 'int' into an index-sized integer".
    "d1c": Repro("""func.func @f(%a: memref<?x?xf32>) -> index {
  %c = arith.constant -1 : index
  %n = memref.dim %a, %c : memref<?x?xf32>
  return %n : index
}
""", "memref.dim index -1 is out of range for memref<?x?xf32> of rank 2", verifier=False,
        upstream=False),
    # scf.if with a result and an else arm without scf.yield: IndexError in the lowering.
    "d2": Repro("""func.func @f(%b: i1) -> i32 {
  %r = scf.if %b -> (i32) {
    %one = arith.constant 1 : i32
    scf.yield %one : i32
  } else {
    %z = arith.constant 0 : i32
  }
  return %r : i32
}
""", "'scf.if' op along control flow edge from Operation scf.yield to parent: region branch "
        "point has 0 operands, but region successor needs 1 inputs"),
    # affine.if likewise (found by the fuzzer).
    "d2b": Repro("""func.func @f(%i: index) -> i32 {
  %r = affine.if affine_set<(d0) : (d0 >= 0)>(%i) -> i32 {
    %one = arith.constant 1 : i32
    affine.yield %one : i32
  } else {
    %z = arith.constant 0 : i32
  }
  return %r : i32
}
""", "'affine.yield' op parent of yield must have same number of results as the yield "
        "operands"),
    # (d3, the huge integer width, runs under a memory limit: test_d3_huge_width_fast below.)
    # cf.br with 2 operands for a block of 1 argument: "ValueError: zip() argument 2 ...".
    "d4": Repro("""func.func @f(%x: i32) -> i32 {
  cf.br ^bb1(%x, %x : i32, i32)
^bb1(%a: i32):
  return %a : i32
}
""", "branch has 2 operands for successor #0, but target block has 1"),
    # A dense literal of i128: "NotImplementedError: Format not implemented for i128".
    "d5": Repro("""func.func @main() {
  %v = arith.constant dense<[1, 2, 3, 0]> : vector<4xi128>
  %e = vector.extract %v[1] : i128 from vector<4xi128>
  return
}
""", "dense literal of type vector<4xi128> is not supported: Nova's dense literals hold "
        "integers of at most 64 bits (use a scalar arith.constant for a wider integer)",
        upstream=False),
    # scf.for with a constant step of 0: accepted, then looped forever on the CPU device.
    "f1": Repro("""func.func @main() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c0 {
    vector.print %i : index
  }
  return
}
""", "'scf.for' op constant step operand must be positive", upstream=False),
    # vector.extract at a static position outside the vector: printed garbage.
    "s1": Repro("""func.func @main() {
  %v = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %e = vector.extract %v[7] : f32 from vector<4xf32>
  vector.print %e : f32
  return
}
""", "'vector.extract' op expected position attribute #1 to be a non-negative integer smaller "
        "than the corresponding vector dimension or poison (-1)"),
    # ... and vector.insert.
    "s1-insert": Repro("""func.func @main(%v: vector<4xf32>, %x: f32) {
  %w = vector.insert %x, %v[9] : f32 into vector<4xf32>
  return
}
""", "'vector.insert' op expected position attribute #1 to be a non-negative integer smaller "
        "than the corresponding dest vector dimension"),
    # get_global with another type than its global: read 4 MiB past a 16-byte global.
    "s2": Repro("""module {
  memref.global "private" constant @g : memref<4xf32> = dense<1.0>
  func.func @main() {
    %g = memref.get_global @g : memref<1048576xi32>
    return
  }
}
""", "'memref.get_global' op result type 'memref<1048576xi32>' does not match type "
        "'memref<4xf32>' of the global memref @g"),
    # collapse_shape of 6 elements into 7: accepted.
    "s3": Repro("""func.func @f(%a: memref<2x3xf32>) -> memref<7xf32> {
  %r = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<7xf32>
  return %r : memref<7xf32>
}
""", "'memref.collapse_shape' op collapsed dim size (7) must equal reassociation group size "
        "(6)"),
    # gpu.printf with more conversions than arguments: printed stack garbage on the CPU device.
    "printf": Repro(_KERNEL.format(body='%x = arith.constant 12345 : i32\n'
                                   '      gpu.printf "%d %d %d %d %d %d\\n", %x : i32'),
                    "'gpu.printf' op format has 6 conversions but 1 argument (each argument "
                    "needs exactly one)", upstream=False),
    # ... "%s" with an i32 dereferenced 12345 (a kernel fault).
    "printf-s": Repro(_KERNEL.format(body='%x = arith.constant 12345 : i32\n'
                                     '      gpu.printf "%s\\n", %x : i32'),
                      "'gpu.printf' op conversion '%s' is not supported", upstream=False),
}


@pytest.fixture(autouse=True)
def _no_cache() -> Iterator[None]:
    with config.scoped(cache_enabled=False):
        yield


def _first_message(stderr: str) -> str:
    """The message of a located diagnostic's first line."""
    return stderr.splitlines()[0].split(": error: ", 1)[1]


@pytest.mark.parametrize("name", sorted(REPROS))
def test_reproducer_is_located_diagnostic(name: str, tmp_path: Path) -> None:
    repro = REPROS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(repro.text)
    tools = [("translate", translate.main, ["-o", str(tmp_path / "out.nova")])]
    if repro.verifier:
        tools.append(("opt", opt.main, ["-o", str(tmp_path / "out.mlir")]))
    for tool, main, argv in tools:
        status, err = invoke(main, [str(path), *argv])
        assert status == 1, f"nova-{tool}: exit {status}\n{err}"
        check_outcome(path, status, err, repro.text)
        assert _first_message(err).startswith(repro.message), f"nova-{tool}:\n{err}"
    if not repro.verifier:  # upstream accepts it: so does nova-opt (verification only)
        status, err = invoke(opt.main, [str(path), "-o", str(tmp_path / "out.mlir")])
        assert status == 0, err


@pytest.mark.parametrize("name", ["d1", "d2", "d4", "d5", "f1", "s1", "s2", "printf"])
def test_reproducer_through_nova_run(name: str, tmp_path: Path) -> None:
    """nova-run (a subprocess: a run executes native code) reports the same diagnostic and
    runs nothing (f1 looped forever, s1/s2 printed garbage)."""
    repro = REPROS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(repro.text)
    proc = subprocess.run([sys.executable, "-m", "nova.cli.run", str(path), "--device", "cpu"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    check_outcome(path, proc.returncode, proc.stderr, repro.text)
    assert _first_message(proc.stderr).startswith(repro.message), proc.stderr
    assert proc.stdout == ""


D3 = """func.func @f() -> i32 {
  %x = arith.constant 0 : i32147483647
  %y = arith.constant 0 : i32
  return %y : i32
}
"""


def _limit_memory() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))


@pytest.mark.parametrize(("width", "message"), [
    ("32147483647", "invalid integer width"),
    ("2147483647", "integer bitwidth is limited to 16777215 bits"),
    ("16777216", "integer bitwidth is limited to 16777215 bits"),
])
def test_d3_huge_width_fast(width: str, message: str, tmp_path: Path) -> None:
    """d3: an absurd integer width took > 16 GiB (xDSL computed the bounds of a constant of that
    many bits); now refused at the type's token, under a 4 GB address-space limit, in seconds."""
    text = D3.replace("i32147483647", f"i{width}")
    path = tmp_path / "d3.mlir"
    path.write_text(text)
    for tool in ("translate", "opt"):
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", f"nova.cli.{tool}", str(path), "-o",
                               str(tmp_path / "out")], capture_output=True, text=True,
                              timeout=60, preexec_fn=_limit_memory)
        assert time.monotonic() - start < 30
        check_outcome(path, proc.returncode, proc.stderr, text)
        assert proc.returncode == 1, proc.stderr
        assert _first_message(proc.stderr) == message, proc.stderr
        # The caret is under the type (as mlir-opt's).
        assert proc.stderr.splitlines()[0].startswith(f"{path}:2:27: error:"), proc.stderr


@pytest.mark.skipif(MLIR_OPT is None, reason="upstream mlir-opt (LLVM 22) is not installed")
@pytest.mark.parametrize("name", sorted(n for n, r in REPROS.items() if r.upstream))
def test_messages_are_mlir_opts(name: str, tmp_path: Path) -> None:
    """Where upstream rejects a reproducer, Nova's message is mlir-opt's word for word."""
    assert MLIR_OPT is not None
    repro = REPROS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(repro.text)
    proc = subprocess.run([MLIR_OPT, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert _first_message(proc.stderr) == repro.message


def test_d3_message_is_mlir_opts(tmp_path: Path) -> None:
    if MLIR_OPT is None:
        pytest.skip("upstream mlir-opt (LLVM 22) is not installed")
    for width, message in (("32147483647", "invalid integer width"),
                           ("16777216", "integer bitwidth is limited to 16777215 bits")):
        path = tmp_path / "d3.mlir"
        path.write_text(D3.replace("i32147483647", f"i{width}"))
        proc = subprocess.run([MLIR_OPT, str(path)], capture_output=True, text=True, timeout=60)
        assert proc.stderr.splitlines()[0] == f"{path}:2:27: error: {message}", proc.stderr


def test_printf_conversions() -> None:
    assert printf_conversions("100%% %5.2f|%-+08.3e %lld %hhx%c") == [
        ("%5.2f", "", "f"), ("%-+08.3e", "", "e"), ("%lld", "ll", "d"), ("%hhx", "hh", "x"),
        ("%c", "", "c")]
    assert printf_conversions("no conversions\n") == []
