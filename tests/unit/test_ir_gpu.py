"""Python-side API of Nova's gpu dialect and overrides: builders, accessors, MLIR generic names."""

from __future__ import annotations

import time
from pathlib import Path

from xdsl.dialects import memref as xmemref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, f32, i32

from nova.ir import gpu
from nova.ir.context import make_context
from nova.ir.dialects.memref import atomic_rmw_kind_name
from nova.ir.parser import parse_mlir, print_mlir

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

PROGRAM = """module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<?xf32>, %s: f32) workgroup(%w: memref<8xf32, 3>) kernel {
      gpu.return
    }
  }
  func.func @main(%m: memref<?xf32>, %n: index, %v: f32) {
    %c1 = arith.constant 1 : index
    %smem = arith.constant 64 : i32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
        threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1)
        workgroup(%buf: memref<4xf32, 3>) private(%p: memref<2xf32, 5>) {
      %x, %ok = gpu.shuffle xor %v, %smem, %smem : f32
      gpu.terminator
    }
    %t = gpu.wait async
    %t2 = gpu.launch_func async [%t] @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%n, %c1, %c1) dynamic_shared_memory_size %smem
        args(%m : memref<?xf32>, %v : f32)
    %h = gpu.alloc host_shared (%n) : memref<?xf32>
    %mi = memref.alloc(%n) : memref<?xi32>
    %r = memref.atomic_rmw maxu %smem, %mi[%c1] : (i32, memref<?xi32>) -> i32
    return
  }
}
"""


def _find(module: object, cls: type) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]  # type: ignore[attr-defined]


def test_context_uses_nova_gpu_dialect() -> None:
    ctx = make_context()
    assert ctx.get_optional_op("gpu.shuffle") is gpu.ShuffleOp
    assert ctx.get_optional_op("gpu.launch") is gpu.LaunchOp
    assert ctx.get_optional_op("index.add") is not None
    assert ctx.get_optional_op("llvm.call") is None


def test_launch_accessors() -> None:
    module = parse_mlir(PROGRAM, "p.mlir")
    (launch,) = _find(module, gpu.LaunchOp)
    names = [a.name_hint for a in launch.block_ids() + launch.thread_ids()]
    assert names == ["bx", "by", "bz", "tx", "ty", "tz"]
    assert [a.name_hint for a in launch.grid_size_args()] == ["gx", "gy", "gz"]
    assert [a.name_hint for a in launch.block_size_args()] == ["sx", "sy", "sz"]
    assert [a.name_hint for a in launch.workgroup_args()] == ["buf"]
    assert [a.name_hint for a in launch.private_args()] == ["p"]
    assert launch.cluster_sizes() is None and not launch.has_clusters
    assert launch.block_sizes()[0].name_hint == "n"
    assert launch.attributes["workgroup_attributions"].value.data == 1


def test_launch_func_and_func_accessors() -> None:
    module = parse_mlir(PROGRAM, "p.mlir")
    (call,) = _find(module, gpu.LaunchFuncOp)
    assert (call.kernel_module_name, call.kernel_name) == ("kernels", "k")
    assert call.properties["kernel"] == call.kernel
    assert [v.type for v in call.kernelOperands] == [MemRefType(f32, [DYNAMIC_INDEX]), f32]
    assert call.asyncToken is not None and len(call.asyncDependencies) == 1
    assert call.dynamicSharedMemorySize is not None
    (func,) = _find(module, gpu.FuncOp)
    assert func.is_kernel and "gpu.kernel" in func.attributes
    assert [a.name_hint for a in func.workgroup_args()] == ["w"]
    assert func.private_args() == ()


def test_generic_form_uses_mlir_names() -> None:
    text = print_mlir(parse_mlir(PROGRAM, "p.mlir"), generic=True)
    assert ('"gpu.launch"(%c1, %c1, %c1, %n, %c1, %c1) <{operandSegmentSizes = '
            'array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}>') in text
    assert "<{kernel = @kernels::@k, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, " \
           "0, 0, 0, 1, 2, 0>}>" in text
    assert "mode = #gpu<shuffle_mode xor>" in text
    assert "hostShared" in text
    assert "{gpu.kernel, sym_name = \"k\", workgroup_attributions = 1 : i64}" in text
    assert "<{kind = 7 : i64}>" in text


def test_atomic_kind_name_and_xdsl_isinstance() -> None:
    module = parse_mlir(PROGRAM, "p.mlir")
    (rmw,) = _find(module, xmemref.AtomicRMWOp)
    assert atomic_rmw_kind_name(rmw) == "maxu"


def test_builders_print_like_mlir() -> None:
    tid = gpu.ThreadIdOp("y", upper_bound=64)
    assert print_mlir(tid).strip() == "%0 = gpu.thread_id  y upper_bound 64"
    lane = gpu.LaneIdOp()
    assert print_mlir(lane).strip() == "%0 = gpu.lane_id"
    size = gpu.SubgroupSizeOp()
    assert print_mlir(size).strip() == "%0 = gpu.subgroup_size : index"
    assert tid.result.type == IndexType()
    printf = gpu.PrintfOp("x=%d\n", [lane.result])
    assert print_mlir(printf).strip() == 'gpu.printf "x=%d\\0A", %0 : index'
    reduce = gpu.AllReduceOp(size.result, "add", uniform=True)
    assert print_mlir(reduce).splitlines()[0] == "%0 = gpu.all_reduce  add %1 uniform {"
    wait = gpu.WaitOp(is_async=True)
    assert print_mlir(wait).strip() == "%0 = gpu.wait async"
    token = wait.asyncToken
    assert token is not None
    alloc = gpu.AllocOp(MemRefType(i32, [4]), async_dependencies=[token], is_async=True)
    assert print_mlir(alloc).strip() == "%0:2 = gpu.alloc async [%1] () : memref<4xi32>"


def test_ops_built_from_xdsl_classes_print_mlir_syntax() -> None:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp, UnrankedMemRefType
    from xdsl.ir import Block, Region

    block = Block(arg_types=[MemRefType(f32, [4])])
    block.add_ops([xmemref.CastOp.get(block.args[0], UnrankedMemRefType.from_type(f32)),
                   func.ReturnOp()])
    defined = func.FuncOp("f", ([MemRefType(f32, [4])], []), Region(block))
    declared = func.FuncOp.external("printMemrefF32", [UnrankedMemRefType.from_type(f32)], [])
    text = print_mlir(ModuleOp([defined, declared]))
    assert "= memref.cast %0 : memref<4xf32> to memref<*xf32>\n    return\n" in text
    assert "func.func private @printMemrefF32(memref<*xf32>)\n" in text
    assert print_mlir(parse_mlir(text)) == text


def test_parsing_the_corpus_is_fast() -> None:
    texts = [p.read_text() for p in sorted(CORPUS.glob("*.mlir"))]
    parse_mlir(texts[0], "warm.mlir")
    start = time.perf_counter()
    for i, text in enumerate(texts):
        parse_mlir(text, f"c{i}.mlir")
    elapsed = time.perf_counter() - start
    assert elapsed < 0.25 * len(texts), f"{elapsed:.2f}s for {len(texts)} programs"
