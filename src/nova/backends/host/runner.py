"""Calls out of host code: MLIR runner utilities, `vector.print`, and external functions.

A program may declare MLIR's runner utilities (`func.func private @printMemrefF32(memref<*xf32>)`,
`@printF32(f32)`, ..., `abi.RUNNER_UTILS`) and call them; each call becomes a call of the ABI
function that implements it (printMemref* take the unranked memref as (rank, descriptor pointer)).
`vector.print` of a scalar lowers as upstream's VectorToLLVM: signless and signed integers are
sign-extended to i64 and printed with printI64, except i1, which is zero-extended (so true prints
1); unsigned integers and `index` use printU64; f16/bf16 are extended to f32; then the
punctuation (a newline by default). A 1-D vector prints as `( a, b, c )`
(ops_vector.expand_print). `vector.print str "..."` prints the text as is. A call of any
other function that the module only declares cannot be resolved at run time (compiled host code
may call nothing but the runtime ABI and libc), so it is rejected at the call, except library
plans: `func.call @__nova_library_<i>(memrefs...)` (`abi.LIBRARY_CALL_PREFIX`) runs plan `i` of the
manifest through `nova_rt_library_plan` (once, handle cached) and `nova_rt_library_call`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    SymbolRefAttr,
    UnrankedMemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation

from nova.abi import ABI_BY_NAME, LIBRARY_CALL_PREFIX, RUNNER_UTILS
from nova.backends.host.abi import AbiCalls, function_type
from nova.backends.host.memref import data_pointer
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text
from nova.backends.llvm.ops_func import lower_call
from nova.backends.llvm.ops_vector import expand_print
from nova.backends.llvm.target import Handler
from nova.errors import UnsupportedError

if TYPE_CHECKING:
    from nova.backends.host.device import HostDevice

_PUNCTUATION = {
    "newline": "nova_rt_print_newline",
    "comma": "nova_rt_print_comma",
    "open": "nova_rt_print_open",
    "close": "nova_rt_print_close",
    "no_punctuation": None,
}


class RunnerCalls:
    """func.call and vector.print handlers for the host target."""

    def __init__(self, abi: AbiCalls, device: HostDevice | None = None) -> None:
        self.abi = abi
        self.device = device

    def handlers(self) -> dict[str, Handler]:
        return {"func.call": self.call, "vector.print": self.vector_print}

    # --- func.call --------------------------------------------------------------------------------
    def call(self, fe: FunctionEmitter, op: Operation) -> None:
        """A call of a defined function goes to the core; a declared-only callee must be a runner
        utility, called through the ABI."""
        callee = attr(op, "callee")
        assert isinstance(callee, SymbolRefAttr)
        name = callee.root_reference.data
        func_op = fe.module.func_ops.get(name)
        if func_op is not None and func_op.regions and func_op.regions[0].blocks:
            lower_call(fe, op)
            return
        if name.startswith(LIBRARY_CALL_PREFIX) and self.device is not None:
            self.library_call(fe, op, name)
            return
        abi_name = RUNNER_UTILS.get(name)
        if abi_name is None:
            available = ", ".join(f"@{n}" for n in RUNNER_UTILS)
            raise UnsupportedError(
                f"external function @{name} is not provided by the Nova runtime; available: "
                f"{available}", fe.location(op))
        if op.results:
            raise UnsupportedError(f"@{name} returns nothing, but the call expects "
                                   f"{len(op.results)} result(s)", fe.location(op))
        args: list[ir.Value] = []
        for value in op.operands:
            lowered = fe.lookup(value)
            if isinstance(value.type, UnrankedMemRefType):
                args += [fe.builder.extract_value(lowered, 0), fe.builder.extract_value(lowered, 1)]
            else:
                args.append(lowered)
        expected = function_type(ABI_BY_NAME[abi_name]).args
        if [a.type for a in args] != list(expected):
            spelled = ", ".join(str(v.type) for v in op.operands)
            raise UnsupportedError(
                f"@{name} is called with ({spelled}), which does not match the runner utility's "
                f"signature ({ABI_BY_NAME[abi_name].doc}: {list(map(str, expected))} after "
                "lowering)", fe.location(op))
        self.abi.call(fe.builder, abi_name, args)

    def library_call(self, fe: FunctionEmitter, op: Operation, name: str) -> None:
        """`func.call @__nova_library_<i>(%m0, %m1, ...)`: run library plan `i` on the default
        stream with the memrefs' first-element addresses as its operands."""
        assert self.device is not None
        index = name.removeprefix(LIBRARY_CALL_PREFIX)
        if not index.isdigit():
            raise UnsupportedError(f"@{name}: a library call is named {LIBRARY_CALL_PREFIX}<plan "
                                   "index>", fe.location(op))
        if op.results:
            raise UnsupportedError(f"@{name} returns nothing, but the call expects "
                                   f"{len(op.results)} result(s)", fe.location(op))
        pointers: list[ir.Value] = []
        for i, value in enumerate(op.operands):
            ty = value.type
            if not isinstance(ty, MemRefType):
                raise UnsupportedError(f"@{name}: operand #{i} is {ty}; library calls take "
                                       "ranked memrefs", fe.location(op))
            desc = fe.lookup_memref(value)
            pointers.append(data_pointer(fe.builder, desc, T.element_size(ty.element_type)))
        self.device.library_call(fe.builder, int(index), pointers)

    # --- vector.print -----------------------------------------------------------------------------
    def vector_print(self, fe: FunctionEmitter, op: Operation) -> None:
        """`vector.print [%x : T] [punctuation <p>]` or `vector.print str "text"`."""
        text = attr(op, "stringLiteral")
        if text is not None:
            literal = fe.module.string_constant(str(getattr(text, "data", text)))
            self.abi.call(fe.builder, "nova_rt_print_string", [literal])
            return
        if op.operands and isinstance(op.operands[0].type, VectorType):
            expand_print(fe, op)  # `( a, b )`: scalar vector.prints back through this handler
            return
        if op.operands:
            value = op.operands[0]
            self.print_scalar(fe, op, fe.lookup(value), value.type)
        punctuation = enum_text(attr(op, "punctuation")) or "newline"
        if punctuation not in _PUNCTUATION:
            raise fe.unsupported(op, f"punctuation '{punctuation}'")
        printer = _PUNCTUATION[punctuation]
        if printer is not None:
            self.abi.call(fe.builder, printer, [])

    def print_scalar(self, fe: FunctionEmitter, op: Operation, value: ir.Value,
                     ty: Attribute | None) -> None:
        """Print one scalar (no punctuation) the way upstream's VectorToLLVM does."""
        builder = fe.builder
        if isinstance(ty, IndexType):
            self.abi.call(builder, "nova_rt_print_u64", [value])
        elif isinstance(ty, IntegerType) and ty.width.data <= 64:
            width = ty.width.data
            unsigned = ty.signedness.data == Signedness.UNSIGNED
            if width < 64:
                value = (builder.zext(value, T.I64) if unsigned or width == 1
                         else builder.sext(value, T.I64))
            self.abi.call(builder, "nova_rt_print_u64" if unsigned else "nova_rt_print_i64",
                          [value])
        elif isinstance(ty, Float32Type):
            self.abi.call(builder, "nova_rt_print_f32", [value])
        elif isinstance(ty, Float64Type):
            self.abi.call(builder, "nova_rt_print_f64", [value])
        elif isinstance(ty, Float16Type):
            self.abi.call(builder, "nova_rt_print_f32", [half_to_float(builder, value)])
        elif isinstance(ty, BFloat16Type):
            self.abi.call(builder, "nova_rt_print_f32", [bfloat_to_float(builder, value)])
        else:
            raise UnsupportedError(f"vector.print of type {ty} is not supported on the host "
                                   "(supported: integers up to 64 bits, index, f16, bf16, f32, "
                                   "f64)", fe.location(op))


def bfloat_to_float(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Exact bf16 -> f32: the bf16 bits are the float's upper half."""
    bits = builder.bitcast(value, ir.IntType(16)) if value.type != ir.IntType(16) else value
    wide = builder.shl(builder.zext(bits, T.I32), ir.Constant(T.I32, 16))
    return builder.bitcast(wide, T.F32)


def half_to_float(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Exact f16 -> f32 with integer operations. A plain `fpext half` becomes a call of
    `__extendhfsf2` on x86-64 CPUs without F16C, a compiler-runtime symbol that the host object
    should not depend on."""
    i32 = T.I32

    def const(n: int) -> ir.Constant:
        return ir.Constant(i32, n)

    bits = builder.zext(builder.bitcast(value, ir.IntType(16)), i32)
    sign = builder.shl(builder.and_(bits, const(0x8000)), const(16))
    exponent = builder.and_(builder.lshr(bits, const(10)), const(0x1F))
    mantissa = builder.and_(bits, const(0x3FF))
    normal = builder.or_(builder.shl(builder.add(exponent, const(112)), const(23)),
                         builder.shl(mantissa, const(13)))
    special = builder.or_(const(0x7F800000), builder.shl(mantissa, const(13)))  # inf / nan
    wide = builder.select(builder.icmp_unsigned("==", exponent, const(0x1F)), special, normal)
    # zero and subnormals: mantissa * 2**-24, exactly representable in f32
    tiny = builder.bitcast(builder.fmul(builder.uitofp(mantissa, T.F32),
                                        ir.Constant(T.F32, 2.0 ** -24)), i32)
    magnitude = builder.select(builder.icmp_unsigned("==", exponent, const(0)), tiny, wide)
    return builder.bitcast(builder.or_(magnitude, sign), T.F32)
