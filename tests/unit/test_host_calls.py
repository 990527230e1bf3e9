"""Host lowering of calls out of host code: runner utilities, vector.print (upstream's printing
rules per type), cf.assert, and the rejection of external functions the runtime does not provide."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from host_trace import HostJit, TraceRuntime, memref_of, param_i64

from nova.backends.host.lower import lower_host
from nova.errors import UnsupportedError
from nova.ir.parser import parse_mlir


def jit(source: str) -> tuple[HostJit, TraceRuntime]:
    lowering = lower_host(parse_mlir(source, "test.mlir"))
    runtime = TraceRuntime()
    return HostJit(str(lowering.llvm_module), runtime, lowering.device_modules), runtime


def test_runner_utilities_call_the_abi() -> None:
    source = """
func.func private @printMemrefF32(memref<*xf32>)
func.func private @printI64(i64)
func.func private @printF64(f64)
func.func private @printNewline()
func.func private @printComma()
func.func @main(%m: memref<2x3xf32>) {
  %u = memref.cast %m : memref<2x3xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  %c = arith.constant -5 : i64
  call @printI64(%c) : (i64) -> ()
  call @printComma() : () -> ()
  %f = arith.constant 0.25 : f64
  call @printF64(%f) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}
"""
    engine, rt = jit(source)
    data = np.zeros((2, 3), np.float32)
    assert engine.call("main", [memref_of(data)]) == 0
    assert rt.names() == ["nova_rt_print_memref_f32", "nova_rt_print_i64", "nova_rt_print_comma",
                          "nova_rt_print_f64", "nova_rt_print_newline"]
    memref = rt.calls[0]
    assert memref.arg("rank") == 2
    words = [param_i64(w) for w in memref.params]
    assert words == [data.ctypes.data, data.ctypes.data, 0, 2, 3, 3, 1]
    assert rt.calls[1].args == (-5,)
    assert rt.calls[3].args == (0.25,)


PRINTS = """
func.func @main(%x: i32, %b: i1, %h: f16, %i: index, %f: f32, %w: i8) {
  vector.print %x : i32
  vector.print %b : i1
  vector.print %h : f16
  vector.print %i : index punctuation <comma>
  vector.print %f : f32 punctuation <no_punctuation>
  vector.print %w : i8 punctuation <open>
  vector.print punctuation <close>
  vector.print str "hello\\n"
  return
}
"""


def test_vector_print_follows_upstream_rules() -> None:
    engine, rt = jit(PRINTS)
    args = [ctypes.c_int32(-7), ctypes.c_bool(True), ctypes.c_uint16(0x3E00),  # f16 1.5
            ctypes.c_int64(-1), ctypes.c_float(2.5), ctypes.c_int8(-2)]
    assert engine.call("main", args) == 0
    printed = [(c.name.removeprefix("nova_rt_print_"), c.args) for c in rt.calls]
    assert printed[:-1] == [
        ("i64", (-7,)), ("newline", ()),           # signless: sign-extended to i64
        ("i64", (1,)), ("newline", ()),            # i1: zero-extended, prints 1 not -1
        ("f32", (1.5,)), ("newline", ()),          # f16: extended to f32
        ("u64", (-1,)), ("comma", ()),             # index: printU64 (the bits of 2**64-1)
        ("f32", (2.5,)),                           # no punctuation
        ("i64", (-2,)), ("open", ()),
        ("close", ()),
    ]
    name, (text,) = printed[-1]
    assert name == "string" and ctypes.string_at(text) == b"hello\n"


def test_vector_print_of_wide_integers_is_rejected() -> None:
    source = "func.func @main(%x: i128) {\n  vector.print %x : i128\n  return\n}\n"
    with pytest.raises(UnsupportedError, match=r"vector\.print of type i128") as info:
        lower_host(parse_mlir(source, "wide.mlir"))
    assert str(info.value).startswith("wide.mlir:2:3: error:")


ASSERTING = """
func.func @check(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %ok = arith.cmpi sgt, %n, %c0 : index
  cf.assert %ok, "n must be positive"
  vector.print %n : index
  return %n : index
}
"""


def test_host_assert_passes_through() -> None:
    engine, rt = jit(ASSERTING)
    result = ctypes.c_int64()
    assert engine.call("check", [ctypes.c_int64(3)], [result]) == 0
    assert result.value == 3
    assert rt.names() == ["nova_rt_print_u64", "nova_rt_print_newline"]


def test_host_assert_failure_reports_and_unwinds() -> None:
    engine, rt = jit(ASSERTING)
    result = ctypes.c_int64(99)
    assert engine.call("check", [ctypes.c_int64(-1)], [result]) == 1
    assert rt.names() == ["nova_rt_host_assert_fail"]  # nothing runs after the failure
    assert ctypes.string_at(rt.calls[0].arg("message")) == b"n must be positive"
    assert result.value == 99  # no result stored


def test_unknown_external_function_is_rejected_at_the_call() -> None:
    source = """
func.func private @mystery(f32) -> f32
func.func @main(%x: f32) -> f32 {
  %y = call @mystery(%x) : (f32) -> f32
  return %y : f32
}
"""
    with pytest.raises(UnsupportedError) as info:
        lower_host(parse_mlir(source, "ext.mlir"))
    text = str(info.value)
    assert text.startswith("ext.mlir:4:8: error: external function @mystery is not provided by "
                           "the Nova runtime; available: @printMemrefF32")
    assert "@printNewline" in text


def test_runner_utility_with_a_wrong_signature_is_rejected() -> None:
    source = """
func.func private @printI64(i32)
func.func @main(%x: i32) {
  call @printI64(%x) : (i32) -> ()
  return
}
"""
    with pytest.raises(UnsupportedError, match="does not match the runner utility"):
        lower_host(parse_mlir(source, "sig.mlir"))


def test_unused_external_declarations_are_not_imported() -> None:
    source = """
func.func private @printF32(f32)
func.func private @never_called(i32)
func.func @main() {
  return
}
"""
    ir_text = str(lower_host(parse_mlir(source, "decl.mlir")).llvm_module)
    assert "never_called" not in ir_text and "printF32" not in ir_text


def test_half_and_bfloat_widening_is_exact_without_libcalls() -> None:
    """Every f16/bf16 bit pattern widens to numpy's f32 (NaNs stay NaN), and the code needs no
    compiler-runtime symbol (`__extendhfsf2`) that the host object could not link."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    from nova.backends.host.runner import bfloat_to_float, half_to_float
    from nova.backends.llvm import types as T
    from nova.runtime.linker import undefined_symbols
    from nova.runtime.native_support import host_target_machine

    module = ir.Module()
    module.triple = "x86_64-unknown-linux-gnu"
    for name, widen, half in (("h2f", half_to_float, T.F16), ("b2f", bfloat_to_float, T.BF16)):
        fn = ir.Function(module, ir.FunctionType(T.I32, [ir.IntType(16)]), name)
        builder = ir.IRBuilder(fn.append_basic_block())
        builder.ret(builder.bitcast(widen(builder, builder.bitcast(fn.args[0], half)), T.I32))
    parsed = llvm.parse_assembly(str(module))
    assert undefined_symbols(host_target_machine().emit_object(parsed)) == []
    engine = llvm.create_mcjit_compiler(parsed, host_target_machine())
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint16)
    h2f, b2f = (proto(engine.get_function_address(n)) for n in ("h2f", "b2f"))
    patterns = np.arange(65536, dtype=np.uint32)
    got = np.array([h2f(int(i)) for i in patterns], np.uint32).view(np.float32)
    want = patterns.astype(np.uint16).view(np.float16).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all()
    assert all(b2f(int(i)) == int(i) << 16 for i in patterns[::97])


MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
_UPSTREAM_NAMES = {"printI64": "i64", "printU64": "u64", "printF32": "f32", "printF64": "f64",
                   "printF16": "f32", "printBF16": "f32",  # Nova widens f16/bf16 to f32
                   "printNewline": "newline", "printComma": "comma", "printOpen": "open",
                   "printClose": "close", "printString": "string"}


def _print_protocol(text: str, call: str, names: dict[str, str] | None) -> list[str]:
    """The extensions to i64 and print calls of lowered IR, in order."""
    import re

    steps = []
    for line in text.splitlines():
        if re.search(r"\b(arith\.extui|zext)\b.* to i64", line):
            steps.append("zext")
        elif re.search(r"\b(arith\.extsi|sext)\b.* to i64", line):
            steps.append("sext")
        elif (found := re.search(call, line)) is not None:
            name = found.group(1)
            steps.append(names[name] if names is not None else name)
    return steps


def test_vector_print_matches_upstream_vector_to_llvm(tmp_path: Path) -> None:
    """Differential check against mlir-opt --convert-vector-to-llvm: which printer, which
    extension, which punctuation, for every scalar type and punctuation kind."""
    import shutil
    import subprocess

    if shutil.which(MLIR_OPT) is None:
        pytest.skip("upstream mlir-opt is not installed")
    types = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui32", "si16", "index", "f16", "bf16",
             "f32", "f64"]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    punctuations = ["", " punctuation <comma>", " punctuation <open>", " punctuation <close>",
                    " punctuation <no_punctuation>"]
    lines = [f"  vector.print %a{i} : {t}{punctuations[i % len(punctuations)]}"
             for i, t in enumerate(types)]
    lines.append('  vector.print str "text"')
    source = f"func.func @main({args}) {{\n" + "\n".join(lines) + "\n  return\n}\n"
    path = tmp_path / "prints.mlir"
    path.write_text(source)
    upstream = subprocess.run([MLIR_OPT, str(path), "--convert-vector-to-llvm"],
                              capture_output=True, text=True, check=True).stdout
    expected = _print_protocol(upstream, r"llvm\.call @(\w+)\(", _UPSTREAM_NAMES)
    # private: no entry wrapper (entries do not take unsigned/signed integer types)
    ours_ir = str(lower_host(parse_mlir(source.replace("func.func @main",
                                                       "func.func private @main"),
                                        "prints.mlir")).llvm_module)
    body = ours_ir.split('define internal void @"main"')[1].split("\n}\n")[0]
    ours = _print_protocol(body, r'call void @"nova_rt_print_(\w+)"', None)
    assert len(expected) > 2 * len(types)
    assert ours == expected
