"""Parse and print MLIR text: `parse_mlir(text, filename)` and `print_mlir(op, generic=False)`.

`parse_mlir` parses with `nova.ir.context`'s dialects, records every op's source position (see
`nova.ir.locations`), wraps top-level ops in a `builtin.module` when the text has none (as
`mlir-opt` does), converts xDSL's parse exceptions into `nova.errors.ParseError` (unknown ops into
`UnsupportedError`) located at `file:line:col`, and verifies the result (`VerifyError` at the
failing op).
"""

from __future__ import annotations

import bisect
import math
import re
import struct
from typing import Any, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, ModuleOp, UnknownLoc
from xdsl.ir import Operation, SSAValue
from xdsl.ir.core import AttributeInvT
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.utils.exceptions import ParseError as XdslParseError
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from nova.errors import DiagnosticError, ParseError, SourceLocation, UnsupportedError
from nova.ir.context import SUPPORTED_DIALECTS, make_context
from nova.ir.locations import location_of, make_loc, register_source
from nova.ir.printer import print_to_string
from nova.ir.vector_checks import CONSTRAINT_MESSAGES
from nova.ir.verify import verify_located

_CONTEXT: Context | None = None
_CONTEXT_UNREGISTERED: Context | None = None

# xDSL's string-literal pattern nests `+` inside `*`, which backtracks exponentially on a line with
# an unclosed `"` (a stray quote hung the parser for minutes). The possessive form matches exactly
# the same literals (its alternatives cannot overlap) in linear time.
MLIRLexer._unescaped_characters_regex = re.compile(
    r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
MAX_DENSE_ELEMENTS = 1 << 24
"""The largest `dense<...>` literal parsed (xDSL holds each element as a Python object)."""
MAX_INTEGER_WIDTH = (1 << 24) - 1
"""MLIR's `IntegerType::kMaxWidth`: wider integer types are refused when their token is read,
before xDSL builds anything from them (it computes each constant's bounds as Python integers of
that many bits: `i2147483647` took over 16 GiB). The LLVM lowering accepts far fewer bits
(`nova.backends.llvm.types.MAX_INTEGER_BITS`)."""
MAX_DENSE_INTEGER_WIDTH = 64
"""xDSL stores dense literals packed with `struct`, which has no format for wider integers."""
_INTEGER_TYPE = re.compile(r"[su]?i(\d+)")
_TYPE_MISMATCH = re.compile(r"operand is used with type (.+), but has been previously used or "
                            r"defined with type (.+)$")
"""xDSL's message for a value used with two types (mlir-opt: `use of value ... expects ...`)."""
_LOC_UNKNOWN = re.compile(r"loc\(\s*unknown\s*\)(?:\s|//[^\n]*)*\Z")


def _context(allow_unregistered: bool = False) -> Context:
    global _CONTEXT, _CONTEXT_UNREGISTERED
    if allow_unregistered:
        if _CONTEXT_UNREGISTERED is None:
            _CONTEXT_UNREGISTERED = make_context(allow_unregistered=True)
        return _CONTEXT_UNREGISTERED
    if _CONTEXT is None:
        _CONTEXT = make_context()
    return _CONTEXT


class _Positions:
    """Offset -> (line, column) for one source text (1-based, columns in characters)."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        index = text.find("\n")
        while index != -1:
            self.starts.append(index + 1)
            index = text.find("\n", index + 1)

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


class _LocatingParser(Parser):
    """xDSL's parser, plus a location on every op and located errors for unknown ops."""

    def __init__(self, ctx: Context, text: str, filename: str) -> None:
        super().__init__(ctx, text, filename)
        self._text = text
        self._filename = filename
        self._positions = _Positions(text)
        self._op_start = 0
        self._name_starts: list[int] = []
        self._bound: list[int] = []
        self.forward_names: dict[SSAValue, str] = {}
        self.forward_uses: dict[str, int] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """As xDSL's, but input with no operations (empty, or only comments) is an empty module,
        as for mlir-opt."""
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    def parse_shape_dimension(self, allow_dynamic: bool = True) -> int:
        """As xDSL's, but a static size must fit int64 (as in MLIR), not wrap in the lowering."""
        start = self._current_token.span
        size = super().parse_shape_dimension(allow_dynamic)
        if size >= 1 << 63:
            self.raise_error("invalid dimension: a static size must be less than 2^63", start)
        return size

    def _parse_optional_integer_or_float_type(self) -> Any:
        """As xDSL's, but an integer width over MLIR's limit is an error (MLIR's messages)
        raised before anything is built from it."""
        token = self._current_token
        if token.kind == MLIRTokenKind.BARE_IDENT:
            match = _INTEGER_TYPE.fullmatch(token.text)
            if match is not None:
                digits = match.group(1).lstrip("0")
                if len(digits) > 10 or int(digits or "0") >= 1 << 32:
                    self.raise_error("invalid integer width", token.span.start,
                                     token.span.end)
                if int(digits or "0") > MAX_INTEGER_WIDTH:
                    self.raise_error(f"integer bitwidth is limited to {MAX_INTEGER_WIDTH} bits",
                                     token.span.start, token.span.end)
        return super()._parse_optional_integer_or_float_type()

    def _parse_dense_literal_type(self) -> Any:
        start = self._current_token.span.start
        ty = super()._parse_dense_literal_type()
        self._check_dense_size(ty, start)
        return ty

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> DenseIntOrFPElementsAttr:
        if type is not None:
            self._check_dense_size(type)
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _check_dense_size(self, ty: Any, at: int | None = None) -> None:
        """xDSL expands a splat `dense<...>` to one Python value per element: refuse sizes
        that would exhaust memory instead of trying; and it packs integers with `struct`,
        which has no format for more than 64 bits."""
        element = ty.get_element_type() if hasattr(ty, "get_element_type") else None
        if isinstance(element, IntegerType) and element.width.data > MAX_DENSE_INTEGER_WIDTH:
            offset = self._op_start if at is None else at
            raise UnsupportedError(
                f"dense literal of type {ty} is not supported: Nova's dense literals hold "
                f"integers of at most {MAX_DENSE_INTEGER_WIDTH} bits (use a scalar "
                f"arith.constant for a wider integer)", self.source_location(offset))
        count = math.prod(ty.get_shape())
        if count > MAX_DENSE_ELEMENTS:
            message = (f"dense literal of type {ty} has {count} elements; Nova accepts at most "
                       f"{MAX_DENSE_ELEMENTS}")
            if at is None:
                self.raise_error(message)
            self.raise_error(message, at, at + 1)

    def resolve_operand(self, operand: UnresolvedOperand, type: AttributeInvT
                        ) -> SSAValue[AttributeInvT]:
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue):
            self.forward_names.setdefault(value, operand.span.text)
            self.forward_uses.setdefault(operand.span.text.strip(), operand.span.start)
        return value

    def source_location(self, offset: int) -> SourceLocation:
        line, col = self._positions.line_col(offset)
        return SourceLocation(self._filename, line, col, self._text)

    def _parse_op_result_list(self) -> list[tuple[Span, int]]:
        """As xDSL's; also records where the op's name starts (the token after the results),
        the position MLIR locates an op at."""
        results = super()._parse_op_result_list()
        self._name_starts.append(self._current_token.span.start)
        self._bound.append(sum(count for _, count in results))
        return results

    def bound_results(self) -> int:
        """How many results the op being parsed binds (`%a, %b:2 = ` binds 3)."""
        return self._bound[-1] if self._bound else 0

    def op_start(self) -> int:
        """Where the op being parsed starts (its results, if any)."""
        return self._op_start

    def op_name_pos(self) -> int:
        """Where the name of the op being parsed starts (for errors of custom parsers, which
        upstream reports at the op name)."""
        return self._name_starts[-1] if self._name_starts else self._op_start

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        outer = self._op_start
        self._op_start = start
        depth = len(self._name_starts)
        try:
            op = super().parse_operation()
            start = self._name_starts[depth]
        except struct.error as err:  # xDSL packing a dense literal that does not fit its type
            raise ParseError(f"a constant does not fit its element type ({err})",
                             self.source_location(start)) from err
        except (VerifyException, ValueError, KeyError, IndexError, OverflowError) as err:
            # Raised by an op's constructor or custom parser on malformed input: located at the
            # op name, as upstream locates its custom parsers' and verifiers' errors.
            at = self._name_starts[depth] if len(self._name_starts) > depth else start
            message = " ".join(str(err).split()) or type(err).__name__
            raise ParseError(_construction_message(self._text, at, message),
                             self.source_location(at)) from err
        finally:
            self._op_start = outer
            del self._name_starts[depth:]
            del self._bound[depth:]
        if isinstance(op.location, UnknownLoc) and not self._explicit_unknown(start):
            line, col = self._positions.line_col(start)
            op.location = make_loc(self._filename, line, col)
        return op

    def _explicit_unknown(self, start: int) -> bool:
        """True when the op just parsed (from `start`) ends in `loc(unknown)`: that location is
        kept (it changes what an assert reports, as upstream), only a missing one is filled in."""
        end = self._current_token.span.start
        return _LOC_UNKNOWN.search(self._text, start, end) is not None

    def _get_op_by_name(self, name: str) -> type[Operation]:
        op_type = self.ctx.get_optional_op(name,
                                           dialect_stack=self._parser_state.dialect_stack)
        if op_type is not None:
            return op_type
        self._unsupported_op(name)

    def _unsupported_op(self, name: str) -> NoReturn:
        dialect = name.split(".", 1)[0] if "." in name else ""
        if dialect in SUPPORTED_DIALECTS:
            detail = f"the '{dialect}' dialect has no op '{name}' that Nova supports"
        else:
            detail = ("supported dialects: " + ", ".join(SUPPORTED_DIALECTS)
                      + "; --allow-unregistered-dialect parses ops of other dialects")
        # Point at the op name (after any `%results =`).
        offset = self._op_start
        name_at = self._text.find(name, offset)
        if name_at != -1:
            offset = name_at - (1 if self._text[name_at - 1:name_at] == '"' else 0)
        raise UnsupportedError(f"unsupported operation '{name}' ({detail})",
                               self.source_location(offset))


_OP_NAME = re.compile(r'"?([\w.$-]+)')


def _construction_message(text: str, at: int, message: str) -> str:
    """Upstream's message for an error xDSL raises while building an op from its custom syntax:
    an element-type rule xDSL states as a type variable (`attribute f32 expected from variable
    'T', but got i32`) is upstream's trait message for that op."""
    if "expected from variable" not in message:
        return message
    match = _OP_NAME.match(text, at)
    name = match.group(1) if match else ""
    return CONSTRAINT_MESSAGES.get(name, message)


def parse_mlir(text: str, filename: str = "<stdin>", verify: bool = True,
               allow_unregistered: bool = False) -> ModuleOp:
    """Parse MLIR text into a verified `builtin.module` whose ops carry source locations.
    `allow_unregistered`: ops of unknown dialects parse (generic form) instead of failing."""
    register_source(filename, text)
    parser: _LocatingParser | None = None
    try:
        # The constructor already lexes the first token (and may fail on a stray character).
        parser = _LocatingParser(_context(allow_unregistered), text, filename)
        module = parser.parse_module()
    except DiagnosticError:
        raise
    except XdslParseError as err:
        uses = {} if parser is None else parser.forward_uses
        message, location = _describe(err, text, filename, uses)
        raise ParseError(message, location, _notes(err, text, filename)) from err
    if isinstance(module.location, UnknownLoc):
        module.location = make_loc(filename, 1, 1)
    _check_all_values_defined(module, parser.forward_names)
    if verify:
        verify_located(module)
    return module


_UNDEFINED = "values used but not defined: ["


def _check_all_values_defined(module: ModuleOp, names: dict[SSAValue, str]) -> None:
    """Reject uses of names that were only defined in a region that does not enclose the use
    (xDSL leaves those as forward references instead of reporting them)."""
    for op in module.walk():
        for value in op.operands:
            if isinstance(value, ForwardDeclaredValue):
                name = names.get(value, "%?")
                raise ParseError(f"use of undeclared SSA value name {name} (it is defined "
                                 "only in a region that does not enclose this use)",
                                 location_of(op))


def _notes(err: XdslParseError, text: str, filename: str
           ) -> tuple[tuple[str, SourceLocation | None], ...]:
    """mlir-opt's `prior use here` note of a value used with two types: at the value's first
    appearance (its definition, or its first use when it is defined later)."""
    if _TYPE_MISMATCH.match(" ".join(err.msg.split())) is None:
        return ()
    name = err.span.text.strip()
    match = re.search(re.escape(name) + r"(?![\w$.-])", text)
    if match is None or match.start() >= err.span.start:
        return ()
    line, col = _Positions(text).line_col(match.start())
    return (("prior use here", SourceLocation(filename, line, col, text)),)


def _describe(err: XdslParseError, text: str, filename: str,
              forward_uses: dict[str, int]) -> tuple[str, SourceLocation]:
    """A readable message and location for one of xDSL's parse errors (`forward_uses`: where
    each name used before its definition was first used)."""
    msg = " ".join(err.msg.split())
    offset = err.span.start
    if not text[offset:].strip():
        # At the end of input: point just after the last token (as mlir-opt does), a line that
        # exists, so the diagnostic keeps its source line and caret.
        offset = len(text.rstrip())
    if msg.startswith(_UNDEFINED):
        # xDSL reports these at the end of input; point at the first use instead, with
        # mlir-opt's message (which does not repeat the name the caret points at).
        first = msg[len(_UNDEFINED):].split(",")[0].rstrip("]").strip()
        uses = [at for name, at in forward_uses.items()
                if name == first or name.startswith(first + "#")]
        match = re.search(re.escape(first) + r"(?![\w$.-])", text)
        if uses:
            offset = min(uses)
        elif match is not None:
            offset = match.start()
        msg = "use of undeclared SSA value name"
    elif (mismatch := _TYPE_MISMATCH.match(msg)) is not None:
        name = err.span.text.strip()
        msg = (f"use of value '{name}' expects different type than prior uses: "
               f"'{mismatch.group(1)}' vs '{mismatch.group(2)}'")
    elif msg.startswith("Unexpected character") and offset < len(text):
        char = text[offset]
        msg = f"unexpected character {char!r} (U+{ord(char):04X})"
    elif msg.startswith("End of file reached before closing string literal"):
        msg = "unterminated string literal (a string must end with '\"' on the same line)"
    elif msg == "Could not parse entire input!":
        found = err.span.text.strip() if err.span.end > err.span.start else ""
        msg = f"expected an operation at top level, found '{found}'" if found else \
            "expected an operation at top level"
    elif msg.startswith("in ") or not msg:
        found = err.span.text.strip() if err.span.end > err.span.start else ""
        what = f"'{found}'" if found else "end of input"
        msg = f"unexpected {what} {msg}".strip()
    line, col = _Positions(text).line_col(offset)
    return msg, SourceLocation(filename, line, col, text)


def print_mlir(op: Operation, generic: bool = False) -> str:
    """Print `op` as `mlir-opt` does (custom syntax unless `generic`), ending in a newline."""
    return print_to_string(op, generic)
