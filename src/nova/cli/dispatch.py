"""Dispatch `python -m nova <tool> args...` to the tool's main()."""

from __future__ import annotations

import importlib
import sys

TOOLS = {
    "translate": "nova.cli.translate",
    "opt": "nova.cli.opt",
    "run": "nova.cli.run",
    "objdump": "nova.cli.objdump",
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in TOOLS:
        print(f"usage: python -m nova {{{','.join(TOOLS)}}} [args...]", file=sys.stderr)
        return 2
    tool = importlib.import_module(TOOLS[args[0]])
    return int(tool.main(args[1:]) or 0)
