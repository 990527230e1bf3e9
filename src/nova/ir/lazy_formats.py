"""Parse xDSL declarative assembly formats on first use instead of at class definition.

xDSL 0.74 parses every op's `assembly_format` string into a `FormatProgram` when the op class is
decorated with `irdl_op_definition`, i.e. while its dialect module is imported. Importing the
dialects Nova parses defines ~80 such ops, and parsing their formats was about a fifth of the
compiler's import cost (the largest part of a cold compile), although a program uses a handful.

`install()` replaces `FormatProgram.from_str` with a function returning a `LazyFormatProgram`,
which parses the format the first time an op of that class is parsed or printed. Behaviour is
otherwise identical: the same program is built from the same string, and a malformed format
raises the same `PyRDLOpDefinitionError` (at first use rather than at import). Ops decorated
before `install()` ran keep their eagerly parsed programs. Idempotent and thread-safe (two
threads racing on first use both build an equal program; either is kept).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.irdl import declarative_assembly_format as _daf
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

if TYPE_CHECKING:
    from xdsl.irdl import IRDLOperation, OpDef
    from xdsl.parser import Parser
    from xdsl.printer import Printer

_EAGER_FROM_STR = _daf.FormatProgram.from_str


class LazyFormatProgram:
    """Stands in for a `FormatProgram`: parses `text` for `op_def` when first needed."""

    __slots__ = ("_op_def", "_program", "_text")

    def __init__(self, text: str, op_def: OpDef) -> None:
        self._text = text
        self._op_def = op_def
        self._program: _daf.FormatProgram | None = None

    def program(self) -> _daf.FormatProgram:
        """The parsed program (parsed now if this is the first use)."""
        program = self._program
        if program is None:
            try:
                program = _EAGER_FROM_STR(self._text, self._op_def)
            except ParseError as exc:  # what irdl_op_definition raises for a bad format
                raise PyRDLOpDefinitionError(
                    "Error during the parsing of the assembly format: ", exc.args) from exc
            self._program = program
        return program

    def parse(self, parser: Parser, op_type: type[IRDLOperation]) -> IRDLOperation:
        return self.program().parse(parser, op_type)

    def print(self, printer: Printer, op: IRDLOperation) -> None:
        return self.program().print(printer, op)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.program(), name)


def _lazy_from_str(input: str, op_def: OpDef) -> LazyFormatProgram:
    return LazyFormatProgram(input, op_def)


def install() -> None:
    """Make op classes defined from now on parse their assembly format lazily."""
    # LazyFormatProgram stands in for FormatProgram (it forwards every attribute to the real one)
    _daf.FormatProgram.from_str = staticmethod(_lazy_from_str)  # type: ignore[method-assign,assignment]


def installed() -> bool:
    """Whether `install()` has run in this process."""
    return _daf.FormatProgram.__dict__["from_str"].__func__ is _lazy_from_str
