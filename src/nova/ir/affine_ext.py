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

from collections.abc import Callable, Sequence
from typing import Self

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
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineConstraintExpr,
    AffineConstraintKind,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSet,
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
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from nova.ir.gpu_base import print_arrow_types, print_attr_dict

# ---- MLIR's affine expression printing --------------------------------------------------------

Emit = Callable[[str], None]
Leaf = Callable[[AffineExpr], None]

_SPELLING = {AffineBinaryOpKind.Mul: " * ", AffineBinaryOpKind.FloorDiv: " floordiv ",
             AffineBinaryOpKind.CeilDiv: " ceildiv ", AffineBinaryOpKind.Mod: " mod "}


def print_expr(emit: Emit, leaf: Leaf, expr: AffineExpr, strong: bool = False) -> None:
    """Print `expr` as MLIR's `printAffineExprInternal` does: `leaf` prints dims and symbols,
    `strong` is the enclosing binding strength (a strong context parenthesises binary ops)."""
    if isinstance(expr, AffineConstantExpr):
        emit(str(expr.value))
        return
    if not isinstance(expr, AffineBinaryOpExpr):
        leaf(expr)
        return
    if strong:
        emit("(")
    if expr.kind != AffineBinaryOpKind.Add:
        _print_tight(emit, leaf, expr)
    else:
        _print_add(emit, leaf, expr)
    if strong:
        emit(")")


def _print_tight(emit: Emit, leaf: Leaf, expr: AffineBinaryOpExpr) -> None:
    rhs = expr.rhs
    if (expr.kind == AffineBinaryOpKind.Mul and isinstance(rhs, AffineConstantExpr)
            and rhs.value == -1):
        emit("-")
        print_expr(emit, leaf, expr.lhs, True)
        return
    print_expr(emit, leaf, expr.lhs, True)
    emit(_SPELLING[expr.kind])
    print_expr(emit, leaf, rhs, True)


def _print_add(emit: Emit, leaf: Leaf, expr: AffineBinaryOpExpr) -> None:
    lhs, rhs = expr.lhs, expr.rhs
    if (isinstance(rhs, AffineBinaryOpExpr) and rhs.kind == AffineBinaryOpKind.Mul
            and isinstance(rhs.rhs, AffineConstantExpr) and rhs.rhs.value <= -1):
        print_expr(emit, leaf, lhs)
        emit(" - ")
        if rhs.rhs.value == -1:
            inner_add = isinstance(rhs.lhs, AffineBinaryOpExpr) and \
                rhs.lhs.kind == AffineBinaryOpKind.Add
            print_expr(emit, leaf, rhs.lhs, inner_add)
        else:
            print_expr(emit, leaf, rhs.lhs, True)
            emit(f" * {-rhs.rhs.value}")
        return
    if isinstance(rhs, AffineConstantExpr) and rhs.value < 0:
        print_expr(emit, leaf, lhs)
        emit(f" - {-rhs.value}")
        return
    print_expr(emit, leaf, lhs)
    emit(" + ")
    print_expr(emit, leaf, rhs)


def format_expr(expr: AffineExpr) -> str:
    """`expr` in MLIR's text form over `d<i>`/`s<i>` (`d0 * 2 - 5`)."""
    parts: list[str] = []

    def leaf(e: AffineExpr) -> None:
        parts.append(f"d{e.position}" if isinstance(e, AffineDimExpr)
                     else f"s{e.position}")  # type: ignore[attr-defined]

    print_expr(parts.append, leaf, expr)
    return "".join(parts)


def _space(num_dims: int, num_symbols: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    syms = ", ".join(f"s{i}" for i in range(num_symbols))
    return f"({dims})" + (f"[{syms}]" if num_symbols else "")


def format_map(m: AffineMap) -> str:
    """`affine_map<(d0)[s0] -> (d0 + s0)>`, as MLIR prints it."""
    results = ", ".join(format_expr(e) for e in m.results)
    return f"affine_map<{_space(m.num_dims, m.num_symbols)} -> ({results})>"


def canonical_constraint(kind: AffineConstraintKind, lhs: AffineExpr, rhs: AffineExpr
                         ) -> tuple[AffineExpr, bool]:
    """(e, is_equality) with the constraint meaning `e >= 0` or `e == 0`, as MLIR stores it."""
    if kind == AffineConstraintKind.le:
        return rhs - lhs, False
    return lhs - rhs, kind == AffineConstraintKind.eq


def set_constraints(s: AffineSet) -> list[tuple[AffineExpr, bool]]:
    """The constraints of `s` in MLIR's canonical `e >= 0` / `e == 0` form."""
    return [canonical_constraint(c.kind, c.lhs, c.rhs) for c in s.constraints]


def format_set(s: AffineSet) -> str:
    """`affine_set<(d0)[s0] : (d0 - 1 >= 0, s0 == 0)>`, as MLIR prints it."""
    parts = [f"{format_expr(e)} {'==' if eq else '>='} 0" for e, eq in set_constraints(s)]
    return f"affine_set<{_space(s.num_dims, s.num_symbols)} : ({', '.join(parts)})>"


# ---- MLIR's operand order ----------------------------------------------------------------------

def _symbolic(expr: AffineExpr) -> bool:
    return not any(isinstance(e, AffineDimExpr) for e in expr.dfs())


def mlir_order(expr: AffineExpr) -> AffineExpr:
    """`expr` with MLIR's operand order for `+` and `*`: a constant, or a dim-free operand beside
    one with dims, goes to the right (`s0 - d0` parses to `-d0 + s0`, as in mlir-opt).

    xDSL's expression builder folds as MLIR's does but orders operands as written; only the
    order differs, and both operations commute, so the value is unchanged."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs, rhs = mlir_order(expr.lhs), mlir_order(expr.rhs)
    if expr.kind in (AffineBinaryOpKind.Add, AffineBinaryOpKind.Mul) and (
            isinstance(lhs, AffineConstantExpr) or (_symbolic(lhs) and not _symbolic(rhs))):
        lhs, rhs = rhs, lhs
    return AffineBinaryOpExpr(expr.kind, lhs, rhs)


def mlir_order_map(m: AffineMap) -> AffineMap:
    """`m` with every result in MLIR's operand order (`mlir_order`)."""
    return AffineMap(m.num_dims, m.num_symbols, tuple(mlir_order(e) for e in m.results))


def mlir_order_set(s: AffineSet) -> AffineSet:
    """`s` as MLIR stores it: `e >= 0` / `e == 0` constraints in MLIR's operand order."""
    constraints = tuple(
        AffineConstraintExpr(AffineConstraintKind.eq if eq else AffineConstraintKind.ge,
                             mlir_order(e), AffineExpr.constant(0), canonicalize=False)
        for e, eq in set_constraints(s))
    return AffineSet(s.num_dims, s.num_symbols, constraints)


_SEMI_AFFINE = ("semi-affine expressions (mul, mod, floordiv or ceildiv by a dim or symbol) "
                "are not supported")


def parse_affine_attr(parser: Parser) -> Attribute:
    """`parser.parse_attribute()`, with xDSL's NotImplementedError for semi-affine expressions
    (`d0 mod s0`) turned into a located parse error."""
    pos = parser.pos
    try:
        return parser.parse_attribute()
    except NotImplementedError:
        parser.raise_error(_SEMI_AFFINE, pos)


# ---- SSA-id affine maps: `[%i + 1, symbol(%n)]` ------------------------------------------------

class _SsaIds:
    """Collects the dims (`%x`) and symbols (`symbol(%x)`) of an affine map of SSA ids."""

    def __init__(self, parser: Parser) -> None:
        from xdsl.parser.affine_parser import AffineParser

        self.parser = parser
        self.affine = AffineParser(parser._parser_state)  # pyright: ignore[reportPrivateUsage]
        self.dims: dict[str, tuple[int, Span]] = {}
        self.syms: dict[str, tuple[int, Span]] = {}

    def _leaf(self) -> AffineExpr | None:
        ap = self.affine
        tok = ap._current_token  # pyright: ignore[reportPrivateUsage]
        if tok.kind == MLIRTokenKind.BARE_IDENT and tok.text == "symbol":
            ap._consume_token()  # pyright: ignore[reportPrivateUsage]
            ap._parse_token(MLIRTokenKind.L_PAREN, "expected '('")  # pyright: ignore
            name = ap._parse_token(MLIRTokenKind.PERCENT_IDENT,  # pyright: ignore
                                   "expected SSA operand")
            ap._parse_token(MLIRTokenKind.R_PAREN, "expected ')'")  # pyright: ignore
            pos, _ = self.syms.setdefault(name.span.text, (len(self.syms), name.span))
            return AffineExpr.symbol(pos)
        dim = ap._parse_optional_token(MLIRTokenKind.PERCENT_IDENT)  # pyright: ignore
        if dim is None:
            return None
        pos, _ = self.dims.setdefault(dim.span.text, (len(self.dims), dim.span))
        return AffineExpr.dimension(pos)

    def expr(self) -> AffineExpr:
        """Parse one affine expression of SSA ids."""
        pos = self.parser.pos
        try:
            return self.affine._parse_affine_expr(self._leaf)  # pyright: ignore
        except NotImplementedError:
            self.parser.raise_error(_SEMI_AFFINE, pos)

    def finish(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[SSAValue]]:
        """The map over (dims, symbols) and its operands, dims first, each in first-use order."""
        index = IndexType()
        spans = [span for _, span in self.dims.values()] + [s for _, s in self.syms.values()]
        operands: list[SSAValue] = [
            self.parser.resolve_operand(UnresolvedOperand(span, 0), index) for span in spans]
        m = AffineMap(len(self.dims), len(self.syms), tuple(exprs))
        return mlir_order_map(m), operands


def parse_map_of_ssa_ids(parser: Parser) -> tuple[AffineMap, list[SSAValue]]:
    """Parse `[e0, e1, ...]` over `%x` dims and `symbol(%x)` symbols."""
    ids = _SsaIds(parser)
    exprs = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, ids.expr)
    return ids.finish(exprs)


def print_expr_of_ssa_ids(printer: Printer, m: AffineMap, operands: Sequence[SSAValue],
                          expr: AffineExpr) -> None:
    """Print `expr` of map `m` with operand names for dims and `symbol(%x)` for symbols."""
    def leaf(e: AffineExpr) -> None:
        if isinstance(e, AffineDimExpr):
            printer.print_ssa_value(operands[e.position])
        else:
            assert isinstance(e, AffineSymExpr)
            printer.print_string("symbol(")
            printer.print_ssa_value(operands[m.num_dims + e.position])
            printer.print_string(")")

    print_expr(printer.print_string, leaf, expr)


def _print_map_of_ssa_ids(printer: Printer, m: AffineMap, operands: Sequence[SSAValue]) -> None:
    printer.print_string("[")
    printer.print_list(m.results, lambda e: print_expr_of_ssa_ids(printer, m, operands, e))
    printer.print_string("]")


# ---- map-with-operands syntax: `#map(%a)[%b]` -------------------------------------------------

def parse_map_and_operands(parser: Parser) -> tuple[AffineMapAttr, list[SSAValue]]:
    """Parse `affine_map<...>(%dims)[%syms]` (the map may be an alias), checking the counts."""
    pos = parser.pos
    attr = parse_affine_attr(parser)
    if not isinstance(attr, AffineMapAttr):
        parser.raise_error("expected an affine map", pos)
    operands = _parse_dims_and_syms(parser, attr.data.num_dims, attr.data.num_symbols, pos)
    return AffineMapAttr(mlir_order_map(attr.data)), operands


def _parse_dims_and_syms(parser: Parser, num_dims: int, num_syms: int, pos: int
                         ) -> list[SSAValue]:
    index = IndexType()
    dims = parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                             lambda: parser.parse_operand(index))
    syms = parser.parse_optional_comma_separated_list(
        Parser.Delimiter.SQUARE, lambda: parser.parse_operand(index)) or []
    if len(dims) != num_dims:
        parser.raise_error("dim operand count and affine map dim count must match", pos)
    if len(syms) != num_syms:
        parser.raise_error("symbol operand count and affine map symbol count must match", pos)
    return [*dims, *syms]


def print_operands_of(printer: Printer, num_dims: int, operands: Sequence[SSAValue]) -> None:
    """`(%dims)[%syms]`, the `[...]` only when there are symbols."""
    printer.print_string("(")
    printer.print_list(operands[:num_dims], printer.print_ssa_value)
    printer.print_string(")")
    if len(operands) > num_dims:
        printer.print_string("[")
        printer.print_list(operands[num_dims:], printer.print_ssa_value)
        printer.print_string("]")


def print_map_and_operands(printer: Printer, m: AffineMap, operands: Sequence[SSAValue]) -> None:
    """`affine_map<...>(%dims)[%syms]` with MLIR's map syntax."""
    printer.print_string(format_map(m))
    print_operands_of(printer, m.num_dims, operands)


# ---- ops --------------------------------------------------------------------------------------

class ApplyOp(xaffine.ApplyOp):
    """`%r = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%n]`."""

    name = "affine.apply"

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attr, operands = parse_map_and_operands(parser)
        op = cls(operands, attr)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_map_and_operands(printer, self.map.data, list(self.mapOperands))
        print_attr_dict(printer, self.attributes)


class _MinMaxSyntax(IRDLOperation):
    """Shared syntax of `affine.min` / `affine.max`: `affine_map<...>(%dims)[%syms]`."""

    arguments = var_operand_def(IndexType())
    result = result_def(IndexType())
    map = prop_def(AffineMapAttr)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attr, operands = parse_map_and_operands(parser)
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
        except NotImplementedError:
            parser.raise_error(_SEMI_AFFINE, pos)
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
    """Add the implicit empty `affine.yield` to a region whose block lacks a terminator."""
    if region.blocks and not isinstance(region.block.last_op, xaffine.YieldOp):
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
        operands = _parse_dims_and_syms(parser, attr.data.num_dims, attr.data.num_symbols, pos)
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
        printer.print_string(" " + format_set(s))
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
            raise VerifyException("'affine.if' op must have an else block if defining values")


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
    ids = _SsaIds(parser)
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
    _print_map_of_ssa_ids(printer, op.properties["map"].data,  # type: ignore[attr-defined]
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
