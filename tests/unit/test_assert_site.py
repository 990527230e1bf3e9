"""Device-assert report sites (nova.ir.locations.assert_site): the file, line and function of
each MLIR location kind, as upstream's cf.assert -> __assertfail lowering (GPU to NVVM) gives
them; checked against mlir-opt 22 when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nova.ir.locations import assert_site
from nova.ir.parser import parse_mlir

MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"

CASES = [  # (location suffix, expected (file, line, function))
    ('loc("f.mlir":3:4)', ("f.mlir", 3, "(unknown)")),
    ('loc(callsite(callsite("callee_func_name"("callee_file.cc":7:9) at "caller_file.cc":10:8) '
     'at "caller2.cc":1:1))', ("callee_file.cc", 7, "callee_func_name")),
    ('loc("nm"("g.cc":5:6))', ("g.cc", 5, "nm")),
    ('loc("nmonly")', ("(unknown)", 0, "nmonly")),
    ('loc(fused["a.cc":1:2, "b.cc":3:4])', ("(unknown)", 0, "(unknown)")),
    ('loc(fused["nn"("a.cc":1:2), "b.cc":3:4])', ("(unknown)", 0, "(unknown)")),
    ("loc(unknown)", ("(unknown)", 0, "(unknown)")),
    ('loc(callsite("inner"("i.cc":2:3) at "outer"("o.cc":4:5)))', ("i.cc", 2, "inner")),
    ('loc("nm2"(callsite("i2.cc":2:3 at "o2.cc":4:5)))', ("(unknown)", 0, "nm2")),
    ("", ("prog.mlir", 13, "(unknown)")),  # no location: the op's own line (4 + its index)
]


def _program() -> str:
    asserts = "\n".join(f'    cf.assert %c, "case{i}" {loc}' for i, (loc, _) in enumerate(CASES))
    return ("module attributes {gpu.container_module} {\n"
            "gpu.module @k {\n"
            "  gpu.func @kern(%c: i1) kernel {\n"
            f"{asserts}\n"
            "    gpu.return\n  }\n}\n}\n")


def test_sites_of_every_location_kind() -> None:
    module = parse_mlir(_program(), "prog.mlir")
    sites = [assert_site(op) for op in module.walk() if op.name == "cf.assert"]
    assert sites == [expected for _, expected in CASES]


def test_an_explicit_unknown_location_is_kept_a_missing_one_is_filled_in() -> None:
    module = parse_mlir("func.func @f(%c: i1) {\n  cf.assert %c, \"x\" loc(unknown) // why\n"
                        "  cf.assert %c, \"y\"\n  return\n}\n", "u.mlir")
    sites = [assert_site(op) for op in module.walk() if op.name == "cf.assert"]
    assert sites == [("(unknown)", 0, "(unknown)"), ("u.mlir", 3, "(unknown)")]


def _upstream_sites(output: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of each __assertfail call in mlir-opt's NVVM output."""
    strings = dict(re.findall(r'llvm\.mlir\.global internal constant @(\w+)\("(.*?)\\00"\)',
                              output))
    sites = []
    refs: list[str] = []
    for line in output.splitlines():
        ref = re.search(r"llvm\.mlir\.addressof @(\w+)", line)
        if ref is not None:
            refs.append(ref.group(1))
        number = re.search(r"llvm\.mlir\.constant\((\d+) : i32\)", line)
        if number is not None and len(refs) >= 3:
            _message, file, func = refs[-3:]
            sites.append((strings[file], int(number.group(1)), strings[func]))
            refs.clear()
    return sites


def test_sites_match_mlir_opt(tmp_path: Path) -> None:
    if shutil.which(MLIR_OPT) is None:
        pytest.skip("upstream mlir-opt 22 is not installed")
    path = tmp_path / "prog.mlir"
    path.write_text(_program())
    done = subprocess.run([MLIR_OPT, str(path), "--convert-gpu-to-nvvm"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    upstream = _upstream_sites(done.stdout)
    module = parse_mlir(path.read_text(), str(path))
    ours = [assert_site(op) for op in module.walk() if op.name == "cf.assert"]
    assert len(upstream) == len(CASES)
    assert ours == upstream
