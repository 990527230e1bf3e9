"""Kernel calls of `nova.mma` (tensor-core fragments) -> upstream's `gpu.subgroup_mma_*` ops.

- `nova.mma.load(array, index, kind, ld=None, layout="row", shape=(16, 16, 16))` ->
  `gpu.subgroup_mma_load_matrix %array[index] {leadDimension = ld (, transpose)}`;
- `nova.mma.fill(value, dtype=nova.float32, shape=...)` -> `gpu.subgroup_mma_constant_matrix`;
- `nova.mma.mma(a, b, c)` -> `gpu.subgroup_mma_compute` (with `a_transpose`/`b_transpose` for
  fragments loaded column-major: the NVPTX multiply names the layouts its operands were loaded
  with);
- `nova.mma.store(array, index, c, ld=None, layout="row")` -> `gpu.subgroup_mma_store_matrix`.

Everything checkable at compile time is checked here, with a located KernelTypeError: fragment
kinds and their order, dtypes (A/B float16; C float16 or float32, the array's dtype), the shape,
the layout, the leading dimension (a constant, at least 16 and a multiple of 16 bytes, as WMMA
requires), the number of indices, and, for arrays of static shape indexed by constants, that the
tile lies inside the array and starts 32-byte aligned.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from nova.ir.gpu.mma_ops import (
    SubgroupMmaComputeOp,
    SubgroupMmaConstantMatrixOp,
    SubgroupMmaLoadMatrixOp,
    SubgroupMmaStoreMatrixOp,
)
from nova.lang import types as T
from nova.lang.values import Const, Val, Value

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup

_TILE = T.MMA_SHAPE[0]
_KIND_HELP = "'a' (the m x k multiplicand), 'b' (k x n) or 'c' (the m x n accumulator)"
_TILE_ALIGN = 32  # bytes: WMMA loads and stores need 256-bit aligned tile addresses


def _const_str(tr: Translator, value: Value | Tup, what: str, allowed: tuple[str, ...],
               node: ast.AST) -> str:
    if not isinstance(value, Const) or value.value not in allowed:
        shown = tr.describe(value)
        raise tr.type_error(node, f"{what} must be one of {', '.join(map(repr, allowed))} "
                            f"(a constant), got {shown}")
    return str(value.value)


def _check_shape(tr: Translator, name: str, value: Value | Tup, node: ast.AST) -> None:
    from nova.lang.translate import Tup

    items = value.items if isinstance(value, Tup) else (
        tuple(Const(v) for v in value.value) if isinstance(value, Const) and
        isinstance(value.value, tuple) else None)
    shape = tuple(i.value for i in items if isinstance(i, Const)) if items is not None and \
        all(isinstance(i, Const) for i in items) else None
    if shape != T.MMA_SHAPE:
        raise tr.type_error(node, f"nova.{name}(): shape must be {T.MMA_SHAPE} (m, n, k: the "
                            f"tensor-core tile Nova supports, WMMA's m16n16k16), got "
                            f"{shape if shape is not None else tr.describe(value)}")


def _fragment(tr: Translator, value: Value | Tup, kind: str, what: str,
              node: ast.AST) -> Val:
    if not (isinstance(value, Val) and isinstance(value.type, T.FragmentType)) or \
            value.type.kind != kind:
        hint = (f"nova.mma.load(..., '{kind}')" if kind != "c"
                else "nova.mma.fill(...), nova.mma.load(..., 'c') or nova.mma.mma(...)")
        article = "an" if kind == "a" else "a"
        raise tr.type_error(node, f"{what} must be {article} '{kind}' fragment (from {hint}), "
                            f"got {tr.describe(value)}")
    return value


def _array(tr: Translator, name: str, value: Value | Tup, node: ast.AST) -> Val:
    if not (isinstance(value, Val) and isinstance(value.type, T.ArrayType)):
        raise tr.type_error(node, f"nova.{name}() needs an array first, got "
                            f"{tr.describe(value)}")
    return value


def _index_items(tr: Translator, name: str, array: Val, index: Value | Tup,
                 node: ast.AST) -> list[Value]:
    from nova.lang.translate import Tup

    assert isinstance(array.type, T.ArrayType)
    items: list[Value]
    if isinstance(index, Tup):
        items = list(index.items)
    elif isinstance(index, Const) and isinstance(index.value, tuple):
        items = [Const(i) for i in index.value]
    else:
        items = [index]
    if len(items) != array.type.ndim:
        raise tr.type_error(node, f"nova.{name}() on a {array.type.ndim}-d array needs "
                            f"{array.type.ndim} indices (the tile's first element), got "
                            f"{len(items)}")
    return items


def _lead_dimension(tr: Translator, name: str, array: Val, ld: Value | Tup,
                    node: ast.AST) -> int:
    at = array.type
    assert isinstance(at, T.ArrayType)
    if isinstance(ld, Const) and ld.value is None:
        if at.shape is None or at.ndim < 2:
            raise tr.type_error(node, f"nova.{name}(): pass ld= (the elements between rows of "
                                "the tile, a compile-time constant): it defaults to the last "
                                "dimension of arrays of static shape with 2 or more "
                                "dimensions only")
        value = at.shape[-1]
    elif isinstance(ld, Const) and type(ld.value) is int:
        value = ld.value
    else:
        raise tr.type_error(node, f"nova.{name}(): ld must be a compile-time integer constant, "
                            f"got {tr.describe(ld)}")
    per_16_bytes = 16 // at.dtype.itemsize
    if value < _TILE or value % per_16_bytes or value >= 1 << 31:
        raise tr.type_error(node, f"nova.{name}(): ld={value} is not a valid leading dimension "
                            f"for {at.dtype}: it must be at least {_TILE}, below 2**31 and a "
                            f"multiple of {per_16_bytes} (16 bytes; WMMA requires it)")
    return value


def constant_offset(tr: Translator, name: str, array: Val, items: list[Value], node: ast.AST,
                    what: str = "") -> tuple[int, int] | None:
    """(element offset, element count) of the array position that constant indices `items`
    name in a statically shaped `array`, after checking each index against its dimension;
    None when the shape or an index is not a compile-time constant. `what` names the operand
    in the error ("source", "destination"; empty for the only one)."""
    at = array.type
    assert isinstance(at, T.ArrayType)
    if at.shape is None or not all(isinstance(i, Const) and type(i.value) is int
                                   for i in items):
        return None
    offset = 0
    for d, item in enumerate(items):
        assert isinstance(item, Const)
        if not 0 <= item.value < at.shape[d]:
            raise tr.type_error(node, f"nova.{name}(): {what + ' ' if what else ''}index "
                                f"{item.value} is out of bounds for dimension {d} of size "
                                f"{at.shape[d]}")
        offset = offset * at.shape[d] + item.value
    size = 1
    for d in at.shape:
        size *= d
    return offset, size


def _check_static_tile(tr: Translator, name: str, array: Val, items: list[Value], ld: int,
                       node: ast.AST) -> None:
    """For a statically shaped array indexed by constants: the tile must lie inside it and start
    32-byte aligned (checked where the compiler can know; elsewhere it is the caller's duty)."""
    found = constant_offset(tr, name, array, items, node)
    if found is None:
        return
    offset, size = found
    at = array.type
    assert isinstance(at, T.ArrayType)
    last = offset + (_TILE - 1) * ld + _TILE - 1
    where = tuple(i.value for i in items if isinstance(i, Const))
    if last >= size:
        raise tr.type_error(node, f"nova.{name}(): the 16x16 tile at {where} with ld={ld} ends "
                            f"at element {last}, past the array's {size}")
    start = offset * at.dtype.itemsize
    if start % _TILE_ALIGN:
        raise tr.type_error(node, f"nova.{name}(): the tile starts at byte {start} of the "
                            f"array, which is not a multiple of {_TILE_ALIGN} (WMMA needs "
                            "32-byte aligned tiles)")


def _require_whole_warp(tr: Translator, name: str, node: ast.AST) -> None:
    """Tensor-core loads, multiplies and stores are warp-collective: refuse one that the
    analysis of nova.lang.lanes finds reachable by only some lanes of a warp."""
    where = tr.divergence()
    if where is not None:
        raise tr.type_error(node, f"nova.{name}() is warp-collective (all 32 lanes of a warp "
                            f"must execute it together), but here only some lanes may reach "
                            f"it: the condition at {where.filename}:{where.line}:"
                            f"{where.column} depends on the lane (thread_id(0), global_id(0) "
                            "or lane_id()); make the condition warp-uniform, e.g. a warp "
                            "index nova.thread_id(0) // 32, a block index or a loop counter")


def _memory_operands(tr: Translator, name: str, v: dict, node: ast.AST
                     ) -> tuple[Val, list[Any], int, bool]:
    """(array, MLIR indices, leadDimension, transpose) of a load or store."""
    _require_whole_warp(tr, name, node)
    array = _array(tr, name, v["array"], node)
    items = _index_items(tr, name, array, v["index"], node)
    ld = _lead_dimension(tr, name, array, v["ld"], node)
    layout = _const_str(tr, v["layout"], f"nova.{name}(): layout", ("row", "col"), node)
    _check_static_tile(tr, name, array, items, ld, node)
    indices = [tr.em.index(tr.scalar(i, node)) for i in items]
    return array, indices, ld, layout == "col"


def load(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    kind = _const_str(tr, v["kind"], f"nova.{name}(): kind", T.FRAGMENT_KINDS, node)
    _check_shape(tr, name, v["shape"], node)
    array, indices, ld, transpose = _memory_operands(tr, name, v, node)
    assert isinstance(array.type, T.ArrayType)
    dtype = array.type.dtype
    allowed = (T.float16,) if kind in ("a", "b") else (T.float16, T.float32)
    if dtype not in allowed:
        need = " or ".join(str(t) for t in allowed)
        raise tr.type_error(node, f"nova.{name}(): '{kind}' fragments load from {need} "
                            f"arrays, got a {array.type}"
                            + ("" if kind == "c" else " (tensor-core multiplicands are "
                               "float16; convert the tile into a float16 shared array first)"))
    layout = ("col" if transpose else "row") if kind != "c" else None
    ftype = T.FragmentType(kind, dtype, layout)
    op = SubgroupMmaLoadMatrixOp(array.ssa, indices, ftype.mlir, ld, transpose)
    return Val(tr.em.res(op), ftype)


def fill(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _check_shape(tr, name, v["shape"], node)
    dt = v["dtype"]
    dtype = T.resolve_dtype(dt.value) if isinstance(dt, Const) else None
    if dtype not in (T.float32, T.float16):
        raise tr.type_error(node, f"nova.{name}(): dtype must be nova.float32 or nova.float16 "
                            f"(the accumulator's type), got {tr.describe(dt)}")
    assert dtype is not None
    value = tr.as_type(v["value"], dtype, node)
    ftype = T.FragmentType("c", dtype)
    op = SubgroupMmaConstantMatrixOp(value.ssa, ftype.mlir)  # type: ignore[arg-type]
    return Val(tr.em.res(op), ftype)


def mma(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    a = _fragment(tr, v["a"], "a", f"nova.{name}(): the first operand", node)
    b = _fragment(tr, v["b"], "b", f"nova.{name}(): the second operand", node)
    c = _fragment(tr, v["c"], "c", f"nova.{name}(): the accumulator", node)
    at, bt = a.type, b.type
    assert isinstance(at, T.FragmentType) and isinstance(bt, T.FragmentType)
    if at.dtype is not bt.dtype:
        raise tr.type_error(node, f"nova.{name}(): a and b must have one dtype, got {at.dtype} "
                            f"and {bt.dtype}")
    op = SubgroupMmaComputeOp(a.ssa, b.ssa, c.ssa, a_transpose=at.layout == "col",
                              b_transpose=bt.layout == "col")
    return Val(tr.em.res(op), c.type)


def store(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    c = _fragment(tr, v["c"], "c", f"nova.{name}(): the stored value", node)
    array, indices, ld, transpose = _memory_operands(tr, name, v, node)
    ct = c.type
    assert isinstance(ct, T.FragmentType) and isinstance(array.type, T.ArrayType)
    if array.type.dtype is not ct.dtype:
        raise tr.type_error(node, f"nova.{name}(): a {ct.dtype} accumulator is stored into "
                            f"{ct.dtype} arrays, got a {array.type} (accumulate in "
                            f"{array.type.dtype} or copy element by element)")
    tr.em.op(SubgroupMmaStoreMatrixOp(c.ssa, array.ssa, indices, ld, transpose))
    return Const(None)


def register(params: dict[str, tuple[tuple[str, Any], ...]], table: dict[str, Any],
             required: object) -> None:
    """Add the `nova.mma` calls to the intrinsic tables of nova.lang.calls."""
    req = required
    params["mma.load"] = (("array", req), ("index", req), ("kind", req), ("ld", None),
                          ("layout", "row"), ("shape", T.MMA_SHAPE))
    params["mma.fill"] = (("value", req), ("dtype", T.float32), ("shape", T.MMA_SHAPE))
    params["mma.mma"] = (("a", req), ("b", req), ("c", req))
    params["mma.store"] = (("array", req), ("index", req), ("c", req), ("ld", None),
                           ("layout", "row"))
    table.update({"mma.load": load, "mma.fill": fill, "mma.mma": mma, "mma.store": store})
