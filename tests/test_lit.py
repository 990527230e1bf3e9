"""Run the lit golden tests (tests/filecheck) from pytest, so `pytest` covers them too.

lit runs the whole suite in parallel in one subprocess; this test fails listing every failing
golden test with lit's output for it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
_RESULT_RE = re.compile(r"^(FAIL|XPASS|UNRESOLVED|TIMEOUT): nova :: (\S+)", re.MULTILINE)


def _lit_command() -> list[str] | None:
    lit = shutil.which("lit", path=os.path.dirname(sys.executable)) or shutil.which("lit")
    if lit is not None:
        return [lit]
    try:
        import lit
    except ImportError:
        return None
    return [sys.executable, "-m", "lit.main"]


def test_filecheck_suite(tmp_path: Path) -> None:
    command = _lit_command()
    if command is None:
        pytest.skip("lit is not installed")
    jobs = str(max(os.cpu_count() or 1, 2))
    env = {**os.environ, "NOVA_LIT_OUT": str(tmp_path)}
    env.pop("NOVA_DUMP_DIR", None)
    proc = subprocess.run(
        [*command, "-sv", "-j", jobs, str(SUITE)],
        capture_output=True, text=True, env=env, timeout=1800, check=False,
    )
    failures = _RESULT_RE.findall(proc.stdout)
    if proc.returncode != 0 or failures:
        names = "\n".join(f"  {kind}: {name}" for kind, name in failures) or "  (none parsed)"
        pytest.fail(
            f"lit failed (exit {proc.returncode}); failing tests:\n{names}\n\n"
            f"--- lit output ---\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
        )
    assert re.search(r"Passed\s*:\s*[1-9]", proc.stdout), f"lit ran no tests:\n{proc.stdout}"


@pytest.mark.parametrize(("args", "expected"), [
    (["false"], 0),
    (["true"], 1),
    (["sh", "-c", "kill -9 $$"], 1),
    (["--crash", "sh", "-c", "kill -9 $$"], 0),
    (["--crash", "false"], 1),
    (["/nonexistent/tool"], 0),
])
def test_portable_not(args: list[str], expected: int) -> None:
    """tests/filecheck/tools/not: success only for a failing command (a crash with --crash)."""
    tool = SUITE / "tools" / "not"
    proc = subprocess.run([sys.executable, str(tool), *args], capture_output=True, check=False)
    assert proc.returncode == expected
