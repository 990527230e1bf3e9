"""Every parsed op carries its source position; positions survive cloning and can be set."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from nova.errors import SourceLocation
from nova.ir.locations import location_of, nearest_location, set_location
from nova.ir.parser import parse_mlir, print_mlir

SOURCE = """func.func @f(%m: memref<?xf32>, %i: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
      threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def _ops_by_name(module: ModuleOp) -> dict[str, list]:
    found: dict[str, list] = {}
    for op in module.walk():
        found.setdefault(op.name, []).append(op)
    return found


def test_every_op_has_a_location() -> None:
    module = parse_mlir(SOURCE, "prog.mlir")
    for op in module.walk():
        assert location_of(op) is not None, op.name


def test_positions_are_line_and_column_of_the_op() -> None:
    """An op is located at its name (after any `%results = `), as upstream's parser does."""
    ops = _ops_by_name(parse_mlir(SOURCE, "prog.mlir"))
    expected = {"func.func": (1, 1), "arith.constant": (2, 9), "gpu.launch": (3, 3),
                "memref.load": (5, 10), "gpu.terminator": (6, 5), "func.return": (8, 3)}
    for name, (line, col) in expected.items():
        loc = location_of(ops[name][0])
        assert loc is not None
        assert (loc.filename, loc.line, loc.column) == ("prog.mlir", line, col), name
    loc = location_of(ops["memref.load"][0])
    assert loc is not None and loc.excerpt().endswith("\n         ^")


def test_location_survives_clone_and_printing() -> None:
    module = parse_mlir(SOURCE, "prog.mlir")
    launch = _ops_by_name(module)["gpu.launch"][0]
    clone = launch.clone()
    assert location_of(clone) == location_of(launch)
    inner = next(op for op in clone.walk() if op.name == "memref.load")
    loc = location_of(inner)
    assert loc is not None and (loc.line, loc.column) == (5, 10)
    assert "loc(" not in print_mlir(module)


def test_set_location_and_nearest_location() -> None:
    module = parse_mlir(SOURCE, "prog.mlir")
    load = _ops_by_name(module)["memref.load"][0]
    set_location(load, None)
    assert location_of(load) is None
    parent = nearest_location(load)
    assert parent is not None and (parent.line, parent.column) == (3, 3)
    set_location(load, SourceLocation("other.py", 10, 2, "a\nb\nc\nd\ne\nf\ng\nh\ni\nxyz = 1\n"))
    loc = location_of(load)
    assert loc is not None and (loc.filename, loc.line, loc.column) == ("other.py", 10, 2)
    assert loc.excerpt() == "xyz = 1\n ^"


def test_explicit_loc_in_text_wins() -> None:
    text = ('func.func @f() {\n  %0 = arith.constant 1 : i32 loc("gen.py":7:3)\n'
            '  return\n}\n')
    op = _ops_by_name(parse_mlir(text, "t.mlir"))["arith.constant"][0]
    loc = location_of(op)
    assert loc is not None and (loc.filename, loc.line, loc.column) == ("gen.py", 7, 3)


def test_wrapping_module_is_located_at_start() -> None:
    module = parse_mlir("func.func @a() {\n  return\n}\n", "w.mlir")
    loc = location_of(module)
    assert loc is not None and (loc.line, loc.column) == (1, 1)
