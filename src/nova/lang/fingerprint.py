"""The source key of a kernel signature: its disk-cache key, computed without the compiler.

A kernel's generated code is a function of (docs/python-kernels.md, "The disk cache"):

- its Python source text, file and position (positions reach error messages and bounds checks);
- every value its free names resolve to, as the translator resolves them (closure cells, module
  globals, builtins): numbers, strings, tuples/lists of them, Nova types, NumPy scalars, classes
  and functions of Nova, NumPy and the standard library by name, modules by name and the values
  of every attribute name the kernel or a device function it reaches uses (a module may be passed
  to a helper), and `@nova.func` device functions (and kernels) by their own fingerprint,
  recursively;
- the signature (every field of each argument type), the kernel's symbol name, the target, its
  arch, the bounds-check option and the configuration compiled into code (`codegen_settings`:
  the CPU device's fiber stack size);
- the compiler: Nova's version and a fingerprint of its compiler-side sources, the xDSL, llvmlite
  and NumPy versions, the ptxas in use and the Python version (`environment_fingerprint`).

A free name that resolves to anything else (an instance of a user class, a dict, a plain Python
function, an array, ...) makes the source key unknown (`source_key` returns None): the kernel is
then cached by its MLIR only, as the translator's reading of such values cannot be described here.
This module imports neither xDSL nor the compiler.
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

from nova.compiler.cache import codegen_settings, environment_fingerprint
from nova.hashing import canonical, sha256
from nova.lang import types as T
from nova.lang.source import FunctionSource, assigned_names

_TRUSTED_MODULES = ("builtins", "math", "cmath", "operator", "numpy", "ml_dtypes")
"""Packages whose classes and functions are fingerprinted by name: their meaning in a kernel is
fixed by the name (and the package versions in the key), not by user code."""
_MAX_ITEMS = 4096  # a longer tuple/list constant is hashed anyway, but this bounds recursion work
_MAX_DEPTH = 8


class _Opaque(Exception):
    """A referenced value whose meaning to the translator this fingerprint cannot capture."""


def source_key(kernel: Any, sig: tuple[T.NovaType, ...], target: str, arch: str,
               check_bounds: bool) -> str | None:
    """The SHA-256 source key of `kernel` (a @nova.kernel) for one signature and target, or None
    when the kernel references a value that cannot be fingerprinted soundly."""
    try:
        walked = _Fingerprinter().run(kernel)
    except Exception:  # _Opaque, or a referenced object failing when inspected: no source key
        return None
    numpy = sys.modules.get("numpy")
    payload = {
        "kind": "python-kernel-source", "schema": 2, "symbol": kernel.__name__,
        "walk": walked, "signature": [type_fingerprint(t) for t in sig],
        "target": target, "arch": arch, "check_bounds": check_bounds,
        "python": list(sys.version_info[:3]),
        "numpy": getattr(numpy, "__version__", "absent"),
        **environment_fingerprint(), **codegen_settings(),
    }
    return sha256(canonical(payload).encode()).hexdigest()


def type_fingerprint(ty: T.NovaType) -> list[Any]:
    """Every field of a Nova type (an ArrayType's alignment and aliasing facts included)."""
    if isinstance(ty, T.ScalarType):
        return ["scalar", ty.name, ty.kind, ty.bits]
    return ["array", type_fingerprint(ty.dtype), ty.ndim,
            None if ty.shape is None else list(ty.shape), ty.space, ty.align, ty.noalias]


def free_names(src: FunctionSource) -> tuple[list[str], list[str]]:
    """(names the translator may look up outside the function, attribute names it reads): every
    loaded name that is neither a parameter nor assigned in the body (the translator resolves
    those locally or reports them), and every `.attr` of the function."""
    tree = src.tree
    a = tree.args
    params = {arg.arg for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    params.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    assigned, _ = assigned_names(tree.body)
    names: set[str] = set()
    attrs: set[str] = set()
    # the decorators are not translated; the signature's annotations and defaults may be read
    parts: list[ast.AST] = [tree.args, *tree.body]
    if tree.returns is not None:
        parts.append(tree.returns)
    for node in _nodes(parts):
        if isinstance(node, ast.Name) and node.id not in params and node.id not in assigned:
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            attrs.add(node.attr)
    return sorted(names), sorted(attrs)


def _nodes(parts: list[ast.AST]) -> list[ast.AST]:
    """Every node of the trees `parts` (`ast.walk`'s nodes, in another order): one loop over a
    list, without ast.walk's generators per node (a cached kernel's first call walks its
    kernel)."""
    found: list[ast.AST] = []
    stack = list(parts)
    node_type = ast.AST
    while stack:
        node = stack.pop()
        found.append(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, node_type):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend([item for item in value if isinstance(item, node_type)])
    return found


class _Fingerprinter:
    """Walks a kernel and the device functions it reaches; each function and module is described
    once (by position in `functions` / `modules`), so recursion and shared helpers terminate.

    A module is described by the values of *every* attribute name any reached function uses (a
    module may be handed to a device function that reads attributes the kernel never names), so
    modules are described after the walk, again until no new function, module or attribute name
    appears."""

    def __init__(self) -> None:
        self.functions: list[Any] = []
        self.index: dict[int, int] = {}
        self.module_list: list[types.ModuleType] = []
        self.module_index: dict[int, int] = {}
        self.attrs: set[str] = set()
        self.keep: list[Any] = []  # ids stay unique while the walk runs

    def run(self, kernel: Any) -> dict[str, Any]:
        self.function(kernel)
        while True:
            before = (len(self.functions), len(self.module_list), len(self.attrs))
            modules = [self.describe(m) for m in list(self.module_list)]
            if (len(self.functions), len(self.module_list), len(self.attrs)) == before:
                return {"functions": self.functions, "modules": modules}

    def function(self, fn: Any) -> int:
        found = self.index.get(id(fn))
        if found is not None:
            return found
        position = self.index[id(fn)] = len(self.functions)
        self.keep.append(fn)
        self.functions.append(None)
        try:
            src = fn.source
        except Exception as exc:  # no readable source: the translator would fail too
            raise _Opaque from exc
        names, attrs = free_names(src)
        self.attrs.update(attrs)
        resolved = {}
        for name in names:
            ok, value = src.lookup_global(name)
            resolved[name] = self.value(value, 0) if ok else ["undefined"]
        kind = "kernel" if getattr(fn, "__nova_kernel__", False) else "func"
        self.functions[position] = {
            "kind": kind, "file": src.filename, "line": src.first_line, "indent": src.indent,
            "text": src.text, "names": resolved,
        }
        return position

    def value(self, v: Any, depth: int) -> Any:
        """A JSON-able description of `v` that changes whenever its meaning in a kernel can."""
        if depth > _MAX_DEPTH:
            raise _Opaque
        cls = type(v)
        if v is None or cls in (bool, int, float, complex, str, bytes):
            return [cls.__name__, repr(v)]
        if cls in (tuple, list):
            if len(v) > _MAX_ITEMS:
                raise _Opaque
            return [cls.__name__, [self.value(x, depth + 1) for x in v]]
        if cls is T.ScalarType or cls is T.ArrayType:
            return ["nova-type", type_fingerprint(v)]
        if getattr(v, "__nova_kernel__", False) is True or \
                getattr(v, "__nova_device_function__", False) is True:
            if not hasattr(v, "source"):
                raise _Opaque
            return ["function", self.function(v)]
        if isinstance(v, types.ModuleType):
            found = self.module_index.get(id(v))
            if found is None:
                found = self.module_index[id(v)] = len(self.module_list)
                self.module_list.append(v)
            return ["module", found]
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(v, numpy.generic):
            return ["numpy-scalar", v.dtype.str, v.tobytes().hex()]
        return _named(v)

    def describe(self, mod: types.ModuleType) -> Any:
        """A module: its name and the value of every attribute name the functions use."""
        name = mod.__name__
        if name == "nova" or name.startswith("nova."):
            return [name]  # Nova's own: fixed by the compiler fingerprint
        seen = {}
        for attr in sorted(self.attrs):
            try:
                value = getattr(mod, attr)
            except AttributeError:
                continue
            except Exception as exc:  # a module __getattr__ failing: the translator would too
                raise _Opaque from exc
            seen[attr] = self.value(value, 0)
        return [name, seen]


def _named(v: Any) -> list[Any]:
    """Classes, functions and other callables of the trusted packages, by qualified name."""
    owner = getattr(v, "__module__", None) if isinstance(v, type) or callable(v) else None
    if isinstance(owner, str) and _trusted(owner):
        name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
        if isinstance(name, str) and (isinstance(v, type) or _is_plain_callable(v)):
            return ["named", owner, name, type(v).__name__]
    if v is Ellipsis:
        return ["ellipsis"]
    raise _Opaque


def _trusted(module: str) -> bool:
    if module in ("nova.lang.intrinsics", "nova.lang.types"):
        return True
    return module.split(".", 1)[0] in _TRUSTED_MODULES


def _is_plain_callable(v: Any) -> bool:
    """Functions, builtins and NumPy ufuncs/dispatchers: objects whose only meaning to a kernel is
    which function they are (never instances carrying user state)."""
    if isinstance(v, types.FunctionType | types.BuiltinFunctionType):
        return True
    owner = type(v).__module__
    return owner.split(".", 1)[0] == "numpy" and hasattr(v, "__name__")

