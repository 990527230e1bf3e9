"""Upstream's operand and result type constraints (ODS) of ops whose xDSL/Nova definitions state
them differently, so that a wrong type is reported as mlir-opt 22 reports it:
`'index.add' op operand #0 must be index, but got 'i32'` (the flat operand index, upstream's
constraint summary, the type quoted).

`check_ods_types(op)` runs before an op's own verifier (`nova.ir.upstream_checks.check_first`),
as MLIR verifies an op's ODS invariants before its custom verifier.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import IndexType, IntegerType, Signedness, VectorType
from xdsl.ir import Attribute, Operation

from nova.ir.rules import RuleError

Constraint = tuple[str, Callable[[Attribute], bool]]
"""(upstream's summary of the constraint, whether a type satisfies it)."""


def _signless(*widths: int) -> Callable[[Attribute], bool]:
    def check(ty: Attribute) -> bool:
        return (isinstance(ty, IntegerType) and ty.width.data in widths
                and ty.signedness.data == Signedness.SIGNLESS)
    return check


def _async_token_or_value(ty: Attribute) -> bool:
    from nova.ir.dialects.async_ import TokenType, ValueType
    return isinstance(ty, TokenType | ValueType)


INDEX: Constraint = ("index", lambda ty: isinstance(ty, IndexType))
INTEGER_OR_INDEX: Constraint = ("integer or index",
                                lambda ty: isinstance(ty, IndexType | IntegerType))
I1: Constraint = ("1-bit signless integer", _signless(1))
I32: Constraint = ("32-bit signless integer", _signless(32))
I32_OR_I64: Constraint = ("32-bit signless integer or 64-bit signless integer",
                          _signless(32, 64))
INDEX_VECTOR_1D: Constraint = ("vector of index values of ranks 1", lambda ty: (
    isinstance(ty, VectorType) and isinstance(ty.element_type, IndexType)
    and len(ty.get_shape()) == 1))
ASYNC_TOKEN_OR_VALUE: Constraint = ("async value type or async token type",
                                    _async_token_or_value)

_INDEX_BINARY = ("add", "sub", "mul", "divs", "divu", "ceildivs", "ceildivu", "floordivs",
                 "rems", "remu", "maxs", "maxu", "mins", "minu", "shl", "shrs", "shru", "and",
                 "or", "xor")

OPERANDS: dict[str, tuple[Constraint | None, ...]] = {
    **{f"index.{name}": (INDEX, INDEX) for name in _INDEX_BINARY},
    "index.cmp": (INDEX, INDEX),
    "index.casts": (INTEGER_OR_INDEX,),
    "index.castu": (INTEGER_OR_INDEX,),
    "async.await": (ASYNC_TOKEN_OR_VALUE,),
    "async.add_to_group": (ASYNC_TOKEN_OR_VALUE,),
    "async.create_group": (INDEX,),
    "nvvm.bar.warp.sync": (I32,),
    "nvvm.match.sync": (I32, I32_OR_I64),
    "nvvm.shfl.sync": (I32, None, I32, I32),
    "nvvm.vote.sync": (I32, I1),
}
"""Op name -> the constraint of each operand (None: any type), in operand order."""

RESULTS: dict[str, tuple[Constraint | None, ...]] = {
    **{f"index.{name}": (INDEX,) for name in _INDEX_BINARY},
    "index.cmp": (I1,),
    "index.constant": (INDEX,),
    "index.sizeof": (INDEX,),
    "index.bool.constant": (I1,),
    "index.casts": (INTEGER_OR_INDEX,),
    "index.castu": (INTEGER_OR_INDEX,),
    "vector.step": (INDEX_VECTOR_1D,),
}
"""Op name -> the constraint of each result, in result order."""


def check_ods_types(op: Operation) -> None:
    """Raise upstream's message for the first operand, then result, that breaks its op's
    constraint in `OPERANDS` / `RESULTS`."""
    for kind, table, values in (("operand", OPERANDS, op.operands),
                                ("result", RESULTS, op.results)):
        constraints = table.get(op.name)
        if constraints is None:
            continue
        for index, (constraint, value) in enumerate(zip(constraints, values, strict=False)):
            if constraint is not None and not constraint[1](value.type):
                raise RuleError(f"'{op.name}' op {kind} #{index} must be {constraint[0]}, but "
                                f"got '{value.type}'")
