"""The runtime ABI's function table: every function compiled host code may call, its C types,
and the device module descriptor it loads modules by (the contract: `nova.abi`, docs/abi.md).
Imported on first use of these names: a cached Python kernel's launch needs none of them."""

from __future__ import annotations

import ctypes
from _ctypes import CFuncPtr
from enum import StrEnum
from typing import Any

from nova.records import Record


class CType(StrEnum):
    """The C types that cross the ABI, spelled as LLVM IR types."""

    VOID = "void"
    PTR = "ptr"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    F32 = "float"
    F64 = "double"


# The ctypes type of each value type (VOID has none: a ctypes result of None).
CTYPES: dict[CType, type[ctypes._SimpleCData[Any]]] = {
    CType.PTR: ctypes.c_void_p,
    CType.I8: ctypes.c_int8,
    CType.I16: ctypes.c_int16,
    CType.I32: ctypes.c_int32,
    CType.I64: ctypes.c_int64,
    CType.F32: ctypes.c_float,
    CType.F64: ctypes.c_double,
}


class AbiFunction(Record):
    """One runtime function: its symbol, result type, named parameters and meaning."""

    __match_args__ = ("name", "result", "params", "doc")
    _fields = __match_args__

    name: str
    result: CType
    params: tuple[tuple[str, CType], ...]
    doc: str

    def __init__(self, name: str, result: CType, params: tuple[tuple[str, CType], ...],
                 doc: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "doc", doc)

    @property
    def fallible(self) -> bool:
        """True when the function returns a status that host code must check."""
        return self.result is CType.I32 and self.name not in _INFALLIBLE_I32

    def ctypes_prototype(self) -> type[CFuncPtr]:
        """A ctypes CFUNCTYPE matching this function (for the cpu device's callbacks)."""
        return ctypes.CFUNCTYPE(CTYPES.get(self.result), *(CTYPES[t] for _, t in self.params))


_INFALLIBLE_I32: frozenset[str] = frozenset({"nova_rt_call_entry"})

P = CType.PTR
I32 = CType.I32
I64 = CType.I64


def _fn(name: str, result: CType, doc: str, *params: tuple[str, CType]) -> AbiFunction:
    return AbiFunction(name, result, tuple(params), doc)


_GRID = (("grid_x", I64), ("grid_y", I64), ("grid_z", I64))
_BLOCK = (("block_x", I64), ("block_y", I64), ("block_z", I64))
_CLUSTER = (("cluster_x", I64), ("cluster_y", I64), ("cluster_z", I64))
_LAUNCH_TAIL = (("shared_bytes", I32), ("stream", P), ("params", P), ("num_params", I64))

ABI_FUNCTIONS: tuple[AbiFunction, ...] = (
    # --- control ---------------------------------------------------------------------------
    _fn("nova_rt_raise", CType.VOID,
        "Unwind to the current nova_rt_call_entry frame after a failed status. Never returns."),
    _fn("nova_rt_call_entry", I32,
        "Run entry(args, results) under an unwind frame; 0 on success, else the error was raised.",
        ("entry", P), ("args", P), ("results", P)),
    _fn("nova_rt_host_assert_fail", I32,
        "A host-side cf.assert failed with `message` (NUL-terminated). Always returns nonzero.",
        ("message", P)),
    _fn("nova_rt_host_alloc_failed", I32,
        "A host memref.alloc of `size` bytes failed (malloc returned null; `size` < 0: a dynamic "
        "size was negative or the byte size overflowed i64). Always returns nonzero.",
        ("size", I64)),
    # --- modules and kernels ----------------------------------------------------------------
    _fn("nova_rt_module_load", I32,
        "Load the device module described by a DeviceModuleDescriptor; *out = module handle.",
        ("out", P), ("descriptor", P)),
    _fn("nova_rt_module_get_function", I32,
        "Look up kernel `name` (NUL-terminated) in `module`; *out = function handle.",
        ("out", P), ("module", P), ("name", P)),
    _fn("nova_rt_launch", I32,
        "Launch `function` on `stream` with a void** parameter array (non-blocking).",
        ("function", P), *_GRID, *_BLOCK, *_LAUNCH_TAIL),
    _fn("nova_rt_launch_cluster", I32,
        "Launch `function` with thread-block clusters of cluster_x*y*z blocks (sm_90+).",
        ("function", P), *_CLUSTER, *_GRID, *_BLOCK, *_LAUNCH_TAIL),
    # --- streams and events -----------------------------------------------------------------
    _fn("nova_rt_stream_create", I32,
        "Create a non-blocking stream ordered after the work already on the default stream; "
        "*out = handle.", ("out", P)),
    _fn("nova_rt_stream_destroy", I32, "Destroy a stream (after its work completes).",
        ("stream", P)),
    _fn("nova_rt_stream_synchronize", I32, "Block the host until `stream` is idle.",
        ("stream", P)),
    _fn("nova_rt_stream_wait_event", I32,
        "Make future work on `stream` wait for `event` (no host blocking).",
        ("stream", P), ("event", P)),
    _fn("nova_rt_event_create", I32, "Create an event (timing disabled); *out = handle.",
        ("out", P)),
    _fn("nova_rt_event_destroy", I32, "Destroy an event.", ("event", P)),
    _fn("nova_rt_event_record", I32, "Record `event` on `stream`.", ("event", P), ("stream", P)),
    _fn("nova_rt_event_synchronize", I32, "Block the host until `event` has completed.",
        ("event", P)),
    # --- memory -----------------------------------------------------------------------------
    _fn("nova_rt_mem_alloc", I32,
        "Allocate `size` bytes of device memory (host_shared != 0: managed memory visible to "
        "host code) ordered on `stream` (null: also before later work of the calling thread's "
        "open streams), never waiting; *out = device pointer.",
        ("out", P), ("size", I64), ("stream", P), ("host_shared", I32)),
    _fn("nova_rt_mem_free", I32, "Free memory from nova_rt_mem_alloc, ordered on `stream` "
        "(reusable by allocations ordered after the free; no host wait but for managed memory).",
        ("pointer", P), ("stream", P)),
    _fn("nova_rt_memcpy", I32, "Copy `size` bytes (any direction, unified addressing) on stream.",
        ("dst", P), ("src", P), ("size", I64), ("stream", P)),
    _fn("nova_rt_memset32", I32, "Fill `count` 32-bit words at dst with `value` on stream.",
        ("dst", P), ("value", I32), ("count", I64), ("stream", P)),
    _fn("nova_rt_memset16", I32, "Fill `count` 16-bit words at dst with `value` on stream.",
        ("dst", P), ("value", I32), ("count", I64), ("stream", P)),
    _fn("nova_rt_memset8", I32, "Fill `count` bytes at dst with `value` on stream.",
        ("dst", P), ("value", I32), ("count", I64), ("stream", P)),
    _fn("nova_rt_host_register", I32, "Page-lock host memory for device access.",
        ("pointer", P), ("size", I64)),
    _fn("nova_rt_host_unregister", I32, "Undo nova_rt_host_register.", ("pointer", P)),
    # --- library calls (cuBLASLt / cuDNN on cuda, NumPy on cpu; docs/models.md "Libraries")
    _fn("nova_rt_library_plan", I32,
        "Prepare library plan `index` of the program's manifest (`extra[\"nova.library.plans\"]`, "
        "a JSON list of `LibraryPlan` / `ConvPlan`s): descriptors, algorithm choice, workspace; "
        "*out = plan handle. Host code calls it once per plan and caches the handle.",
        ("out", P), ("index", I64)),
    _fn("nova_rt_library_call", I32,
        "Run a prepared plan on `stream` (non-blocking, capturable): `operands` points to "
        "`num_operands` device pointers, one per entry of the plan's `operands` list, in that "
        "order (another count is an error).",
        ("plan", P), ("operands", P), ("num_operands", I64), ("stream", P)),
    # --- runner utilities (mlir-runner's text, exactly) -----------------------------------
    _fn("nova_rt_print_memref_f32", CType.VOID, "printMemrefF32", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_memref_f64", CType.VOID, "printMemrefF64", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_memref_i8", CType.VOID, "printMemrefI8", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_memref_i16", CType.VOID, "printMemrefI16", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_memref_i32", CType.VOID, "printMemrefI32", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_memref_i64", CType.VOID, "printMemrefI64", ("rank", I64), ("desc", P)),
    _fn("nova_rt_print_f32", CType.VOID, "printF32", ("value", CType.F32)),
    _fn("nova_rt_print_f64", CType.VOID, "printF64", ("value", CType.F64)),
    _fn("nova_rt_print_i64", CType.VOID, "printI64 (signed)", ("value", I64)),
    _fn("nova_rt_print_u64", CType.VOID, "printU64 (unsigned)", ("value", I64)),
    _fn("nova_rt_print_newline", CType.VOID, "printNewline"),
    _fn("nova_rt_print_comma", CType.VOID, "printComma"),
    _fn("nova_rt_print_open", CType.VOID, "printOpen: '( '"),
    _fn("nova_rt_print_close", CType.VOID, "printClose: ' )'"),
    _fn("nova_rt_print_string", CType.VOID, "printString of a NUL-terminated string",
        ("text", P)),
)

ABI_BY_NAME: dict[str, AbiFunction] = {f.name: f for f in ABI_FUNCTIONS}

RUNNER_UTILS: dict[str, str] = {
    "printMemrefF32": "nova_rt_print_memref_f32",
    "printMemrefF64": "nova_rt_print_memref_f64",
    "printMemrefI8": "nova_rt_print_memref_i8",
    "printMemrefI16": "nova_rt_print_memref_i16",
    "printMemrefI32": "nova_rt_print_memref_i32",
    "printMemrefI64": "nova_rt_print_memref_i64",
    "printF32": "nova_rt_print_f32",
    "printF64": "nova_rt_print_f64",
    "printI64": "nova_rt_print_i64",
    "printU64": "nova_rt_print_u64",
    "printNewline": "nova_rt_print_newline",
    "printComma": "nova_rt_print_comma",
    "printOpen": "nova_rt_print_open",
    "printClose": "nova_rt_print_close",
}
"""MLIR runner-utility functions a program may declare and call, and the ABI function each maps to.
`printMemref*` take an unranked memref (`memref<*xT>`), lowered to (rank, descriptor pointer)."""


class DeviceModuleDescriptor(ctypes.Structure):
    """What `nova_rt_module_load` receives: every image of one gpu.module, embedded in the host
    object. Sizes are in bytes; an absent image has a null pointer and size 0. The PTX is
    NUL-terminated (size excludes the NUL)."""

    _fields_ = (
        ("abi_version", ctypes.c_int64),
        ("name", ctypes.c_char_p),
        ("ptx", ctypes.c_void_p),
        ("ptx_size", ctypes.c_int64),
        ("cubin", ctypes.c_void_p),
        ("cubin_size", ctypes.c_int64),
        ("cpu_object", ctypes.c_void_p),
        ("cpu_object_size", ctypes.c_int64),
    )


DEVICE_MODULE_DESCRIPTOR_LLVM = "{ i64, ptr, ptr, i64, ptr, i64, ptr, i64 }"
"""The same struct as LLVM IR, for the host lowering."""


CPU_KERNEL_RESULT = CType.I32
