"""Invalid MLIR input must fail with a located diagnostic: `file:line:col: error: msg`, the source
line and a caret under the column — ParseError for malformed text, UnsupportedError for unknown
ops, VerifyError (at the failing op) for well-formed text that breaks an op's rules."""

from __future__ import annotations

import pytest

from nova.errors import ParseError, UnsupportedError, VerifyError
from nova.ir.parser import parse_mlir

CONTAINER = "module attributes {gpu.container_module} {\n"

# name -> (source, error class, "line:col", message fragment)
CASES: dict[str, tuple[str, type[Exception], str, str]] = {
    "missing-attribute": (
        "func.func @f() {\n  %0 = arith.constant : i32\n  return\n}\n",
        ParseError, "2:23", "attribute expected"),
    "operand-type-mismatch": (
        "func.func @f(%a: f32) {\n  %0 = arith.addi %a, %a : i32\n  return\n}\n",
        ParseError, "2:19",
        "use of value '%a' expects different type than prior uses: 'i32' vs 'f32'"),
    "undefined-value": (
        "func.func @f() {\n  return %x : i32\n}\n",
        ParseError, "2:10", "use of undeclared SSA value name"),
    "value-defined-only-in-nested-region": (
        "func.func @f() {\n  %c1 = arith.constant 1 : index\n  gpu.launch blocks(%bx, %by, %bz) "
        "in (%gx = %late, %gy = %c1, %gz = %c1)\n      threads(%tx, %ty, %tz) in (%sx = %c1, "
        "%sy = %c1, %sz = %c1) {\n    %late = arith.constant 2 : index\n    gpu.terminator\n"
        "  }\n  return\n}\n",
        ParseError, "3:3", "undeclared SSA value name %late"),
    "unexpected-eof": (
        "func.func @f() {\n  return\n",
        ParseError, "2:9", "end of input"),
    "bad-dimension": (
        "func.func @f() {\n  %0 = gpu.thread_id w\n  return\n}\n",
        ParseError, "2:22", "`x`, `y`, or `z`"),
    "launch-size-not-index": (
        "func.func @f(%n: i32) {\n  gpu.launch blocks(%a, %b, %c) in (%x = %n, %y = %n, "
        "%z = %n) threads(%d, %e, %f) in (%u = %n, %v = %n, %w = %n) {\n    gpu.terminator\n"
        "  }\n  return\n}\n",
        ParseError, "2:42", "expects different type than prior uses: 'index' vs 'i32'"),
    "unknown-dialect-op": (
        "func.func @f() {\n  %0 = foo.bar() : () -> i32\n  return\n}\n",
        UnsupportedError, "2:8", "unsupported operation 'foo.bar' (supported dialects: "
        "builtin, func, arith, math, memref, scf, cf, index, vector, gpu, affine, nvvm, nvgpu, "
        "async, llvm; "
        "--allow-unregistered-dialect parses ops of other dialects)"),
    "unknown-generic-op": (
        'func.func @f() {\n  "foo.bar"() : () -> ()\n  return\n}\n',
        UnsupportedError, "2:3", "'foo.bar'"),
    "unknown-gpu-op": (
        "func.func @f() {\n  gpu.frobnicate\n  return\n}\n",
        UnsupportedError, "2:3", "the 'gpu' dialect has no op 'gpu.frobnicate'"),
    "launch-func-unknown-kernel": (
        CONTAINER + "  gpu.module @k {\n  }\n  func.func @f() {\n    %c1 = arith.constant 1 : "
        "index\n    gpu.launch_func @k::@nope blocks in (%c1, %c1, %c1) threads in (%c1, %c1, "
        "%c1)\n    return\n  }\n}\n",
        VerifyError, "6:5", "kernel function '@k::@nope' is undefined"),
    "launch-func-arg-count": (
        CONTAINER + "  gpu.module @k {\n    gpu.func @g(%a: f32) kernel {\n      gpu.return\n"
        "    }\n  }\n  func.func @f() {\n    %c1 = arith.constant 1 : index\n"
        "    gpu.launch_func @k::@g blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
        "    return\n  }\n}\n",
        VerifyError, "9:5", "got 0 kernel operands but expected 1"),
    "launch-func-no-container": (
        "module {\n  gpu.module @k {\n    gpu.func @g() kernel {\n      gpu.return\n    }\n"
        "  }\n  func.func @f() {\n    %c1 = arith.constant 1 : index\n    gpu.launch_func "
        "@k::@g blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
        VerifyError, "9:5", "'gpu.container_module'"),
    "kernel-with-results": (
        "gpu.module @k {\n  gpu.func @f() -> i32 kernel {\n    %c = arith.constant 1 : i32\n"
        "    gpu.return %c : i32\n  }\n}\n",
        VerifyError, "2:3", "kernel function must have no results"),
    "shuffle-index": (
        "func.func @f(%v: index, %o: i32) {\n  %a, %b = gpu.shuffle xor %v, %o, %o : index\n"
        "  return\n}\n",
        VerifyError, "2:12", "'gpu.shuffle' op operand #0 must be Integer or Float"),
    "all-reduce-op-and-region": (
        "func.func @f(%v: f32) {\n  %r = gpu.all_reduce add %v {\n  ^bb0(%a: f32, %b: f32):\n"
        "    gpu.yield %a : f32\n  } : (f32) -> f32\n  return\n}\n",
        VerifyError, "2:8", "either an op attribute or a non-empty body"),
    "all-reduce-neither": (
        "func.func @f(%v: f32) {\n  %r = gpu.all_reduce %v {} : (f32) -> f32\n  return\n}\n",
        VerifyError, "2:8", "either an op attribute or a non-empty body"),
    "all-reduce-and-on-float": (
        "func.func @f(%v: f32) {\n  %r = gpu.all_reduce and %v {} : (f32) -> f32\n  return\n}\n",
        VerifyError, "2:8", "`and` reduction operation is not compatible with type 'f32'"),
    "alloc-dynamic-size-count": (
        "func.func @f(%n: index) {\n  %m = gpu.alloc () : memref<?xf32>\n  return\n}\n",
        VerifyError, "2:8", "incorrect number of dynamic sizes, has"),
    "atomic-float-kind-on-int": (
        "func.func @f(%m: memref<?xi32>, %i: index, %v: i32) {\n  %0 = memref.atomic_rmw addf "
        "%v, %m[%i] : (i32, memref<?xi32>) -> i32\n  return\n}\n",
        VerifyError, "2:8", "addf expects a floating-point type"),
    "missing-terminator": (
        "func.func @f() {\n  %c = arith.constant 1 : i32\n}\n",
        VerifyError, "2:8", "block with no terminator"),
    "attribution-wrong-address-space": (
        "gpu.module @m {\n  gpu.func @k() workgroup(%w: memref<4xf32, "
        "#gpu.address_space<private>>) kernel {\n    gpu.return\n  }\n}\n",
        VerifyError, "2:3", "expected memory space workgroup in attribution"),
    "terminator-outside-launch": (
        "gpu.module @m {\n  gpu.func @k() kernel {\n    gpu.terminator\n  }\n}\n",
        VerifyError, "3:5", "'gpu.terminator' op expects parent op 'gpu.launch'"),
    "subgroup-cluster-not-power-of-two": (
        "func.func @f(%v: f32) {\n  %r = gpu.subgroup_reduce add %v cluster(size = 3) : (f32) "
        "-> f32\n  return\n}\n",
        VerifyError, "2:8", "cluster_size must be a power of two"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_located_diagnostic(name: str) -> None:
    text, kind, line_col, fragment = CASES[name]
    with pytest.raises(kind) as info:
        parse_mlir(text, "bad.mlir")
    rendered = str(info.value)
    head, *rest = rendered.split("\n")
    assert head.startswith(f"bad.mlir:{line_col}: error: "), rendered
    assert fragment in head, rendered
    line, col = (int(x) for x in line_col.split(":"))
    source_lines = text.splitlines()
    if line <= len(source_lines):
        assert rest[0] == source_lines[line - 1]
        assert rest[1] == " " * (col - 1) + "^"
    assert info.value.location is not None
    assert (info.value.location.line, info.value.location.column) == (line, col)


def test_verify_can_be_skipped() -> None:
    text, _, _, _ = CASES["kernel-with-results"]
    module = parse_mlir(text, "bad.mlir", verify=False)
    assert module.body.block.first_op is not None
