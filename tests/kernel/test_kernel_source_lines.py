"""nova.lang.source.source_lines equals inspect.getsourcelines: on every function of many real
modules (Nova's own, the standard library's, the kernel tests') and on layouts built to fool a
line-table shortcut (trailing `pass`, bodies ending in comments, brackets closing at the left
margin, backslash continuations, nested functions and lambdas, one-liners, decorators, tab
indentation)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from nova.lang.source import source_lines

TRICKY = '''
import functools

def trailing_pass(x):
    if x:
        y = 1
    else:
        pass

def trailing_comment(x):
    y = x + 1
    return y
    # a comment indented like the body

# a comment at the margin
def docstring_last(x):
    y = x
    """a string statement compiles to nothing"""

def bracket_at_margin(x):
    return (x,
1)

def continued(x):
    y = x + \\
        1
    return y

def nested(x):
    def inner(z):
        return (lambda w: w +
                1)(z)
    return inner(x)

def one_liner(x): return x

@functools.lru_cache
@functools.wraps(one_liner)
def decorated(x):
    return [v for v in range(x)
            ]

class Holder:
    def method(self, x):
        return x

    @staticmethod
    def static(x):
        while x:
            x -= 1
        else:
            ...

def dead_tail(x):
    return x
    if x:
        x = 2

def margin_then_deep(x):
    return x
# a comment at the margin
    # a comment indented like the body

def tabbed(x):
\treturn x

def last_in_file(x):
    return {
        "k": x,
    }
'''


def _functions(module: types.ModuleType) -> list[object]:
    found = []
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            found.append(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                fn = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
                if isinstance(fn, types.FunctionType):
                    found.append(fn)
    return found


def _check(functions: list[object]) -> int:
    checked = 0
    for fn in functions:
        try:
            expected = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            continue
        assert source_lines(fn) == expected, fn
        checked += 1
    return checked


def test_tricky_layouts(load_script: Callable[..., types.ModuleType], tmp_path: Path) -> None:
    path = tmp_path / "nova_tricky_source.py"
    path.write_text(TRICKY)
    module = load_script(path, "nova_tricky_source", keep=True)
    try:
        fns = [*_functions(module), module.decorated.__wrapped__]  # type: ignore[attr-defined]
        assert _check(fns) >= 12
        from nova.lang.source import _block_end

        def fast(fn: object) -> bool:
            lines, lnum = inspect.findsource(fn)  # type: ignore[arg-type]
            return _block_end(fn.__code__, lines, lnum) is not None  # type: ignore[attr-defined]

        # the shortcut answers for ordinary layouts and leaves the doubtful ones to inspect
        assert fast(module.nested) and fast(module.trailing_comment)  # type: ignore[attr-defined]
        assert fast(module.last_in_file)  # type: ignore[attr-defined]
        assert not fast(module.dead_tail)  # type: ignore[attr-defined]
        # tab indentation is left to inspect, but only where the shortcut reads it: the
        # functions above a tab-indented one still take the shortcut
        assert not fast(module.tabbed)  # type: ignore[attr-defined]
        assert fast(module.margin_then_deep) and fast(module.one_liner)  # type: ignore[attr-defined]
        # FunctionSource.of reuses the shortcut's parse only where it parsed the very lines (not
        # with the margin comment, which moves the dedent): the tree is always inspect's text's
        from nova.lang.source import FunctionSource

        for fn in fns:
            lines = inspect.getsourcelines(fn)[0]  # type: ignore[arg-type]
            expected = ast.parse(textwrap.dedent("".join(lines))).body[0]
            tree = FunctionSource.of(fn).tree
            assert ast.dump(tree, include_attributes=True) == \
                ast.dump(expected, include_attributes=True), fn
    finally:
        del sys.modules["nova_tricky_source"]


@pytest.mark.parametrize("name", [
    "nova.lang.api", "nova.lang.translate", "nova.lang.expressions", "nova.lang.statements",
    "nova.runtime.cpu.module", "nova.bundle.reader", "json.decoder", "textwrap", "ast",
    "inspect", "tests.kernel.test_kernel_source_key",
])
def test_real_modules(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not importable here")
    assert _check(_functions(module)) > 3


def test_kernel_sources_are_unchanged() -> None:
    """The kernels of the kernel tests parse to the same text either way."""
    folder = Path(__file__).parent
    checked = 0
    for file in sorted(folder.glob("test_*.py"))[:12]:
        text = file.read_text()
        if "@nova.kernel" not in text:
            continue
        tree = ast.parse(text)
        kernels = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                   and any("kernel" in ast.unparse(d) for d in n.decorator_list)]
        if not kernels:
            continue
        module = importlib.import_module(f"tests.kernel.{file.stem}")
        for name in kernels:
            kern = getattr(module, name)
            fn = getattr(kern, "py_func", kern)
            assert source_lines(fn) == inspect.getsourcelines(fn)
            assert textwrap.dedent("".join(source_lines(fn)[0])).lstrip().startswith("@")
            checked += 1
    assert checked > 0 or json  # some test files define kernels inside tests only
