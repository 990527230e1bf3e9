"""The package layering of docs/architecture.md, enforced: every `nova.*` import in src/ (at
module level, inside functions and under TYPE_CHECKING alike) must go in an allowed direction, and
the module-level imports must form no cycle.

Each rule names a package (or module) and the packages it may import. A module belongs to the
longest rule prefix that matches it; imports inside the same rule are always allowed (but count for
the cycle check). Keep this table and the diagram in docs/architecture.md in step.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

BASE = ("nova.records", "nova.errors", "nova.hashing", "nova.config", "nova.abi")
RUNTIME_CORE = ("nova.runtime", *BASE, "nova.bundle")
# rule -> what it may import (besides itself)
ALLOWED: dict[str, tuple[str, ...]] = {
    "nova.records": (),
    "nova.errors": ("nova.records",),
    "nova.hashing": (),
    "nova.config": ("nova.records", "nova.errors", "nova.hashing"),
    "nova.abi": ("nova.records", "nova.errors"),
    "nova.bundle": BASE,
    "nova.ir": BASE,
    "nova.passes": (*BASE, "nova.ir"),
    "nova.backends.llvm": (*BASE, "nova.ir", "nova.bundle"),
    "nova.backends.kernel_abi": (*BASE, "nova.ir", "nova.bundle", "nova.backends.llvm"),
    "nova.backends.nvptx": (*BASE, "nova.ir", "nova.bundle", "nova.backends.llvm",
                            "nova.backends.kernel_abi"),
    "nova.backends.cpu": (*BASE, "nova.ir", "nova.bundle", "nova.backends.llvm",
                          "nova.backends.kernel_abi", "nova.backends.x86"),
    "nova.backends.host": (*BASE, "nova.ir", "nova.bundle", "nova.backends.llvm",
                           "nova.backends.kernel_abi"),
    "nova.backends.x86": (*BASE, "nova.backends.llvm"),
    "nova.backends": (*BASE, "nova.ir", "nova.bundle", "nova.passes"),
    # the runtime never imports the compiler side; device packages never import each other
    "nova.runtime.cuda": RUNTIME_CORE,
    "nova.runtime.cpu": RUNTIME_CORE,
    "nova.runtime.selection": (*RUNTIME_CORE, "nova.runtime.cuda", "nova.runtime.cpu"),
    "nova.runtime": RUNTIME_CORE,
    "nova.compiler": (*BASE, "nova.ir", "nova.passes", "nova.backends", "nova.bundle",
                      "nova.runtime"),
    "nova.lang": (*BASE, "nova.ir", "nova.compiler", "nova.backends", "nova.bundle",
                  "nova.runtime"),
    # applications of the spine: the LZ4 page pipeline and the model compiler
    "nova.lz4": (*BASE, "nova.lang", "nova.runtime", "nova.bundle", "nova.compiler"),
    "nova.models": (*BASE, "nova.lang", "nova.runtime", "nova.bundle", "nova.compiler"),
    "nova.cli": ("nova",),
    "nova.__main__": ("nova",),
    "nova": ("nova",),  # the package itself: lazy re-exports of the public API
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _rule(module: str) -> str:
    best = ""
    for rule in ALLOWED:
        if (module == rule or module.startswith(rule + ".")) and len(rule) > len(best):
            best = rule
    assert best, f"no layering rule covers {module}: add it to ALLOWED"
    return best


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path) -> list[tuple[str, bool, int]]:
    """(imported module, at module level?, line) for every nova import in `path`."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            continue
        top_level.add(id(stmt))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            # `from pkg import submodule` imports the submodule
            targets = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base
                       for a in node.names]
        else:
            continue
        found.extend((t, id(node) in top_level, node.lineno)
                     for t in targets if t == "nova" or t.startswith("nova."))
    return found


def _is_module(dotted: str) -> bool:
    path = SRC / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _allowed(importer: str, imported: str) -> bool:
    rule = _rule(importer)
    if imported == rule or imported.startswith(rule + "."):
        return True
    if importer.startswith(imported + "."):  # a package's own ancestors (their __init__)
        return True
    return any(imported == ok or imported.startswith(ok + ".") for ok in ALLOWED[rule])


def test_every_import_goes_in_an_allowed_direction() -> None:
    bad = []
    for path in _sources():
        importer = _module_name(path)
        for imported, _, line in _imports(path):
            if not _allowed(importer, imported):
                bad.append(f"{path.relative_to(SRC)}:{line}: {importer} imports {imported} "
                           f"(rule {_rule(importer)})")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_module_level_imports_have_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for path in _sources():
        importer = _module_name(path)
        graph[importer] = {imported for imported, top, _ in _imports(path)
                           if top and not importer.startswith(imported + ".")
                           and imported != importer}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return [*stack[stack.index(succ):], succ]
            if succ not in state:
                cycle = visit(succ)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            assert cycle is None, "module-level import cycle: " + " -> ".join(cycle)


def test_device_specific_code_lives_in_device_packages() -> None:
    """No `.kind == "cuda"` style string switches on devices outside runtime/cuda, runtime/cpu:
    shared code asks the Device (hooks) or compares DeviceKind members."""
    pattern_hits = []
    for path in _sources():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(("nova/runtime/cuda/", "nova/runtime/cpu/")):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            for word in ('"cuda"', '"cpu"', '"gpu"'):
                if word in code and (".kind" in code or "kind ==" in code or "kind !=" in code):
                    pattern_hits.append(f"{rel}:{number}: {line.strip()}")
    assert not pattern_hits, "device string switches:\n" + "\n".join(pattern_hits)


@pytest.mark.parametrize("rule", sorted(ALLOWED))
def test_every_rule_names_existing_code(rule: str) -> None:
    assert _is_module(rule), f"layering rule {rule} names no module or package"
