"""Result checks shared by the bench scripts: a benchmark whose numbers come from wrong results
must not look like a success (issue 12 item 6).

Each script records every verification of what it timed (`record(what, ok)`) and ends with
`sys.exit(finish())`: a failed check is printed as `CHECK FAILED: <what>` and the script exits
1, before writing any result file. tests/unit/test_bench_checks.py runs the scripts on the cpu
device with every kernel replaced by a no-op and expects exactly that.
"""

from __future__ import annotations

import sys

_failed: list[str] = []


def record(what: str, ok: bool) -> bool:
    """Remember one verification; returns `ok` (for tables that show it)."""
    if not ok:
        _failed.append(what)
    return ok


def failed() -> list[str]:
    """What failed so far."""
    return list(_failed)


def finish() -> int:
    """0 when every check passed; else print each failure to stderr and return 1."""
    for what in _failed:
        print(f"CHECK FAILED: {what}", file=sys.stderr)
    return 1 if _failed else 0
