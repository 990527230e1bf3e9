"""Expressions of kernel code: literals, names, attributes, array elements, arithmetic,
comparisons, boolean operators, conditional expressions, tuples and calls.

Operations on compile-time constants fold in Python (so `TILE * 2` with a global TILE stays a
constant usable as a shared-array shape). `and`/`or`/`x if c else y` evaluate lazily through
branches, like Python; their result is a value of the operands' common type (`and`/`or` give bool).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xdsl.dialects import memref

from nova.lang import types as T
from nova.lang.lanes import UNIFORM, VARYING, binary_level
from nova.lang.values import Const, TypeFault, Val, Value, is_number

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup

BIN_OPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^",
}
_PY_BIN = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
CMP_OPS: dict[type, str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}
_PY_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
    ast.Invert: operator.invert}
_PY_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
_SUPPORTED = ("numbers, names, array elements a[i, j], a.shape/a.ndim/a.size, arithmetic, "
              "comparisons, and/or/not, x if c else y, tuples and calls")


def expression(tr: Translator, node: ast.expr) -> Value | Tup:
    handler = _HANDLERS.get(type(node))
    if handler is None:
        raise tr.unsupported(node, f"'{type(node).__name__}' expressions are not supported in "
                             f"kernels (supported: {_SUPPORTED})")
    return handler(tr, node)


def _constant(tr: Translator, node: ast.Constant) -> Value:
    return Const(node.value)


def _name(tr: Translator, node: ast.Name) -> Value | Tup:
    return tr.read(tr.lookup(node.id, node))


def _attribute(tr: Translator, node: ast.Attribute) -> Value | Tup:
    from nova.lang.translate import Tup

    base = tr.expr(node.value)
    if isinstance(base, Const):
        try:
            return Const(getattr(base.value, node.attr))
        except AttributeError:
            raise tr.type_error(node, f"{base.value!r} has no attribute '{node.attr}'") from None
    if isinstance(base, Val) and isinstance(base.type, T.ArrayType):
        at = base.type
        if node.attr == "ndim":
            return Const(at.ndim)
        if node.attr == "dtype":
            return Const(at.dtype)
        if node.attr == "shape":
            return Tup(tuple(dimension(tr, base, d) for d in range(at.ndim)))
        if node.attr == "size":
            total: Value = Const(1)
            for d in range(at.ndim):
                total = binary(tr, "*", total, dimension(tr, base, d), node)
            return total
    raise tr.unsupported(node, f"attribute '{node.attr}' of {tr.describe(base)} is not "
                         "supported (arrays have .shape, .ndim, .size, .dtype)")


def dimension(tr: Translator, array: Val, d: int) -> Value:
    at = array.type
    assert isinstance(at, T.ArrayType)
    if at.shape is not None:
        return Const(at.shape[d])
    c = tr.em.res(_index_constant(d))
    return tr.em.from_index(tr.em.res(memref.DimOp(array.ssa, c)))


def _index_constant(d: int) -> Any:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, IntegerAttr

    return arith.ConstantOp(IntegerAttr(d, IndexType()))


def _subscript(tr: Translator, node: ast.Subscript) -> Value | Tup:
    from nova.lang.statements import subscript_parts
    from nova.lang.translate import Tup

    base = tr.expr(node.value)
    if isinstance(base, Tup | Const):
        index = tr.expr(node.slice)
        if not isinstance(index, Const) or not isinstance(index.value, int):
            raise tr.type_error(node.slice, "tuples and constants can only be indexed by a "
                                "compile-time integer")
        try:
            if isinstance(base, Tup):
                return base.items[index.value]
            return Const(base.value[index.value])
        except (IndexError, TypeError, KeyError) as exc:
            raise tr.type_error(node, f"cannot index {tr.describe(base)}: {exc}") from None
    array, indices = subscript_parts(tr, node)
    tr.at(node)
    return Val(tr.em.res(memref.LoadOp.get(array.ssa, indices)),
               array.type.dtype)  # type: ignore[union-attr]


# Constants fold in Python with unbounded ints: 2 ** 63 ** 64 or 1 << 10 ** 12 would take all
# memory and time. No kernel type holds more than 64 bits; the bound leaves room for
# intermediate results that a later operation brings back into range.
_FOLD_MAX_BITS = 4096


def _check_fold_size(op: str, a: Any, b: Any) -> None:
    """Raise OverflowError before folding an int `**` or `<<` whose result is too large."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return
    if op == "**" and abs(a) > 1 and b > 0 and b * (abs(a).bit_length() - 1) > _FOLD_MAX_BITS:
        raise OverflowError(f"an integer power of more than {_FOLD_MAX_BITS} bits")
    if op == "<<" and a != 0 and b > _FOLD_MAX_BITS:
        raise OverflowError(f"a left shift of more than {_FOLD_MAX_BITS} bits")


def binary(tr: Translator, op: str, a: Value | Tup, b: Value | Tup, node: ast.AST) -> Value:
    """`a op b` under the promotion rules; constants fold in Python."""
    return _lane_level(tr, op, a, b, _binary(tr, op, a, b, node))


def _lane_level(tr: Translator, op: str, a: Value | Tup, b: Value | Tup,
                result: Value) -> Value:
    """Refine the warp-uniformity level of an arithmetic result (nova.lang.lanes)."""
    if not isinstance(result, Val):
        return result
    levels = tr.em.lanes
    la = levels.of(a.ssa) if isinstance(a, Val) else UNIFORM
    lb = levels.of(b.ssa) if isinstance(b, Val) else UNIFORM
    if la == lb == UNIFORM:
        return result
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    found = binary_level(op, la, lb, ca, cb)
    levels.set(result.ssa, VARYING if found is None else found)
    return result


def _binary(tr: Translator, op: str, a: Value | Tup, b: Value | Tup, node: ast.AST) -> Value:
    if isinstance(a, Const) and isinstance(b, Const) and is_number(a.value) \
            and is_number(b.value):
        try:
            _check_fold_size(op, a.value, b.value)
            return Const(_PY_BIN[op](a.value, b.value))
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            raise tr.type_error(node, f"constant expression fails: {exc}") from None
    if op in ("<<", ">>"):
        return _shift(tr, op, a, b, node)
    x, y, ty = tr.common(a, b, node)  # type: ignore[arg-type]
    try:
        return tr.em.binary(op, x, y, ty)
    except TypeFault as exc:
        raise tr.type_error(node, str(exc)) from None


def _shift(tr: Translator, op: str, a: Value | Tup, b: Value | Tup, node: ast.AST) -> Value:
    if isinstance(a, Val):
        ty = a.type
    else:
        sb = tr.scalar(b, node)  # a literal shifted by a typed amount takes its type
        ty = sb.type if not sb.type.is_bool else T.int64  # type: ignore[union-attr]
    if not isinstance(ty, T.ScalarType) or not (ty.is_int or ty.is_bool):
        raise tr.type_error(node, f"operator {op} needs integer operands, got "
                            f"{tr.describe(a)}")
    if ty.is_bool:
        ty = T.int64
    x = tr.as_type(a, ty, node)
    amount = tr.scalar(b, node) if isinstance(b, Val) else None
    if amount is not None and not (amount.type.is_int or amount.type.is_bool):  # type: ignore[union-attr]
        raise tr.type_error(node, f"shift amounts must be integers, got {amount.type}")
    y = tr.as_type(b, ty, node) if amount is None else tr.em.convert(amount, ty)
    return tr.em.binary(op, x, y, ty)


def binary_op(tr: Translator, op: ast.operator, a: Value | Tup, b: Value | Tup,
              node: ast.AST) -> Value:
    symbol = BIN_OPS.get(type(op))
    if symbol is None:
        raise tr.unsupported(node, f"operator '{type(op).__name__}' is not supported in kernels")
    return binary(tr, symbol, a, b, node)


def _binop(tr: Translator, node: ast.BinOp) -> Value:
    if isinstance(node.op, ast.Add | ast.Sub) and any(
            isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult)
            for side in (node.left, node.right)):
        return _multiply_add(tr, node)
    a, b = tr.expr(node.left), tr.expr(node.right)
    tr.at(node)
    return binary_op(tr, node.op, a, b, node)


def _multiply_add(tr: Translator, node: ast.BinOp) -> Value:
    """`x * y + c` (or -, either side): one fused multiply-add when the product and the sum
    have the same float32/float64 type -- contraction within an expression, as C compilers and
    CUDA do by default; otherwise a plain multiply then add."""
    from xdsl.dialects import math as xmath

    left_mul = isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult)
    mul_node: ast.BinOp = node.left if left_mul else node.right  # type: ignore[assignment]
    if left_mul:
        x, y = tr.expr(mul_node.left), tr.expr(mul_node.right)
        c = tr.expr(node.right)
    else:
        c = tr.expr(node.left)
        x, y = tr.expr(mul_node.left), tr.expr(mul_node.right)
    tr.at(node)
    symbol = BIN_OPS[type(node.op)]
    if isinstance(x, Const) and isinstance(y, Const):
        product = binary(tr, "*", x, y, mul_node)
        return binary(tr, symbol, product, c, node) if left_mul else \
            binary(tr, symbol, c, product, node)
    xv, yv, tm = tr.common(x, y, mul_node)  # type: ignore[arg-type]
    if isinstance(c, Const) and is_number(c.value):
        final = tr.weak_type(c.value, tm)
    elif isinstance(c, Val) and isinstance(c.type, T.ScalarType):
        final = T.promote(tm, c.type)
    else:
        final = None
    if final is tm and tm.is_float and tm.bits >= 32:
        cv = tr.as_type(c, tm, node)
        if symbol == "-":
            if left_mul:
                cv = tr.em.negate(cv)
            else:
                xv = tr.em.negate(xv)
        return Val(tr.em.res(xmath.FmaOp(xv.ssa, yv.ssa, cv.ssa)), tm)
    try:
        product = tr.em.binary("*", xv, yv, tm)
    except TypeFault as exc:
        raise tr.type_error(mul_node, str(exc)) from None
    return binary(tr, symbol, product, c, node) if left_mul else \
        binary(tr, symbol, c, product, node)


def _unaryop(tr: Translator, node: ast.UnaryOp) -> Value:
    v = tr.expr(node.operand)
    tr.at(node)
    if isinstance(v, Const) and is_number(v.value):
        return Const(_PY_UNARY[type(node.op)](v.value))
    s = tr.scalar(v, node)
    try:
        if isinstance(node.op, ast.USub):
            return tr.em.negate(s)
        if isinstance(node.op, ast.UAdd):
            return s
        if isinstance(node.op, ast.Not):
            return tr.em.logical_not(s)
        return tr.em.invert(s)
    except TypeFault as exc:
        raise tr.type_error(node, str(exc)) from None


def compare(tr: Translator, op: str, a: Value | Tup, b: Value | Tup, node: ast.AST) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        try:
            return Const(_PY_CMP[op](a.value, b.value))
        except TypeError as exc:  # e.g. `min < 10`: a builtin is a Const too
            raise tr.type_error(node, f"cannot compare these constants: {exc}") from None
    x, y, ty = tr.common(a, b, node)  # type: ignore[arg-type]
    return _lane_level(tr, op, a, b, tr.em.compare(op, x, y, ty))


def _compare(tr: Translator, node: ast.Compare) -> Value:
    result: Value | None = None
    left = tr.expr(node.left)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        symbol = CMP_OPS.get(type(op))
        if symbol is None:
            raise tr.unsupported(node, f"comparison '{type(op).__name__}' is not supported in "
                                 "kernels (use ==, !=, <, <=, >, >=)")
        right = tr.expr(right_node)
        tr.at(node)
        c = compare(tr, symbol, left, right, node)
        result = c if result is None else _and(tr, result, c, node)
        left = right
    assert result is not None
    return result


def _and(tr: Translator, a: Value, b: Value, node: ast.AST) -> Value:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(bool(a.value) and bool(b.value))
    x = tr.em.truth(tr.scalar(a, node))
    y = tr.em.truth(tr.scalar(b, node))
    return tr.em.binary("&", x, y, T.bool_)


def _boolop(tr: Translator, node: ast.BoolOp) -> Value:
    """Short-circuit `and`/`or` through branches; the result is a bool."""
    from nova.lang.statements import condition

    is_and = isinstance(node.op, ast.And)
    first = condition(tr, node.values[0])
    if isinstance(first, Const):
        if first.value != is_and:  # `False and ...` / `True or ...`
            return Const(first.value)
        if len(node.values) == 1:
            return first
        rest = ast.copy_location(ast.BoolOp(node.op, node.values[1:]), node.values[1])
        if len(node.values) == 2:
            return condition(tr, node.values[1])
        return _boolop(tr, rest)
    slot = tr.slot(T.bool_)
    tr.em.op(memref.StoreOp.get(first.ssa, slot, []))
    done = tr.new_block()
    for value_node in node.values[1:]:
        more = tr.new_block()
        current = Val(tr.em.res(memref.LoadOp.get(slot, [])), T.bool_)
        if is_and:
            tr.cond_branch(current, more, done)
        else:
            tr.cond_branch(current, done, more)
        tr.em.block = more
        nxt = condition(tr, value_node)
        if isinstance(nxt, Const):
            nxt = tr.em.constant(bool(nxt.value), T.bool_)
        tr.em.op(memref.StoreOp.get(nxt.ssa, slot, []))
    tr.branch(done)
    tr.em.block = done
    return Val(tr.em.res(memref.LoadOp.get(slot, [])), T.bool_)


def _ifexp(tr: Translator, node: ast.IfExp) -> Value:
    from nova.lang.statements import condition

    cond = condition(tr, node.test)
    if isinstance(cond, Const):
        return tr.expr(node.body if cond.value else node.orelse)  # type: ignore[return-value]
    then, other, done = tr.new_block(), tr.new_block(), tr.new_block()
    tr.cond_branch(cond, then, other)
    # translate both arms first into their blocks to learn their types, then store the common
    tr.em.block = then
    a = tr.expr(node.body)
    then_end = tr.em.block
    tr.em.block = other
    b = tr.expr(node.orelse)
    other_end = tr.em.block
    ta = tr.scalar(a, node.body).type if not isinstance(a, Const) else None
    tb = tr.scalar(b, node.orelse).type if not isinstance(b, Const) else None
    if ta is None and tb is None:
        ty = T.promote(T.literal_type(a.value), T.literal_type(b.value))  # type: ignore[union-attr]
    elif ta is None:
        ty = tr.weak_type(a.value, tb)  # type: ignore[union-attr,arg-type]
    elif tb is None:
        ty = tr.weak_type(b.value, ta)  # type: ignore[union-attr,arg-type]
    else:
        ty = T.promote(ta, tb)  # type: ignore[arg-type]
    slot = tr.slot(ty)
    for end, v, n in ((then_end, a, node.body), (other_end, b, node.orelse)):
        tr.em.block = end
        tr.at(n)
        tr.em.op(memref.StoreOp.get(tr.as_type(v, ty, n).ssa, slot, []))
        tr.branch(done)
    tr.em.block = done
    return Val(tr.em.res(memref.LoadOp.get(slot, [])), ty)


def _tuple(tr: Translator, node: ast.Tuple) -> Value | Tup:
    from nova.lang.translate import Tup

    items = tuple(tr.expr(e) for e in node.elts)
    if all(isinstance(i, Const) for i in items):
        return Const(tuple(i.value for i in items))  # type: ignore[union-attr]
    return Tup(items)  # type: ignore[arg-type]


def _call(tr: Translator, node: ast.Call) -> Value | Tup:
    return tr.calls.call(tr, node)


def range_bounds(tr: Translator, node: ast.expr) -> tuple[Val, Val, Value, T.ScalarType]:
    """(start, stop, step, type) of `range(...)` in a for loop; a constant step stays Const."""
    only = "for loops iterate over range(stop), range(start, stop) or range(start, stop, step) only"
    if not (isinstance(node, ast.Call) and not node.keywords and 1 <= len(node.args) <= 3):
        raise tr.unsupported(node, only)
    fn = tr.expr(node.func)
    if not (isinstance(fn, Const) and fn.value is range):
        raise tr.unsupported(node, only)
    args = [tr.expr(a) for a in node.args]
    start, stop, step = (Const(0), args[0], Const(1)) if len(args) == 1 else (
        args[0], args[1], args[2] if len(args) == 3 else Const(1))
    types = [tr.scalar(v, node).type if isinstance(v, Val) else None for v in (start, stop, step)]
    for t in types:
        if t is not None and not (t.is_int or t.is_bool):  # type: ignore[union-attr]
            raise tr.type_error(node, f"range() needs integers, got {t}")
    ty: T.ScalarType = T.int64
    typed = [t for t in types if t is not None]
    if typed:
        ty = typed[0]  # type: ignore[assignment]
        for t in typed[1:]:
            ty = T.promote(ty, t)  # type: ignore[arg-type]
    if ty.is_bool:
        ty = T.int64
    if isinstance(step, Const) and step.value == 0:
        raise tr.type_error(node, "range() step must not be zero")
    tr.at(node)
    return (tr.as_type(start, ty, node), tr.as_type(stop, ty, node),
            step if isinstance(step, Const) else tr.as_type(step, ty, node), ty)


def _namedexpr(tr: Translator, node: ast.NamedExpr) -> Value:
    value = tr.expr(node.value)
    tr.assign_name(node.target.id, value, node)
    return value  # type: ignore[return-value]


# Each handler takes its own ast.expr subclass (the key).
_HANDLERS: dict[type[ast.expr], Callable[[Translator, Any], Value | Tup]] = {
    ast.Constant: _constant, ast.Name: _name, ast.Attribute: _attribute,
    ast.Subscript: _subscript, ast.BinOp: _binop, ast.UnaryOp: _unaryop,
    ast.Compare: _compare, ast.BoolOp: _boolop, ast.IfExp: _ifexp, ast.Tuple: _tuple,
    ast.Call: _call, ast.NamedExpr: _namedexpr,
}
