"""Source locations of ops: `location_of(op)` / `set_location(op, loc)`.

Mechanism: the location is stored in the op itself, in xDSL's `Operation.location` field, as a
`FileLineColLoc(filename, line, column)` attribute. `Operation.clone()` copies that field, so
locations survive cloning, rewriting and outlining done by passes without any bookkeeping (a
pass that builds a brand-new op should `set_location(new, location_of(old))`). The source text
(for the caret excerpt of diagnostics) lives in a registry keyed by filename, filled by
`nova.ir.parser.parse_mlir`; when a filename is parsed twice, the latest text wins.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    NameLoc,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation

from nova.errors import SourceLocation

_SOURCES: dict[str, str] = {}


def register_source(filename: str, text: str) -> None:
    """Remember `text` as the contents of `filename` (used for diagnostic excerpts)."""
    _SOURCES[filename] = text


def source_of(filename: str) -> str | None:
    """The registered text of `filename`, if any."""
    return _SOURCES.get(filename)


def make_loc(filename: str, line: int, column: int) -> FileLineColLoc:
    """An MLIR `loc("file":line:col)` attribute."""
    return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(column))


def file_location(loc: Attribute) -> FileLineColLoc | None:
    """The file:line:col location a diagnostic at `loc` shows, as MLIR's source manager picks
    it: a name location's child, a call site's callee, a fused location's first that has one."""
    if isinstance(loc, FileLineColLoc):
        return loc
    if isinstance(loc, NameLoc):
        return file_location(loc.location)
    if isinstance(loc, CallSiteLoc):
        return file_location(loc.callee)
    if isinstance(loc, FusedLoc):
        for inner in loc.locations.data:  # type: ignore[attr-defined]
            found = file_location(inner)
            if found is not None:
                return found
    return None


def location_of(op: Operation) -> SourceLocation | None:
    """Where `op` came from in the source (see `file_location`), or None when unknown."""
    loc = file_location(op.location)
    if loc is None:
        return None
    filename = loc.filename.data
    return SourceLocation(filename, loc.line.data, loc.column.data, _SOURCES.get(filename))


def nearest_location(op: Operation) -> SourceLocation | None:
    """`location_of(op)`, else that of its closest ancestor that has one."""
    current: Operation | None = op
    while current is not None:
        loc = location_of(current)
        if loc is not None:
            return loc
        current = current.parent_op()
    return None


def set_location(op: Operation, loc: SourceLocation | None) -> None:
    """Record `loc` as `op`'s location (None clears it); registers the source text too."""
    if loc is None:
        op.location = UnknownLoc()
        return
    if loc.source is not None:
        _SOURCES.setdefault(loc.filename, loc.source)
    op.location = make_loc(loc.filename, loc.line, loc.column)


UNKNOWN_SITE = "(unknown)"
"""The file and function name of an assert report whose location does not give them."""


def assert_site(op: Operation) -> tuple[str, int, str]:
    """(file, line, function) of a device assertion's report, resolved from `op`'s location
    exactly as upstream MLIR's `cf.assert` -> `__assertfail` lowering does (GPU to NVVM):
    call sites are unwrapped to their innermost callee; a file:line:col location gives the file
    and line (the function stays unknown); a name location gives the function, and the file and
    line when its child is a file:line:col location; anything else (fused, unknown, a name over
    a call site) gives `(unknown)`, line 0."""
    loc: Attribute = op.location
    while isinstance(loc, CallSiteLoc):
        loc = loc.callee
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data, UNKNOWN_SITE
    if isinstance(loc, NameLoc):
        child = loc.location
        if isinstance(child, FileLineColLoc):
            return child.filename.data, child.line.data, loc.desc.data
        return UNKNOWN_SITE, 0, loc.desc.data
    return UNKNOWN_SITE, 0, UNKNOWN_SITE
