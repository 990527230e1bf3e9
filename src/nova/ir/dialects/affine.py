"""The `affine` dialect with MLIR's exact custom syntax (xDSL 0.74's lacks or differs from it).

What xDSL 0.74 gets wrong, and this module replaces:

* affine maps and sets print fully parenthesised (`((d0 * 2) + -5)`); MLIR prints the minimal
  form (`d0 * 2 - 5`, `-d0 + s0`, `s0 - d0 * 3`). `format_expr` mirrors MLIR's
  `printAffineExprInternal`, and every op here prints its maps with it;
* `affine.load`/`affine.store` subscripts treat every SSA name as a symbol and do not parse
  `symbol(%x)`; here plain names are dimensions and `symbol(%x)` symbols, numbered apart, as MLIR
  does (`%m[%i + 1, symbol(%n)]` is `(d0)[s0] -> (d0 + 1, s0)` over `(%i, %n)`);
* `affine.max` is missing; `affine.if` and `affine.parallel` have no custom syntax, and xDSL's
  `affine.parallel` counts results as operands and stores reductions as strings, where MLIR
  stores `arith::AtomicRMWKind` numbers (`reductions = [0]` for "addf");
* ops parsed by xDSL's classes (`affine.for` builds xDSL's own class) are retyped to Nova's so
  they print with MLIR's map syntax.

`AFFINE` is the dialect `nova.ir.context` registers (lazily). Lowering to scf/arith/memref is
`nova.passes.lower_affine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn, Self

from xdsl.dialects import affine as xaffine
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import ParseError, VerifyException

from nova.errors import VerifyError
from nova.ir.dialects.affine_syntax import (
    SsaIds,
    custom_op_error,
    mlir_order_map,
    mlir_order_set,
    parse_affine_attr,
    parse_dim_and_sym_lists,
    parse_map_and_operands,
    parse_map_of_ssa_ids,
    print_expr_of_ssa_ids,
    print_map_and_operands,
    print_map_of_ssa_ids,
    print_operands_of,
    raise_semi_affine,
)
from nova.ir.gpu.base import print_arrow_types, print_attr_dict
from nova.ir.locations import nearest_location

# ---- ops --------------------------------------------------------------------------------------

class ApplyOp(xaffine.ApplyOp):
    """`%r = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%n]`."""

    name = "affine.apply"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attr, operands = parse_map_and_operands(parser, cls.name,
                                                "dimension or symbol index mismatch")
        _check_apply_results(parser, len(attr.data.results))
        op = cls(operands, attr)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_map_and_operands(printer, self.map.data, list(self.mapOperands))
        print_attr_dict(printer, self.attributes)


def _check_apply_results(parser: Parser, count: int) -> None:
    """An affine.apply defines one result per map result (upstream's result-count inference):
    a map of several results is upstream's binding error, or its verifier's when that many
    results are bound (Nova's affine.apply has exactly one result)."""
    if count == 1:
        return
    bound = getattr(parser, "bound_results", lambda: 1)()
    if bound != count:
        at = getattr(parser, "op_start", lambda: parser.pos)()
        parser.raise_error(f"operation defines {count} results but was provided {bound} to "
                           "bind", at, at + 1)
    at = getattr(parser, "op_name_pos", lambda: parser.pos)()
    parser.raise_error("'affine.apply' op requires one result", at, at + 1)


class _MinMaxSyntax(IRDLOperation):
    """Shared syntax of `affine.min` / `affine.max`: `affine_map<...>(%dims)[%syms]`."""

    arguments = var_operand_def(IndexType())
    result = result_def(IndexType())
    map = prop_def(AffineMapAttr)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attr, operands = parse_map_and_operands(parser, cls.name)
        op = cls.build(operands=[operands], result_types=[IndexType()],
                       properties={"map": attr})
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_map_and_operands(printer, self.map.data, list(self.arguments))
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        m = self.map.data
        if len(self.arguments) != m.num_dims + m.num_symbols:
            raise VerifyException(f"'{self.name}' op operand count and affine map dimension "
                                  "and symbol count must match")
        if not m.results:
            raise VerifyException(f"'{self.name}' op affine map expect at least one result")


@irdl_op_definition
class MinOp(_MinMaxSyntax):
    """`%r = affine.min affine_map<(d0) -> (d0, 10)>(%i)`: the smallest of the map's results."""

    name = "affine.min"

    traits = traits_def(Pure())


@irdl_op_definition
class MaxOp(_MinMaxSyntax):
    """`%r = affine.max affine_map<(d0) -> (d0, 0)>(%i)`: the largest of the map's results."""

    name = "affine.max"

    traits = traits_def(Pure())


class ForOp(xaffine.ForOp):
    """`affine.for %i = max #lb(...) to min #ub(...) step 2 iter_args(%a = %x) -> (f32)`."""

    name = "affine.for"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        try:
            op = super().parse(parser)
        except NotImplementedError as err:
            raise_semi_affine(parser, err, pos)
        except ParseError as err:
            _reraise_for_error(parser, err)
        op.__class__ = cls  # xDSL builds its own class; Nova's adds no state, only printing
        for key in ("lowerBoundMap", "upperBoundMap"):
            bound = op.properties[key]
            assert isinstance(bound, AffineMapAttr)
            op.properties[key] = AffineMapAttr(mlir_order_map(bound.data))
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        indvar, *iter_args = self.body.block.args
        printer.print_block_argument(indvar, print_type=False)
        printer.print_string(" = ")
        _print_bound(printer, self.lowerBoundMap.data, list(self.lowerBoundOperands), "max")
        printer.print_string(" to ")
        _print_bound(printer, self.upperBoundMap.data, list(self.upperBoundOperands), "min")
        if self.step.value.data != 1:
            printer.print_string(f" step {self.step.value.data}")
        if self.inits:
            printer.print_string(" iter_args(")
            printer.print_list(zip(iter_args, self.inits, strict=True),
                               lambda p: _print_assign(printer, p[0], p[1]))
            printer.print_string(") -> (")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False,
                             print_block_terminators=bool(self.inits))
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        super().verify_()
        if self.step.value.data <= 0:
            raise VerifyException("'affine.for' op expected step to be representable as a "
                                  "positive signed integer")
        for m in (self.lowerBoundMap.data, self.upperBoundMap.data):
            if not m.results:
                raise VerifyException("'affine.for' op loop bound map must have at least one "
                                      "result")


_FOR_ERRORS = {
    "loop bound affine map with multiple results requires 'max' prefix":
        ("lower loop bound affine map with multiple results requires 'max' prefix", False),
    "loop bound affine map with multiple results requires 'min' prefix":
        ("upper loop bound affine map with multiple results requires 'min' prefix", False),
    "dim operand count and affine map dim count must match":
        ("dim operand count and affine map dim count must match", True),
    "symbol operand count and affine map symbol count must match":
        ("symbol operand count and affine map symbol count must match", True),
    "expected step to be representable as a positive signed integer":
        ("expected step to be representable as a positive signed integer", False),
}
"""xDSL's affine.for header errors -> upstream's text (after `custom op 'affine.for' `) and
whether upstream reports it at the op name (else where xDSL does)."""


def _reraise_for_error(parser: Parser, err: ParseError) -> NoReturn:
    """Re-raise an error of xDSL's affine.for parser with upstream's text and position (errors
    of nested ops, which xDSL's messages do not match exactly, pass through)."""
    found = _FOR_ERRORS.get(err.msg)
    if found is None:
        raise err
    message, at_name = found
    custom_op_error(parser, "affine.for", message, None if at_name else err.span.start)


def _print_assign(printer: Printer, arg: SSAValue, value: SSAValue) -> None:
    printer.print_ssa_value(arg)
    printer.print_string(" = ")
    printer.print_ssa_value(value)


def _print_bound(printer: Printer, m: AffineMap, operands: Sequence[SSAValue],
                 prefix: str) -> None:
    """One `affine.for` bound in MLIR's shortest form (`printBound`)."""
    if len(m.results) == 1:
        expr = m.results[0]
        if not m.num_dims and not m.num_symbols and isinstance(expr, AffineConstantExpr):
            printer.print_string(str(expr.value))
            return
        if not m.num_dims and m.num_symbols == 1 and isinstance(expr, AffineSymExpr):
            printer.print_ssa_value(operands[0])
            return
    else:
        printer.print_string(f"{prefix} ")
    print_map_and_operands(printer, m, operands)


def _parse_result_types(parser: Parser) -> list[Attribute]:
    """`-> T` or `-> (T, U)` (nothing when there is no arrow)."""
    if parser.parse_optional_punctuation("->") is None:
        return []
    types = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
    return list(types) if types is not None else [parser.parse_type()]


def _ensure_yield(region: Region) -> None:
    """Add the implicit empty `affine.yield` to a region whose block lacks a terminator (and
    the block itself to an empty region, `{}`, as MLIR's parser does)."""
    if not region.blocks:
        region.add_block(Block())
    if not isinstance(region.block.last_op, xaffine.YieldOp):
        region.block.add_op(xaffine.YieldOp.get())


@irdl_op_definition
class IfOp(IRDLOperation):
    """`affine.if #set(%dims)[%syms] -> T { ... } else { ... }`: MLIR's integer-set condition."""

    name = "affine.if"

    args = var_operand_def(IndexType)
    res = var_result_def()
    condition = prop_def(AffineSetAttr)
    then_region = region_def("single_block")
    else_region = region_def()

    traits = traits_def(RecursiveMemoryEffect())

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        attr = parse_affine_attr(parser)
        if not isinstance(attr, AffineSetAttr):
            parser.raise_error("expected an integer set", pos)
        dims, syms = parse_dim_and_sym_lists(parser)
        if len(dims) != attr.data.num_dims:
            custom_op_error(parser, cls.name,
                            "dim operand count and integer set dim count must match")
        if len(syms) != attr.data.num_symbols:
            custom_op_error(parser, cls.name,
                            "symbol operand count and integer set symbol count must match")
        operands = [*dims, *syms]
        attr = AffineSetAttr(mlir_order_set(attr.data))
        types = _parse_result_types(parser)
        then_region = parser.parse_region()
        _ensure_yield(then_region)
        else_region = Region()
        if parser.parse_optional_keyword("else") is not None:
            else_region = parser.parse_region()
            _ensure_yield(else_region)
        op = cls.build(operands=[operands], result_types=[types],
                       properties={"condition": attr}, regions=[then_region, else_region])
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        s = self.condition.data
        printer.print_string(" ")
        printer.print_attribute(self.condition)
        print_operands_of(printer, s.num_dims, list(self.args))
        types = list(self.result_types)
        print_arrow_types(printer, types)
        printer.print_string(" ")
        printer.print_region(self.then_region, False, True, bool(types))
        if self.else_region.blocks:
            printer.print_string(" else ")
            printer.print_region(self.else_region, False, True, bool(types))
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        s = self.condition.data
        if len(self.args) != s.num_dims + s.num_symbols:
            raise VerifyException("'affine.if' op operand count and condition integer set "
                                  "dimension and symbol count must match")
        if self.results and not self.else_region.blocks:
            # upstream's RegionBranchOpInterface check of the missing else (parent to parent)
            raise VerifyError("'affine.if' op along control flow edge from parent to parent: "
                              f"region branch point has 0 operands, but region successor "
                              f"needs {len(self.results)} inputs", nearest_location(self),
                              (("region branch point", nearest_location(self)),))


# MLIR's arith::AtomicRMWKind numbering (alphabetical), as affine.parallel stores its reductions.
ATOMIC_RMW_KINDS: tuple[str, ...] = (
    "addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu", "minimumf",
    "minnumf", "mins", "minu", "mulf", "muli", "ori", "xori")
FLOAT_REDUCTIONS = frozenset({"addf", "mulf", "maximumf", "minimumf"})
INTEGER_REDUCTIONS = frozenset({"addi", "muli", "ori", "andi"})


def reduction_matches(kind: str, ty: Attribute) -> bool:
    """Whether an affine.parallel reduction `kind` may produce `ty` (MLIR's
    isResultTypeMatchAtomicRMWKind: maxs/mins need signed, maxu/minu unsigned integers,
    maxnumf/minnumf/xori are never accepted, assign takes any type)."""
    if kind == "assign":
        return True
    if kind in FLOAT_REDUCTIONS:
        return isinstance(ty, AnyFloat)
    if not isinstance(ty, IntegerType):
        return False
    if kind in INTEGER_REDUCTIONS:
        return True
    if kind in ("maxs", "mins"):
        return ty.signedness.data == Signedness.SIGNED
    if kind in ("maxu", "minu"):
        return ty.signedness.data == Signedness.UNSIGNED
    return False


@irdl_op_definition
class ParallelOp(IRDLOperation):
    """`affine.parallel (%i, %j) = (0, max(0, %n)) to (10, 20) step (1, 2) reduce ("addf")
    -> (f32) { ... }`, with MLIR's properties (reductions as AtomicRMWKind numbers)."""

    name = "affine.parallel"

    mapOperands = var_operand_def(IndexType)
    reductions = prop_def(ArrayAttr)
    lowerBoundsMap = prop_def(AffineMapAttr)
    lowerBoundsGroups = prop_def(DenseIntOrFPElementsAttr)
    upperBoundsMap = prop_def(AffineMapAttr)
    upperBoundsGroups = prop_def(DenseIntOrFPElementsAttr)
    steps = prop_def(ArrayAttr)
    res = var_result_def()
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def reduction_kinds(self) -> list[str]:
        """The reductions' names (`addf`, ...), one per result."""
        return [ATOMIC_RMW_KINDS[_int(a)] for a in self.reductions.data]

    def step_values(self) -> list[int]:
        """The constant step of each dimension."""
        return [_int(a) for a in self.steps.data]

    def groups(self, upper: bool) -> list[int]:
        """How many bound-map results each dimension's lower (or upper) bound takes."""
        attr = self.upperBoundsGroups if upper else self.lowerBoundsGroups
        return [int(v) for v in attr.get_values()]

    def bound_map(self, dim: int, upper: bool) -> AffineMap:
        """The bound map of dimension `dim` alone (MLIR's getLowerBoundMap(i)/getUpperBoundMap)."""
        m = (self.upperBoundsMap if upper else self.lowerBoundsMap).data
        groups = self.groups(upper)
        start = sum(groups[:dim])
        return AffineMap(m.num_dims, m.num_symbols, m.results[start:start + groups[dim]])

    def bound_operands(self, upper: bool) -> list[SSAValue]:
        """The operands of the lower (or upper) bounds map."""
        lower = self.lowerBoundsMap.data
        n_lower = lower.num_dims + lower.num_symbols
        ops = list(self.mapOperands)
        return ops[n_lower:] if upper else ops[:n_lower]

    def verify_(self) -> None:
        lower, upper = self.lowerBoundsMap.data, self.upperBoundsMap.data
        dims = len(self.body.block.args) if self.body.blocks else 0
        if len(self.mapOperands) != lower.num_dims + lower.num_symbols + upper.num_dims \
                + upper.num_symbols:
            raise VerifyException("'affine.parallel' op expects as many operands as the bound "
                                  "maps have dims and symbols")
        if len(self.groups(False)) != dims or len(self.groups(True)) != dims \
                or len(self.steps.data) != dims:
            raise VerifyException("'affine.parallel' op region argument count and bound "
                                  "group / step counts must match")
        if sum(self.groups(False)) != len(lower.results) or \
                sum(self.groups(True)) != len(upper.results):
            raise VerifyException("'affine.parallel' op bound groups must cover the bound maps")
        if len(self.reductions.data) != len(self.results):
            raise VerifyException("'affine.parallel' op a reduction must be specified for each "
                                  "output")
        if any(not 0 <= _int(a) < len(ATOMIC_RMW_KINDS) for a in self.reductions.data):
            raise VerifyException("'affine.parallel' op invalid reduction attribute")
        for kind, ty in zip(self.reduction_kinds(), self.result_types, strict=True):
            if not reduction_matches(kind, ty):
                raise VerifyException("'affine.parallel' op result type cannot match "
                                      "reduction attribute")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        index = IndexType()
        ivs = [u.resolve(index) for u in parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))]
        parser.parse_punctuation("=")
        lower, lower_groups, lower_ops = _parse_bound_list(parser, "max")
        parser.parse_keyword("to")
        upper, upper_groups, upper_ops = _parse_bound_list(parser, "min")
        steps = [1] * len(ivs)
        if parser.parse_optional_keyword("step") is not None:
            steps = parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                                      parser.parse_integer)
        kinds: list[int] = []
        if parser.parse_optional_keyword("reduce") is not None:
            kinds = parser.parse_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: _parse_reduction(parser))
        types = _parse_result_types(parser)
        body = parser.parse_region(ivs)
        _ensure_yield(body)
        props: dict[str, Attribute] = {
            "reductions": ArrayAttr([IntegerAttr(k, i64) for k in kinds]),
            "lowerBoundsMap": AffineMapAttr(lower), "lowerBoundsGroups": _groups(lower_groups),
            "upperBoundsMap": AffineMapAttr(upper), "upperBoundsGroups": _groups(upper_groups),
            "steps": ArrayAttr([IntegerAttr(s, i64) for s in steps])}
        op = cls.build(operands=[[*lower_ops, *upper_ops]], result_types=[types],
                       properties=props, regions=[body])
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(") = ")
        self._print_bounds(printer, upper=False)
        printer.print_string(" to ")
        self._print_bounds(printer, upper=True)
        steps = self.step_values()
        if any(s != 1 for s in steps):
            printer.print_string(" step (" + ", ".join(map(str, steps)) + ")")
        if self.results:
            printer.print_string(" reduce (")
            printer.print_list(self.reduction_kinds(), lambda k: printer.print_string(f'"{k}"'))
            printer.print_string(") -> (")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body, False, True, bool(self.results))
        print_attr_dict(printer, self.attributes)

    def _print_bounds(self, printer: Printer, upper: bool) -> None:
        m = (self.upperBoundsMap if upper else self.lowerBoundsMap).data
        operands = self.bound_operands(upper)
        printer.print_string("(")
        start = 0
        for dim, size in enumerate(self.groups(upper)):
            if dim:
                printer.print_string(", ")
            exprs = m.results[start:start + size]
            start += size
            if size != 1:
                printer.print_string("min(" if upper else "max(")
            printer.print_list(exprs, lambda e: print_expr_of_ssa_ids(printer, m, operands, e))
            if size != 1:
                printer.print_string(")")
        printer.print_string(")")


def _int(attr: Attribute) -> int:
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _groups(sizes: Sequence[int]) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(TensorType(i32, [len(sizes)]), list(sizes))


def _parse_reduction(parser: Parser) -> int:
    pos = parser.pos
    name = parser.parse_str_literal()
    if name not in ATOMIC_RMW_KINDS:
        parser.raise_error(f"invalid reduction value: \"{name}\"", pos)
    return ATOMIC_RMW_KINDS.index(name)


def _parse_bound_list(parser: Parser, keyword: str
                      ) -> tuple[AffineMap, list[int], list[SSAValue]]:
    """`(e, max(e, e), ...)`: one map over all bounds, each group's result count, operands."""
    ids = SsaIds(parser)
    exprs: list[AffineExpr] = []
    groups: list[int] = []

    def bound() -> None:
        if parser.parse_optional_keyword(keyword) is not None:
            group = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, ids.expr)
        else:
            group = [ids.expr()]
        exprs.extend(group)
        groups.append(len(group))

    parser.parse_comma_separated_list(Parser.Delimiter.PAREN, bound)
    m, operands = ids.finish(exprs)
    return m, groups, operands


def _check_access(op: IRDLOperation, memref: SSAValue, m: AffineMap, n_indices: int) -> None:
    mtype = memref.type
    if isinstance(mtype, MemRefType) and len(m.results) != mtype.get_num_dims():
        raise VerifyException(f"'{op.name}' op affine map num results must equal memref rank")
    if n_indices != m.num_dims + m.num_symbols:
        raise VerifyException(f"'{op.name}' op expects as many subscripts as affine map inputs")


def _parse_access(parser: Parser, with_value: bool) -> tuple[
        UnresolvedOperand | None, UnresolvedOperand, AffineMap, list[SSAValue],
        dict[str, Attribute], MemRefType]:
    """`[%value,] %memref[map of ssa ids] {attrs} : memref<...>` (the shared head of affine
    load/store/vector_load/vector_store; MLIR puts the attribute dict before the colon)."""
    value_u = None
    if with_value:
        value_u = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
    memref_u = parser.parse_unresolved_operand()
    m, indices = parse_map_of_ssa_ids(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    mtype = parser.parse_type()
    if not isinstance(mtype, MemRefType):
        parser.raise_error("expected a memref type", pos)
    return value_u, memref_u, m, indices, attrs, mtype


def _parse_vector_type(parser: Parser) -> VectorType:
    parser.parse_punctuation(",")
    pos = parser.pos
    vtype = parser.parse_type()
    if not isinstance(vtype, VectorType):
        parser.raise_error("expected a vector type", pos)
    return vtype


def _print_access(printer: Printer, op: Operation, value: SSAValue | None,
                  vector: Attribute | None) -> None:
    """The printing counterpart of `_parse_access` (plus `, vector<...>` for vector ops)."""
    printer.print_string(" ")
    if value is not None:
        printer.print_ssa_value(value)
        printer.print_string(", ")
    memref = op.operands[1 if value is not None else 0]
    printer.print_ssa_value(memref)
    print_map_of_ssa_ids(printer, op.properties["map"].data,  # type: ignore[attr-defined]
                          list(op.operands[2 if value is not None else 1:]))
    print_attr_dict(printer, op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(memref.type)
    if vector is not None:
        printer.print_string(", ")
        printer.print_attribute(vector)


class LoadOp(xaffine.LoadOp):
    """`%v = affine.load %m[%i + 1, symbol(%n)] : memref<...>`."""

    name = "affine.load"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        _, memref_u, m, indices, attrs, mtype = _parse_access(parser, with_value=False)
        memref = parser.resolve_operand(memref_u, mtype)
        op = cls(memref, indices, AffineMapAttr(m), mtype.get_element_type())
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, None, None)

    def verify_(self) -> None:
        _check_access(self, self.memref, self.map.data, len(self.indices))


class StoreOp(xaffine.StoreOp):
    """`affine.store %v, %m[%i, symbol(%n)] : memref<...>`."""

    name = "affine.store"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        value_u, memref_u, m, indices, attrs, mtype = _parse_access(parser, with_value=True)
        assert value_u is not None
        memref = parser.resolve_operand(memref_u, mtype)
        value = parser.resolve_operand(value_u, mtype.get_element_type())
        op = cls(value, memref, indices, AffineMapAttr(m))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, self.value, None)

    def verify_(self) -> None:
        _check_access(self, self.memref, self.map.data, len(self.indices))


class VectorLoadOp(xaffine.VectorLoadOp):
    """`%v = affine.vector_load %m[%i * 8] : memref<64xf32>, vector<8xf32>`."""

    name = "affine.vector_load"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        _, memref_u, m, indices, attrs, mtype = _parse_access(parser, with_value=False)
        vtype = _parse_vector_type(parser)
        memref = parser.resolve_operand(memref_u, mtype)
        op = cls.build(operands=[memref, indices], result_types=[vtype],
                       properties={"map": AffineMapAttr(m)})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, None, self.result.type)

    def verify_(self) -> None:
        _check_access(self, self.memref, self.map.data, len(self.indices))


class VectorStoreOp(xaffine.VectorStoreOp):
    """`affine.vector_store %v, %m[%i * 8] : memref<64xf32>, vector<8xf32>`."""

    name = "affine.vector_store"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        value_u, memref_u, m, indices, attrs, mtype = _parse_access(parser, with_value=True)
        assert value_u is not None
        vtype = _parse_vector_type(parser)
        memref = parser.resolve_operand(memref_u, mtype)
        value = parser.resolve_operand(value_u, vtype)
        op = cls.build(operands=[value, memref, indices], properties={"map": AffineMapAttr(m)})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_access(printer, self, self.value, self.value.type)

    def verify_(self) -> None:
        _check_access(self, self.memref, self.map.data, len(self.indices))


AFFINE = Dialect("affine", [
    ApplyOp, ForOp, ParallelOp, IfOp, StoreOp, LoadOp, MinOp, MaxOp, xaffine.YieldOp,
    VectorLoadOp, VectorStoreOp,
], [])
"""Nova's affine dialect (registered as `affine` by `nova.ir.context`)."""
