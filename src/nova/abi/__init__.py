"""The runtime ABI: the one contract between compiled host code and Nova's runtime.

The host lowering (compiler side) declares exactly these functions and emits calls to them; the
runtime binds each name to an implementation for the chosen device when it links a .nova file
(native code for `cuda`, so no launch passes through Python; ctypes callbacks for `cpu`).
Nothing else may be called by compiled host code except libc. docs/abi.md explains the rules.

The package's modules: this one holds the constants, naming conventions and the CPU-device launch
record a kernel launch needs (`CpuLaunch`, the CPU target record); `nova.abi.functions` the
runtime function table (`ABI_FUNCTIONS`, `CType`, the module descriptor) and `nova.abi.plans` the
library-call plans. Their names are importable from `nova.abi` too, loaded on first use: a cached
Python kernel's first call needs none of them (building the table, its enum and the plan classes
cost about 0.5 ms of that call).

Conventions (all C calling convention, x86-64 SysV):
- `ptr` is an opaque 64-bit pointer. Device pointers are `ptr` too (a CUdeviceptr on `cuda`, a host
  address on `cpu`). Streams, events, modules and functions are opaque handles; the null stream
  handle means the program's default stream (a non-blocking stream owned by the executor).
- Every fallible function returns an `i32` status: 0 on success. On failure the runtime has recorded
  the error (call, cause, kernel) and the host code must call `nova_rt_raise()` at once, which
  never returns: it unwinds to the `nova_rt_call_entry` frame, and the executor raises a NovaError.
  Results come back through out-pointers (`out`).
- Entry points: for each public host function `@f`, the host code exports
  `void __nova_entry_f(ptr args, ptr results)`; `args[i]` points to the i-th argument's storage
  (a scalar value, or a ranked memref descriptor), `results[i]` to storage for the i-th result.
  The executor calls it through `nova_rt_call_entry(entry, args, results) -> i32`.
- Memref descriptors are MLIR's: `{ptr allocated, ptr aligned, i64 offset, [R x i64] sizes,
  [R x i64] strides}`; an unranked memref is `{i64 rank, ptr descriptor}`.
- Kernel parameters travel as a `void**` array, one entry per *expanded* parameter: a ranked memref
  expands to allocated, aligned, offset, sizes..., strides... (upstream MLIR's bare convention is
  not used); scalars are passed by value of their LLVM type (index → i64); a 1-D vector by value
  as one `<N x T>`, its slot holding LLVM's alloc size of it (`<3 x i32>`: 16 bytes, aligned 16;
  the manifest's `KernelParam.size`/`align`).
- Device memory is stream-ordered and never makes the host wait: `nova_rt_mem_alloc` memory may be
  used by work enqueued on `stream` after the call (other streams must be ordered after it, by
  events), `nova_rt_mem_free` releases it once the work enqueued on `stream` before it has run,
  and the runtime may hand a freed block to a later allocation ordered after the free (on cuda a
  memory pool of the device that keeps freed memory, behind a native cache that gives a block
  freed on a stream back to the next allocation of its size on that stream without a driver
  call; on cpu the device pool, per stream). An
  allocation on the null stream is also ordered before later work on every stream the calling
  thread's program has open, so a synchronous `gpu.alloc`/`gpu.dealloc` needs no host
  synchronization. Host code may touch only `host_shared` memory, at once (cuda: managed memory,
  not stream-ordered; its free waits for `stream`; cpu: memory no queued work uses).
"""

from __future__ import annotations

import ctypes
import importlib

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from typing import Any

    from nova.abi.functions import (
        ABI_BY_NAME,
        ABI_FUNCTIONS,
        CPU_KERNEL_RESULT,
        CTYPES,
        DEVICE_MODULE_DESCRIPTOR_LLVM,
        RUNNER_UTILS,
        AbiFunction,
        CType,
        DeviceModuleDescriptor,
    )
    from nova.abi.plans import (
        CONV_ACTIVATIONS,
        LIBRARY_ACTIVATIONS,
        LIBRARY_CALL_PREFIX,
        LIBRARY_DTYPES,
        LIBRARY_PLANS_KEY,
        PLAN_KINDS,
        AnyPlan,
        ConvPlan,
        LibraryPlan,
        library_plans,
        plan_from_json,
    )

ABI_VERSION = 1

ENTRY_PREFIX = "__nova_entry_"
"""Exported wrapper for public host function `f` is `__nova_entry_f`."""

DEVICE_MODULE_PREFIX = "__nova_devmod_"
"""The DeviceModuleDescriptor global for gpu.module `m` is `__nova_devmod_m`."""

MODULE_HANDLE_PREFIX = "__nova_modhandle_"
"""Per-program global caching the loaded module handle (loaded once, on first use)."""

CPU_KERNEL_SUFFIX = ""
"""In a device module's CPU object, kernel `k` is exported under its own name `k`."""

UNOWNED_ALLOCATED = 0xDEADBEEF
"""The `allocated` pointer host code gives memrefs it did not take from the heap (memref.alloca,
memref.get_global), as upstream MLIR does for globals: nothing may free it. An entry returning
such a memref hands the caller a copy; a heap (malloc) or runtime (gpu.alloc) allocation is
handed over instead (docs/device-layer.md, "Returned memrefs")."""


CPU_TARGET_SYMBOL = "__nova_cpu_target"
"""A CPU-device object's record of the CPU it was compiled for: a constant, NUL-padded array of
`CPU_TARGET_RECORD_BYTES` holding `cpu=<llvm cpu name>;features=+f1,+f2,...` (docs/cpu-device.md;
written by nova.backends.cpu.host_cpu, checked by nova.runtime.cpu.module.check_cpu_target)."""
CPU_TARGET_RECORD_BYTES = 4096


class CpuLaunch(ctypes.Structure):
    """What a CPU-device kernel entry receives besides its void** params.

    A device module's CPU object exports, for each kernel `k`:
        i32 k(ptr params, ptr launch)      ; launch points to a CpuLaunch
    It runs blocks with linear ids [block_begin, block_end) of the grid, each with all of its
    threads and GPU semantics, and returns 0, or nonzero after writing a NUL-terminated message
    into `error` (assert failure or trap: which block and thread, and the message).
    `dynamic_shared` is scratch for dynamic workgroup memory of `dynamic_shared_bytes` per block.
    Written by the kernel while it runs, for the fault guard (nova.runtime.cpu.fault_guard) to
    name the faulting block and recognise fiber stack overflows after a signal; the runtime sets
    `current_block` to -1 and the rest to 0 first (objects that predate these fields leave them
    so): `current_block` = linear id of the block being run; `fiber_stacks` = the call's
    page-aligned fiber stack area (null when none; malloc'd, the pointer to free stored in the 8
    bytes below it), `fiber_stacks_bytes` its size, whose first `fiber_guard_bytes` are a
    no-access guard zone below the lowest stack (after a fault the runtime makes the zone
    accessible again and frees the block).
    """

    _fields_ = (
        ("grid", ctypes.c_int64 * 3),
        ("block", ctypes.c_int64 * 3),
        ("cluster", ctypes.c_int64 * 3),
        ("block_begin", ctypes.c_int64),
        ("block_end", ctypes.c_int64),
        ("dynamic_shared", ctypes.c_void_p),
        ("dynamic_shared_bytes", ctypes.c_int64),
        ("error", ctypes.c_char * 512),
        ("current_block", ctypes.c_int64),
        ("fiber_stacks", ctypes.c_void_p),
        ("fiber_stacks_bytes", ctypes.c_int64),
        ("fiber_guard_bytes", ctypes.c_int64),
    )


CPU_LAUNCH_LLVM = ("{ [3 x i64], [3 x i64], [3 x i64], i64, i64, ptr, i64, [512 x i8], i64, ptr, "
                   "i64, i64 }")
"""The same struct as LLVM IR, for the CPU kernel lowering."""


_LAZY: dict[str, str] = {
    **dict.fromkeys(("CType", "CTYPES", "AbiFunction", "ABI_FUNCTIONS", "ABI_BY_NAME",
                     "RUNNER_UTILS", "DeviceModuleDescriptor", "DEVICE_MODULE_DESCRIPTOR_LLVM",
                     "CPU_KERNEL_RESULT"), "nova.abi.functions"),
    **dict.fromkeys(("LIBRARY_PLANS_KEY", "LIBRARY_CALL_PREFIX", "LIBRARY_ACTIVATIONS",
                     "LIBRARY_DTYPES", "LibraryPlan", "CONV_ACTIVATIONS", "ConvPlan", "AnyPlan",
                     "PLAN_KINDS", "plan_from_json", "library_plans"), "nova.abi.plans"),
}


def __getattr__(name: str) -> Any:
    """The names of `nova.abi.functions` and `nova.abi.plans`, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nova.abi' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups find it directly
    return value


__all__ = [
    "ABI_BY_NAME",
    "ABI_FUNCTIONS",
    "ABI_VERSION",
    "CONV_ACTIVATIONS",
    "CPU_KERNEL_RESULT",
    "CPU_KERNEL_SUFFIX",
    "CPU_LAUNCH_LLVM",
    "CPU_TARGET_RECORD_BYTES",
    "CPU_TARGET_SYMBOL",
    "CTYPES",
    "DEVICE_MODULE_DESCRIPTOR_LLVM",
    "DEVICE_MODULE_PREFIX",
    "ENTRY_PREFIX",
    "LIBRARY_ACTIVATIONS",
    "LIBRARY_CALL_PREFIX",
    "LIBRARY_DTYPES",
    "LIBRARY_PLANS_KEY",
    "MODULE_HANDLE_PREFIX",
    "PLAN_KINDS",
    "RUNNER_UTILS",
    "UNOWNED_ALLOCATED",
    "AbiFunction",
    "AnyPlan",
    "CType",
    "ConvPlan",
    "CpuLaunch",
    "DeviceModuleDescriptor",
    "LibraryPlan",
    "library_plans",
    "plan_from_json",
]
