"""Entry wrappers and manifest signatures of the host lowering, its linkage, and its ABI
declarations (derived from nova.abi, never retyped)."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from host_trace import HostJit, TraceRuntime, descriptor_class, memref_of

from nova.abi import ABI_BY_NAME
from nova.backends.host.abi import function_type
from nova.backends.host.lower import lower_host
from nova.bundle.format import TypeSpec
from nova.errors import UnsupportedError
from nova.ir.parser import parse_mlir

SIGNATURES = """
module attributes {gpu.container_module} {
  gpu.module @unused {
    gpu.func @k() kernel { gpu.return }
  }
  func.func @stats(%a: memref<?x3xf32>, %n: index, %flag: i1, %h: f16, %b: bf16, %z: memref<f64>)
      -> (i64, f64, memref<?x3xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x3xf32>
    %r = arith.index_cast %rows : index to i64
    %x = memref.load %z[] : memref<f64>
    %y = arith.addf %x, %x : f64
    %u = call @helper(%a) : (memref<?x3xf32>) -> memref<?x3xf32>
    return %r, %y, %u : i64, f64, memref<?x3xf32>
  }
  func.func private @helper(%a: memref<?x3xf32>) -> memref<?x3xf32> {
    return %a : memref<?x3xf32>
  }
}
"""


def test_entry_points_describe_public_functions_only() -> None:
    lowering = lower_host(parse_mlir(SIGNATURES, "sig.mlir"))
    (entry,) = lowering.entries
    assert (entry.name, entry.symbol) == ("stats", "__nova_entry_stats")
    assert entry.args == (
        TypeSpec("memref", "f32", "memref<?x3xf32>", (-1, 3)),
        TypeSpec("scalar", "index", "index"),
        TypeSpec("scalar", "i1", "i1"),
        TypeSpec("scalar", "f16", "f16"),
        TypeSpec("scalar", "bf16", "bf16"),
        TypeSpec("memref", "f64", "memref<f64>", ()),
    )
    assert entry.results == (TypeSpec("scalar", "i64", "i64"), TypeSpec("scalar", "f64", "f64"),
                             TypeSpec("memref", "f32", "memref<?x3xf32>", (-1, 3)))
    assert lowering.device_modules == ()  # @unused is never launched: no descriptor reference
    assert "__nova_devmod_unused" not in str(lowering.llvm_module)


def test_only_entry_wrappers_are_exported() -> None:
    lowering = lower_host(parse_mlir(SIGNATURES, "sig.mlir"))
    parsed = llvm.parse_assembly(str(lowering.llvm_module))
    parsed.verify()
    defined = {f.name: f.linkage for f in parsed.functions if not f.is_declaration}
    exported = sorted(n for n, linkage in defined.items()
                      if linkage == llvm.Linkage.external)
    assert exported == ["__nova_entry_stats"]
    assert defined["stats"] == defined["helper"] == llvm.Linkage.internal
    assert parsed.triple == "x86_64-unknown-linux-gnu"


def test_entry_wrapper_loads_arguments_and_stores_results() -> None:
    lowering = lower_host(parse_mlir(SIGNATURES, "sig.mlir"))
    engine = HostJit(str(lowering.llvm_module), TraceRuntime())
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    z = np.array(1.25)
    z_desc = descriptor_class(0)()
    z_desc.allocated = z_desc.aligned = z.ctypes.data
    args = [memref_of(a), ctypes.c_int64(2), ctypes.c_bool(True), ctypes.c_uint16(0),
            ctypes.c_uint16(0), z_desc]
    rows, doubled, view = ctypes.c_int64(), ctypes.c_double(), descriptor_class(2)()
    assert engine.call("stats", args, [rows, doubled, view]) == 0
    assert rows.value == 4
    assert doubled.value == 2.5
    assert view.aligned == a.ctypes.data
    assert (list(view.sizes), list(view.strides)) == ([4, 3], [3, 1])


def test_public_function_with_unranked_argument_is_rejected() -> None:
    source = "func.func @show(%u: memref<*xf32>) {\n  return\n}\n"
    with pytest.raises(UnsupportedError, match="cannot cross a public function's boundary") as err:
        lower_host(parse_mlir(source, "pub.mlir"))
    assert str(err.value).startswith("pub.mlir:1:1: error: argument #0 of type 'memref<*xf32>'")


def test_private_functions_may_take_any_lowered_type() -> None:
    source = "func.func private @show(%u: memref<*xf32>) {\n  return\n}\n"
    assert lower_host(parse_mlir(source, "priv.mlir")).entries == ()


def test_abi_declarations_match_the_contract() -> None:
    source = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func @main(%h: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %t2 = gpu.memcpy async [%t1] %d, %h : memref<4xf32>, memref<4xf32>
    %t3 = gpu.launch_func async [%t2, %t0] @m::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    %t4 = gpu.dealloc async [%t3] %d : memref<4xf32>
    gpu.wait [%t4]
    return
  }
}
"""
    module = lower_host(parse_mlir(source, "abi.mlir")).llvm_module
    declared = {name: g for name, g in module.globals.items() if name.startswith("nova_rt_")}
    assert set(declared) == {
        "nova_rt_raise", "nova_rt_stream_create", "nova_rt_mem_alloc", "nova_rt_memcpy",
        "nova_rt_module_load", "nova_rt_module_get_function", "nova_rt_launch",
        "nova_rt_event_create", "nova_rt_event_record", "nova_rt_stream_wait_event",
        "nova_rt_event_destroy", "nova_rt_mem_free", "nova_rt_stream_synchronize",
        "nova_rt_stream_destroy"}
    for name, decl in declared.items():
        assert decl.function_type == function_type(ABI_BY_NAME[name]), name
        assert [a.name for a in decl.args] == [p for p, _ in ABI_BY_NAME[name].params]
    assert "noreturn" in declared["nova_rt_raise"].attributes


def test_every_fallible_call_is_checked() -> None:
    """Each call of a fallible ABI function is followed by `icmp ne <status>, 0` and a branch to
    the function's raise block; infallible ones (printing) are not."""
    import re

    from nova.abi import ABI_FUNCTIONS

    source = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func private @__nova_library_0(memref<4xf32>)
  func.func @main(%h: memref<4xf32>, %v: f32) {
    %c1 = arith.constant 1 : index
    func.call @__nova_library_0(%h) : (memref<4xf32>) -> ()
    %u = memref.cast %h : memref<4xf32> to memref<*xf32>
    gpu.host_register %u : memref<*xf32>
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %t2 = gpu.memset async [%t1] %d, %v : memref<4xf32>, f32
    %t3 = gpu.wait async [%t2]
    gpu.launch_func @m::@k clusters in (%c1, %c1, %c1) blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    gpu.memcpy %h, %d : memref<4xf32>, memref<4xf32>
    gpu.dealloc %d : memref<4xf32>
    gpu.host_unregister %u : memref<*xf32>
    gpu.wait [%t3, %t0]
    vector.print %v : f32
    return
  }
}
"""
    lines = str(lower_host(parse_mlir(source, "checked.mlir")).llvm_module).splitlines()
    fallible = {f.name for f in ABI_FUNCTIONS if f.fallible}
    seen = set()
    for i, line in enumerate(lines):
        call = re.search(r'(%\S+) = call i32 @"(nova_rt_\w+)"', line)
        if call is None:
            continue
        status, name = call.groups()
        if name not in fallible:
            continue
        seen.add(name)
        flag = re.match(rf"\s*(%\S+) = icmp ne i32 {re.escape(status)}, 0$", lines[i + 1])
        assert flag is not None, (line, lines[i + 1])
        assert re.match(rf'\s*br i1 {re.escape(flag.group(1))}, label %"nova.raise", label',
                        lines[i + 2]), lines[i + 2]
    assert seen == fallible - {"nova_rt_host_assert_fail", "nova_rt_host_alloc_failed",
                               "nova_rt_launch",
                               "nova_rt_memset16", "nova_rt_memset8", "nova_rt_event_synchronize"}
    assert any("call void @\"nova_rt_print_f32\"" in line for line in lines)
