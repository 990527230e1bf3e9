"""Round-trip tests of Nova's MLIR parser/printer, checked against upstream `mlir-opt`.

Every case (the golden files under tests/filecheck/roundtrip, the corpus, and the snippets below)
must: print-parse-print to a fixpoint; print exactly as `mlir-opt` prints it up to SSA value and
block-argument names; be re-parseable by `mlir-opt` in custom and generic form; and parse from
`mlir-opt`'s custom and generic output. The `mlir-opt` comparisons skip when it is absent.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nova.ir.parser import parse_mlir, print_mlir

TESTS = Path(__file__).resolve().parents[1]
_CANDIDATES = [shutil.which("mlir-opt"), "/usr/lib/llvm-22/bin/mlir-opt"]
MLIR_OPT = next((c for c in _CANDIDATES if c and Path(c).exists()), None)
needs_mlir_opt = pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt not installed")

SNIPPETS: dict[str, str] = {
    "multi-result-and-preds": """
func.func @f(%c: i1, %n: index, %v: f32) -> f32 {
  %r:2 = scf.while (%a = %n, %b = %v) : (index, f32) -> (index, f32) {
    scf.condition(%c) %a, %b : index, f32
  } do {
  ^bb0(%a: index, %b: f32):
    scf.yield %a, %b : index, f32
  }
  cf.cond_br %c, ^bb1, ^bb2(%v : f32)
^bb1:
  cf.br ^bb2(%r#1 : f32)
^bb2(%x: f32):
  return %x : f32
}
""",
    "floats": """
func.func @f() {
  %0 = arith.constant 1.000000e-01 : f32
  %1 = arith.constant 0x7F800000 : f32
  %2 = arith.constant 1.23456789 : f32
  %3 = arith.constant 0.1 : f64
  %4 = arith.constant -0.0 : f32
  %5 = arith.constant 1.0e+300 : f64
  return
}
""",
    "gpu-func-signature": """
gpu.module @m attributes {nova.x} {
  gpu.func @two(%a: i32, %b: f32) -> (f32, i32) {
    gpu.return %b, %a : f32, i32
  }
  gpu.func @grid() kernel attributes {known_grid_size = array<i32: 2, 2, 1>, nova.y = 3 : i64} {
    gpu.return
  }
}
""",
    "launch-func-i32-dims": """
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @noargs() kernel {
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : i32
    gpu.launch_func @k::@noargs blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i32
    return
  }
}
""",
    "memory-space-and-alloc-symbols": """
func.func @f(%n: index) {
  %a = memref.alloca(%n) : memref<?xf32, 5>
  %b = gpu.alloc (%n) : memref<?xf32, 1>
  %t = gpu.wait async
  %hs, %t2 = gpu.alloc async [%t] host_shared (%n) : memref<?xf32>
  %u = memref.cast %b : memref<?xf32, 1> to memref<*xf32, 1>
  return
}
""",
    "launch-module-function-names": """
func.func @f() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
      threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) module(@mymod) function(@myfn) {
    gpu.terminator
  }
  %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
      threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
""",
    "address-spaces": """
gpu.module @m {
  gpu.func @k(%a: memref<4xf32, #gpu.address_space<global>>)
      workgroup(%w: memref<32xf32, #gpu.address_space<workgroup>>)
      private(%p: memref<2xf32, #gpu.address_space<private>>) kernel {
    gpu.return
  }
}
gpu.module @dyn {
  gpu.func @k() kernel {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    gpu.return
  }
}
func.func @f() {
  %a = memref.alloca() : memref<4xf32, #gpu.address_space<workgroup>>
  return
}
""",
    "atomic-rmw-erfc-remf": """
func.func @f(%m: memref<?x4xi32>, %i: index, %x: f32, %y: f64, %v: vector<4xf32>) -> i32 {
  %old = memref.generic_atomic_rmw %m[%i, %i] : memref<?x4xi32> {
  ^bb0(%cur: i32):
    %c1 = arith.constant 1 : i32
    %n = arith.addi %cur, %c1 : i32
    memref.atomic_yield %n : i32
  }
  %tagged = memref.generic_atomic_rmw %m[%i, %i] : memref<?x4xi32> {
  ^bb0(%cur: i32):
    memref.atomic_yield %cur : i32
  } {nova.tag = 1 : i64}
  %e = math.erfc %x : f32
  %e2 = math.erfc %y fastmath<fast> : f64
  %e3 = math.erfc %v : vector<4xf32>
  %r = arith.remf %x, %x : f32
  %r2 = arith.remf %y, %y fastmath<nnan> : f64
  %r3 = arith.remf %v, %v : vector<4xf32>
  return %old : i32
}
""",
    "all-reduce-multiblock": """
func.func @f(%i: i32) {
  %r = gpu.all_reduce %i {
  ^bb0(%a: i32, %b: i32):
    %s = arith.cmpi slt, %a, %b : i32
    cf.cond_br %s, ^bb1, ^bb2
  ^bb1:
    gpu.yield %a : i32
  ^bb2:
    gpu.yield %b : i32
  } : (i32) -> i32
  return
}
""",
}


def _cases() -> list[tuple[str, str]]:
    cases = [(name, text) for name, text in SNIPPETS.items()]
    for folder in (TESTS / "filecheck" / "roundtrip", TESTS / "corpus"):
        for path in sorted(folder.glob("*.mlir")):
            cases.append((f"{folder.name}/{path.name}", path.read_text()))
    return cases


CASES = _cases()
IDS = [name for name, _ in CASES]

_TOKEN = re.compile(r"%[\w$.-]+(?:#\d+)?")
_DEF_GROUPS = re.compile(
    r"(?:blocks|threads|clusters|workgroup|private|scf\.parallel |affine\.parallel )\(([^)]*)\)")
_GROUP_DEF = re.compile(r"(%[\w$.-]+):(\d+) = ")


def normalize(text: str) -> str:
    """Rename SSA values in order of definition, so two printings compare up to names.

    A name in a defining position (results before ` = `, `%x: type` arguments, `%x = ` bound
    operands, launch/attribution/parallel argument lists) gets a fresh number each time, since
    MLIR reuses names across sibling regions; `%x:2 = ` groups expand to `%x#0, %x#1 = `.
    Strings are left alone, trailing spaces and blank lines dropped.
    """
    text = _GROUP_DEF.sub(lambda m: ", ".join(
        f"{m.group(1)}#{i}" for i in range(int(m.group(2)))) + " = ", text)
    current: dict[str, str] = {}
    fresh = itertools.count()
    out = [_normalize_line(raw.rstrip(), current, fresh) for raw in text.splitlines()
           if raw.strip()]
    return "\n".join(out)


def _normalize_line(line: str, current: dict[str, str], fresh: itertools.count[int]) -> str:
    stripped = line.lstrip()
    indent = len(line) - len(stripped)
    head_end = stripped.find(" = ") if stripped.startswith("%") else -1
    spans = [m.span(1) for m in _DEF_GROUPS.finditer(line)]

    def rename(m: re.Match[str], base: int) -> str:
        start, end = base + m.start(), base + m.end()
        is_def = (line[end:].startswith((": ", " = "))
                  or (head_end != -1 and start - indent < head_end)
                  or any(a <= start < b for a, b in spans))
        if is_def or m.group(0) not in current:
            current[m.group(0)] = f"%v{next(fresh)}"
        return current[m.group(0)]

    parts = line.split('"')
    offset = 0
    for k, part in enumerate(parts):
        if k % 2 == 0:
            parts[k] = _TOKEN.sub(lambda m, base=offset: rename(m, base), part)
        offset += len(part) + 1
    return '"'.join(parts)


def _mlir_opt(text: str, *flags: str) -> str:
    assert MLIR_OPT is not None
    done = subprocess.run([MLIR_OPT, *flags], input=text, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_normalizer_distinguishes_and_equates() -> None:
    a = "%x = f %arg0\n%y = g %x, %arg0"
    b = "%0 = f %a\n%1 = g %0, %a"
    c = "%0 = f %a\n%1 = g %a, %0"
    assert normalize(a) == normalize(b)
    assert normalize(a) != normalize(c)
    assert normalize('%0:2 = f\nuse %0#1 "%d"') == normalize('%a, %b = f\nuse %b "%d"')


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_print_parse_fixpoint(name: str, text: str) -> None:
    first = print_mlir(parse_mlir(text, name))
    second = print_mlir(parse_mlir(first, name))
    assert first == second
    generic = print_mlir(parse_mlir(text, name), generic=True)
    assert print_mlir(parse_mlir(generic, name)) == first


@needs_mlir_opt
@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_print_matches_mlir_opt(name: str, text: str) -> None:
    ours = print_mlir(parse_mlir(text, name))
    assert normalize(ours) == normalize(_mlir_opt(text))


@needs_mlir_opt
@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_mlir_opt_parses_our_output(name: str, text: str) -> None:
    module = parse_mlir(text, name)
    reference = normalize(_mlir_opt(text))
    assert normalize(_mlir_opt(print_mlir(module))) == reference
    assert normalize(_mlir_opt(print_mlir(module, generic=True))) == reference


@needs_mlir_opt
@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_we_parse_mlir_opt_output(name: str, text: str) -> None:
    custom = _mlir_opt(text)
    generic = _mlir_opt(text, "--mlir-print-op-generic")
    reference = normalize(custom)
    assert normalize(print_mlir(parse_mlir(custom, name))) == reference
    assert normalize(print_mlir(parse_mlir(generic, name))) == reference


def test_implicit_module_wraps_top_level_ops() -> None:
    module = parse_mlir("func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n")
    assert [op.name for op in module.body.block.ops] == ["func.func", "func.func"]
    assert print_mlir(module).startswith("module {\n  func.func @a() {\n")


def test_explicit_module_is_kept() -> None:
    module = parse_mlir("module attributes {gpu.container_module} {\n}\n")
    assert "gpu.container_module" in module.attributes
    assert print_mlir(module) == "module attributes {gpu.container_module} {\n}\n"
