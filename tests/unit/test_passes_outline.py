"""Pass infrastructure and outline-kernels at the API level (the golden tests cover the text)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, IntegerType

from nova.errors import PassError
from nova.ir.gpu import FuncOp, GPUModuleOp, LaunchFuncOp, LaunchOp
from nova.ir.parser import parse_mlir
from nova.passes.outline_kernels import known_sizes
from nova.passes.registry import PASSES, module_for, parse_pipeline, run_pipeline
from nova.passes.symbols import SymbolTable, symbol_name

GOLDEN = Path(__file__).resolve().parent.parent / "filecheck" / "passes"


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_naming_convention(name: str) -> None:
    cls = PASSES[name]
    assert cls.name == name
    assert cls.__name__.endswith("Pass")
    assert cls.__module__ == module_for(name) == "nova.passes." + name.replace("-", "_")
    assert (GOLDEN / f"{name}.mlir").is_file(), f"no golden test for pass {name}"
    assert importlib.import_module(cls.__module__).__doc__


def test_parse_pipeline_errors() -> None:
    assert [type(p).name for p in parse_pipeline("sink-index-computations,outline-kernels")] \
        == ["sink-index-computations", "outline-kernels"]
    assert parse_pipeline("") == []
    with pytest.raises(PassError, match=r"unknown pass 'nope' \(known passes: .*outline-kernels"):
        parse_pipeline("outline-kernels,nope")
    with pytest.raises(PassError, match="bad options for pass 'outline-kernels'"):
        parse_pipeline("outline-kernels{no-such-option=1}")


def _outlined(text: str, pipeline: str = "outline-kernels"):
    module = parse_mlir(text, "t.mlir")
    run_pipeline(module, pipeline)
    return module


LAUNCH = """\
func.func @f(%a: memref<8xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%tx] : memref<8xf32>
    memref.store %v, %a[%bx] : memref<8xf32>
    gpu.terminator
  }
  return
}
"""


def test_outline_builds_module_kernel_and_launch_func() -> None:
    module = _outlined(LAUNCH)
    ops = list(module.body.block.ops)
    assert [op.name for op in ops] == ["func.func", "gpu.module"]
    gpu_module = ops[1]
    assert isinstance(gpu_module, GPUModuleOp) and symbol_name(gpu_module) == "f_kernel"
    (kernel,) = gpu_module.body.block.ops
    assert isinstance(kernel, FuncOp) and kernel.is_kernel
    assert [str(t) for t in kernel.function_type.inputs.data] == ["memref<8xf32>"]
    assert kernel.known_block_size == DenseArrayBase.from_list(IntegerType(32), [8, 1, 1])
    assert kernel.known_grid_size is None
    (launch_func,) = [op for op in module.walk() if isinstance(op, LaunchFuncOp)]
    assert (launch_func.kernel_module_name, launch_func.kernel_name) == ("f_kernel", "f_kernel")
    assert not any(isinstance(op, LaunchOp) for op in module.walk())
    assert "gpu.container_module" in module.attributes
    module.verify()


def test_outlined_ops_keep_source_locations() -> None:
    from nova.ir.locations import location_of

    module = _outlined(LAUNCH)
    (launch_func,) = [op for op in module.walk() if isinstance(op, LaunchFuncOp)]
    kernel_load = next(op for op in module.walk() if op.name == "memref.load")
    assert (location_of(launch_func).line, location_of(kernel_load).line) == (4, 6)
    (kernel,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    assert location_of(kernel).line == 4


def test_pass_error_is_located_at_the_inner_launch() -> None:
    text = """\
func.func @nested() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.launch blocks(%b2, %b3, %b4) in (%g2 = %c1, %g3 = %c1, %g4 = %c1)
               threads(%t2, %t3, %t4) in (%s2 = %c1, %s3 = %c1, %s4 = %c1) {
      gpu.terminator
    }
    gpu.terminator
  }
  return
}
"""
    with pytest.raises(PassError) as info:
        _outlined(text)
    location = info.value.location
    assert location is not None and (location.filename, location.line) == ("t.mlir", 5)
    assert "nested in another gpu.launch" in info.value.render()


def test_sink_then_outline_makes_constants_local() -> None:
    module = _outlined(LAUNCH.replace("%v = memref.load %a[%tx]", "%v = memref.load %a[%c1]"),
                       "sink-index-computations,outline-kernels")
    (launch_func,) = [op for op in module.walk() if isinstance(op, LaunchFuncOp)]
    assert [str(v.type) for v in launch_func.kernelOperands] == ["memref<8xf32>"]


@pytest.mark.parametrize(("values", "expected"), [
    ([(1, IndexType()), (2, IndexType()), (3, IndexType())], [1, 2, 3]),
    ([(0xFFFFFFFF, IndexType()), (1, IndexType()), (1, IndexType())], [-1, 1, 1]),
    ([(1 << 32, IndexType()), (1, IndexType()), (1, IndexType())], None),
    ([(-1, IndexType()), (1, IndexType()), (1, IndexType())], None),
    ([(-1, IntegerType(32)), (1, IndexType()), (1, IndexType())], [-1, 1, 1]),
])
def test_known_sizes_follow_upstream_range_rules(values: list, expected: list | None) -> None:
    from xdsl.dialects.arith import ConstantOp

    consts = tuple(ConstantOp(IntegerAttr(v, t)).result for v, t in values)
    result = known_sizes(consts)
    if expected is None:
        assert result is None
    else:
        assert result == DenseArrayBase.from_list(IntegerType(32), expected)


def test_symbol_table_uniquing_uses_one_counter() -> None:
    module = parse_mlir("func.func @a() { return }\nfunc.func @b() { return }\n", "s.mlir")
    table = SymbolTable(module)
    names = []
    for name in ("a", "b", "a", "c"):
        names.append(table.insert(GPUModuleOp(name)))
    assert names == ["a_0", "b_1", "a_2", "c"]
    assert table.lookup("a_2") is not None and table.lookup("zzz") is None


def test_ir_that_breaks_after_a_pass_is_reported_naming_the_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.passes.outline_kernels import OutlineKernelsPass

    def break_ir(self: OutlineKernelsPass, ctx: object, op: object) -> None:
        launch = next(o for o in op.walk() if isinstance(o, LaunchOp))
        launch.body.blocks[0].erase_op(launch.body.blocks[0].last_op)  # drop the terminator

    monkeypatch.setattr(OutlineKernelsPass, "apply", break_ir)
    with pytest.raises(PassError, match="pass 'outline-kernels' produced IR that does not verify"):
        _outlined(LAUNCH)
    module = parse_mlir(LAUNCH, "t.mlir")
    run_pipeline(module, "outline-kernels", verify_each=False)  # no check requested
