"""A native no-op CUDA driver for the cuda device's native launch path (runs without a GPU).

Every driver entry point the native ABI module calls (nova.runtime.cuda.native.DRIVER_FUNCTIONS)
is compiled, under a renamed symbol (`nova_nfake_cuX`), to a function that succeeds and does
nothing, except:
- `cuCtxGetCurrent` reports the context `current` holds (and `cuCtxSetCurrent` sets it);
- `cuLaunchKernel` counts the launch and records its arguments and the first `record_params(n)`
  parameter values (each `params[i]` read as 8 bytes) in `last`, or fails with `fail_with`.
Being native (not ctypes callbacks), it costs what a function call costs: timing the launch path
against it measures Nova's host work alone.
"""

from __future__ import annotations

import ctypes
from typing import Any

import llvmlite.binding as llvm

from nova.runtime.cuda import abi as cuda_abi
from nova.runtime.cuda.native import DRIVER_FUNCTIONS
from nova.runtime.native_support import host_target_machine

PREFIX = "nova_nfake_"
PARAM_WORDS = 16
LAST_WORDS = 11 + PARAM_WORDS
"""count, function, gx, gy, gz, bx, by, bz, shared, stream, params, param values..."""


def _ir() -> str:
    out = [f"@last = global [{LAST_WORDS} x i64] zeroinitializer",
           "@current = global ptr null", "@fail_with = global i32 0",
           "@param_words = global i64 0"]
    for name, signature in DRIVER_FUNCTIONS.items():
        params = [p.strip() for p in signature.split("(", 1)[1].rstrip(")").split(",")]
        args = ", ".join(f"{p} %a{i}" for i, p in enumerate(params))
        out.append(f"define i32 @{PREFIX}{name}({args}) {{")
        if name == "cuCtxGetCurrent":
            out += ["  %c = load ptr, ptr @current", "  store ptr %c, ptr %a0"]
        elif name == "cuCtxSetCurrent":
            out.append("  store ptr %a0, ptr @current")
        elif name == "cuLaunchKernel":
            out += _launch_body()
        out += ["  ret i32 0", "}"]
    return "\n".join(out)


def _launch_body() -> list[str]:
    out = ["  %f = load i32, ptr @fail_with", "  %bad = icmp ne i32 %f, 0",
           "  br i1 %bad, label %fail, label %go", "fail:", "  ret i32 %f", "go:",
           "  %n = load i64, ptr @last", "  %n1 = add i64 %n, 1", "  store i64 %n1, ptr @last"]
    words = [("ptr", "%a0")] + [("i32", f"%a{i}") for i in range(1, 8)] + [("ptr", "%a8"),
                                                                              ("ptr", "%a9")]
    for slot, (kind, value) in enumerate(words, start=1):
        out.append(f"  %w{slot} = getelementptr i64, ptr @last, i64 {slot}")
        if kind == "i32":
            out += [f"  %z{slot} = zext i32 {value} to i64", f"  store i64 %z{slot}, ptr %w{slot}"]
        else:
            out.append(f"  store ptr {value}, ptr %w{slot}")
    # copy params[0 .. @param_words) (the test sets how many slots its kernel has)
    out += ["  %count = load i64, ptr @param_words", "  br label %loop", "loop:",
            "  %i = phi i64 [0, %go], [%next, %body]",
            "  %more = icmp ult i64 %i, %count", "  br i1 %more, label %body, label %done",
            "body:",
            "  %pp = getelementptr ptr, ptr %a9, i64 %i", "  %p = load ptr, ptr %pp",
            "  %v = load i64, ptr %p", "  %at = add i64 %i, 11",
            "  %d = getelementptr i64, ptr @last, i64 %at", "  store i64 %v, ptr %d",
            "  %next = add i64 %i, 1", "  br label %loop", "done:"]
    return out


class NativeFakeDriver:
    """The compiled fake driver: `symbols` to bind, `last()` the recorded launch."""

    def __init__(self) -> None:
        module = llvm.parse_assembly(_ir())
        module.verify()
        self.engine = llvm.create_mcjit_compiler(module, host_target_machine())
        self.engine.finalize_object()
        self.symbols = {PREFIX + n: self.engine.get_function_address(PREFIX + n)
                        for n in DRIVER_FUNCTIONS}
        self._last = (ctypes.c_uint64 * LAST_WORDS).from_address(
            self.engine.get_global_value_address("last"))
        self._fail = ctypes.c_int32.from_address(self.engine.get_global_value_address("fail_with"))
        self._words = ctypes.c_int64.from_address(
            self.engine.get_global_value_address("param_words"))

    def record_params(self, count: int) -> None:
        """Record the first `count` (<= PARAM_WORDS) parameter values of each launch."""
        assert 0 <= count <= PARAM_WORDS
        self._words.value = count

    def last(self) -> list[int]:
        return list(self._last)

    def fail_with(self, code: int) -> None:
        self._fail.value = code

    def bind(self, device: Any) -> cuda_abi.NativeLaunch:
        """Compile the device's launch module against this driver and make the device's
        launchers use it (device: a CudaDevice on tests' fake bindings)."""
        native = cuda_abi.compile_launch(device, PREFIX, self.symbols)
        device.native_launch = native.launch_packed
        device.launch_builtins = native.builtins
        device._native_fake_keepalive = (self, native)
        return native
