"""Python source of kernels and device functions: the AST, absolute locations, captured names.

`FunctionSource.of(pyfunc)` parses the function's source once. Positions in its AST are relative
to the dedented source; `location(node)` turns them into absolute `file:line:col` locations whose
excerpt shows the real source line with a caret, as Python's own SyntaxError does.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from typing import TYPE_CHECKING, Any

from nova.errors import DiagnosticError, SourceLocation
from nova.hashing import sha256
from nova.records import MutableRecord

if TYPE_CHECKING:
    from nova.lang.kernel_errors import KernelSyntaxError as KernelSyntaxError
    from nova.lang.kernel_errors import KernelTypeError as KernelTypeError


def source_lines(func: Any) -> tuple[list[str], int]:
    """`inspect.getsourcelines(func)`, without tokenizing the function when its code's line
    table shows where it ends: `inspect.getblock` tokenizes, and compiling tokenize's regular
    expression alone costs about 2 ms of a cached kernel's cold start. `_block_end` answers only
    when the lines after the last line holding code end the block for certain, and the lines up
    to there must parse as exactly that one function; anything else takes inspect's way.
    tests/kernel/test_kernel_source_lines.py compares both on many functions."""
    lines, first_line, _ = _source_lines(func)
    return lines, first_line


def _source_lines(func: Any) -> tuple[list[str], int, ast.Module | None]:
    """`source_lines`, and the parsed dedented text of those lines when `_block_end` parsed
    exactly them (None otherwise): `FunctionSource.of` then needs no second parse."""
    func = inspect.unwrap(func)
    lines, lnum = _find_source(func)
    code = getattr(func, "__code__", None)
    found = _block_end(code, lines, lnum) if code is not None else None
    if found is not None:
        end, tree = found
        return lines[lnum:end], lnum + 1, tree
    return inspect.getblock(lines[lnum:]), lnum + 1, None


def _find_source(func: Any) -> tuple[list[str], int]:
    """`inspect.findsource(func)`, without compiling its regular expression (about 1 ms of a
    cached kernel's cold start) when the function's first line (`co_firstlineno`: its first
    decorator or its `def`) starts with `@` or `def` after spaces and tabs, which that expression
    matches at once; anything else asks inspect."""
    code = getattr(func, "__code__", None)
    file = inspect.getsourcefile(func) if inspect.isfunction(func) else None
    if code is None or not file:
        return inspect.findsource(func)
    linecache.checkcache(file)
    module = inspect.getmodule(func, file)
    lines = linecache.getlines(file, module.__dict__) if module else linecache.getlines(file)
    lnum = code.co_firstlineno - 1
    if not lines or not 0 <= lnum < len(lines):
        return inspect.findsource(func)
    line = lines[lnum]
    rest = line.lstrip(" \t")
    if lnum == 0 or rest.startswith("@") or (rest.startswith("def") and rest[3:4] in (" ", "\t")):
        return lines, lnum
    return inspect.findsource(func)


def _last_line(code: Any) -> int:
    """The last source line holding code of `code` and the code objects nested in it."""
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return int(last)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _tab_indented(line: str) -> bool:
    return "\t" in line[:len(line) - len(line.lstrip())]


def _block_end(code: Any, lines: list[str], lnum: int) -> tuple[int, ast.Module | None] | None:
    """(the line index after the function starting at `lines[lnum]`, the parse of the lines up
    to there when those are exactly the lines parsed here, else None), or None when unsure. The
    lines up to the function's last code line must parse as one function ending there; after it
    may come blank lines and comments (those indented at least as deep as the body belong to the
    block, as inspect.getblock counts them), then a line indented no deeper than the function's
    first line, or the end of the file."""
    last = _last_line(code)
    if last <= lnum or last > len(lines) or lines[last - 1].rstrip().endswith("\\"):
        return None
    block = lines[lnum:last]
    if any(_tab_indented(line) for line in block):
        return None  # tabs: indentation is not a character count (the lines after: below)
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError):
        return None
    fn = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.end_lineno != len(block):
        return None
    first_body = fn.body[0].lineno
    body_col = None if first_body == fn.lineno else _indent(lines[lnum + first_body - 1])
    first, end = _indent(lines[lnum]), last
    for index in range(last, len(lines)):
        line = lines[index]
        if _tab_indented(line):
            return None  # only the lines looked at: a kernel atop a long file reads no more
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if body_col is not None and _indent(line) >= body_col:
                end = index + 1
            continue
        return (end, tree if end == last else None) if _indent(line) <= first else None
    return end, tree if end == last else None


class FunctionSource(MutableRecord):
    """A parsed Python function: AST, file, line offset and the names it can see."""

    __match_args__ = ("func", "tree", "filename", "first_line", "indent", "file_text", "text",
                      "_digest")
    _fields = __match_args__
    _repr_fields = ("func", "tree", "filename", "first_line", "indent", "file_text", "text")

    func: Any
    tree: ast.FunctionDef
    filename: str
    first_line: int
    indent: int
    file_text: str | None
    text: str
    _digest: str

    def __init__(self, func: Any, tree: ast.FunctionDef, filename: str, first_line: int,
                 indent: int, file_text: str | None, text: str, _digest: str = "") -> None:
        self.func = func
        self.tree = tree
        self.filename = filename
        self.first_line = first_line
        self.indent = indent
        self.file_text = file_text
        self.text = text
        self._digest = _digest

    @staticmethod
    def of(func: Any) -> FunctionSource:
        try:
            lines, first_line, parsed = _source_lines(func)
            filename = inspect.getsourcefile(func) or "<unknown>"
        except (OSError, TypeError) as exc:
            raise DiagnosticError(f"cannot read the source of {func!r}: {exc} (kernels must be "
                                  f"defined in a file, not typed into an interactive prompt)"
                                  ) from exc
        raw = "".join(lines)
        text = textwrap.dedent(raw)
        indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        tree = ast.parse(text) if parsed is None else parsed  # the same text, parsed once
        fn = tree.body[0]
        if not isinstance(fn, ast.FunctionDef):
            raise DiagnosticError(f"{func!r} is not a plain 'def' function")
        file_text = "".join(linecache.getlines(filename)) or None
        return FunctionSource(func, fn, filename, first_line, indent, file_text, text)

    @property
    def name(self) -> str:
        return self.tree.name

    @property
    def digest(self) -> str:
        if not self._digest:
            self._digest = sha256(self.text.encode()).hexdigest()
        return self._digest

    def location(self, node: ast.AST | None) -> SourceLocation:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        return SourceLocation(self.filename, self.first_line + line - 1, col + self.indent + 1,
                              self.file_text)

    def lookup_global(self, name: str) -> tuple[bool, Any]:
        """(found, value) of a free name: closure cells, then module globals, then builtins."""
        code = self.func.__code__
        if name in code.co_freevars and self.func.__closure__ is not None:
            cell = self.func.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        if name in self.func.__globals__:
            return True, self.func.__globals__[name]
        import builtins

        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None


def assigned_names(body: list[ast.stmt]) -> tuple[dict[str, int], set[str]]:
    """(assignment count per name, names whose only assignment is a top-level statement)."""
    counter = _AssignmentCounter()
    counter.walk(body, True)
    counts = counter.counts
    return counts, {n for n in counter.top if counts.get(n) == 1}


class _AssignmentCounter:
    """The names statements assign (store context), counted, for `assigned_names`."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.top: set[str] = set()

    def walk(self, stmts: list[ast.stmt], top_level: bool) -> None:
        for stmt in stmts:
            self.statement_targets(stmt, top_level)
            self.walrus_targets(stmt)
            for attr in ("body", "orelse"):
                inner = getattr(stmt, attr, None)
                if isinstance(inner, list):
                    self.walk(inner, False)

    def statement_targets(self, stmt: ast.stmt, top_level: bool) -> None:
        """The targets of `=`, `x: T = ...`, `+=` (counted twice: read and written) and `for`."""
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                self.bump(t, top_level)
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            self.bump(stmt.target, top_level and isinstance(stmt, ast.AnnAssign))
            if isinstance(stmt, ast.AugAssign):
                self.bump(stmt.target, False)
        elif isinstance(stmt, ast.For):
            self.bump(stmt.target, False)

    def walrus_targets(self, stmt: ast.stmt) -> None:
        """`:=` in the statement's own parts (test, value, iter), not in nested statements."""
        for field_name in ("test", "value", "iter"):
            part = getattr(stmt, field_name, None)
            if isinstance(part, ast.AST):
                for node in ast.walk(part):
                    if isinstance(node, ast.NamedExpr):
                        self.bump(node.target, False)

    def bump(self, target: ast.AST, top_level: bool) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.counts[node.id] = self.counts.get(node.id, 0) + 1
                if top_level:
                    self.top.add(node.id)


_KERNEL_ERRORS = ("KernelTypeError", "KernelSyntaxError")


def __getattr__(name: str) -> Any:
    """`KernelTypeError` and `KernelSyntaxError`, made on first use (nova.lang.kernel_errors)."""
    if name not in _KERNEL_ERRORS:
        raise AttributeError(f"module 'nova.lang.source' has no attribute {name!r}")
    from nova.lang import kernel_errors  # the import lock makes each class once

    value = getattr(kernel_errors, name)
    globals()[name] = value
    return value
