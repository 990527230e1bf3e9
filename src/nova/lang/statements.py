"""Statements of kernel code: assignments, if/elif/else, for-range and while loops with break
and continue, return, expression statements. Each becomes cf-dialect blocks (see translate.py).

Supported: `x = e`, `x: nova.int32 = e`, `a[i, j] = e`, `x += e` / `a[i] += e` (any binary
operator), tuple unpacking of tuples (`a, b = b, a`), `if`/`elif`/`else`, `for i in range(...)`,
`while`, `break`, `continue`, `return`, `pass`, `assert` (cf.assert), calls as statements.
Loops' `else:` clauses, `with`, `try`, `del`, `global` and nested `def`/`class` are rejected
with a located error.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xdsl.dialects import memref

from nova.lang import types as T
from nova.lang.values import Const, Val, Value

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup

_SUPPORTED = ("assignments, augmented assignments, if/elif/else, for ... in range(...), while, "
              "break, continue, return, pass, assert and calls")


def statement(tr: Translator, stmt: ast.stmt) -> None:
    handler = _HANDLERS.get(type(stmt))
    if handler is None:
        raise tr.unsupported(stmt, f"'{type(stmt).__name__}' statements are not supported in "
                             f"kernels (supported: {_SUPPORTED})")
    handler(tr, stmt)


def _assign(tr: Translator, stmt: ast.Assign) -> None:
    value = tr.expr(stmt.value)
    for target in stmt.targets:
        store(tr, target, value)


def _ann_assign(tr: Translator, stmt: ast.AnnAssign) -> None:
    ann = tr.expr(stmt.annotation)
    ty = T.resolve_dtype(ann.value) if isinstance(ann, Const) else None
    if ty is None or not isinstance(stmt.target, ast.Name):
        raise tr.unsupported(stmt, "annotations must name a scalar type on a plain variable, "
                             "e.g. 'acc: nova.float32 = 0'")
    if stmt.value is None:
        raise tr.unsupported(stmt, "declare variables with a value: 'acc: nova.float32 = 0'")
    tr.assign_name(stmt.target.id, tr.expr(stmt.value), stmt, declared=ty)


def store(tr: Translator, target: ast.expr, value: Value | Tup) -> None:
    """Assign `value` to a target: a name, an array element or a tuple of targets."""
    from nova.lang.translate import Tup

    if isinstance(target, ast.Name):
        tr.assign_name(target.id, value, target)
    elif isinstance(target, ast.Subscript):
        array, indices = subscript_parts(tr, target)
        assert isinstance(array.type, T.ArrayType)  # subscript_parts checked it
        tr.at(target)
        v = tr.as_type(value, array.type.dtype, target)
        tr.em.op(memref.StoreOp.get(v.ssa, array.ssa, indices))
    elif isinstance(target, ast.Tuple | ast.List):
        items = value.items if isinstance(value, Tup) else (
            tuple(Const(v) for v in value.value) if isinstance(value, Const) and
            isinstance(value.value, tuple) else None)
        if items is None or len(items) != len(target.elts):
            raise tr.type_error(target, f"cannot unpack {tr.describe(value)} into "
                                f"{len(target.elts)} names")
        for t, item in zip(target.elts, items, strict=True):
            store(tr, t, item)
    else:
        raise tr.unsupported(target, "assignment targets must be names, array elements "
                             "(a[i, j]) or tuples of them")


def subscript_parts(tr: Translator, node: ast.Subscript) -> tuple[Val, list]:
    """The array and the MLIR index values of `a[i, j]` (every dimension indexed)."""
    from nova.lang.translate import Tup

    array = tr.expr(node.value)
    if not (isinstance(array, Val) and isinstance(array.type, T.ArrayType)):
        raise tr.type_error(node.value, f"only arrays can be indexed, not "
                            f"{tr.describe(array)}")
    sl = node.slice
    raw = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    values: list[Value] = []
    for item in raw:
        if isinstance(item, ast.Slice):
            raise tr.unsupported(item, "slices of arrays are not supported in kernels; index "
                                 "single elements (a[i, j])")
        v = tr.expr(item)
        values.extend(v.items if isinstance(v, Tup) else [v])
    if len(values) != array.type.ndim:
        raise tr.type_error(node, f"a {array.type.ndim}-d array needs {array.type.ndim} "
                            f"indices, got {len(values)}")
    indices = []
    for item, v in zip(raw if len(raw) == len(values) else [sl] * len(values), values,
                       strict=True):
        s = tr.scalar(v, item)
        if not isinstance(s.type, T.ScalarType) or s.type.is_float:
            raise tr.type_error(item, f"array indices must be integers, got {s.type}")
        indices.append(tr.em.index(s))
    return array, indices


def _aug_assign(tr: Translator, stmt: ast.AugAssign) -> None:
    from nova.lang.expressions import binary_op

    load = ast.copy_location(_as_load(stmt.target), stmt.target)
    if isinstance(stmt.op, ast.Add | ast.Sub):  # `acc += x * y` may fuse (expressions.py)
        combined = ast.copy_location(ast.BinOp(load, stmt.op, stmt.value), stmt)
        store(tr, stmt.target, tr.expr(combined))
        return
    current = tr.expr(load)
    value = tr.expr(stmt.value)
    tr.at(stmt)
    result = binary_op(tr, stmt.op, current, value, stmt)
    store(tr, stmt.target, result)


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(target.id, ast.Load())
    if isinstance(target, ast.Subscript):
        return ast.Subscript(target.value, target.slice, ast.Load())
    return target


def _if(tr: Translator, stmt: ast.If) -> None:
    cond = condition(tr, stmt.test)
    if isinstance(cond, Const):  # compile-time condition: translate one side only
        tr.stmts(stmt.body if cond.value else stmt.orelse)
        return
    then, join = tr.new_block(), tr.new_block()
    other = tr.new_block() if stmt.orelse else join
    tr.cond_branch(cond, then, other)
    entered = tr.enter_branch([cond], stmt.test)
    try:
        tr.em.block = then
        tr.stmts(stmt.body)
        tr.branch(join)
        if stmt.orelse:
            tr.em.block = other
            tr.stmts(stmt.orelse)
            tr.branch(join)
    finally:
        tr.leave_branch(entered)
    tr.em.block = join


def condition(tr: Translator, node: ast.expr) -> Val | Const:
    """A branch condition: a bool value, or a compile-time constant."""
    value = tr.expr(node)
    if isinstance(value, Const):
        return Const(bool(value.value))
    tr.at(node)
    return tr.em.truth(tr.scalar(value, node))


def _while(tr: Translator, stmt: ast.While) -> None:
    if stmt.orelse:
        raise tr.unsupported(stmt, "'while ... else' is not supported in kernels")
    header, body, done = tr.new_block(), tr.new_block(), tr.new_block()
    tr.branch(header)
    tr.em.block = header
    cond = condition(tr, stmt.test)
    if isinstance(cond, Const):
        tr.branch(body if cond.value else done)
    else:
        tr.cond_branch(cond, body, done)
    tr.em.block = body
    tr.frame.loops.append((header, done))
    entered = tr.enter_branch([cond], stmt.test)
    try:
        tr.stmts(stmt.body)
    finally:
        tr.leave_branch(entered)
        tr.frame.loops.pop()
    tr.branch(header)
    tr.em.block = done


def _for(tr: Translator, stmt: ast.For) -> None:
    from nova.lang.expressions import range_bounds

    if stmt.orelse:
        raise tr.unsupported(stmt, "'for ... else' is not supported in kernels")
    if not isinstance(stmt.target, ast.Name):
        raise tr.unsupported(stmt.target, "the loop variable must be a plain name")
    start, stop, step, ty = range_bounds(tr, stmt.iter)
    counter = tr.slot(ty)
    tr.em.op(memref.StoreOp.get(start.ssa, counter, []))
    header, body, latch, done = (tr.new_block(), tr.new_block(), tr.new_block(),
                                 tr.new_block())
    tr.branch(header)
    tr.em.block = header
    tr.at(stmt.iter)
    i = Val(tr.em.res(memref.LoadOp.get(counter, [])), ty)
    if isinstance(step, Const):
        cond = tr.em.compare("<" if step.value > 0 else ">", i, stop, ty)
    else:
        zero = tr.em.constant(0, ty)
        up = tr.em.compare(">", step, zero, ty)
        cond = tr.em.select(up, tr.em.compare("<", i, stop, ty), tr.em.compare(">", i, stop, ty))
    tr.cond_branch(cond, body, done)
    tr.em.block = body
    tr.assign_name(stmt.target.id, i, stmt.target)
    tr.frame.loops.append((latch, done))
    entered = tr.enter_branch([start, stop, step], stmt.iter)
    try:
        tr.stmts(stmt.body)
    finally:
        tr.leave_branch(entered)
        tr.frame.loops.pop()
    tr.branch(latch)
    tr.em.block = latch
    tr.at(stmt.iter)
    step_v = tr.as_type(step, ty, stmt.iter)
    i2 = Val(tr.em.res(memref.LoadOp.get(counter, [])), ty)
    tr.em.op(memref.StoreOp.get(tr.em.binary("+", i2, step_v, ty).ssa, counter, []))
    tr.branch(header)
    tr.em.block = done


def _break(tr: Translator, stmt: ast.Break) -> None:
    if not tr.frame.loops:
        raise tr.unsupported(stmt, "'break' outside a loop")
    tr.branch(tr.frame.loops[-1][1])


def _continue(tr: Translator, stmt: ast.Continue) -> None:
    if not tr.frame.loops:
        raise tr.unsupported(stmt, "'continue' outside a loop")
    tr.branch(tr.frame.loops[-1][0])


def _return(tr: Translator, stmt: ast.Return) -> None:
    tr.return_value(stmt)


def _expr(tr: Translator, stmt: ast.Expr) -> None:
    if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return  # a docstring
    if not isinstance(stmt.value, ast.Call):
        raise tr.unsupported(stmt, "an expression statement must be a call (its value is "
                             "dropped)")
    tr.expr(stmt.value)


def _pass(tr: Translator, stmt: ast.Pass) -> None:
    return


def _assert(tr: Translator, stmt: ast.Assert) -> None:
    """`assert cond, "message"` -> cf.assert: a failing thread stops the kernel, and the launch
    (or the next synchronisation) raises KernelFault naming the source line."""
    from xdsl.dialects import cf

    cond = condition(tr, stmt.test)
    text = f"assert {ast.unparse(stmt.test)}"  # the targets add the source location
    if stmt.msg is not None:
        msg = tr.expr(stmt.msg)
        if not (isinstance(msg, Const) and isinstance(msg.value, str)):
            raise tr.unsupported(stmt.msg, "assert messages in kernels must be string constants")
        text = msg.value
    if isinstance(cond, Const):
        if cond.value:
            return
        cond = tr.em.constant(False, T.bool_)
    tr.at(stmt)
    tr.em.op(cf.AssertOp(cond.ssa, text))


# Each handler takes its own ast.stmt subclass (the key).
_HANDLERS: dict[type[ast.stmt], Callable[[Translator, Any], None]] = {
    ast.Assign: _assign, ast.AnnAssign: _ann_assign, ast.AugAssign: _aug_assign, ast.If: _if,
    ast.While: _while, ast.For: _for, ast.Break: _break, ast.Continue: _continue,
    ast.Return: _return, ast.Expr: _expr, ast.Pass: _pass, ast.Assert: _assert,
}
