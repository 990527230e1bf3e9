"""`nova-opt --verify-diagnostics`: check a file's diagnostics against its `expected-*` comments.

MLIR's convention: `// expected-error {{text}}` expects an error on the same line whose message
contains `text`; `@+N`/`@-N` shift the line, `@above`/`@below` mean the previous/next line, and
`expected-note`/`expected-warning`/`expected-remark` work the same way; `{{regex}}` inside the
text matches a regular expression. Every expectation must be met and every produced diagnostic
expected; mismatches are reported as mlir-opt reports them (`unexpected error: ...` at the
diagnostic, `expected error "..." was not produced` at the comment, each with its source line).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nova.errors import DiagnosticError, NovaError, SourceLocation

_EXPECTED = re.compile(
    r"expected-(?P<kind>error|note|remark|warning)(?P<re>-re)? *"
    r"(?:@(?P<where>[+-]\d+|above|below|unknown))? *\{\{(?P<text>.*)\}\}\s*$"
)


@dataclass
class Expectation:
    """One `expected-*` comment: what kind, on which line (None: @unknown), which text."""

    kind: str
    line: int | None
    text: str
    regex: bool
    at: int  # the line of the comment itself
    column: int = 1  # where `expected-` starts on that line
    met: bool = False

    def matches(self, kind: str, line: int | None, message: str) -> bool:
        if self.met or kind != self.kind or line != self.line:
            return False
        if self.regex:
            return re.search(self.text, message) is not None
        return _pattern(self.text).search(message) is not None


def _pattern(text: str) -> re.Pattern[str]:
    """MLIR's expected-* text: literal, except that `{{...}}` parts are regular expressions."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(part if i % 2 else re.escape(part) for i, part in enumerate(parts)))


def parse_expectations(text: str) -> list[Expectation]:
    """The `expected-*` comments of `text`, with their target lines resolved."""
    found: list[Expectation] = []
    for number, source_line in enumerate(text.splitlines(), start=1):
        match = _EXPECTED.search(source_line)
        if match is None:
            continue
        where = match.group("where")
        line: int | None = number
        if where == "unknown":
            line = None
        elif where == "above":
            line = number - 1
        elif where == "below":
            line = number + 1
        elif where:
            line = number + int(where)
        found.append(Expectation(match.group("kind"), line, match.group("text"),
                                 bool(match.group("re")), number, match.start() + 1))
    return found


def produced(failures: Sequence[NovaError]) -> list[tuple[str, SourceLocation | None, str]]:
    """(kind, location, message) of each error and its notes."""
    found: list[tuple[str, SourceLocation | None, str]] = []
    for exc in failures:
        if not isinstance(exc, DiagnosticError):
            found.append(("error", None, str(exc)))
            continue
        found.append(("error", exc.location, exc.message))
        found += [("note", loc, text) for text, loc in exc.notes]
    return found


def check(text: str, filename: str, failures: Sequence[NovaError]) -> list[str]:
    """Problems (MLIR-style diagnostics) comparing what was produced with what `text` expects."""
    expectations = parse_expectations(text)
    problems: list[str] = []
    for kind, location, message in produced(failures):
        line = location.line if location is not None else None
        match = next((e for e in expectations if e.matches(kind, line, message)), None)
        if match is None:
            problems.append(_render(location, filename, f"unexpected {kind}: {message}"))
        else:
            match.met = True
    for expectation in expectations:
        if not expectation.met:
            where = SourceLocation(filename, expectation.at, expectation.column, text)
            problems.append(_render(where, filename, f"expected {expectation.kind} "
                                                     f"\"{expectation.text}\" was not produced"))
    return problems


def _render(location: SourceLocation | None, filename: str, message: str) -> str:
    if location is None:
        return f"{filename}: error: {message}"
    excerpt = location.excerpt()
    return f"{location}: error: {message}" + (f"\n{excerpt}" if excerpt else "")
