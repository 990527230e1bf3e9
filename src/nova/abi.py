"""The runtime ABI: the one contract between compiled host code and Nova's runtime.

The host lowering (compiler side) declares exactly these functions and emits calls to them; the
runtime binds each name to an implementation for the chosen device when it links a .nova file
(native code for `cuda`, so no launch passes through Python; ctypes callbacks for `cpu`).
Nothing else may be called by compiled host code except libc. docs/abi.md explains the rules.

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
from _ctypes import CFuncPtr
from enum import StrEnum
from typing import Any

from nova.records import Record

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

CPU_KERNEL_RESULT = CType.I32


# --- library calls ------------------------------------------------------------------------------

LIBRARY_PLANS_KEY = "nova.library.plans"
"""Manifest `extra` key: a JSON list of plans (`LibraryPlan` or `ConvPlan` `.to_json()`, told apart
by `kind`); host code refers to plan `i` by its position."""

LIBRARY_CALL_PREFIX = "__nova_library_"
"""An MLIR program calls library plan `i` as `func.call @__nova_library_<i>(memrefs...)` of a
body-less `func.func private @__nova_library_<i>`; the host lowering turns the call into
`nova_rt_library_plan` (first use, handle cached) + `nova_rt_library_call` with the memrefs' data
pointers in order."""

LIBRARY_ACTIVATIONS = ("none", "relu", "gelu_tanh")
LIBRARY_DTYPES = ("float32", "float16", "bfloat16")


def _plan_from_json(cls: Any, data: Any, what: str) -> Any:
    """`cls(**data)` checked (`cls.check`), with a `ValueError` naming `what` is wrong: not an
    object, unknown fields, missing or malformed ones."""
    if not isinstance(data, dict):
        raise ValueError(f"a {what} must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - set(cls._fields)
    if unknown:
        raise ValueError(f"unknown {what} field(s): {', '.join(sorted(unknown))}")
    try:
        plan = cls(**data)
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None
    plan.check()
    return plan


class LibraryPlan(Record):
    """One library GEMM, in row-major terms (what NumPy and the program see):

        D[b] = act(alpha * op(A[b]) @ op(B[b]) + bias + C[b])     for b < batch

    op(A) is [m, k] (A stored [k, m] when `trans_a`), op(B) is [k, n] (B stored [n, k] when
    `trans_b`); `bias` (when present) is a length-n vector broadcast over rows; `C` (when
    `residual`) has D's shape and layout. `a_stride`/`b_stride` are the element strides between
    batches (0: the operand is shared by every batch); C and D are dense (stride m*n). Every
    operand has storage type `dtype`; products accumulate in fp32 (never TF32), `gelu_tanh` is
    the tanh approximation. `operands` names the pointers a call passes, in order (a subset of
    a, b, bias, c, d in that order)."""

    __match_args__ = ("m", "n", "k", "dtype", "batch", "a_stride", "b_stride", "trans_a",
                      "trans_b", "alpha", "bias", "residual", "activation", "kind")
    _fields = __match_args__

    m: int
    n: int
    k: int
    dtype: str
    batch: int
    a_stride: int
    b_stride: int
    trans_a: bool
    trans_b: bool
    alpha: float
    bias: bool
    residual: bool
    activation: str
    kind: str

    def __init__(self, m: int, n: int, k: int, dtype: str, batch: int = 1, a_stride: int = 0,
                 b_stride: int = 0, trans_a: bool = False, trans_b: bool = False,
                 alpha: float = 1.0, bias: bool = False, residual: bool = False,
                 activation: str = "none", kind: str = "gemm") -> None:
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "batch", batch)
        object.__setattr__(self, "a_stride", a_stride)
        object.__setattr__(self, "b_stride", b_stride)
        object.__setattr__(self, "trans_a", trans_a)
        object.__setattr__(self, "trans_b", trans_b)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "bias", bias)
        object.__setattr__(self, "residual", residual)
        object.__setattr__(self, "activation", activation)
        object.__setattr__(self, "kind", kind)

    @property
    def operands(self) -> tuple[str, ...]:
        return ("a", "b", *(("bias",) if self.bias else ()), *(("c",) if self.residual else ()),
                "d")

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    @classmethod
    def from_json(cls, data: Any) -> LibraryPlan:
        """A validated plan; a malformed entry is a `ValueError` saying what is wrong."""
        plan: LibraryPlan = _plan_from_json(cls, data, "library plan")
        return plan

    def check(self) -> None:
        if self.kind != "gemm":
            raise ValueError(f"a GEMM library plan has kind 'gemm', not '{self.kind}'")
        ints = {"m": self.m, "n": self.n, "k": self.k, "batch": self.batch}
        for name, value in ints.items():
            if type(value) is not int or value < 1:
                raise ValueError(f"library plan: {name} must be a positive integer, got {value!r}")
        for name, value in (("a_stride", self.a_stride), ("b_stride", self.b_stride)):
            if type(value) is not int or value < 0:
                raise ValueError(f"library plan: {name} must be a non-negative integer, got "
                                 f"{value!r}")
        if self.dtype not in LIBRARY_DTYPES:
            raise ValueError(f"library plan: dtype '{self.dtype}' is not supported "
                             f"({', '.join(LIBRARY_DTYPES)})")
        if self.activation not in LIBRARY_ACTIVATIONS:
            raise ValueError(f"library plan: activation '{self.activation}' is not supported "
                             f"({', '.join(LIBRARY_ACTIVATIONS)})")
        if not isinstance(self.alpha, int | float):
            raise ValueError(f"library plan: alpha must be a number, got {self.alpha!r}")


CONV_ACTIVATIONS = ("none", "relu")


class ConvPlan(Record):
    """One library 2-D convolution (cross-correlation, as ONNX Conv), NCHW tensors:

        y = act(conv(x, w) + bias + z)

    x is [n, c, h, w], the filter w [k, c / groups, r, s], y and z [n, k, p, q] with
    p = (h + 2 pad_h - dil_h (r - 1) - 1) / stride_h + 1 (q likewise), all dense row-major;
    `bias` (when present) is a length-k vector broadcast over n, p, q; `z` (when `residual`)
    is added before the activation. Padding is symmetric (the same before and after). Every
    operand has storage type `dtype`; products accumulate in fp32 (never TF32). `operands`
    names the pointers a call passes, in order (a subset of x, w, bias, z, y in that order)."""

    __match_args__ = ("n", "c", "h", "w", "k", "r", "s", "dtype", "stride_h", "stride_w",
                      "pad_h", "pad_w", "dil_h", "dil_w", "groups", "bias", "residual",
                      "activation", "kind")
    _fields = __match_args__

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    dtype: str
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    dil_h: int
    dil_w: int
    groups: int
    bias: bool
    residual: bool
    activation: str
    kind: str

    def __init__(self, n: int, c: int, h: int, w: int, k: int, r: int, s: int, dtype: str,
                 stride_h: int = 1, stride_w: int = 1, pad_h: int = 0, pad_w: int = 0,
                 dil_h: int = 1, dil_w: int = 1, groups: int = 1, bias: bool = False,
                 residual: bool = False, activation: str = "none", kind: str = "conv2d") -> None:
        for name, value in (("n", n), ("c", c), ("h", h), ("w", w), ("k", k), ("r", r),
                            ("s", s), ("dtype", dtype), ("stride_h", stride_h),
                            ("stride_w", stride_w), ("pad_h", pad_h), ("pad_w", pad_w),
                            ("dil_h", dil_h), ("dil_w", dil_w), ("groups", groups),
                            ("bias", bias), ("residual", residual),
                            ("activation", activation), ("kind", kind)):
            object.__setattr__(self, name, value)

    @property
    def out_hw(self) -> tuple[int, int]:
        """(p, q): the output's height and width."""
        p = (self.h + 2 * self.pad_h - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1
        q = (self.w + 2 * self.pad_w - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1
        return p, q

    @property
    def operands(self) -> tuple[str, ...]:
        return ("x", "w", *(("bias",) if self.bias else ()), *(("z",) if self.residual else ()),
                "y")

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    @classmethod
    def from_json(cls, data: Any) -> ConvPlan:
        """A validated plan; a malformed entry is a `ValueError` saying what is wrong."""
        plan: ConvPlan = _plan_from_json(cls, data, "conv plan")
        return plan

    def check(self) -> None:
        if self.kind != "conv2d":
            raise ValueError(f"a convolution library plan has kind 'conv2d', not '{self.kind}'")
        positive = ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "dil_h", "dil_w",
                    "groups")
        for name in positive:
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"conv plan: {name} must be a positive integer, got {value!r}")
        for name in ("pad_h", "pad_w"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"conv plan: {name} must be a non-negative integer, got "
                                 f"{value!r}")
        if self.c % self.groups or self.k % self.groups:
            raise ValueError(f"conv plan: {self.groups} groups do not divide {self.c} input and "
                             f"{self.k} output channels")
        if min(self.out_hw) < 1:
            raise ValueError(f"conv plan: the {self.r}x{self.s} window does not fit the "
                             f"{self.h}x{self.w} input")
        if self.dtype not in LIBRARY_DTYPES:
            raise ValueError(f"conv plan: dtype '{self.dtype}' is not supported "
                             f"({', '.join(LIBRARY_DTYPES)})")
        if self.activation not in CONV_ACTIVATIONS:
            raise ValueError(f"conv plan: activation '{self.activation}' is not supported "
                             f"({', '.join(CONV_ACTIVATIONS)})")


AnyPlan = LibraryPlan | ConvPlan
"""A library plan of any kind (`kind`: 'gemm' or 'conv2d')."""

PLAN_KINDS: dict[str, type[LibraryPlan] | type[ConvPlan]] = {"gemm": LibraryPlan,
                                                              "conv2d": ConvPlan}


def plan_from_json(data: Any) -> AnyPlan:
    """The plan of a manifest entry, by its `kind` (absent: 'gemm'); `ValueError` when
    malformed."""
    if not isinstance(data, dict):
        raise ValueError(f"a library plan must be a JSON object, got {type(data).__name__}")
    kind = data.get("kind", "gemm")
    cls = PLAN_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"library plan kind {kind!r} is not supported "
                         f"({', '.join(PLAN_KINDS)})")
    return cls.from_json(data)


def library_plans(extra: dict[str, str]) -> list[AnyPlan]:
    """The library plans a manifest's `extra` records (none when the key is absent);
    `ValueError` for a malformed list."""
    import json

    text = extra.get(LIBRARY_PLANS_KEY)
    if text is None:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"manifest '{LIBRARY_PLANS_KEY}' is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise ValueError(f"manifest '{LIBRARY_PLANS_KEY}' must be a JSON list")
    return [plan_from_json(d) for d in data]
