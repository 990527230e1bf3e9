"""The native unwind frame (`nova_rt_call_entry`, `nova_rt_raise`) and the per-thread error slot.

Compiled host code checks every fallible ABI call and, on a nonzero status, calls `nova_rt_raise`,
which longjmps back to the innermost `nova_rt_call_entry` frame of the thread; the executor then
raises the NovaError that the failing ABI function recorded here. Both functions are a small LLVM
IR module, compiled once into an object kept in the cache directory and placed by
`nova.runtime.objload` (no llvmlite import once cached; MCJIT where that loader cannot place
it): `_setjmp`/`longjmp` come from libc, and the stack of frames is a per-thread linked list kept
in a pthread key (MCJIT cannot place thread-local globals, so TLS goes through libc instead).

The error slot is Python (a `threading.local`): failures are recorded from Python callbacks (cpu
device, module loading) or from native code through an error-path-only callback (cuda launches).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nova.errors import NovaError, OutOfMemoryError, RuntimeFailure
from nova.records import Record

_UNWIND_IR = r"""
@nova_unwind_key = global i32 0

declare i32 @_setjmp(ptr) returns_twice
declare void @longjmp(ptr, i32) noreturn
declare ptr @pthread_getspecific(i32)
declare i32 @pthread_setspecific(i32, ptr)
declare void @abort() noreturn

; A frame: { ptr previous_frame, [25 x i64] jmp_buf } (glibc's x86-64 jmp_buf is 200 bytes).
define i32 @nova_rt_call_entry(ptr %entry, ptr %args, ptr %results) noinline {
start:
  %frame = alloca { ptr, [32 x i64] }, align 16
  %key = load volatile i32, ptr @nova_unwind_key
  %previous = call ptr @pthread_getspecific(i32 %key)
  store volatile ptr %previous, ptr %frame
  %buf = getelementptr inbounds { ptr, [32 x i64] }, ptr %frame, i32 0, i32 1
  %ignored = call i32 @pthread_setspecific(i32 %key, ptr %frame)
  %jumped = call i32 @_setjmp(ptr %buf) returns_twice
  %first = icmp eq i32 %jumped, 0
  br i1 %first, label %run, label %caught
run:
  call void %entry(ptr %args, ptr %results)
  %key1 = load volatile i32, ptr @nova_unwind_key
  %prev1 = load volatile ptr, ptr %frame
  %ignored1 = call i32 @pthread_setspecific(i32 %key1, ptr %prev1)
  ret i32 0
caught:
  %key2 = load volatile i32, ptr @nova_unwind_key
  %prev2 = load volatile ptr, ptr %frame
  %ignored2 = call i32 @pthread_setspecific(i32 %key2, ptr %prev2)
  ret i32 1
}

define void @nova_rt_raise() noreturn noinline {
start:
  %key = load volatile i32, ptr @nova_unwind_key
  %frame = call ptr @pthread_getspecific(i32 %key)
  %none = icmp eq ptr %frame, null
  br i1 %none, label %die, label %jump
die:
  call void @abort()
  unreachable
jump:
  %buf = getelementptr inbounds { ptr, [32 x i64] }, ptr %frame, i32 0, i32 1
  call void @longjmp(ptr %buf, i32 1)
  unreachable
}
"""

if TYPE_CHECKING:
    import llvmlite.binding as llvm

_lock = threading.Lock()
_native: _NativeUnwind | None = None
_slot = threading.local()


class _NativeUnwind(Record):
    """The placed unwind-frame module (a Record, not a dataclass: `dataclasses` costs the
    cold start of nova-run and of a cuda kernel's first call)."""

    __match_args__ = ("engine", "call_entry", "raise_", "key")
    _fields = __match_args__

    engine: object  # what owns the code: a LoadedObject or an llvmlite engine
    call_entry: int
    raise_: int
    key: int  # the pthread key holding the thread's unwind frames

    def __init__(self, engine: object, call_entry: int, raise_: int, key: int) -> None:
        object.__setattr__(self, "engine", engine)
        object.__setattr__(self, "call_entry", call_entry)
        object.__setattr__(self, "raise_", raise_)
        object.__setattr__(self, "key", key)


def host_target_machine() -> llvm.TargetMachine:
    """A target machine for the running host (x86-64), for JIT-compiling runtime modules."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(opt=2, reloc="default", codemodel="jitdefault")


def _compile() -> _NativeUnwind:
    libc = ctypes.CDLL(None)
    key = ctypes.c_uint(0)
    if libc.pthread_key_create(ctypes.byref(key), None) != 0:
        raise RuntimeFailure("pthread_key_create failed: cannot set up Nova's unwind frames")
    from nova.runtime.objload import load_ir

    loaded = load_ir("unwind", _UNWIND_IR)
    if loaded is not None:
        ctypes.c_uint.from_address(loaded.address("nova_unwind_key")).value = key.value
        return _NativeUnwind(loaded, loaded.address("nova_rt_call_entry"),
                             loaded.address("nova_rt_raise"), key.value)
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(_UNWIND_IR)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    ctypes.c_uint.from_address(engine.get_global_value_address("nova_unwind_key")).value = key.value
    return _NativeUnwind(engine, engine.get_function_address("nova_rt_call_entry"),
                         engine.get_function_address("nova_rt_raise"), key.value)


def native_unwind() -> _NativeUnwind:
    """The process-wide unwind module (compiled on first use, kept for the process's lifetime)."""
    global _native
    with _lock:
        if _native is None:
            _native = _compile()
        return _native


def unwind_symbols() -> dict[str, int]:
    """`nova_rt_call_entry` and `nova_rt_raise` -> native addresses, for `llvm.add_symbol`."""
    native = native_unwind()
    return {"nova_rt_call_entry": native.call_entry, "nova_rt_raise": native.raise_}


def unwind_key() -> int:
    """The pthread key holding the thread's unwind frames (a fault guard restores it after a
    fault skipped `nova_rt_call_entry`'s epilogue)."""
    return native_unwind().key


_CALL_ENTRY_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_void_p)


def call_entry_function() -> Callable[..., int]:
    """`nova_rt_call_entry` as a ctypes function (releases the GIL while host code runs)."""
    return _CALL_ENTRY_TYPE(native_unwind().call_entry)


# --- the error slot ------------------------------------------------------------------------

class InterruptedCall(RuntimeFailure):
    """Ctrl-C arrived while a runtime callback ran; the executor re-raises KeyboardInterrupt
    once the program has unwound (an exception must never cross the C frames)."""


def record_error(error: NovaError) -> None:
    """Remember the first failure of the current call on this thread (later ones are echoes)."""
    if getattr(_slot, "error", None) is None:
        _slot.error = error


def guarded_callback(name: str, impl: Callable[..., None]) -> Callable[..., int]:
    """Wrap a Python implementation of runtime call `name` for native code: 0 on success; on any
    exception, record it (the first of the call) and return 1 (never unwind through C frames)."""

    def callback(*args: Any) -> int:
        try:
            impl(*args)
        except NovaError as exc:
            exc.add_note(f"(raised by the runtime call {name})")
            record_error(exc)
            return 1
        except KeyboardInterrupt:
            record_error(InterruptedCall(f"{name} was interrupted"))
            return 1
        except BaseException as exc:  # never unwind through C frames
            record_error(RuntimeFailure(f"{name} failed: {type(exc).__name__}: {exc}"))
            return 1
        return 0

    return callback


def take_error() -> NovaError | None:
    """The recorded failure of this thread (cleared), or None."""
    error = getattr(_slot, "error", None)
    _slot.error = None
    return error


def clear_error() -> None:
    """Forget any recorded failure (the executor does this before each call)."""
    _slot.error = None


def _host_assert_fail(message: int) -> int:
    try:
        text = ctypes.string_at(message).decode(errors="replace") if message else ""
        record_error(RuntimeFailure(f"host assertion failed: {text}" if text
                                    else "host assertion failed"))
    except Exception as exc:  # never let an exception cross the C boundary
        record_error(RuntimeFailure(f"host assertion failed (message unreadable: {exc})"))
    return 1


_HOST_ASSERT_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(_host_assert_fail)


def host_alloc_failure(size: int) -> OutOfMemoryError:
    """The error for a failed host `memref.alloc` of `size` bytes (< 0: negative/overflowed)."""
    if size < 0:
        return OutOfMemoryError("host memref.alloc failed: a dynamic size is negative or the "
                                "allocation's byte size overflows 64 bits")
    return OutOfMemoryError(f"host memref.alloc of {size} bytes failed (out of host memory)")


def _host_alloc_failed(size: int) -> int:
    try:
        record_error(host_alloc_failure(size))
    except Exception as exc:  # never let an exception cross the C boundary
        record_error(RuntimeFailure(f"host memref.alloc failed ({exc})"))
    return 1


_HOST_ALLOC_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)(_host_alloc_failed)


def control_symbols() -> dict[str, int]:
    """Device-independent ABI functions (the same on cpu and cuda): the unwind pair,
    `nova_rt_host_assert_fail` and `nova_rt_host_alloc_failed`."""
    symbols = unwind_symbols()
    symbols["nova_rt_host_assert_fail"] = ctypes.cast(_HOST_ASSERT_CALLBACK,
                                                      ctypes.c_void_p).value or 0
    symbols["nova_rt_host_alloc_failed"] = ctypes.cast(_HOST_ALLOC_CALLBACK,
                                                       ctypes.c_void_p).value or 0
    return symbols
