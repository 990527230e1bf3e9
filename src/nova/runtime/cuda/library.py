"""Library plans of one cuda program: which library runs each plan, and one native entry.

A program's manifest may list plans of several kinds (`nova.abi.AnyPlan`): GEMMs run by cuBLASLt
(nova.runtime.cuda.cublaslt), convolutions by cuDNN (nova.runtime.cuda.cudnn). Each library has
its own native per-call function and its own plan struct; the handle `nova_rt_library_plan`
gives the host code points to a `Dispatch` record {call, plan}, and `nova_rt_library_call` is
bound to a four-instruction native function that loads both and tail-calls `call(plan,
operands, num_operands, stream)`. Libraries are loaded only for the kinds the program uses.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from nova.abi import AnyPlan, ConvPlan


class Dispatch(ctypes.Structure):
    """What a library plan handle points to (`{ ptr, ptr }` in LLVM IR)."""

    _fields_ = (("call", ctypes.c_void_p), ("plan", ctypes.c_void_p))


DISPATCH_NAME = "nova_library_dispatch"
DISPATCH_IR = f"""
define i32 @{DISPATCH_NAME}(ptr %handle, ptr %operands, i64 %num, ptr %stream) {{
entry:
  %call = load ptr, ptr %handle
  %plan.at = getelementptr {{ ptr, ptr }}, ptr %handle, i32 0, i32 1
  %plan = load ptr, ptr %plan.at
  %status = tail call i32 %call(ptr %plan, ptr %operands, i64 %num, ptr %stream)
  ret i32 %status
}}
"""

_dispatch: dict[str, Any] = {}
_dispatch_lock = threading.Lock()


def dispatch_address() -> int:
    """The address of the native dispatcher (JIT-compiled once per process)."""
    with _dispatch_lock:
        if "engine" not in _dispatch:
            import llvmlite.binding as llvm

            from nova.runtime.cuda.abi import _compile_lock
            from nova.runtime.native_support import host_target_machine

            with _compile_lock:
                module = llvm.parse_assembly(DISPATCH_IR)
                module.verify()
                engine = llvm.create_mcjit_compiler(module, host_target_machine())
                engine.finalize_object()
            _dispatch["engine"] = engine
            _dispatch["address"] = engine.get_function_address(DISPATCH_NAME)
        return int(_dispatch["address"])


class ProgramLibraries:
    """The library runtimes one program's plans need, and a Dispatch record per plan."""

    def __init__(self, device: Any, plans: list[AnyPlan],
                 runtimes: dict[str, Any] | None = None) -> None:
        self.plans = plans
        self.call = dispatch_address()
        self._runtimes = dict(runtimes or {})
        kinds = {plan.kind for plan in plans}
        if "gemm" in kinds and "gemm" not in self._runtimes:
            from nova.runtime.cuda.cublaslt import runtime_for

            self._runtimes["gemm"] = runtime_for(device)
        if "conv2d" in kinds and "conv2d" not in self._runtimes:
            from nova.runtime.cuda.cudnn import runtime_for as cudnn_runtime_for

            self._runtimes["conv2d"] = cudnn_runtime_for(device)
        self._records: dict[int, Dispatch] = {}
        self._lock = threading.Lock()

    def plan(self, index: int) -> int:
        """The handle of plan `index`: its Dispatch record's address (made on first use; the
        record lives as long as this object, as the host code caches its address)."""
        with self._lock:
            record = self._records.get(index)
            if record is None:
                plan = self.plans[index]
                runtime = self._runtimes["conv2d" if isinstance(plan, ConvPlan) else "gemm"]
                record = Dispatch(runtime.native.call, runtime.plan(plan))
                self._records[index] = record
            return ctypes.addressof(record)
