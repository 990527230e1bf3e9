"""compiler-rt routines that LLVM's x86-64 code calls, defined inside the CPU object.

Why: on x86-64 without F16C, LLVM lowers every f16 operation to calls of compiler-rt/libgcc
routines (`__extendhfsf2`, `__truncsfhf2`, `__truncdfhf2`), every rounding to bf16 (`fptrunc`,
and bf16 arithmetic LLVM promotes to f32 and rounds back, e.g. after instcombine narrows
`max(fpext a, fpext b)`) to `__truncsfbf2`/`__truncdfbf2`, and `llvm.powi` (math.fpowi) to
`__powisf2`/`__powidf2`. The CPU object may only depend on
libc, and a process that has not loaded libgcc_s would jump to an unresolved symbol. So the CPU
target defines them itself, with `internal` linkage (the code generator's libcalls bind to these
local definitions; no clash with other objects) and listed in `llvm.compiler.used` so LLVM keeps
them although no IR calls them. They are exact IEEE conversions with round-to-nearest-even,
using only integer operations and conversions that do not call back into these helpers.
"""

from __future__ import annotations

from llvmlite import ir

from nova.errors import LoweringError

I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
HELPERS = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2", "__truncsfbf2", "__truncdfbf2",
           "__powisf2", "__powidf2")


def uses_half_types(llvm_ir: str) -> bool:
    """True when LLVM IR text mentions f16 values (then the helpers are needed)."""
    return "half" in llvm_ir


def uses_bfloat(llvm_ir: str) -> bool:
    """True when LLVM IR text mentions bf16 values (then the bf16 rounding helpers are needed)."""
    return "bfloat" in llvm_ir


def uses_powi(llvm_ir: str) -> bool:
    """True when LLVM IR text calls llvm.powi (then __powisf2/__powidf2 are needed)."""
    return "@llvm.powi." in llvm_ir or '@"llvm.powi.' in llvm_ir


def add_libcall_helpers(module: ir.Module) -> None:
    """Define the helpers that `module`'s IR will need from the code generator (call once,
    after everything else is emitted)."""
    text = str(module)
    fns: list[ir.Function] = []
    if uses_half_types(text):
        fns += [_extend_hf_sf(module), _trunc_sf_hf(module), _trunc_df_hf(module)]
    if uses_bfloat(text):
        fns += [_trunc_sf_bf(module), _trunc_df_bf(module)]
    if uses_powi(text):
        fns += [_powi(module, "__powisf2", F32), _powi(module, "__powidf2", F64)]
    if fns:
        _mark_used(module, fns)


def _mark_used(module: ir.Module, fns: list[ir.Function]) -> None:
    """Keep `fns` alive through optimisation (`llvm.compiler.used`, which only we define)."""
    if "llvm.compiler.used" in module.globals:
        raise LoweringError("internal: llvm.compiler.used defined twice in a CPU device module")
    fns = [f.bitcast(ir.PointerType()) for f in fns]
    used_ty = ir.ArrayType(ir.PointerType(), len(fns))
    used = ir.GlobalVariable(module, used_ty, "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(used_ty, fns)


def _function(module: ir.Module, name: str, ret: ir.Type, arg: ir.Type
              ) -> tuple[ir.Function, ir.IRBuilder, ir.Value]:
    fn = ir.Function(module, ir.FunctionType(ret, [arg]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, b, fn.args[0]


def _extend_hf_sf(module: ir.Module) -> ir.Function:
    """half -> float (exact)."""
    fn, b, arg = _function(module, "__extendhfsf2", F32, F16)
    h = b.zext(b.bitcast(arg, I16), I32)
    sign = b.shl(b.and_(h, I32(0x8000)), I32(16))
    exp = b.and_(b.lshr(h, I32(10)), I32(0x1F))
    mant = b.and_(h, I32(0x3FF))
    normal = b.or_(b.shl(b.add(exp, I32(112)), I32(23)), b.shl(mant, I32(13)))
    special = b.or_(I32(0x7F800000), b.shl(mant, I32(13)))  # inf / nan (payload kept)
    # subnormal or zero: mant * 2^-24, exact in float
    tiny = b.bitcast(b.fmul(b.uitofp(mant, F32), F32(2.0 ** -24)), I32)
    bits = b.select(b.icmp_unsigned("==", exp, I32(0x1F)), special,
                    b.select(b.icmp_unsigned("==", exp, I32(0)), tiny, normal))
    b.ret(b.bitcast(b.or_(sign, bits), F32))
    return fn


def _round_to_half(b: ir.IRBuilder, absx: ir.Value, sign: ir.Value, ity: ir.IntType,
                   fty: ir.Type, value_abs: ir.Value, shift: int, bias_delta: int,
                   nan_limit: int, inf_limit: int, min_normal: int) -> ir.Value:
    """RNE of a non-negative float/double bit pattern `absx` to half bits (as i16), or'd with
    `sign` (i16). `shift` = mantissa bits dropped, `bias_delta` = exponent rebias (in place)."""
    c = lambda v: ir.Constant(ity, v)  # noqa: E731
    is_nan = b.icmp_unsigned(">", absx, c(nan_limit))
    nan = b.or_(I16(0x7E00), b.trunc(b.and_(b.lshr(absx, c(shift)), c(0x3FF)), I16))
    is_inf = b.icmp_unsigned(">=", absx, c(inf_limit))
    t = b.sub(absx, c(bias_delta))
    odd = b.and_(b.lshr(t, c(shift)), c(1))
    normal = b.trunc(b.lshr(b.add(b.add(t, c((1 << (shift - 1)) - 1)), odd), c(shift)), I16)
    # below the smallest normal half: scale by 2^24 (exact) and round to an integer with the
    # 2^(p-1) trick (RNE in the default rounding mode); 1024 is the smallest normal, as bits
    scaled = b.fmul(value_abs, ir.Constant(fty, 2.0 ** 24))
    magic = ir.Constant(fty, 2.0 ** (23 if fty == F32 else 52))
    rounded = b.fsub(b.fadd(scaled, magic), magic)
    tiny = b.trunc(b.fptosi(rounded, I32), I16)
    is_normal = b.icmp_unsigned(">=", absx, c(min_normal))
    bits = b.select(is_nan, nan, b.select(is_inf, I16(0x7C00),
                                          b.select(is_normal, normal, tiny)))
    return b.or_(sign, bits)


def _trunc_sf_hf(module: ir.Module) -> ir.Function:
    """float -> half (RNE)."""
    fn, b, arg = _function(module, "__truncsfhf2", F16, F32)
    x = b.bitcast(arg, I32)
    sign = b.trunc(b.and_(b.lshr(x, I32(16)), I32(0x8000)), I16)
    absx = b.and_(x, I32(0x7FFFFFFF))
    value_abs = b.bitcast(absx, F32)
    bits = _round_to_half(b, absx, sign, I32, F32, value_abs, 13, 112 << 23,
                          0x7F800000, 0x477FF000, 0x38800000)
    b.ret(b.bitcast(bits, F16))
    return fn


def _trunc_df_hf(module: ir.Module) -> ir.Function:
    """double -> half (RNE, no double rounding)."""
    fn, b, arg = _function(module, "__truncdfhf2", F16, F64)
    x = b.bitcast(arg, I64)
    sign = b.trunc(b.and_(b.lshr(x, I64(48)), I64(0x8000)), I16)
    absx = b.and_(x, I64(0x7FFFFFFFFFFFFFFF))
    value_abs = b.bitcast(absx, F64)
    bits = _round_to_half(b, absx, sign, I64, F64, value_abs, 42, (1023 - 15) << 52,
                          0x7FF0000000000000, 0x40EFFE0000000000, 0x3F10000000000000)
    b.ret(b.bitcast(bits, F16))
    return fn


def _trunc_sf_bf(module: ir.Module) -> ir.Function:
    """float -> bfloat (RNE; NaN stays a quiet NaN with its sign)."""
    from nova.backends.llvm.types import BFloatType

    fn, b, arg = _function(module, "__truncsfbf2", BFloatType(), F32)
    x = b.bitcast(arg, I32)
    upper = b.lshr(x, I32(16))
    rounded = b.lshr(b.add(x, b.add(I32(0x7FFF), b.and_(upper, I32(1)))), I32(16))
    is_nan = b.icmp_unsigned(">", b.and_(x, I32(0x7FFFFFFF)), I32(0x7F800000))
    bits = b.select(is_nan, b.or_(upper, I32(0x40)), rounded)
    b.ret(b.bitcast(b.trunc(bits, I16), BFloatType()))
    return fn


def _trunc_df_bf(module: ir.Module) -> ir.Function:
    """double -> bfloat (RNE, no double rounding: the bits dropped on the way to float are
    folded into a sticky bit first)."""
    from nova.backends.llvm.types import BFloatType

    fn, b, arg = _function(module, "__truncdfbf2", BFloatType(), F64)
    x = b.bitcast(arg, I64)
    # round to float *to odd* (truncate toward zero, then set the last bit if inexact): the
    # later RNE to bf16 then sees the dropped bits as a sticky bit, so ties are not rounded twice
    single = b.fptrunc(arg, F32)
    back = b.fpext(single, F64)
    inexact = b.fcmp_unordered("!=", back, arg)
    away = b.select(b.fcmp_ordered("<", arg, ir.Constant(F64, 0.0)),
                    b.fcmp_ordered("<", back, arg), b.fcmp_ordered(">", back, arg))
    sbits = b.bitcast(single, I32)
    toward_zero = b.select(away, b.sub(sbits, I32(1)), sbits)
    odd = b.select(inexact, b.or_(toward_zero, I32(1)), toward_zero)
    is_nan = b.fcmp_unordered("uno", arg, arg)
    upper = b.lshr(odd, I32(16))
    rounded = b.lshr(b.add(odd, b.add(I32(0x7FFF), b.and_(upper, I32(1)))), I32(16))
    bits = b.select(is_nan, b.or_(b.trunc(b.lshr(x, I64(48)), I32), I32(0x40)), rounded)
    b.ret(b.bitcast(b.trunc(bits, I16), BFloatType()))
    return fn


def _powi(module: ir.Module, name: str, fty: ir.Type) -> ir.Function:
    """x ** n for i32 n, compiler-rt's algorithm (same multiplication order, same results)."""
    fn = ir.Function(module, ir.FunctionType(fty, [fty, I32]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    x, n = fn.args
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    square = fn.append_basic_block("square")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    a = b.phi(fty)
    e = b.phi(I32)
    r = b.phi(fty)
    a.add_incoming(x, entry)
    e.add_incoming(n, entry)
    r.add_incoming(ir.Constant(fty, 1.0), entry)
    odd = b.icmp_unsigned("!=", b.and_(e, I32(1)), I32(0))
    r2 = b.select(odd, b.fmul(r, a), r)
    e2 = b.sdiv(e, I32(2))
    b.cbranch(b.icmp_signed("==", e2, I32(0)), done, square)
    b.position_at_end(square)
    a.add_incoming(b.fmul(a, a), square)
    e.add_incoming(e2, square)
    r.add_incoming(r2, square)
    b.branch(loop)
    b.position_at_end(done)
    recip = b.fdiv(ir.Constant(fty, 1.0), r2)
    b.ret(b.select(b.icmp_signed("<", n, I32(0)), recip, r2))
    return fn
