"""The textual syntax of affine maps, sets and their operands, exactly as MLIR prints and parses it.

`format_expr` / `format_map` / `format_set` mirror MLIR's `printAffineExprInternal` (minimal
parentheses: `d0 * 2 - 5`, `-d0 + s0`); `mlir_order*` put operands in MLIR's canonical order;
`parse_map_of_ssa_ids` / `print_expr_of_ssa_ids` handle subscripts written with SSA names
(`%m[%i + 1, symbol(%n)]`), and `parse_map_and_operands` / `print_map_and_operands` the
`#map(%a)[%b]` form. The affine ops themselves are in `nova.ir.dialects.affine`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NoReturn

from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
)
from xdsl.ir import Attribute, SSAValue
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
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

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


SEMI_AFFINE = ("semi-affine expressions (mul, mod, floordiv or ceildiv by a dim or symbol) "
                "are not supported")


def parse_affine_attr(parser: Parser) -> Attribute:
    """`parser.parse_attribute()`, with xDSL's NotImplementedError for semi-affine expressions
    (`d0 mod s0`) turned into a located parse error."""
    pos = parser.pos
    try:
        return parser.parse_attribute()
    except NotImplementedError as err:
        raise_semi_affine(parser, err, pos)


_MUL_OPERANDS = re.compile(r"self: (.*) other: (.*)$")
_DIM = re.compile(r"\bd\d+\b|%[\w$.-]+")
_SYMBOL_USE = re.compile(r"symbol\(\s*%[\w$.-]+\s*\)")
_DIVISIONS = {"Floor division": "floordiv", "Ceil division": "ceildiv", "Mod": "mod"}
_NON_AFFINE_MUL = ("non-affine expression: at least one of the multiply operands has to be "
                   "either a constant or symbolic")


def _has_dim(text: str) -> bool:
    """Whether affine-expression text uses a dim (`d0`, or an SSA id outside `symbol(...)`)."""
    return _DIM.search(_SYMBOL_USE.sub("", text)) is not None


def raise_semi_affine(parser: Parser, err: NotImplementedError, pos: int) -> NoReturn:
    """The error for an expression xDSL cannot build (parsed from `pos`): a product of two
    expressions of dims, or a division or modulo by one, is upstream's non-affine error at its
    operator; by a symbol it is semi-affine (upstream accepts it, Nova does not)."""
    text = parser.lexer.input.content
    message = str(err)
    operands = _MUL_OPERANDS.search(message)
    if operands is not None and all(_DIM.search(side) for side in operands.groups()):
        at = text.rfind("*", pos, parser.pos)
        if at != -1:
            parser.raise_error(_NON_AFFINE_MUL, at, at + 1)
    keyword = next((kw for start, kw in _DIVISIONS.items() if message.startswith(start)), None)
    if keyword is not None:
        found = list(re.finditer(rf"\b{keyword}\b", text[pos:parser.pos]))
        if found:
            at = pos + found[-1].start()
            if _has_dim(text[at + len(keyword):parser.pos]):
                parser.raise_error(f"non-affine expression: right operand of {keyword} has to "
                                   "be either a constant or symbolic", at, at + len(keyword))
    parser.raise_error(SEMI_AFFINE, pos)


# ---- SSA-id affine maps: `[%i + 1, symbol(%n)]` ------------------------------------------------

class SsaIds:
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
        except NotImplementedError as err:
            raise_semi_affine(self.parser, err, pos)

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
    ids = SsaIds(parser)
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


def print_map_of_ssa_ids(printer: Printer, m: AffineMap, operands: Sequence[SSAValue]) -> None:
    printer.print_string("[")
    printer.print_list(m.results, lambda e: print_expr_of_ssa_ids(printer, m, operands, e))
    printer.print_string("]")


# ---- map-with-operands syntax: `#map(%a)[%b]` -------------------------------------------------

def parse_map_and_operands(parser: Parser, op_name: str, mismatch: str | None = None
                           ) -> tuple[AffineMapAttr, list[SSAValue]]:
    """Parse `affine_map<...>(%dims)[%syms]` (the map may be an alias). Operand counts that
    differ from the map's are upstream's parse error `custom op 'OP' <mismatch>` (at the op
    name) when `mismatch` is given, else left to the op's verifier (as upstream does)."""
    pos = parser.pos
    attr = parse_affine_attr(parser)
    if not isinstance(attr, AffineMapAttr):
        parser.raise_error("expected an affine map", pos)
    dims, syms = parse_dim_and_sym_lists(parser)
    if mismatch is not None and (len(dims), len(syms)) != (attr.data.num_dims,
                                                           attr.data.num_symbols):
        custom_op_error(parser, op_name, mismatch)
    return AffineMapAttr(mlir_order_map(attr.data)), [*dims, *syms]


def custom_op_error(parser: Parser, op_name: str, message: str, at: int | None = None
                    ) -> NoReturn:
    """Raise upstream's error of an op's custom parser: `custom op 'OP' <message>`, at `at`
    or else at the op's name (where upstream's `OpAsmParser::getNameLoc` points)."""
    if at is None:
        op_name_pos = getattr(parser, "op_name_pos", None)
        at = op_name_pos() if op_name_pos is not None else parser.pos
    parser.raise_error(f"custom op '{op_name}' {message}", at, at + 1)


def parse_dim_and_sym_lists(parser: Parser) -> tuple[list[SSAValue], list[SSAValue]]:
    """`(%dims)[%syms]`, the `[...]` optional."""
    index = IndexType()
    dims: list[SSAValue] = list(parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: parser.parse_operand(index)))
    syms: list[SSAValue] = list(parser.parse_optional_comma_separated_list(
        Parser.Delimiter.SQUARE, lambda: parser.parse_operand(index)) or [])
    return dims, syms


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
    """`affine_map<...>(%dims)[%syms]` with MLIR's map syntax (or the map's alias)."""
    printer.print_attribute(AffineMapAttr(m))
    print_operands_of(printer, m.num_dims, operands)
