"""Checks that run before xDSL's own verifier of an op, so that IR both reject is reported with
mlir-opt 22's message (and, where upstream rejects what xDSL accepts, rejected at all).

`nova.ir.verify` calls `check_first(op)` for every op before `op.verify_()`: operand and result
types against upstream's ODS constraints (`nova.ir.ods_types`), then the op's own check:

* `func.return`: operand count and types against the enclosing function's results.
* `func.call`: the callee exists and is a function; operand and result counts and types.
* `memref.load` / `memref.store`: one index per dimension.
* `memref.cast`: the types are cast-compatible (same element type and memory space, same rank
  with equal static sizes, or unranked on one side).
* `arith.index_cast`: exactly one side is `index` (of scalars, or of vectors of one shape).
* `arith.select`: both values and the result have one type.
* vector ops: `nova.ir.vector_checks`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    UnrankedMemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.traits import SymbolTable

from nova.ir.ods_types import check_ods_types
from nova.ir.rules import RuleError
from nova.ir.vector_checks import VECTOR_CHECKS

Check = Callable[[Operation], None]


def check_first(op: Operation) -> None:
    """Check `op`'s operand and result types as upstream's ODS does (`nova.ir.ods_types`),
    then run the upstream-message check registered for its name (raises RuleError)."""
    check_ods_types(op)
    check = CHECKS.get(op.name)
    if check is not None:
        check(op)


def _q(ty: Attribute) -> str:
    return f"'{ty}'"


def _symbol(op: Operation) -> str:
    name = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return str(getattr(name, "data", name))


def _check_return(op: Operation) -> None:
    func = op.parent_op()
    if func is None or func.name != "func.func":
        return  # xDSL's HasParent check reports it
    ftype = func.properties.get("function_type")
    if not isinstance(ftype, FunctionType):
        return
    results = ftype.outputs.data
    if len(op.operands) != len(results):
        raise RuleError(f"'func.return' op has {len(op.operands)} operands, but enclosing "
                        f"function (@{_symbol(func)}) returns {len(results)}")
    for i, (value, expected) in enumerate(zip(op.operands, results, strict=True)):
        if value.type != expected:
            raise RuleError(f"type of return operand {i} ({_q(value.type)}) doesn't match "
                            f"function result type ({_q(expected)}) in function "
                            f"@{_symbol(func)}")


def _check_call(op: Operation) -> None:
    callee = op.properties.get("callee") or op.attributes.get("callee")
    name = getattr(getattr(callee, "root_reference", None), "data", None)
    if name is None:
        return
    table = op.parent_op()
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op()
    target = SymbolTable.lookup_symbol(table, name) if table is not None else None
    if target is None or target.name != "func.func":
        raise RuleError(f"'func.call' op '{name}' does not reference a valid function")
    ftype = target.properties.get("function_type")
    if not isinstance(ftype, FunctionType):
        return
    inputs, outputs = ftype.inputs.data, ftype.outputs.data
    if len(inputs) != len(op.operands):
        raise RuleError("'func.call' op incorrect number of operands for callee")
    for i, (value, expected) in enumerate(zip(op.operands, inputs, strict=True)):
        if value.type != expected:
            raise RuleError(f"'func.call' op operand type mismatch: expected operand type "
                            f"{_q(expected)}, but provided {_q(value.type)} for operand number "
                            f"{i}")
    if len(outputs) != len(op.results):
        raise RuleError("'func.call' op incorrect number of results for callee")


def _check_indices(op: Operation) -> None:
    ref = op.operands[0] if op.name == "memref.load" else op.operands[1]
    ty = ref.type
    if not isinstance(ty, MemRefType):
        return
    count = len(op.operands) - (1 if op.name == "memref.load" else 2)
    rank = len(ty.get_shape())
    if count == rank:
        return
    if op.name == "memref.load":
        raise RuleError(f"'memref.load' op incorrect number of indices for load, expected {rank} "
                        f"but got {count}")
    raise RuleError("'memref.store' op store index operand count not equal to memref rank")


def _cast_compatible(a: Attribute, b: Attribute) -> bool:
    if isinstance(a, UnrankedMemRefType) or isinstance(b, UnrankedMemRefType):
        return (a.element_type == b.element_type  # type: ignore[attr-defined]
                and a.memory_space == b.memory_space  # type: ignore[attr-defined]
                and not (isinstance(a, UnrankedMemRefType) and isinstance(b, UnrankedMemRefType)))
    if not isinstance(a, MemRefType) or not isinstance(b, MemRefType):
        return True  # not memrefs: the op's own constraints report it
    if a.element_type != b.element_type or a.memory_space != b.memory_space:
        return False
    sa, sb = a.get_shape(), b.get_shape()
    if len(sa) != len(sb):
        return False
    return all(x == y or DYNAMIC_INDEX in (x, y) for x, y in zip(sa, sb, strict=True))


def _check_memref_cast(op: Operation) -> None:
    src, dst = op.operands[0].type, op.results[0].type
    if not _cast_compatible(src, dst):
        raise RuleError(f"'memref.cast' op operand type {_q(src)} and result type {_q(dst)} are "
                        "cast incompatible")


def _check_index_cast(op: Operation) -> None:
    src, dst = op.operands[0].type, op.results[0].type

    def element(ty: Attribute) -> Attribute:
        return ty.element_type if isinstance(ty, VectorType) else ty

    same_shape = (isinstance(src, VectorType) == isinstance(dst, VectorType)) and (
        not isinstance(src, VectorType) or src.get_shape() == dst.get_shape())  # type: ignore[attr-defined]
    a, b = element(src), element(dst)
    ok = same_shape and (
        (isinstance(a, IndexType) and isinstance(b, IntegerType))
        or (isinstance(a, IntegerType) and isinstance(b, IndexType)))
    if not ok:
        raise RuleError(f"'{op.name}' op operand type {_q(src)} and result type {_q(dst)} are "
                        "cast incompatible")


def _check_select(op: Operation) -> None:
    if len(op.operands) == 3 and len(op.results) == 1:
        types = {op.operands[1].type, op.operands[2].type, op.results[0].type}
        if len(types) != 1:
            raise RuleError("'arith.select' op failed to verify that all of {true_value, "
                            "false_value, result} have same type")


CHECKS: dict[str, Check] = {
    "func.return": _check_return,
    "func.call": _check_call,
    "memref.load": _check_indices,
    "memref.store": _check_indices,
    "memref.cast": _check_memref_cast,
    "arith.index_cast": _check_index_cast,
    "arith.select": _check_select,
    **VECTOR_CHECKS,
}
"""Op name -> the check that runs before xDSL's verifier (see the module docstring)."""
