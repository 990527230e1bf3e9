"""The f16 conversion helpers the CPU object defines for LLVM's libcalls (cpu_softfloat):
exhaustive for half -> float, against NumPy's IEEE round-to-nearest-even otherwise, and in a
kernel end to end (no libgcc needed)."""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from cpu_jit import compile_cpu, jit_module
from llvmlite import ir

from nova.backends.cpu import softfloat as sf


@functools.cache
def _converters():  # type: ignore[no-untyped-def]
    """Exported wrappers whose fpext/fptrunc LLVM lowers to calls of the local helpers."""
    module = ir.Module("softfloat")
    module.triple = "x86_64-unknown-linux-gnu"
    i16, f32, f64 = ir.IntType(16), ir.FloatType(), ir.DoubleType()
    for name, src, dst in (("h2f", i16, f32), ("f2h", f32, i16), ("d2h", f64, i16)):
        fn = ir.Function(module, ir.FunctionType(dst, [src]), name)
        b = ir.IRBuilder(fn.append_basic_block())
        (x,) = fn.args
        if name == "h2f":
            b.ret(b.fpext(b.bitcast(x, ir.HalfType()), f32))
        else:
            b.ret(b.bitcast(b.fptrunc(x, ir.HalfType()), i16))
    sf.add_libcall_helpers(module)
    loaded = jit_module(module)
    return (loaded,
            loaded.function("h2f", ctypes.c_float, ctypes.c_uint16),
            loaded.function("f2h", ctypes.c_uint16, ctypes.c_float),
            loaded.function("d2h", ctypes.c_uint16, ctypes.c_double))


def _same(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal bit patterns, except that any NaN matches any NaN."""
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32 if got.dtype == np.float32 else np.uint16),
                          expected[~nan].view(np.uint32 if got.dtype == np.float32
                                              else np.uint16))


def test_half_to_float_exhaustive() -> None:
    _, h2f, _, _ = _converters()
    bits = np.arange(65536, dtype=np.uint16)
    got = np.array([h2f(int(b)) for b in bits], np.float32)
    _same(got, bits.view(np.float16).astype(np.float32))


def _edge_floats() -> np.ndarray:
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float64)
    ups = np.nextafter(finite, np.inf)
    mids = (finite[:-1] + np.sort(finite)[1:]) / 2
    extra = np.array([65504.0, 65519.99, 65520.0, 1e9, -1e9, 2.0**-24, 2.0**-25, 2.0**-26,
                      3 * 2.0**-26, 6.0e-8, 2.0**-14, 2.0**-14 - 2.0**-25, 0.0, -0.0,
                      np.inf, -np.inf, np.nan, 1e-40, -1e-45])
    return np.concatenate([finite, ups, mids, extra])


def test_float_to_half_rounds_to_nearest_even() -> None:
    _, _, f2h, _ = _converters()
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.concatenate([_edge_floats().astype(np.float32), random])
    got = np.array([f2h(float(v)) for v in values], np.uint16).view(np.float16)
    with np.errstate(over="ignore"):
        _same(got, values.astype(np.float16))


def test_double_to_half_has_no_double_rounding() -> None:
    _, _, _, d2h = _converters()
    rng = np.random.default_rng(1)
    random = rng.integers(0, 2**64, 200_000, dtype=np.uint64).view(np.float64)
    scaled = rng.standard_normal(100_000) * np.exp2(rng.integers(-30, 20, 100_000))
    edges = _edge_floats()
    # just above a half-way point between two halves, by less than a float ulp: rounding through
    # float first would land on the half-way point and round to even
    finite = np.sort(np.unique(np.abs(edges[np.isfinite(edges)])))[:2000]
    sneaky = np.nextafter(((finite[:-1] + finite[1:]) / 2), np.inf)
    values = np.concatenate([edges, random, scaled, sneaky])
    got = np.array([d2h(float(v)) for v in values], np.uint16).view(np.float16)
    with np.errstate(over="ignore"):
        _same(got, values.astype(np.float16))


HALF_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @axpy_h(%x: memref<?xf16>, %y: memref<?xf16>, %a: f32) kernel {
      %t = gpu.thread_id x
      %xv = memref.load %x[%t] : memref<?xf16>
      %yv = memref.load %y[%t] : memref<?xf16>
      %ah = arith.truncf %a : f32 to f16
      %p = arith.mulf %ah, %xv : f16
      %s = arith.addf %p, %yv : f16
      memref.store %s, %y[%t] : memref<?xf16>
      gpu.return
    }
  }
}
"""


def test_f16_kernel_runs_without_libgcc() -> None:
    mod = compile_cpu(HALF_KERNEL)
    text = str(mod.lowering.llvm_module)
    assert 'define internal float @"__extendhfsf2"(half' in text
    assert '@"llvm.compiler.used" = appending global' in text
    x = np.linspace(-3, 3, 64).astype(np.float16)
    y = np.linspace(10, 20, 64).astype(np.float16)
    expected = (np.float16(1.5) * x) + y  # NumPy rounds each f16 op to f16 as well
    mod.launch("axpy_h", [x, y, ctypes.c_float(1.5)], block=(64, 1, 1))
    np.testing.assert_array_equal(y, expected)


def test_helpers_only_where_needed() -> None:
    from test_cpu_kernels import VECADD

    text = str(compile_cpu(VECADD).lowering.llvm_module)
    assert "__extendhfsf2" not in text


POWI_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @powi(%x: memref<?xf32>, %y: memref<?xf64>, %n: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %xv = memref.load %x[%t] : memref<?xf32>
      %yv = memref.load %y[%t] : memref<?xf64>
      %nv = memref.load %n[%t] : memref<?xi32>
      %a = math.fpowi %xv, %nv : f32, i32
      %b = math.fpowi %yv, %nv : f64, i32
      memref.store %a, %x[%t] : memref<?xf32>
      memref.store %b, %y[%t] : memref<?xf64>
      gpu.return
    }
  }
}
"""


def test_fpowi_runs_without_compiler_rt() -> None:
    mod = compile_cpu(POWI_KERNEL)
    assert 'define internal double @"__powidf2"(double' in str(mod.lowering.llvm_module)
    n = np.array([0, 1, 2, 3, 7, -1, -2, -5, 10, 31, -31, 2**31 - 1, -(2**31), 5, 0, 3], np.int32)
    base = np.array([1.5, 2, -3, 0.5, 1.1, 4, -2, 3, 0.9, 1.0, -1.0, 1.0, 1.0, 0.0, 0.0,
                     -0.0], np.float64)
    x = base.astype(np.float32)
    y = base.copy()
    mod.launch("powi", [x, y, n], block=(len(n), 1, 1))
    expected = np.array([float(b) ** int(e) for b, e in zip(base[:11], n[:11], strict=True)])
    np.testing.assert_allclose(y[:11], expected[:11], rtol=1e-14)
    np.testing.assert_allclose(x[:11], expected[:11].astype(np.float32), rtol=1e-6)
    assert y[11] == 1.0 and y[12] == 1.0 and y[13] == 0.0 and y[14] == 1.0 and y[15] == -0.0


def undefined_symbols(obj: bytes) -> set[str]:
    """Names an x86-64 ELF relocatable object needs from elsewhere (its SHN_UNDEF symbols)."""
    import struct

    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                for i in range(shnum)]
    names: set[str] = set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, _info, _other, shndx = struct.unpack_from("<IBBH", obj, off)
            if shndx == 0 and st_name:
                start = strtab[4] + st_name
                names.add(obj[start:obj.index(b"\0", start)].decode())
    return names


EVERYTHING = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%x: memref<?xf16>, %y: memref<?xf32>, %d: memref<?xf64>, %c: memref<4xi32>,
                %n: i32) kernel {
      %t = gpu.thread_id x
      %h = memref.load %x[%t] : memref<?xf16>
      %h2 = arith.mulf %h, %h : f16
      memref.store %h2, %x[%t] : memref<?xf16>
      %f = memref.load %y[%t] : memref<?xf32>
      %s = math.sin %f : f32
      %e = math.exp %s : f32
      %th = math.tanh %e : f32
      %p = math.fpowi %th, %n : f32, i32
      %r = arith.addf %p, %f : f32
      %a = gpu.all_reduce add %r {} : (f32) -> f32
      memref.store %a, %y[%t] : memref<?xf32>
      %dv = memref.load %d[%t] : memref<?xf64>
      %dp = math.powf %dv, %dv : f64
      %da = math.atan2 %dp, %dv : f64
      memref.store %da, %d[%t] : memref<?xf64>
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      %old = memref.atomic_rmw addi %one, %c[%c0] : (i32, memref<4xi32>) -> i32
      %ok = arith.cmpi sge, %old, %one : i32
      cf.assert %ok, "never"
      gpu.printf "%f\\n", %a : f32
      gpu.return
    }
  }
}
"""


def test_cpu_object_needs_only_libc_and_libm() -> None:
    from nova.backends.device import DeviceTarget, lower_device_module
    from nova.backends.x86 import emit_object
    from nova.ir.parser import parse_mlir

    gm = next(op for op in parse_mlir(EVERYTHING, "<t>").walk() if op.name == "gpu.module")
    obj = emit_object(str(lower_device_module(gm, DeviceTarget.CPU).llvm_module))
    needed = undefined_symbols(obj) - {"_GLOBAL_OFFSET_TABLE_"}
    assert {"printf", "malloc", "sinf"} <= needed  # the parser sees real references
    libs = [ctypes.CDLL(name) for name in ("libc.so.6", "libm.so.6")]
    for name in sorted(needed):
        assert any(hasattr(lib, name) for lib in libs), f"{name} is not in libc or libm"
