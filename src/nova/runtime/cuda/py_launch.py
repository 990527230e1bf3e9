"""Launch builtins: the native launch of Python kernels, callable without ctypes' per-call cost.

A ctypes foreign call costs ~0.4 us whatever it calls (the argument conversion, libffi, the
result object): as much as all the Python of a prepared launch, and a tenth of the launch goal of
issue 13. So the launch module (nova.runtime.cuda.native.launch_ir) also defines `PY_LAUNCH`, a
CPython `METH_FASTCALL` function, and `LaunchBuiltins.make(record)` turns it into a builtin
bound to `record` (`PyCFunction_NewEx`): `status = launch(slots)` is then the vectorcall of a
builtin (~0.1 us with the launch itself). `record` is bytes of `RECORD` words: the launcher's
CUfunction and slot count, the configuration's header words (gx, gy, gz, bx, by, bz,
shared_bytes) and the stream handle (0: the module's default stream); `slots` the packed
parameter slots (bytes of exactly slot-count words, else a TypeError). The function releases the
GIL around `nova_cuda_launch_packed` (as a ctypes call does: cuLaunchKernel may block while the
launch queue is full; a failure reports through the module's error callback, which takes the GIL
back) and returns its status as an int (0: launched).

It uses only functions of CPython's stable ABI, whose addresses the module's `PY_API_GLOBAL`
table gets from `ctypes.pythonapi` after compiling; elsewhere (`available()` false) launchers
keep the ctypes call. Each builtin holds its `LaunchBuiltins` (as its `__module__`), which holds
the method definition the builtin points to and the compiled code, so neither can go first.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable

PY_LAUNCH = "nova_py_launch"
PY_API_GLOBAL = "nova_py_api"
PY_API = ("PyBytes_AsStringAndSize", "PyEval_SaveThread", "PyEval_RestoreThread",
          "PyLong_FromLong", "PyErr_BadArgument")
"""The C-API functions `PY_LAUNCH` calls, in the order of its table."""
RECORD = struct.Struct("<QQ7qQ")
"""A builtin's record: CUfunction, slot count, gx, gy, gz, bx, by, bz, shared_bytes, stream."""
METH_FASTCALL = 0x0080


def py_launch_ir(launch_packed: str) -> str:
    """LLVM IR of `PY_LAUNCH(self, args, nargs)` over `launch_packed` (defined beside it) and
    its C-API table (see the module docstring)."""
    api = {name: i for i, name in enumerate(PY_API)}

    def load(name: str) -> list[str]:
        return [f"  %{name}.at = getelementptr ptr, ptr @{PY_API_GLOBAL}, i64 {api[name]}",
                f"  %{name} = load ptr, ptr %{name}.at"]

    lines = [
        f"@{PY_API_GLOBAL} = global [{len(PY_API)} x ptr] zeroinitializer",
        f"define ptr @{PY_LAUNCH}(ptr %self, ptr %args, i64 %nargs) {{",
        "entry:",
        "  %record.at = alloca ptr, align 8", "  %record.size = alloca i64, align 8",
        "  %slots.at = alloca ptr, align 8", "  %slots.size = alloca i64, align 8",
        *load("PyBytes_AsStringAndSize"),
        "  %one = icmp eq i64 %nargs, 1",
        "  br i1 %one, label %read, label %bad",
        "read:",
        "  %slots.object = load ptr, ptr %args",
        "  %got.slots = call i32 %PyBytes_AsStringAndSize(ptr %slots.object, ptr %slots.at, "
        "ptr %slots.size)",
        "  %not.bytes = icmp ne i32 %got.slots, 0",
        "  br i1 %not.bytes, label %raise, label %bound",
        "bound:",
        "  %got.record = call i32 %PyBytes_AsStringAndSize(ptr %self, ptr %record.at, "
        "ptr %record.size)",
        "  %record = load ptr, ptr %record.at",
        "  %count.at = getelementptr i64, ptr %record, i64 1",
        "  %count = load i64, ptr %count.at, align 8",
        "  %want = mul i64 %count, 8",
        "  %size = load i64, ptr %slots.size",
        "  %fits = icmp eq i64 %size, %want",
        "  br i1 %fits, label %launch, label %bad",
        "launch:",
        *load("PyEval_SaveThread"), *load("PyEval_RestoreThread"), *load("PyLong_FromLong"),
        "  %header = getelementptr i64, ptr %record, i64 2",
        "  %stream.at = getelementptr i64, ptr %record, i64 9",
        "  %stream = load ptr, ptr %stream.at, align 8",
        "  %slots = load ptr, ptr %slots.at",
        "  %thread = call ptr %PyEval_SaveThread()",
        f"  %status = call i32 @{launch_packed}(ptr %record, ptr %header, ptr %stream, "
        "ptr %slots)",
        "  call void %PyEval_RestoreThread(ptr %thread)",
        "  %status.64 = sext i32 %status to i64",
        "  %result = call ptr %PyLong_FromLong(i64 %status.64)",
        "  ret ptr %result",
        "bad:",
        *load("PyErr_BadArgument"),
        "  %ignored = call i32 %PyErr_BadArgument()",
        "  br label %raise",
        "raise:",
        "  ret ptr null",
        "}",
        "",
    ]
    return "\n".join(lines)


def available() -> bool:
    """Whether launch builtins can be made here (CPython with its C API reachable)."""
    return sys.implementation.name == "cpython" and hasattr(ctypes, "pythonapi")


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = (("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p))


class LaunchBuiltins:
    """Makes the launch builtins of one compiled launch module (`owner` keeps its code alive):
    fills the module's C-API table at `api_table` and defines `PY_LAUNCH` (at `function`) as
    a method once; `checked` (the table and function addresses of py_checked's `PY_CHECKED`,
    None where py_checked is not available) likewise for checked builtins."""

    def __init__(self, owner: object, api_table: int, function: int,
                 checked: tuple[int, int] | None = None) -> None:
        self._owner = owner
        table = (ctypes.c_void_p * len(PY_API)).from_address(api_table)
        for i, name in enumerate(PY_API):
            table[i] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
        self._name = b"nova_launch"
        self._doc = b"launch(slots) -> status: one native launch (nova.runtime.cuda.py_launch)"
        self._method = _MethodDef(self._name, function, METH_FASTCALL, self._doc)
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = (ctypes.c_void_p, ctypes.py_object, ctypes.py_object)
        self._new = new
        self._checked: _MethodDef | None = None
        if checked is not None:
            from nova.runtime.cuda.py_checked import fill_api

            fill_api(checked[0])
            self._checked_name = b"nova_checked_launch"
            self._checked_doc = (b"launch(*args): a prepared launch's checks and launch "
                                 b"(nova.runtime.cuda.py_checked)")
            self._checked = _MethodDef(self._checked_name, checked[1], METH_FASTCALL,
                                       self._checked_doc)

    def make(self, record: bytes) -> Callable[[bytes], int]:
        """The builtin launching with `record` (see the module docstring)."""
        assert len(record) == RECORD.size
        builtin: Callable[[bytes], int] = self._new(ctypes.addressof(self._method), record,
                                                    self)
        return builtin

    def make_checked(self, objects: tuple[object, ...]) -> Callable[..., object] | None:
        """The checked builtin bound to `objects` (py_checked.objects), or None without
        checked builtins."""
        if self._checked is None:
            return None
        builtin: Callable[..., object] = self._new(ctypes.addressof(self._checked), objects,
                                                   self)
        return builtin
