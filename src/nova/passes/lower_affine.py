"""`lower-affine`: the `affine` dialect to `scf` + `arith` + `memref` (+ `vector`), as upstream's
`mlir-opt --lower-affine` (mlir/lib/Conversion/AffineToStandard) does, op for op and in the same
order, so its output matches upstream's up to SSA names.

Why not xDSL's `lower-affine` (xdsl/transforms/lower_affine.py, 0.74): it lowers `mod` to a bare
`arith.remsi` (negative for negative dividends, where affine `mod` is never negative), ignores
the dims and symbols of `affine.for` bounds and of load/store maps' symbols, asserts on min/max
bounds, and has no `affine.if`, `affine.min`/`max` or `affine.parallel`.

Semantics (those of MLIR's `AffineApplyExpander`): `a mod b` = remsi, plus b when negative;
`a floordiv b` and `a ceildiv b` round toward -inf / +inf through a sign-corrected `divsi`; a
constant divisor must be positive (else a located error, as upstream). Multi-result bound maps
take the max (lower) or min (upper) of their results; `affine.if` tests the conjunction of its
set's constraints (`e >= 0` / `e == 0`; an empty set is `true`); `affine.parallel` reductions
start from the reduction's identity and combine in `scf.reduce`. An affine op this pass cannot
lower is a located PassError naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nova.errors import PassError
from nova.ir.dialects.affine import ForOp, IfOp, LoadOp, StoreOp
from nova.ir.dialects.affine import ParallelOp as AffineParallel
from nova.ir.dialects.affine_syntax import set_constraints
from nova.ir.dialects.scf_arith_func import ParallelOp
from nova.ir.locations import location_of, set_location

_NSW = arith.IntegerOverflowAttr([arith.IntegerOverflowFlag.NSW])


def _error(op: Operation, message: str) -> PassError:

    return PassError(f"lower-affine: '{op.name}' op {message}", location_of(op))


class _Builder:
    """Collects the ops that replace one affine op, in upstream's creation order."""

    def __init__(self, op: Operation) -> None:
        self.op = op
        self.ops: list[Operation] = []

    def add(self, new: Operation) -> SSAValue:
        """Append `new` (an op with one result) and return its result."""
        self.ops.append(new)
        return new.results[0]

    def index(self, value: int) -> SSAValue:
        """`arith.constant <value> : index` (upstream makes one per use, never shared)."""
        return self.add(arith.ConstantOp(IntegerAttr.from_index_int_value(value)))

    def flush(self) -> None:
        """Insert the collected ops before the affine op, carrying its source location."""

        loc = location_of(self.op)
        for new in self.ops:
            set_location(new, loc)
        if self.ops:
            Rewriter.insert_op(self.ops, InsertPoint.before(self.op))
        self.ops = []

    # ---- expressions (MLIR's AffineApplyExpander) -------------------------------------------

    def expr(self, e: AffineExpr, dims: Sequence[SSAValue], syms: Sequence[SSAValue]
             ) -> SSAValue:
        """Emit the ops computing `e` over `dims` and `syms`; returns its value."""
        if isinstance(e, AffineConstantExpr):
            return self.index(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymExpr):
            return syms[e.position]
        assert isinstance(e, AffineBinaryOpExpr)
        kind = e.kind
        if kind in (AffineBinaryOpKind.Mod, AffineBinaryOpKind.FloorDiv,
                    AffineBinaryOpKind.CeilDiv) and isinstance(e.rhs, AffineConstantExpr) \
                and e.rhs.value <= 0:
            what = "modulo" if kind == AffineBinaryOpKind.Mod else "division"
            raise _error(self.op, f"{what} by non-positive value is not supported "
                                  f"(in '{e}')")
        lhs = self.expr(e.lhs, dims, syms)
        rhs = self.expr(e.rhs, dims, syms)
        return _BINARY[kind](self, lhs, rhs)

    def add_expr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.add(arith.AddiOp(lhs, rhs))

    def mul_expr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.add(arith.MuliOp(lhs, rhs, overflow=_NSW))

    def mod_expr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """remsi, corrected to be non-negative: (r < 0) ? r + b : r."""
        rem = self.add(arith.RemSIOp(lhs, rhs))
        zero = self.index(0)
        negative = self.add(arith.CmpiOp(rem, zero, "slt"))
        corrected = self.add(arith.AddiOp(rem, rhs))
        return self.add(arith.SelectOp(negative, corrected, rem))

    def floordiv_expr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """(a < 0) ? -1 - (-1 - a) / b : a / b, with truncating divsi."""
        zero = self.index(0)
        minus_one = self.index(-1)
        negative = self.add(arith.CmpiOp(lhs, zero, "slt"))
        flipped = self.add(arith.SubiOp(minus_one, lhs))
        dividend = self.add(arith.SelectOp(negative, flipped, lhs))
        quotient = self.add(arith.DivSIOp(dividend, rhs))
        corrected = self.add(arith.SubiOp(minus_one, quotient))
        return self.add(arith.SelectOp(negative, corrected, quotient))

    def ceildiv_expr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """(a <= 0) ? -((-a) / b) : (a - 1) / b + 1, with truncating divsi."""
        zero = self.index(0)
        one = self.index(1)
        non_positive = self.add(arith.CmpiOp(lhs, zero, "sle"))
        negated = self.add(arith.SubiOp(zero, lhs))
        decremented = self.add(arith.SubiOp(lhs, one))
        dividend = self.add(arith.SelectOp(non_positive, negated, decremented))
        quotient = self.add(arith.DivSIOp(dividend, rhs))
        negated_q = self.add(arith.SubiOp(zero, quotient))
        incremented_q = self.add(arith.AddiOp(quotient, one))
        return self.add(arith.SelectOp(non_positive, negated_q, incremented_q))

    def map(self, m: AffineMap, operands: Sequence[SSAValue]) -> list[SSAValue]:
        """Every result of `m` applied to `operands` (dims first, then symbols)."""
        dims, syms = operands[:m.num_dims], operands[m.num_dims:]
        return [self.expr(e, dims, syms) for e in m.results]

    def map_min_max(self, m: AffineMap, operands: Sequence[SSAValue], use_max: bool
                    ) -> SSAValue:
        """The max (or min) of the results of `m`, as a left-to-right chain of maxsi/minsi."""
        values = self.map(m, operands)
        if not values:
            raise _error(self.op, "has a bound map without results")
        result = values[0]
        for value in values[1:]:
            result = self.add(arith.MaxSIOp(result, value) if use_max
                              else arith.MinSIOp(result, value))
        return result


_BINARY: dict[AffineBinaryOpKind, Callable[[_Builder, SSAValue, SSAValue], SSAValue]] = {
    AffineBinaryOpKind.Add: _Builder.add_expr,
    AffineBinaryOpKind.Mul: _Builder.mul_expr,
    AffineBinaryOpKind.Mod: _Builder.mod_expr,
    AffineBinaryOpKind.FloorDiv: _Builder.floordiv_expr,
    AffineBinaryOpKind.CeilDiv: _Builder.ceildiv_expr,
}


# ---- one lowering per op ----------------------------------------------------------------------

def _replace(op: Operation, b: _Builder, new: Operation | None,
             results: Sequence[SSAValue] = ()) -> None:
    """Insert `b`'s ops before `op`, then replace `op` by `new` (located like `op`) or, without
    `new`, its results by `results`."""
    b.flush()
    if new is None:
        for old, value in zip(op.results, results, strict=True):
            old.replace_all_uses_with(value)
        Rewriter.erase_op(op)
        return

    set_location(new, location_of(op))
    Rewriter.replace_op(op, new)


def _lower_apply(op: Operation, b: _Builder) -> None:
    m = op.properties["map"].data  # type: ignore[attr-defined]
    value = b.map(m, list(op.operands))[0]
    _replace(op, b, None, [value])


def _lower_min_max(op: Operation, b: _Builder) -> None:
    m = op.properties["map"].data  # type: ignore[attr-defined]
    value = b.map_min_max(m, list(op.operands), use_max=op.name == "affine.max")
    _replace(op, b, None, [value])


def _lower_load(op: Operation, b: _Builder) -> None:

    assert isinstance(op, LoadOp)
    indices = b.map(op.map.data, list(op.indices))
    _replace(op, b, memref.LoadOp.get(op.memref, indices))


def _lower_store(op: Operation, b: _Builder) -> None:

    assert isinstance(op, StoreOp)
    indices = b.map(op.map.data, list(op.indices))
    _replace(op, b, memref.StoreOp.get(op.value, op.memref, indices))


def _lower_vector_load(op: Operation, b: _Builder) -> None:
    from xdsl.dialects import affine as xaffine
    from xdsl.dialects import vector

    assert isinstance(op, xaffine.VectorLoadOp)
    indices = b.map(op.map.data, list(op.indices))
    _replace(op, b, vector.LoadOp(op.memref, indices, op.result.type))


def _lower_vector_store(op: Operation, b: _Builder) -> None:
    from xdsl.dialects import affine as xaffine
    from xdsl.dialects import vector

    assert isinstance(op, xaffine.VectorStoreOp)
    indices = b.map(op.map.data, list(op.indices))
    _replace(op, b, vector.StoreOp(op.value, op.memref, indices))


def _take_region(region: Region) -> Region:
    return Rewriter.move_region_contents_to_new_regions(region)


def _yield_to(block: Block, make: Callable[[Sequence[SSAValue]], Operation]) -> None:
    """Replace the affine.yield terminating `block` with `make(its operands)`."""
    last = block.last_op
    assert last is not None and last.name == "affine.yield"

    new = make(list(last.operands))
    set_location(new, location_of(last))
    Rewriter.replace_op(last, new)


def _lower_for(op: Operation, b: _Builder) -> None:

    assert isinstance(op, ForOp)
    lower = b.map_min_max(op.lowerBoundMap.data, list(op.lowerBoundOperands), use_max=True)
    upper = b.map_min_max(op.upperBoundMap.data, list(op.upperBoundOperands), use_max=False)
    step = b.index(op.step.value.data)
    body = _take_region(op.body)
    _yield_to(body.block, lambda values: scf.YieldOp(*values))
    _replace(op, b, scf.ForOp(lower, upper, step, list(op.inits), body))


def _lower_if(op: Operation, b: _Builder) -> None:

    assert isinstance(op, IfOp)
    s = op.condition.data
    operands = list(op.args)
    zero = b.index(0)
    cond: SSAValue | None = None
    for e, is_eq in set_constraints(s):
        value = b.expr(e, operands[:s.num_dims], operands[s.num_dims:])
        test = b.add(arith.CmpiOp(value, zero, "eq" if is_eq else "sge"))
        cond = test if cond is None else b.add(arith.AndIOp(cond, test))
    if cond is None:
        cond = b.add(arith.ConstantOp(IntegerAttr(1, i1)))
    then_region = _take_region(op.then_region)
    _yield_to(then_region.block, lambda values: scf.YieldOp(*values))
    else_region = None
    if op.else_region.blocks:
        else_region = _take_region(op.else_region)
        _yield_to(else_region.block, lambda values: scf.YieldOp(*values))
    _replace(op, b, scf.IfOp(cond, list(op.result_types), then_region, else_region))


def _lower_parallel(op: Operation, b: _Builder) -> None:

    assert isinstance(op, AffineParallel)
    lowers: list[SSAValue] = []
    uppers: list[SSAValue] = []
    for dim in range(len(op.step_values())):
        lowers.append(b.map_min_max(op.bound_map(dim, False), op.bound_operands(False), True))
        uppers.append(b.map_min_max(op.bound_map(dim, True), op.bound_operands(True), False))
    steps = [b.index(s) for s in op.step_values()]
    kinds = op.reduction_kinds()
    for kind, ty in zip(kinds, op.result_types, strict=True):
        _check_reduction(op, kind, ty)
    inits = [b.add(_identity(kind, ty)) for kind, ty in zip(kinds, op.result_types, strict=True)]
    body = _take_region(op.body)

    def reduce(values: Sequence[SSAValue]) -> Operation:
        regions = [_reduction_region(kind, v.type) for kind, v in zip(kinds, values, strict=True)]
        return scf.ReduceOp(values, regions)

    _yield_to(body.block, reduce)
    _replace(op, b, ParallelOp(lowers, uppers, steps, body, inits))


_REDUCE_OPS: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "addf": arith.AddfOp, "mulf": arith.MulfOp, "maximumf": arith.MaximumfOp,
    "minimumf": arith.MinimumfOp, "addi": arith.AddiOp, "muli": arith.MuliOp,
    "ori": arith.OrIOp, "andi": arith.AndIOp,
}
"""Reductions that lower (the verifier's other kinds need signed/unsigned integers, which
arith does not take, or are `assign`, which upstream cannot lower either)."""

_IDENTITY: dict[str, float | int] = {
    "addf": 0.0, "mulf": 1.0, "maximumf": -math.inf, "minimumf": math.inf,
    "addi": 0, "muli": 1, "ori": 0, "andi": -1,
}
"""Each reduction's identity (MLIR's arith::getIdentityValueAttr)."""


def _check_reduction(op: Operation, kind: str, ty: Attribute) -> None:
    if kind not in _REDUCE_OPS:
        raise _error(op, f"has reduction '{kind}' on {ty}, which lower-affine cannot lower "
                         "(supported: " + ", ".join(_REDUCE_OPS) + ")")


def _reduction_region(kind: str, ty: Attribute) -> Region:
    block = Block(arg_types=[ty, ty])
    combined = _REDUCE_OPS[kind](block.args[0], block.args[1])
    block.add_ops([combined, scf.ReduceReturnOp(combined.results[0])])
    return Region(block)


def _identity(kind: str, ty: Attribute) -> Operation:
    """arith.constant of the identity of reduction `kind` in type `ty`."""
    value = _IDENTITY[kind]
    if isinstance(ty, AnyFloat):
        return arith.ConstantOp(FloatAttr(float(value), ty))
    assert isinstance(ty, IntegerType)  # affine.parallel's verifier: reduction_matches
    return arith.ConstantOp(IntegerAttr(int(value), ty))


_LOWERINGS: dict[str, Callable[[Operation, _Builder], None]] = {
    "affine.apply": _lower_apply, "affine.min": _lower_min_max, "affine.max": _lower_min_max,
    "affine.load": _lower_load, "affine.store": _lower_store, "affine.for": _lower_for,
    "affine.if": _lower_if, "affine.parallel": _lower_parallel,
    "affine.vector_load": _lower_vector_load, "affine.vector_store": _lower_vector_store,
}


class LowerAffinePass(ModulePass):
    """Lower every affine op (host code, gpu.launch bodies, gpu.modules) to scf/arith/memref."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        ops = list(op.walk())
        for target in [o for o in ops if o.name.startswith("affine.")
                       and o.name != "affine.yield"]:
            lowering = _LOWERINGS.get(target.name)
            if lowering is None:
                raise _error(target, "is not supported by lower-affine")
            lowering(target, _Builder(target))
        for stray in ops:  # lowered yields are detached; one still attached had no affine parent
            if stray.name == "affine.yield" and stray.parent is not None:
                raise _error(stray, "outside an affine.for, affine.if or affine.parallel")
