"""The LLVM emitter core, checked by running the code it produces (x86-64 JIT)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from tests.unit.test_llvm_jit_support import (
    JitTarget,
    function,
    jit,
    lower,
    memref_args,
    memref_argtypes,
)

from nova.errors import UnsupportedError

I64 = ctypes.c_int64
F32 = ctypes.c_float
F64 = ctypes.c_double


def int_binop(op: str, a: int, b: int, ty: str = "i32") -> int:
    src = f"""
    func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
      %r = arith.{op} %a, %b : {ty}
      return %r : {ty}
    }}"""
    ctype = {"i32": ctypes.c_int32, "i64": I64, "index": I64}[ty]
    return function(src, "f", ctype, [ctype, ctype])(a, b)  # type: ignore[return-value]


@pytest.mark.parametrize(("op", "a", "b", "want"), [
    ("addi", 7, -3, 4), ("subi", 7, 10, -3), ("muli", -6, 7, -42),
    ("divsi", -7, 2, -3), ("remsi", -7, 2, -1), ("divui", 7, 2, 3), ("remui", 7, 4, 3),
    ("floordivsi", -7, 2, -4), ("floordivsi", 7, -2, -4), ("floordivsi", 6, 3, 2),
    ("ceildivsi", 7, 2, 4), ("ceildivsi", -7, 2, -3), ("ceildivsi", -7, -2, 4),
    ("ceildivui", 7, 2, 4), ("ceildivui", 8, 2, 4),
    ("maxsi", -3, 2, 2), ("minsi", -3, 2, -3), ("maxui", -1, 2, -1), ("minui", -1, 2, 2),
    ("andi", 12, 10, 8), ("ori", 12, 10, 14), ("xori", 12, 10, 6),
    ("shli", 3, 4, 48), ("shrsi", -16, 2, -4), ("shrui", -16, 28, 15),
])
def test_integer_ops(op: str, a: int, b: int, want: int) -> None:
    assert int_binop(op, a, b) == want


def test_index_dialect_and_casts() -> None:
    src = """
    func.func @f(%a: index, %b: i32) -> i64 {
      %c = index.add %a, %a
      %d = index.floordivs %c, %a
      %e = arith.extsi %b : i32 to i64
      %f = arith.index_cast %d : index to i64
      %g = arith.addi %e, %f : i64
      %h = arith.trunci %g : i64 to i16
      %i = arith.extui %h : i16 to i64
      return %i : i64
    }"""
    f = function(src, "f", I64, [I64, ctypes.c_int32])
    assert f(5, -3) == (-3 + 2) & 0xFFFF


@pytest.mark.parametrize(("pred", "a", "b", "want"), [
    ("olt", 1.0, 2.0, 1), ("ogt", 1.0, 2.0, 0), ("oeq", 2.0, 2.0, 1), ("une", 2.0, 2.0, 0),
    ("uno", float("nan"), 1.0, 1), ("ord", float("nan"), 1.0, 0), ("ult", float("nan"), 1.0, 1),
    ("olt", float("nan"), 1.0, 0), ("true", 0.0, 0.0, 1), ("false", 0.0, 0.0, 0),
])
def test_cmpf_predicates(pred: str, a: float, b: float, want: int) -> None:
    src = f"""
    func.func @f(%a: f64, %b: f64) -> i32 {{
      %c = arith.cmpf {pred}, %a, %b : f64
      %r = arith.extui %c : i1 to i32
      return %r : i32
    }}"""
    assert function(src, "f", ctypes.c_int32, [F64, F64])(a, b) == want


def test_float_ops_and_conversions() -> None:
    src = """
    func.func @f(%a: f32, %b: f32) -> f64 {
      %s = arith.addf %a, %b : f32
      %m = arith.mulf %s, %b : f32
      %d = arith.divf %m, %a : f32
      %n = arith.negf %d : f32
      %mx = arith.maximumf %n, %a : f32
      %i = arith.fptosi %mx : f32 to i32
      %back = arith.sitofp %i : i32 to f64
      %e = arith.extf %b : f32 to f64
      %t = arith.addf %back, %e : f64
      return %t : f64
    }"""
    f = function(src, "f", F64, [F32, F32])
    a, b = np.float32(1.5), np.float32(2.25)
    d = np.float32(np.float32(np.float32(a + b) * b) / a)
    assert f(a, b) == float(int(max(-d, a))) + float(b)


def test_maximumf_propagates_nan_and_maxnumf_does_not() -> None:
    src = """
    func.func @f(%a: f64, %b: f64) -> f64 {
      %x = arith.maximumf %a, %b : f64
      %y = arith.maxnumf %a, %b : f64
      %z = arith.addf %x, %y : f64
      return %z : f64
    }
    func.func @g(%a: f64, %b: f64) -> f64 {
      %y = arith.minnumf %a, %b : f64
      return %y : f64
    }"""
    assert np.isnan(function(src, "f", F64, [F64, F64])(float("nan"), 1.0))
    assert function(src, "g", F64, [F64, F64])(float("nan"), 1.0) == 1.0


def test_scf_for_if_while_and_iter_args() -> None:
    src = """
    func.func @f(%n: index) -> i64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %z = arith.constant 0 : i64
      %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i64) {
        %r = arith.remui %i, %c2 : index
        %even = arith.cmpi eq, %r, %c0 : index
        %iv = arith.index_cast %i : index to i64
        %next = scf.if %even -> (i64) {
          %a = arith.addi %acc, %iv : i64
          scf.yield %a : i64
        } else {
          %a = arith.subi %acc, %iv : i64
          scf.yield %a : i64
        }
        scf.yield %next : i64
      }
      %w:2 = scf.while (%k = %c0, %p = %sum) : (index, i64) -> (index, i64) {
        %more = arith.cmpi slt, %k, %n : index
        scf.condition(%more) %k, %p : index, i64
      } do {
      ^bb0(%k2: index, %p2: i64):
        %k3 = arith.addi %k2, %c1 : index
        %two = arith.constant 2 : i64
        %p3 = arith.muli %p2, %two : i64
        scf.yield %k3, %p3 : index, i64
      }
      return %w#1 : i64
    }"""
    f = function(src, "f", I64, [I64])
    for n in (0, 1, 5, 10):
        s = sum(i if i % 2 == 0 else -i for i in range(n))
        assert f(n) == s * 2 ** n


def test_scf_parallel_with_reduction_and_index_switch() -> None:
    src = """
    func.func @f(%m: memref<?x?xf64>) -> f64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d0 = memref.dim %m, %c0 : memref<?x?xf64>
      %d1 = memref.dim %m, %c1 : memref<?x?xf64>
      %init = arith.constant 0.0 : f64
      %r = scf.parallel (%i, %j) = (%c0, %c0) to (%d0, %d1) step (%c1, %c1) init (%init) -> f64 {
        %v = memref.load %m[%i, %j] : memref<?x?xf64>
        scf.reduce(%v : f64) {
        ^bb0(%l: f64, %rr: f64):
          %s = arith.addf %l, %rr : f64
          scf.reduce.return %s : f64
        }
      }
      %k = arith.constant 2 : index
      %sel = scf.index_switch %k -> f64
      case 1 {
        %one = arith.constant 1.0 : f64
        scf.yield %one : f64
      }
      case 2 {
        %two = arith.constant 2.0 : f64
        scf.yield %two : f64
      }
      default {
        %z = arith.constant 0.0 : f64
        scf.yield %z : f64
      }
      %out = arith.mulf %r, %sel : f64
      return %out : f64
    }"""
    f = function(src, "f", F64, memref_argtypes(2))
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert f(*memref_args(a)) == a.sum() * 2


def test_cf_branches_with_block_arguments() -> None:
    src = """
    func.func @f(%x: i32) -> i32 {
      %c0 = arith.constant 0 : i32
      %neg = arith.cmpi slt, %x, %c0 : i32
      cf.cond_br %neg, ^bb1(%x : i32), ^bb2(%x, %c0 : i32, i32)
    ^bb1(%a: i32):
      %n = arith.subi %c0, %a : i32
      cf.br ^bb2(%n, %c0 : i32, i32)
    ^bb2(%v: i32, %w: i32):
      %s = arith.addi %v, %w : i32
      return %s : i32
    }"""
    f = function(src, "f", ctypes.c_int32, [ctypes.c_int32])
    assert (f(-5), f(7)) == (5, 7)


def test_memref_subview_copy_alloca_and_atomics() -> None:
    src = """
    func.func @f(%m: memref<4x6xf32>, %out: memref<2x3xf32>) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %sv = memref.subview %m[1, 2] [2, 3] [1, 1]
          : memref<4x6xf32> to memref<2x3xf32, strided<[6, 1], offset: 8>>
      memref.copy %sv, %out : memref<2x3xf32, strided<[6, 1], offset: 8>> to memref<2x3xf32>
      %tmp = memref.alloca() : memref<2xf32>
      %v = memref.load %sv[%c1, %c1] : memref<2x3xf32, strided<[6, 1], offset: 8>>
      memref.store %v, %tmp[%c0] : memref<2xf32>
      %old = memref.atomic_rmw addf %v, %tmp[%c0] : (f32, memref<2xf32>) -> f32
      %old2 = memref.atomic_rmw mulf %v, %tmp[%c0] : (f32, memref<2xf32>) -> f32
      %final = memref.load %tmp[%c0] : memref<2xf32>
      return %final : f32
    }"""
    f = function(src, "f", F32, memref_argtypes(2) * 2)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = np.zeros((2, 3), dtype=np.float32)
    got = f(*memref_args(a), *memref_args(out))
    np.testing.assert_array_equal(out, a[1:3, 2:5])
    v = a[2, 3]
    assert got == (v + v) * v


def test_dynamic_subview_strides() -> None:
    src = """
    func.func @f(%m: memref<?x?xi64>, %o: index, %s: index) -> i64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %sv = memref.subview %m[%o, %c1] [2, 2] [%s, 2]
          : memref<?x?xi64> to memref<2x2xi64, strided<[?, ?], offset: ?>>
      %v = memref.load %sv[%c1, %c1] : memref<2x2xi64, strided<[?, ?], offset: ?>>
      return %v : i64
    }"""
    f = function(src, "f", I64, [*memref_argtypes(2), I64, I64])
    a = np.arange(64, dtype=np.int64).reshape(8, 8)
    assert f(*memref_args(a), 1, 3) == a[1:, 1:][::3, ::2][1, 1]


def test_globals_and_calls_with_memref_results() -> None:
    src = """
    memref.global "private" constant @table : memref<4xi32> = dense<[10, 20, 30, 40]>
    func.func private @pick(%m: memref<4xi32>, %i: index) -> (i32, memref<4xi32>) {
      %v = memref.load %m[%i] : memref<4xi32>
      return %v, %m : i32, memref<4xi32>
    }
    func.func @f(%i: index) -> i32 {
      %t = memref.get_global @table : memref<4xi32>
      %v, %same = call @pick(%t, %i) : (memref<4xi32>, index) -> (i32, memref<4xi32>)
      %c0 = arith.constant 0 : index
      %w = memref.load %same[%c0] : memref<4xi32>
      %s = arith.addi %v, %w : i32
      return %s : i32
    }"""
    assert function(src, "f", ctypes.c_int32, [I64])(2) == 40


def test_math_integer_ops() -> None:
    src = """
    func.func @f(%a: i32, %n: i32) -> i32 {
      %p = math.ipowi %a, %n : i32
      %c = math.ctpop %p : i32
      %z = math.ctlz %a : i32
      %s = arith.addi %c, %z : i32
      %abs = math.absi %s : i32
      %r = arith.addi %p, %abs : i32
      return %r : i32
    }"""
    f = function(src, "f", ctypes.c_int32, [ctypes.c_int32, ctypes.c_int32])
    for a, n in ((3, 4), (2, 10), (-2, 3), (5, 0), (2, -1), (1, -3), (-1, -3)):
        negative_power = 1 if a == 1 else (-1 if n % 2 else 1) if a == -1 else 0
        p = a ** n if n >= 0 else negative_power
        ctlz = 32 - a.bit_length() if a > 0 else (0 if a < 0 else 32)
        want = (p + (bin(p & 0xFFFFFFFF).count("1") + ctlz))
        assert f(a, n) == want, (a, n)


def test_libm_math_on_the_default_target() -> None:
    src = """
    func.func @f(%x: f64) -> f64 {
      %a = math.tanh %x : f64
      %b = math.exp %x : f64
      %c = math.atan2 %a, %b : f64
      %d = math.rsqrt %b : f64
      %e = arith.addf %c, %d : f64
      return %e : f64
    }"""
    import math
    f = function(src, "f", F64, [F64])
    x = 0.7
    assert f(x) == pytest.approx(math.atan2(math.tanh(x), math.exp(x)) + 1 / math.sqrt(math.exp(x)))


def test_unsupported_op_names_op_and_dialects() -> None:
    src = """
    func.func @f(%x: f32) -> f32 {
      %y = "test.unknown"(%x) : (f32) -> f32
      return %y : f32
    }"""
    with pytest.raises(UnsupportedError) as info:
        lower(src)
    text = str(info.value)
    assert "test.unknown" in text and "arith" in text and "scf" in text


def test_supported_dialects_are_sorted_and_unique() -> None:
    from nova.backends.llvm.emitter import supported_dialects

    assert supported_dialects(["func.call", "arith.addf", "gpu.launch_func", "vector.print"]) == [
        "arith", "cf", "func", "gpu", "index", "math", "memref", "scf", "vector"]
    assert supported_dialects([]) == [
        "arith", "cf", "func", "index", "math", "memref", "scf", "vector"]


def test_memrefs_as_block_arguments_and_loop_carried_values() -> None:
    """Descriptors flow through scf.if results, scf.for iter_args and cf block arguments."""
    src = """
    func.func @f(%a: memref<?xi64>, %b: memref<?xi64>, %steps: index) -> i64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?xi64>
      %src, %dst = scf.for %s = %c0 to %steps step %c1
          iter_args(%x = %a, %y = %b) -> (memref<?xi64>, memref<?xi64>) {
        scf.for %i = %c0 to %n step %c1 {
          %v = memref.load %x[%i] : memref<?xi64>
          %one = arith.constant 1 : i64
          %w = arith.addi %v, %one : i64
          memref.store %w, %y[%i] : memref<?xi64>
        }
        scf.yield %y, %x : memref<?xi64>, memref<?xi64>
      }
      %odd = arith.remui %steps, %c1 : index
      %pick = arith.cmpi eq, %odd, %c0 : index
      %m = scf.if %pick -> (memref<?xi64>) {
        scf.yield %src : memref<?xi64>
      } else {
        scf.yield %dst : memref<?xi64>
      }
      cf.br ^bb1(%m : memref<?xi64>)
    ^bb1(%r: memref<?xi64>):
      %last = arith.subi %n, %c1 : index
      %v = memref.load %r[%last] : memref<?xi64>
      return %v : i64
    }"""
    f = function(src, "f", I64, [*memref_argtypes(1), *memref_argtypes(1), I64])
    a = np.arange(5, dtype=np.int64)
    b = np.zeros(5, dtype=np.int64)
    assert f(*memref_args(a), *memref_args(b), 7) == 4 + 7


def test_reshapes_casts_unranked_switch_and_execute_region() -> None:
    src = """

    func.func @f(%m: memref<2x3x4xf32>, %k: i32) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %flat = memref.collapse_shape %m [[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
      %ex = memref.expand_shape %flat [[0, 1], [2]] output_shape [3, 2, 4]
          : memref<6x4xf32> into memref<3x2x4xf32>
      %rc = memref.reinterpret_cast %m to offset: [4], sizes: [5], strides: [2]
          : memref<2x3x4xf32> to memref<5xf32, strided<[2], offset: 4>>
      %u = memref.cast %m : memref<2x3x4xf32> to memref<*xf32>
      %back = memref.cast %u : memref<*xf32> to memref<2x3x4xf32>
      %r = memref.rank %m : memref<2x3x4xf32>
      %dyn = memref.cast %m : memref<2x3x4xf32> to memref<?x?x?xf32>
      %d = memref.dim %dyn, %c2 : memref<?x?x?xf32>
      %a = memref.load %flat[%c2, %c1] : memref<6x4xf32>
      %b = memref.load %ex[%c2, %c1, %c1] : memref<3x2x4xf32>
      %c = memref.load %rc[%c1] : memref<5xf32, strided<[2], offset: 4>>
      %e = memref.load %back[%c1, %c1, %c1] : memref<2x3x4xf32>
      %s1 = arith.addf %a, %b : f32
      %s2 = arith.addf %s1, %c : f32
      %s3 = arith.addf %s2, %e : f32
      %ri = arith.index_cast %r : index to i32
      %di = arith.index_cast %d : index to i32
      %sum = arith.addi %ri, %di : i32
      %x = scf.execute_region -> i32 {
        cf.switch %k : i32, [
          default: ^bb1(%sum : i32),
          1: ^bb2
        ]
      ^bb1(%v: i32):
        scf.yield %v : i32
      ^bb2:
        %z = arith.constant 100 : i32
        scf.yield %z : i32
      }
      %xf = arith.sitofp %x : i32 to f32
      %out = arith.addf %s3, %xf : f32
      return %out : f32
    }
    """
    f = function(src, "f", F32, [*memref_argtypes(3), ctypes.c_int32])
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    flat = a.reshape(6, 4)
    ex = flat.reshape(3, 2, 4)
    want = flat[2, 1] + ex[2, 1, 1] + a.reshape(-1)[4 + 2] + a[1, 1, 1]
    assert f(*memref_args(a), 0) == want + 3 + 4  # rank + dim 2 through the default case
    assert f(*memref_args(a), 1) == want + 100


def test_fpowi_by_squaring() -> None:
    """The NVPTX form of math.fpowi (inline squaring), run on the host."""
    from nova.backends.llvm.ops_math import lower_fpowi_by_squaring

    class Squaring(JitTarget):
        def __init__(self) -> None:
            self.handlers = {"math.fpowi": lower_fpowi_by_squaring}

    src = """
    func.func @f(%x: f64, %n: i32) -> f64 {
      %r = math.fpowi %x, %n : f64, i32
      return %r : f64
    }"""
    me = lower(src, Squaring())
    assert "llvm.powi" not in str(me.module)
    f = ctypes.CFUNCTYPE(F64, F64, ctypes.c_int32)(
        jit(str(me.module)).get_function_address("f"))
    for x, n in ((2.0, 10), (1.5, 3), (-2.0, 3), (2.0, -2), (3.0, 0), (-0.0, 3),
                 (1.0, -(2**31)), (-1.0, -7), (0.5, 31)):
        assert f(x, n) == x ** n, (x, n)
        assert np.signbit(f(x, n)) == np.signbit(x ** n)
    assert f(0.0, -1) == float("inf")


@pytest.mark.parametrize(("kind", "init", "value", "want"), [
    ("maximumf", 1.0, float("nan"), float("nan")), ("maxnumf", 1.0, float("nan"), 1.0),
    ("minimumf", 1.0, -2.0, -2.0), ("minnumf", float("nan"), 3.0, 3.0),
    ("assign", 1.0, 7.0, 7.0), ("mulf", 3.0, 2.0, 6.0), ("addf", 3.0, 2.0, 5.0),
])
def test_float_atomic_rmw_kinds(kind: str, init: float, value: float, want: float) -> None:
    src = f"""
    func.func @f(%m: memref<1xf64>, %v: f64) -> f64 {{
      %c0 = arith.constant 0 : index
      %old = memref.atomic_rmw {kind} %v, %m[%c0] : (f64, memref<1xf64>) -> f64
      return %old : f64
    }}"""
    f = function(src, "f", F64, [*memref_argtypes(1), F64])
    m = np.array([init])
    old = f(*memref_args(m), value)
    assert old == init or (np.isnan(old) and np.isnan(init))
    assert m[0] == want or (np.isnan(m[0]) and np.isnan(want))


def test_x86_emit_object_is_a_pic_relocatable_elf() -> None:
    from nova.backends.x86 import emit_object
    from nova.errors import BackendError

    me = lower("""
    memref.global "private" constant @table : memref<2xi32> = dense<[1, 2]>
    func.func @get(%i: index) -> i32 {
      %t = memref.get_global @table : memref<2xi32>
      %v = memref.load %t[%i] : memref<2xi32>
      return %v : i32
    }""")
    obj = emit_object(str(me.module))
    assert obj[:4] == b"\x7fELF" and obj[4] == 2  # ELF64
    assert int.from_bytes(obj[16:18], "little") == 1  # ET_REL
    assert int.from_bytes(obj[18:20], "little") == 62  # EM_X86_64
    assert b"get" in obj
    with pytest.raises(BackendError, match="invalid LLVM IR"):
        emit_object("define i32 @f( {")


def test_contiguous_copy_is_a_memcpy() -> None:
    src = """
    func.func @f(%a: memref<?x3xi16>, %b: memref<?x3xi16>) {
      memref.copy %a, %b : memref<?x3xi16> to memref<?x3xi16>
      return
    }"""
    assert "llvm.memcpy.p0.p0.i64" in str(lower(src).module)
    f = function(src, "f", None, memref_argtypes(2) * 2)
    a = np.arange(12, dtype=np.int16).reshape(4, 3)
    b = np.zeros_like(a)
    f(*memref_args(a), *memref_args(b))
    np.testing.assert_array_equal(a, b)
