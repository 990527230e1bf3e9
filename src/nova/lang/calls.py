"""Calls in kernel code: Nova intrinsics, casts, builtins, math functions, device functions.

- casts: `nova.int32(x)`, `np.float32(x)`, `int(x)` (int64), `float(x)` (float64), `bool(x)`;
  float -> int truncates toward zero, int -> narrower int wraps around.
- builtins: `len(a)`, `min(...)`, `max(...)`, `abs(x)`, `print(...)` (gpu.printf).
- math: Python's `math` module and the NumPy ufuncs of the same names (sqrt, exp, log, log2,
  log10, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, erf, erfc, floor,
  ceil, trunc, fabs, pow/power, copysign, fma, cbrt, rsqrt, exp2, isnan, isinf, isfinite,
  minimum, maximum). Integer arguments compute in float64; float16/bfloat16 compute in float32
  and round back. `math.floor/ceil/trunc` return int64 as in Python; NumPy's return floats.
- intrinsics: nova.intrinsics (thread indexing, barriers, shared/local/dynamic shared arrays,
  atomics, warp
  operations, bit counts) and `@nova.func` device functions (inlined).
"""

from __future__ import annotations

import ast
import math as pymath
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import Operation

from nova.ir import gpu
from nova.ir.dialects.memref import AtomicRMWOp
from nova.lang import copies, fragments, warpgroup
from nova.lang import types as T
from nova.lang.intrinsics import WARP_SIZE, intrinsic_name
from nova.lang.lanes import LANE
from nova.lang.values import Const, TypeFault, Val, Value, is_number

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup

_UNARY_MATH: dict[str, Any] = {
    "sqrt": xmath.SqrtOp, "exp": xmath.ExpOp, "log": xmath.LogOp, "sin": xmath.SinOp,
    "cos": xmath.CosOp, "tan": xmath.TanOp, "asin": xmath.AsinOp, "arcsin": xmath.AsinOp,
    "acos": xmath.AcosOp, "arccos": xmath.AcosOp, "atan": xmath.AtanOp,
    "arctan": xmath.AtanOp, "sinh": xmath.SinhOp, "cosh": xmath.CoshOp, "tanh": xmath.TanhOp,
    "asinh": xmath.AsinhOp, "arcsinh": xmath.AsinhOp, "acosh": xmath.AcoshOp,
    "arccosh": xmath.AcoshOp, "atanh": xmath.AtanhOp, "arctanh": xmath.AtanhOp,
    "erf": xmath.ErfOp, "floor": xmath.FloorOp, "ceil": xmath.CeilOp, "trunc": xmath.TruncOp,
    "fabs": xmath.AbsFOp, "cbrt": xmath.CbrtOp, "rsqrt": xmath.RsqrtOp,
}
_MATH_NAMES = (*_UNARY_MATH, "erfc", "log2", "log10", "exp2", "pow", "power", "copysign",
               "fma", "isnan", "isinf", "isfinite", "minimum", "maximum", "absolute")
_DIMS = ("x", "y", "z")
_INDEX_OPS = {"thread_id": gpu.ThreadIdOp, "block_id": gpu.BlockIdOp,
              "block_dim": gpu.BlockDimOp, "grid_dim": gpu.GridDimOp,
              "global_id": gpu.GlobalIdOp}
_SUPPORTED = ("nova intrinsics (thread_id, shared_array, atomic_add, shuffle_xor, ...), "
              "@nova.func functions, casts (nova.int32(x), float(x)), len/min/max/abs and "
              "math functions")


def call(tr: Translator, node: ast.Call) -> Value | Tup:
    fn = tr.expr(node.func)
    if node.keywords and not (isinstance(fn, Const) and intrinsic_name(fn.value)):
        raise tr.unsupported(node, "keyword arguments are only supported for Nova intrinsics")
    if not isinstance(fn, Const):
        raise tr.type_error(node.func, f"{tr.describe(fn)} is not callable")
    target = fn.value
    name = intrinsic_name(target)
    if name is not None:
        return _intrinsic(tr, name, node)
    args = [tr.expr(a) for a in node.args]
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise tr.unsupported(node, "*args in calls is not supported in kernels")
    tr.at(node)
    if getattr(target, "__nova_device_function__", False):
        return tr.inline(target, args, node)
    if hasattr(target, "__nova_kernel__"):
        raise tr.unsupported(node, "kernels cannot call other kernels; make the callee a "
                             "@nova.func device function")
    cast = T.resolve_dtype(target) if not isinstance(target, str) else None
    if cast is not None and len(args) == 1:
        return _cast(tr, args[0], cast, node)
    if target is len:
        return _len(tr, args, node)
    if target in (min, max):
        return _minmax(tr, target.__name__, args, node)
    if target is abs:
        return _math(tr, "absolute", args, node, python=False)
    if target is range:
        raise tr.unsupported(node, "range() is only supported as the iterable of a for loop")
    if target is print:
        return _print(tr, args, node)
    fname = getattr(target, "__name__", None)
    module = getattr(target, "__module__", None) or type(target).__module__
    if fname in _MATH_NAMES and (target is getattr(pymath, fname, None) or
                                 module.startswith("numpy")):
        return _math(tr, fname, args, node, python=target is getattr(pymath, fname, None))
    raise tr.unsupported(node, f"calling {target!r} is not supported in kernels (supported: "
                         f"{_SUPPORTED})")


def _cast(tr: Translator, value: Value | Tup, ty: T.ScalarType, node: ast.AST) -> Value:
    if isinstance(value, Const) and is_number(value.value):
        if ty.is_int:  # a literal wraps like a value would (nova.uint8(-1) == 255)
            lo, _ = ty.min_max()
            return tr.em.constant((int(value.value) - lo) % (1 << ty.bits) + lo, ty)
        return tr.em.constant(value.value if not ty.is_bool else bool(value.value), ty)
    s = tr.scalar(value, node)
    return tr.em.convert(s, ty)


def _print(tr: Translator, args: list, node: ast.AST) -> Value:
    """print(a, b, ...) -> gpu.printf: space-separated, newline-terminated. Strings and
    constants are inlined; signed integers print as %lld, unsigned as %llu, bools as 0/1, floats
    as %g (in float64). Lines of different threads may interleave in any order."""
    from nova.lang.translate import Tup

    parts: list[str] = []
    operands = []
    for a in args:
        if isinstance(a, Const) and isinstance(a.value, str | int | float | bool):
            parts.append(str(a.value).replace("%", "%%"))
            continue
        if isinstance(a, Tup) or not isinstance(a, Val) or not isinstance(a.type, T.ScalarType):
            raise tr.type_error(node, f"print() in kernels takes numbers and string constants, "
                                f"got {tr.describe(a)}")
        ty = a.type
        if ty.is_float:
            operands.append(tr.em.convert(a, T.float64).ssa)
            parts.append("%g")
        elif ty.is_bool or ty.is_signed:
            operands.append(tr.em.convert(a, T.int64).ssa)
            parts.append("%lld")
        else:
            operands.append(tr.em.convert(a, T.uint64).ssa)
            parts.append("%llu")
    tr.em.op(gpu.PrintfOp(" ".join(parts) + "\n", operands))
    return Const(None)


def _len(tr: Translator, args: list, node: ast.AST) -> Value:
    from nova.lang.expressions import dimension
    from nova.lang.translate import Tup

    if len(args) == 1 and isinstance(args[0], Tup):
        return Const(len(args[0].items))
    if len(args) != 1 or not (isinstance(args[0], Val) and isinstance(args[0].type, T.ArrayType)):
        raise tr.type_error(node, "len() takes one array")
    return dimension(tr, args[0], 0)


def _minmax(tr: Translator, which: str, args: list, node: ast.AST) -> Value:
    if len(args) < 2:
        raise tr.type_error(node, f"{which}() in kernels takes two or more numbers")
    result = args[0]
    for other in args[1:]:
        if isinstance(result, Const) and isinstance(other, Const):
            result = Const(min(result.value, other.value) if which == "min"
                           else max(result.value, other.value))
            continue
        a, b, ty = tr.common(result, other, node)
        result = tr.em.minmax(which, a, b, ty)
    return result


def _float_operand(tr: Translator, value: Value | Tup, node: ast.AST
                   ) -> tuple[Val, T.ScalarType]:
    """(value as a float the math ops accept, the type to give back)."""
    s = tr.scalar(value, node)
    ty = s.type
    assert isinstance(ty, T.ScalarType)
    if not ty.is_float:
        return tr.em.convert(s, T.float64), T.float64
    if ty.bits == 16:
        return tr.em.convert(s, T.float32), ty
    return s, ty


def _math(tr: Translator, name: str, args: list, node: ast.AST, python: bool) -> Value:
    em = tr.em
    arity = 3 if name == "fma" else 2 if name in ("pow", "power", "copysign", "minimum",
                                                  "maximum") else 1
    if len(args) != arity:
        raise tr.type_error(node, f"{name}() takes {arity} argument(s), got {len(args)}")
    if name in ("minimum", "maximum"):
        return _minmax(tr, name[:3], args, node)
    if name == "absolute":
        s = tr.scalar(args[0], node)
        if s.type.is_float:  # type: ignore[union-attr]
            x, back = _float_operand(tr, s, node)
            return em.convert(Val(em.res(xmath.AbsFOp(x.ssa)), x.type), back)
        if s.type.is_signed:  # type: ignore[union-attr]
            return Val(em.res(xmath.AbsIOp(s.ssa)), s.type)
        return s
    if name in ("floor", "ceil", "trunc") and isinstance(args[0], Val) and \
            isinstance(args[0].type, T.ScalarType) and args[0].type.is_int:
        return args[0] if not python else em.convert(args[0], T.int64)
    x, back = _float_operand(tr, args[0], node)
    if name in ("isnan", "isinf", "isfinite"):
        if name == "isnan":
            return Val(em.res(arith.CmpfOp(x.ssa, x.ssa, "uno")), T.bool_)
        mag = em.res(xmath.AbsFOp(x.ssa))
        inf = em.constant(float("inf"), x.type)  # type: ignore[arg-type]
        pred = "oeq" if name == "isinf" else "olt"
        return Val(em.res(arith.CmpfOp(mag, inf.ssa, pred)), T.bool_)
    if arity > 1:
        ty = back  # the common type of every argument (types.py rules), then a float
        for a in args[1:]:
            if isinstance(a, Val) and isinstance(a.type, T.ScalarType) and not a.type.is_bool:
                ty = T.promote(ty, a.type)
        back = ty if ty.is_float else T.float64
        work = T.float32 if back.bits == 16 else back
        operands = [em.convert(x, work), *(tr.as_type(a, work, node) for a in args[1:])]
        cls = {"pow": xmath.PowFOp, "power": xmath.PowFOp, "copysign": xmath.CopySignOp,
               "fma": xmath.FmaOp}[name]
        out = Val(em.res(cls(*[o.ssa for o in operands])), work)
    elif name in _UNARY_MATH:
        out = Val(em.res(_UNARY_MATH[name](x.ssa)), x.type)
    else:
        out = _derived_math(tr, name, x)
    if python and name in ("floor", "ceil", "trunc"):
        return em.convert(out, T.int64)
    return em.convert(out, back) if out.type is not back else out


def _derived_math(tr: Translator, name: str, x: Val) -> Val:
    em = tr.em
    t = x.type
    assert isinstance(t, T.ScalarType)
    if name == "erfc":
        from nova.ir.dialects.math import ErfcOp

        return Val(em.res(ErfcOp(x.ssa)), t)
    if name in ("log2", "log10"):
        scale = 1.0 / pymath.log(2.0 if name == "log2" else 10.0)
        ln = em.res(xmath.LogOp(x.ssa))
        return Val(em.res(arith.MulfOp(ln, em.constant(scale, t).ssa)), t)
    assert name == "exp2"
    return Val(em.res(xmath.PowFOp(em.constant(2.0, t).ssa, x.ssa)), t)


# --- intrinsics --------------------------------------------------------------------------------
def _intrinsic(tr: Translator, name: str, node: ast.Call) -> Value:
    spec = _INTRINSIC_PARAMS[name]
    values = _bind_args(tr, name, spec, node)
    tr.at(node)
    try:
        return _INTRINSICS[name](tr, name, values, node)
    except TypeFault as exc:
        raise tr.type_error(node, str(exc)) from None


_INTRINSIC_PARAMS: dict[str, tuple[tuple[str, Any], ...]] = {}
_REQUIRED = object()


def _bind_args(tr: Translator, name: str, spec: tuple[tuple[str, Any], ...],
               node: ast.Call) -> dict[str, Value]:
    if len(node.args) > len(spec):
        raise tr.type_error(node, f"nova.{name}() takes at most {len(spec)} arguments "
                            f"({', '.join(p for p, _ in spec)})")
    values: dict[str, Any] = {}
    for (pname, _), arg in zip(spec, node.args, strict=False):
        values[pname] = tr.expr(arg)
    for kw in node.keywords:
        if kw.arg not in dict(spec) or kw.arg in values:
            raise tr.type_error(node, f"nova.{name}() got an unexpected or repeated keyword "
                                f"argument {kw.arg!r}")
        values[kw.arg] = tr.expr(kw.value)
    for pname, default in spec:
        if pname not in values:
            if default is _REQUIRED:
                raise tr.type_error(node, f"nova.{name}() is missing argument '{pname}'")
            values[pname] = Const(default)
    return values


def _dim(tr: Translator, value: Value, node: ast.AST) -> str:
    # `type(...) is int`: 0.0, 0j and True compare equal to 0/1 but do not index _DIMS.
    if not isinstance(value, Const) or type(value.value) is not int or value.value not in (0, 1, 2):
        raise tr.type_error(node, "the dimension must be a constant 0, 1 or 2 (x, y, z)")
    return _DIMS[value.value]


def _index_query(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    if name == "lane_id":
        res = tr.em.res(gpu.LaneIdOp())
        tr.em.lanes.set(res, LANE)
        return tr.em.from_index(res)
    dim = _dim(tr, v["d"], node)
    res = tr.em.res(_INDEX_OPS[name](dim))
    if dim == "x" and name in ("thread_id", "global_id"):
        tr.em.lanes.set(res, LANE)  # the lanes of a warp are consecutive x indices
    return tr.em.from_index(res)


def _syncthreads(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    tr.em.op(gpu.BarrierOp())
    return Const(None)


def _syncwarp(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    """nvvm.bar.warp.sync with the full mask (every lane of the warp)."""
    from nova.ir.dialects.nvvm import BarWarpSyncOp

    mask = tr.em.constant(-1, T.int32)
    tr.em.op(BarWarpSyncOp(mask.ssa))
    return Const(None)


def _array_shape_dtype(tr: Translator, name: str, v: dict, node: ast.AST
                       ) -> tuple[tuple[int, ...], T.ScalarType]:
    shape, dtype = v["shape"], v["dtype"]
    dims = shape.value if isinstance(shape, Const) else None
    if isinstance(dims, int):
        dims = (dims,)
    if not isinstance(dims, tuple) or not dims or not all(
            isinstance(d, int) and d > 0 for d in dims):
        raise tr.type_error(node, f"nova.{name}() needs a shape of positive compile-time "
                            "integers (an int or a tuple of ints)")
    ty = T.resolve_dtype(dtype.value) if isinstance(dtype, Const) else None
    if ty is None:
        raise tr.type_error(node, f"nova.{name}() needs a dtype such as nova.float32 or "
                            "np.int32")
    return dims, ty


def _shared_array(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    dims, ty = _array_shape_dtype(tr, name, v, node)
    at = T.ArrayType(ty, len(dims), dims, T.SHARED_MEMORY_SPACE)
    tr.workgroup.append(at)
    arg = tr.entry.insert_arg(at.mlir, len(tr.entry.args))
    return Val(arg, at)


def _local_array(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    dims, ty = _array_shape_dtype(tr, name, v, node)
    at = T.ArrayType(ty, len(dims), dims)
    op = memref.AllocaOp.get(ty.mlir, shape=list(dims))
    op.attributes.clear()
    tr.entry.add_op(op)
    return Val(op.results[0], at)


def _dynamic_shared_array(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    """A 1-D view of the block's dynamic shared memory: `gpu.dynamic_shared_memory` (the launch's
    `shared_bytes`, as i8) carved by `memref.view` at byte `offset` into `count` elements of
    `dtype`. Without a count, the view covers the rest of the allocation: (bytes - offset) //
    itemsize elements, the byte count read in the kernel (memref.dim of the allocation)."""
    dtype = v["dtype"]
    ty = T.resolve_dtype(dtype.value) if isinstance(dtype, Const) else None
    if ty is None:
        raise tr.type_error(node, f"nova.{name}() needs a compile-time dtype such as "
                            "nova.float32 or np.int32")
    em = tr.em
    offset = _dynamic_shared_offset(tr, name, v["offset"], ty, node)
    shmem = em.res(gpu.DynamicSharedMemoryOp())
    count, shape = v["count"], None
    sizes: list[Any] = []
    if isinstance(count, Const) and count.value is None:
        sizes = [_remaining_elements(tr, shmem, offset, ty)]
    elif isinstance(count, Const) and isinstance(count.value, int) and \
            not isinstance(count.value, bool):
        if count.value <= 0:
            raise tr.type_error(node, f"nova.{name}() needs a positive count, got "
                                f"{count.value}")
        shape = (count.value,)
    else:
        sizes = [em.index(_integer(tr, name, "count", count, node))]
    source = shmem.type
    assert isinstance(source, MemRefType)
    view_ty = MemRefType(ty.mlir, [shape[0] if shape else DYNAMIC_INDEX],
                         memory_space=source.memory_space)
    view = em.res(memref.ViewOp(shmem, offset, sizes, view_ty))
    return Val(view, T.ArrayType(ty, 1, shape, T.SHARED_MEMORY_SPACE))


def _integer(tr: Translator, name: str, what: str, value: Value, node: ast.AST) -> Val:
    """A run-time integer argument of an intrinsic (located error otherwise)."""
    s = tr.scalar(value, node)
    if not isinstance(s.type, T.ScalarType) or not s.type.is_int:
        raise tr.type_error(node, f"nova.{name}() needs an integer {what}, got "
                            f"{tr.describe(value)}")
    return s


def _dynamic_shared_offset(tr: Translator, name: str, offset: Value, ty: T.ScalarType,
                           node: ast.AST) -> Any:
    """The byte offset as an index value. A constant must be >= 0 and a multiple of the element
    size (a misaligned view is undefined behaviour on the GPU); a run-time offset is the
    caller's to keep aligned, as in CUDA."""
    if isinstance(offset, Const) and isinstance(offset.value, int) and \
            not isinstance(offset.value, bool):
        if offset.value < 0 or offset.value % ty.itemsize:
            raise tr.type_error(node, f"nova.{name}() byte offset {offset.value} must be "
                                f">= 0 and a multiple of {ty.itemsize} (the size of {ty})")
        return tr.em.res(_index_constant(offset.value))
    return tr.em.index(_integer(tr, name, "byte offset", offset, node))


def _remaining_elements(tr: Translator, shmem: Any, offset: Any, ty: T.ScalarType) -> Any:
    """max(bytes - offset, 0) // itemsize as an index: the elements after `offset`."""
    em = tr.em
    total = em.res(memref.DimOp(shmem, em.res(_index_constant(0))))
    rest = em.res(arith.MaxSIOp(em.res(arith.SubiOp(total, offset)),
                                em.res(_index_constant(0))))
    if ty.itemsize == 1:
        return rest
    return em.res(arith.DivUIOp(rest, em.res(_index_constant(ty.itemsize))))


def _index_constant(value: int) -> Operation:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


_ATOMIC_KIND = {"atomic_add": ("addi", "addf"), "atomic_sub": ("addi", "addf"),
                "atomic_and": ("andi", None), "atomic_or": ("ori", None),
                "atomic_xor": ("xori", None), "atomic_exchange": ("assign", "assign")}


def _atomic(tr: Translator, name: str, v: dict, node: ast.Call) -> Value:
    from nova.lang.translate import Tup

    arr = v["array"]
    if not (isinstance(arr, Val) and isinstance(arr.type, T.ArrayType)):
        raise tr.type_error(node, f"nova.{name}() needs an array first, got {tr.describe(arr)}")
    at = arr.type
    ty = at.dtype
    index = v["index"]
    items = list(index.items) if isinstance(index, Tup) else (
        [Const(i) for i in index.value] if isinstance(index, Const) and
        isinstance(index.value, tuple) else [index])
    if len(items) != at.ndim:
        raise tr.type_error(node, f"nova.{name}() on a {at.ndim}-d array needs {at.ndim} "
                            f"indices, got {len(items)}")
    indices = [tr.em.index(tr.scalar(i, node)) for i in items]
    value = tr.as_type(v["value"], ty, node)
    if ty.is_bool:
        raise tr.type_error(node, f"nova.{name}() does not support bool arrays")
    if name in ("atomic_min", "atomic_max"):
        kind = ("maximumf" if name == "atomic_max" else "minimumf") if ty.is_float else (
            ("max" if name == "atomic_max" else "min") + ("s" if ty.is_signed else "u"))
    else:
        listed = _ATOMIC_KIND[name][1 if ty.is_float else 0]
        if listed is None:
            raise tr.type_error(node, f"nova.{name}() needs an integer array, got {ty}")
        kind = listed
        if name == "atomic_sub":
            value = tr.em.negate(value)
    from nova.ir.dialects.memref import ATOMIC_RMW_KINDS

    op = AtomicRMWOp.create(operands=[value.ssa, arr.ssa, *indices], result_types=[ty.mlir],
                            properties={"kind": IntegerAttr(ATOMIC_RMW_KINDS.index(kind), i64)})
    return Val(tr.em.res(op), ty)


def _atomic_cas(tr: Translator, name: str, v: dict, node: ast.Call) -> Value:
    """Compare-and-swap as memref.generic_atomic_rmw: new = (current == compare) ? value :
    current; the result is the old value (CUDA's atomicCAS)."""
    from nova.ir.dialects.memref import AtomicYieldOp, GenericAtomicRMWOp
    from nova.lang.translate import Tup

    arr = v["array"]
    if not (isinstance(arr, Val) and isinstance(arr.type, T.ArrayType)) or \
            not arr.type.dtype.is_int:
        raise tr.type_error(node, f"nova.atomic_cas() needs an integer array, got "
                            f"{tr.describe(arr)}")
    ty = arr.type.dtype
    index = v["index"]
    items = list(index.items) if isinstance(index, Tup) else (
        [Const(i) for i in index.value] if isinstance(index, Const) and
        isinstance(index.value, tuple) else [index])
    if len(items) != arr.type.ndim:
        raise tr.type_error(node, f"nova.atomic_cas() on a {arr.type.ndim}-d array needs "
                            f"{arr.type.ndim} indices, got {len(items)}")
    indices = [tr.em.index(tr.scalar(i, node)) for i in items]
    compare = tr.as_type(v["compare"], ty, node)
    value = tr.as_type(v["value"], ty, node)
    op = GenericAtomicRMWOp(arr.ssa, indices, ty.mlir)
    tr.em.op(op)
    outer = tr.em.block
    tr.em.block = op.atomic_body.blocks[0]
    current = Val(op.current, ty)
    same = tr.em.compare("==", current, compare, ty)
    tr.em.op(AtomicYieldOp(tr.em.select(same, value, current).ssa))
    tr.em.block = outer
    return Val(op.result, ty)


def _warp_operand(tr: Translator, value: Value, node: ast.AST) -> tuple[Val, T.ScalarType]:
    """A value widened to a type warp ops carry (i32/i64/f32/f64), and its own type."""
    s = tr.scalar(value, node)
    ty = s.type
    assert isinstance(ty, T.ScalarType)
    if ty.is_float:
        return (s, ty) if ty.bits >= 32 else (tr.em.convert(s, T.float32), ty)
    if ty.bits >= 32:
        return s, ty
    return tr.em.convert(s, T.int32 if ty.is_signed else T.uint32), ty


def _shuffle(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    """CUDA's __shfl_*_sync semantics: lanes form segments of `width` (a power of two); a source
    lane outside the caller's segment yields the caller's own value. With the default width the
    native gpu.shuffle modes are used; otherwise the source lane is computed and read with `idx`.
    """
    em = tr.em
    x, back = _warp_operand(tr, v["value"], node)
    offset = tr.as_type(v[_SHUFFLE_ARG[name]], T.int32, node)
    width_v = v["width"]
    if isinstance(width_v, Const) and width_v.value not in (1, 2, 4, 8, 16, 32):
        raise tr.type_error(node, f"nova.{name}() width must be a power of two <= 32")
    full = em.constant(WARP_SIZE, T.int32)
    mode = name.removeprefix("shuffle_")
    if not _no_members(v):
        return _shuffle_members(tr, name, mode, x, back, offset, v, node)
    if isinstance(width_v, Const) and width_v.value == WARP_SIZE and mode != "idx":
        op = em.op(gpu.ShuffleOp(mode, x.ssa, offset.ssa, full.ssa))
        return em.convert(Val(op.results[0], x.type), back)
    width = tr.as_type(width_v, T.int32, node)
    lane = em.convert(em.from_index(em.res(gpu.LaneIdOp())), T.int32)
    one = em.constant(1, T.int32)
    low = em.binary("-", width, one, T.int32)
    seg = em.binary("&", lane, em.invert(low), T.int32)        # first lane of the segment
    end = em.binary("+", seg, width, T.int32)
    if mode == "idx":
        src = em.binary("+", seg, em.binary("&", offset, low, T.int32), T.int32)
    else:
        op_sym = {"up": "-", "down": "+", "xor": "^"}[mode]
        src = em.binary(op_sym, lane, offset, T.int32)
    inside = em.binary("&", em.compare(">=", src, seg, T.int32),
                       em.compare("<", src, end, T.int32), T.bool_)
    src = em.select(inside, src, lane)
    op = em.op(gpu.ShuffleOp("idx", x.ssa, src.ssa, full.ssa))
    return em.convert(Val(op.results[0], x.type), back)


_SHUFFLE_ARG = {"shuffle_idx": "lane", "shuffle_up": "delta", "shuffle_down": "delta",
                "shuffle_xor": "mask"}


def _no_members(v: dict) -> bool:
    members = v["members"]
    return isinstance(members, Const) and members.value is None


def _members(tr: Translator, v: dict, node: ast.AST) -> Val:
    """The `members=` lane mask (CUDA's `mask` argument of the *_sync intrinsics) as i32."""
    return tr.em.convert(tr.as_type(v["members"], T.uint32, node), T.int32)


def _shuffle_members(tr: Translator, name: str, mode: str, x: Val, back: T.ScalarType,
                     offset: Val, v: dict, node: ast.AST) -> Value:
    """A shuffle over the lanes of `members=`: `nvvm.shfl.sync` with CUDA's own operand
    encoding (segment mask (32 - width) << 8, clamp 31 but for `up`), so a constant mask
    reaches PTX as an immediate and ptxas needs no convergence check of a computed one."""
    from nova.ir.dialects.nvvm import ShflSyncOp

    em = tr.em
    ty = x.type
    if not isinstance(ty, T.ScalarType) or ty.bits != 32:
        raise tr.type_error(node, f"nova.{name}(..., members=) shuffles 32-bit values, got "
                            f"{back}")
    width = tr.as_type(v["width"], T.int32, node)
    seg = em.binary("<<", em.binary("-", em.constant(WARP_SIZE, T.int32), width, T.int32),
                    em.constant(8, T.int32), T.int32)
    c = seg if mode == "up" else em.binary("|", seg, em.constant(31, T.int32), T.int32)
    kind = {"idx": "idx", "up": "up", "down": "down", "xor": "bfly"}[mode]
    carried = x if ty.is_float else em.convert(x, T.int32)
    res = tr.em.res(ShflSyncOp(kind, _members(tr, v, node).ssa, carried.ssa, offset.ssa, c.ssa))
    out = Val(res, carried.type)
    return em.convert(out if ty.is_float else em.convert(out, ty), back)


def _existing_lanes(tr: Translator) -> Val:
    """uint32 mask of the lanes that exist in the calling warp: all 32 but in a partial last
    warp of the block (loop-invariant: LLVM computes it once)."""
    em = tr.em
    i32 = T.int32

    def query(op: Any, d: str) -> Val:
        return em.convert(em.from_index(em.res(op(d))), i32)

    tx, ty, tz = (query(gpu.ThreadIdOp, d) for d in ("x", "y", "z"))
    nx, ny, nz = (query(gpu.BlockDimOp, d) for d in ("x", "y", "z"))
    linear = em.binary("+", tx, em.binary("*", nx, em.binary(
        "+", ty, em.binary("*", ny, tz, i32), i32), i32), i32)
    nthreads = em.binary("*", em.binary("*", nx, ny, i32), nz, i32)
    left = em.binary("-", nthreads, em.binary("&", linear, em.constant(-32, i32), i32), i32)
    full = em.constant(32, i32)
    lanes = em.select(em.compare("<", left, full, i32), left, full)
    amount = em.convert(em.binary("-", full, lanes, i32), T.uint32)
    ones = em.constant(0xFFFFFFFF, T.uint32)
    return em.binary(">>", ones, amount, T.uint32)


def _vote(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    """`nvvm.vote.sync ballot/any/all` over the warp: one `vote.sync` instruction on the GPU
    (CUDA's __ballot_sync/__any_sync/__all_sync), where an or/and reduction of per-lane bits
    took five shuffles and a broadcast. The mask holds the lanes that exist (a partial last
    warp of a block votes among its own lanes, as the reduction did), or `members=`: a
    constant there (0xFFFFFFFF for full warps) spares ptxas the convergence check it emits
    before a collective whose mask is computed (a MATCH.ANY and a REDUX.OR of the mask)."""
    from nova.ir.dialects.nvvm import VoteSyncOp

    pred = tr.em.truth(tr.scalar(v["pred"], node))
    mask = _existing_lanes(tr) if _no_members(v) else _members(tr, v, node)
    kind = {"ballot": "ballot", "warp_any": "any", "warp_all": "all"}[name]
    res = tr.em.res(VoteSyncOp(kind, mask.ssa, pred.ssa))
    return Val(res, T.uint32 if name == "ballot" else T.bool_)


def _match_any(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    """nvvm.match.sync any over the full warp; narrow integers compare widened to 32 bits."""
    from nova.ir.dialects.nvvm import MatchSyncOp

    s = tr.scalar(v["value"], node)
    ty = s.type
    if not isinstance(ty, T.ScalarType) or not ty.is_int or ty.is_bool:
        raise tr.type_error(node, f"nova.match_any() needs an integer, got {ty}")
    x, _ = _warp_operand(tr, s, node)
    mask = tr.em.constant(-1, T.int32)
    return Val(tr.em.res(MatchSyncOp(mask.ssa, x.ssa)), T.uint32)


def _warp_reduce(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    x, back = _warp_operand(tr, v["value"], node)
    which = name.removeprefix("warp_reduce_")
    ty = x.type
    assert isinstance(ty, T.ScalarType)
    if which in ("min", "max"):
        kind = f"{which}imumf" if ty.is_float else f"{which}{'si' if ty.is_signed else 'ui'}"
    elif which in ("and", "or", "xor"):
        if ty.is_float:
            raise tr.type_error(node, f"nova.{name}() needs integers, got {back}")
        kind = which
    else:
        kind = which
    r = Val(tr.em.res(gpu.SubgroupReduceOp(x.ssa, kind)), ty)
    return tr.em.convert(r, back)


def _bits(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    s = tr.scalar(v["x"], node)
    ty = s.type
    if not isinstance(ty, T.ScalarType) or not ty.is_int:
        raise tr.type_error(node, f"nova.{name}() needs an integer, got {ty}")
    cls = {"popc": xmath.CtPopOp, "clz": xmath.CountLeadingZerosOp,
           "ctz": xmath.CountTrailingZerosOp}[name]
    return Val(tr.em.res(cls(s.ssa)), ty)


def _register() -> dict[str, Any]:
    table: dict[str, Any] = {}
    req = _REQUIRED
    for n in _INDEX_OPS:
        _INTRINSIC_PARAMS[n] = (("d", req),)
        table[n] = _index_query
    _INTRINSIC_PARAMS["lane_id"] = ()
    table["lane_id"] = _index_query
    _INTRINSIC_PARAMS["syncthreads"] = ()
    table["syncthreads"] = _syncthreads
    _INTRINSIC_PARAMS["syncwarp"] = ()
    table["syncwarp"] = _syncwarp
    for n, fn in (("shared_array", _shared_array), ("local_array", _local_array)):
        _INTRINSIC_PARAMS[n] = (("shape", req), ("dtype", req))
        table[n] = fn
    _INTRINSIC_PARAMS["dynamic_shared_array"] = (("dtype", req), ("count", None), ("offset", 0))
    table["dynamic_shared_array"] = _dynamic_shared_array
    for n in ("atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and",
              "atomic_or", "atomic_xor", "atomic_exchange"):
        _INTRINSIC_PARAMS[n] = (("array", req), ("index", req), ("value", req))
        table[n] = _atomic
    _INTRINSIC_PARAMS["atomic_cas"] = (("array", req), ("index", req), ("compare", req),
                                       ("value", req))
    table["atomic_cas"] = _atomic_cas
    for n, arg in _SHUFFLE_ARG.items():
        _INTRINSIC_PARAMS[n] = (("value", req), (arg, req), ("width", WARP_SIZE),
                                ("members", None))
        table[n] = _shuffle
    for n in ("ballot", "warp_any", "warp_all"):
        _INTRINSIC_PARAMS[n] = (("pred", req), ("members", None))
        table[n] = _vote
    _INTRINSIC_PARAMS["match_any"] = (("value", req),)
    table["match_any"] = _match_any
    for n in ("add", "mul", "min", "max", "and", "or", "xor"):
        _INTRINSIC_PARAMS[f"warp_reduce_{n}"] = (("value", req),)
        table[f"warp_reduce_{n}"] = _warp_reduce
    for n in ("popc", "clz", "ctz"):
        _INTRINSIC_PARAMS[n] = (("x", req),)
        table[n] = _bits
    fragments.register(_INTRINSIC_PARAMS, table, req)
    copies.register(_INTRINSIC_PARAMS, table, req)
    warpgroup.register(_INTRINSIC_PARAMS, table, req)
    return table


_INTRINSICS = _register()
