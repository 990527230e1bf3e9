"""The per-call native module of a library binding (cuBLASLt, cuDNN), JIT-compiled once per
device: its LLVM IR calls the library and reports a failed call through an error callback
global (`void callback(call name, status, plan)`), which `jit_library` points at a Python
function that records the error for the native error path (nova.runtime.native_support).
One place for what both bindings share; each gives its IR, names and messages."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nova.errors import DeviceError, RuntimeFailure

R = TypeVar("R")
STATUS_BAD_COUNT = -1
"""The status the native calls report when the host passed the wrong number of operands."""
ERROR_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p)

OPERAND_IR = """define internal ptr @operand(ptr %operands, i32 %slot) alwaysinline {
entry:
  %index = sext i32 %slot to i64
  %at = getelementptr ptr, ptr %operands, i64 %index
  %value = load ptr, ptr %at
  ret ptr %value
}"""
"""`ptr @operand(operands, slot)`: the per-call modules' read of one operand pointer from the
call's operand array (slots are the plan's operand indices)."""


def fail_ir(callback_global: str, status_result: bool) -> str:
    """`@fail(call name, status, plan)`: calls the error callback global; returns i32 1 (for a
    caller that returns it as its status) or void."""
    ret = ("i32", "  ret i32 1") if status_result else ("void", "  ret void")
    return (f"define internal {ret[0]} @fail(ptr %call, i32 %status, ptr %plan) noinline {{\n"
            f"entry:\n  %callback = load ptr, ptr @{callback_global}\n"
            f"  call void %callback(ptr %call, i32 %status, ptr %plan)\n{ret[1]}\n}}")


class LibraryApi:
    """A library's plan-creation entry points, called by name through ctypes, each checked: a
    nonzero status raises `error("<name> failed: <status name> (<status>)")`."""

    def __init__(self, lib: Any, status_name: Callable[[int], str],
                 error: type[DeviceError]) -> None:
        self.lib = lib
        self._status_name = status_name
        self._error = error

    def __call__(self, name: str, *args: Any) -> None:
        status = int(getattr(self.lib, name)(*args))
        if status:
            raise self._error(f"{name} failed: {self._status_name(status)} ({status})")


def library_status_name(names: Mapping[int, str], prefix: str, code: int) -> str:
    """A library's name of status `code` (`<prefix><code>` for one `names` lacks), or Nova's
    STATUS_BAD_COUNT."""
    if code == STATUS_BAD_COUNT:
        return "wrong operand count"
    return names.get(code, f"{prefix}{code}")


def make_current(device: Any) -> None:
    """Make `device`'s context current on this thread before a library call (a device without
    a driver's `make_current`, such as the tests' stand-ins, has none to make)."""
    make = getattr(getattr(device, "driver", None), "make_current", None)
    if make is not None:
        make()


class PerDevice(Generic[R]):
    """A library's state per device: `make(device)` on the first call for a device, the same
    object after (thread-safe)."""

    def __init__(self, make: Callable[[Any], R]) -> None:
        self._make = make
        self._made: dict[int, R] = {}
        self._lock = threading.Lock()

    def __call__(self, device: Any) -> R:
        with self._lock:
            found = self._made.get(id(device))
            if found is None:
                found = self._made[id(device)] = self._make(device)
            return found


@dataclass
class NativeLibrary:
    """A JIT-compiled per-call module: the engine (kept alive), the call's address and the
    error callback (kept alive here: the native code holds its address)."""

    engine: Any
    call: int
    on_error: Any


def jit_library(ir: str, call_name: str, callback_global: str, library: str, what: str,
                status_name: Callable[[int], str], error: type[DeviceError],
                describe_plan: Callable[[int], str],
                symbols: Mapping[str, int] | None = None) -> NativeLibrary:
    """Compile `ir` (with `symbols` added first: the library's or test mocks) and bind its
    error callback: a failed call becomes `error("<call> failed: <status> for the <what>
    <plan>")`, recorded for the caller's native error path."""
    import llvmlite.binding as llvm

    from nova.runtime.cuda.abi import _compile_lock
    from nova.runtime.native_support import host_target_machine, record_error

    def on_error(call: int | None, status: int, plan: int | None) -> None:
        try:
            name = ctypes.string_at(call).decode() if call else library
            record_error(error(f"{name} failed: {status_name(status)} ({status}) for the "
                               f"{what} {describe_plan(plan or 0)}"))
        except BaseException as exc:  # never unwind through C frames
            record_error(RuntimeFailure(f"a {library} call failed ({status}); reporting it "
                                        f"failed too: {exc}"))

    callback = ERROR_CALLBACK_TYPE(on_error)
    with _compile_lock:
        for name, address in (symbols or {}).items():
            llvm.add_symbol(name, address)
        module = llvm.parse_assembly(ir)
        module.verify()
        engine = llvm.create_mcjit_compiler(module, host_target_machine())
        engine.finalize_object()
    ctypes.c_void_p.from_address(engine.get_global_value_address(callback_global)).value = \
        ctypes.cast(callback, ctypes.c_void_p).value
    return NativeLibrary(engine, engine.get_function_address(call_name), callback)
