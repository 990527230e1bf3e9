"""Shared helpers for the LLVM emitter tests: lower MLIR functions with the emitter core for a
plain x86-64 target, JIT them with llvmlite (MCJIT) and call them through ctypes, so lowering
semantics are checked by running code rather than by reading IR."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from nova.backends.llvm import FunctionEmitter, ModuleEmitter, TargetBase
from nova.ir.parser import parse_mlir

TRIPLE = "x86_64-unknown-linux-gnu"


class JitTarget(TargetBase):
    """The emitter's defaults (libm, malloc) on x86-64, with vector.print unsupported."""

    name = "test-x86"
    triple = TRIPLE


def lower(text: str, target: TargetBase | None = None) -> ModuleEmitter:
    """Parse MLIR text and lower every top-level func.func with the emitter core."""
    module = parse_mlir(text, "test.mlir")
    me = ModuleEmitter(target or JitTarget(), "test")
    me.emit_symbols(list(module.body.block.ops))
    return me


_KEEP: list[object] = []


def jit(module_ir: str) -> llvm.ExecutionEngine:
    """Compile LLVM IR text with MCJIT (O2) and return the engine (kept alive for the session)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(TRIPLE)
    tm = target.create_target_machine(opt=2)
    mod = llvm.parse_assembly(module_ir)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _KEEP.append((engine, mod))
    return engine


def memref_args(array: np.ndarray) -> list[object]:
    """The expanded argument list of a memref view of `array` (strides in elements)."""
    ptr = ctypes.c_void_p(array.ctypes.data)
    strides = [s // array.itemsize for s in array.strides]
    return [ptr, ptr, ctypes.c_int64(0), *[ctypes.c_int64(d) for d in array.shape],
            *[ctypes.c_int64(s) for s in strides]]


def function(text: str, name: str, restype: object,
             argtypes: Sequence[object]) -> Callable[..., object]:
    """Lower `text`, JIT it and return `name` as a ctypes function."""
    me = lower(text)
    engine = jit(str(me.module))
    address = engine.get_function_address(name)
    assert address, f"@{name} not found"
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


def memref_argtypes(rank: int) -> list[object]:
    return [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_int64] * (2 * rank)


def scalar_function(build: Callable[[FunctionEmitter, list[ir.Value]], ir.Value],
                    nargs: int = 1, llty: ir.Type | None = None) -> Callable[..., float]:
    """JIT a `double f(double...)` whose body `build(fe, args)` emits (for math helpers)."""
    llty = llty or ir.DoubleType()
    me = ModuleEmitter(JitTarget(), "scalar")
    fn = ir.Function(me.module, ir.FunctionType(llty, [llty] * nargs), name="f")
    fe = FunctionEmitter(me, None, fn)  # type: ignore[arg-type]
    result = build(fe, list(fn.args))
    fe.builder.ret(result)
    engine = jit(str(me.module))
    ctype = ctypes.c_double if llty == ir.DoubleType() else ctypes.c_float
    return ctypes.CFUNCTYPE(ctype, *[ctype] * nargs)(engine.get_function_address("f"))


def array_function(build: Callable[[FunctionEmitter, list[ir.Value]], ir.Value],
                   nargs: int = 1, elem: ir.Type | None = None,
                   dtype: type = np.float32) -> Callable[..., np.ndarray]:
    """JIT `void f(T *x0, ..., T *out, i64 n)` applying the scalar body `build(fe, args)` to
    every element (for sweeping math helpers over millions of inputs); T is `elem` (float by
    default) stored as NumPy `dtype`. Returns a function of arrays of one length."""
    f32, i64, ptr = elem or ir.FloatType(), ir.IntType(64), ir.PointerType()
    me = ModuleEmitter(JitTarget(), "array")
    fn = ir.Function(me.module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1) + [i64]),
                     name="f")
    fe = FunctionEmitter(me, None, fn)  # type: ignore[arg-type]
    b = fe.builder
    head = b.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    n = fn.args[-1]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), head)
    xs = [b.load(b.gep(fn.args[k], [i], source_etype=f32), typ=f32) for k in range(nargs)]
    y = build(fe, xs)
    b = fe.builder  # the body may have moved on to other blocks
    b.store(y, b.gep(fn.args[nargs], [i], source_etype=f32))
    following = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    engine = jit(str(me.module))
    cfn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (nargs + 1), ctypes.c_int64)(
        engine.get_function_address("f"))
    _KEEP.append(cfn)

    def call(*arrays: np.ndarray) -> np.ndarray:
        args = [np.ascontiguousarray(a, dtype=dtype) for a in arrays]
        out = np.empty_like(args[0])
        cfn(*[a.ctypes.data for a in args], out.ctypes.data, out.size)
        return out

    return call
