"""`nova-opt --verify-diagnostics`: check a file's diagnostics against its `expected-*` comments.

MLIR's convention: `// expected-error {{text}}` expects an error on the same line whose message
contains `text`; `@+N`/`@-N` shift the line, `@above`/`@below` mean the previous/next line, and
`expected-note`/`expected-warning`/`expected-remark` work the same way. Every expectation must be
met and every produced diagnostic expected; mismatches are reported as errors.
"""

from __future__ import annotations

import re
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
    met: bool = False

    def matches(self, kind: str, line: int | None, message: str) -> bool:
        if self.met or kind != self.kind or line != self.line:
            return False
        if self.regex:
            return re.search(self.text, message) is not None
        return self.text in message


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
                                 bool(match.group("re")), number))
    return found


def produced(exc: NovaError) -> list[tuple[str, SourceLocation | None, str]]:
    """(kind, location, message) of an error and its notes."""
    if not isinstance(exc, DiagnosticError):
        return [("error", None, str(exc))]
    return [("error", exc.location, exc.message),
            *(("note", loc, text) for text, loc in exc.notes)]


def check(text: str, filename: str, failure: NovaError | None) -> list[str]:
    """Problems (MLIR-style messages) comparing what was produced with what `text` expects."""
    expectations = parse_expectations(text)
    problems: list[str] = []
    for kind, location, message in produced(failure) if failure is not None else []:
        line = location.line if location is not None else None
        match = next((e for e in expectations if e.matches(kind, line, message)), None)
        if match is None:
            where = str(location) if location is not None else filename
            problems.append(f"{where}: error: unexpected {kind}: {message}")
        else:
            match.met = True
    for expectation in expectations:
        if not expectation.met:
            problems.append(f"{filename}:{expectation.at}: error: expected {expectation.kind} "
                            f"\"{expectation.text}\" was not produced")
    return problems
