"""Library plans on cuda: `LibraryPlan` GEMMs (nova.abi) run by cuBLASLt.

Everything that costs more than a pointer write happens once per plan (at `nova.load`, from
`nova_rt_library_plan`), in Python through ctypes: the cuBLASLt handle (one per device), the
matmul descriptor (fp32 compute `CUBLAS_COMPUTE_32F` with fp32 scale for every dtype, so fp32
GEMMs never use TF32), the four matrix layouts, the epilogue, and the algorithm: the fastest of
`cublasLtMatmulAlgoGetHeuristic`'s candidates for the plan's exact shapes, measured on the device
(nova.runtime.cuda.gemm_tuning; a program is specialised per batch size, so M is static). The
per-call path is native code (LLVM IR, JIT-compiled once per device, like
`nova.runtime.cuda.native`; `nova_rt_library_call` reaches it through the program's
dispatcher, nova.runtime.cuda.library): it reads the operand pointers, sets the bias
pointer on the descriptor when the plan has one (under a per-plan spin lock, so two threads
running one program do not race on it) and calls `cublasLtMatmul` on the stream with the
device's preallocated workspace: no allocation and no synchronisation, so graph capture records
it like a kernel launch.

Row-major operands use the transpose identity: the row-major product D[M,N] = A[M,K] B[K,N] is
the column-major product D^T[N,M] = B^T[N,K] A^T[K,M], so cuBLASLt's "A" is the program's B and
its "B" the program's A, each layout being the row-major buffer read column-major; the bias
(length N) is then per row of cuBLASLt's D, which is what its BIAS epilogues broadcast.

The library comes from the `nvidia-cublas` wheel (`nvidia/cublas/lib` or `nvidia/cu13/lib`),
`NOVA_CUBLASLT` (a path) or the system's `libcublasLt.so.13`; when none loads, programs with
library plans fail to load with a `LibraryUnavailableError` saying where it looked (compile with
`gemm="nova"` to use generated kernels only).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova.abi import LibraryPlan
from nova.errors import DeviceError
from nova.runtime.cuda import library_paths
from nova.runtime.cuda.gemm_tuning import Tuning, tune_plan, tuning_enabled
from nova.runtime.cuda.library_jit import (
    OPERAND_IR,
    STATUS_BAD_COUNT,
    LibraryApi,
    NativeLibrary,
    PerDevice,
    fail_ir,
    jit_library,
    library_status_name,
    make_current,
)

LIBRARY_SONAME = "libcublasLt.so.13"
ENV_PATH = "NOVA_CUBLASLT"
WORKSPACE_BYTES = 32 << 20
"""The per-device workspace every plan may use (NVIDIA's recommendation for Hopper)."""

# cublasLt.h / library_types.h enum values
CUBLAS_COMPUTE_32F = 68
CUDA_R = {"float32": 0, "float16": 2, "bfloat16": 14}
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
DESC_SCALE_TYPE = 1
DESC_TRANSA, DESC_TRANSB = 3, 4
DESC_EPILOGUE = 7
DESC_BIAS_POINTER = 8
DESC_BIAS_DATA_TYPE = 26
LAYOUT_BATCH_COUNT = 5
LAYOUT_STRIDED_BATCH_OFFSET = 6
PREF_MAX_WORKSPACE_BYTES = 1
PREF_MIN_ALIGNMENT = (5, 6, 7, 8)  # A, B, C, D bytes
EPILOGUE = {("none", False): 1, ("relu", False): 2, ("gelu_tanh", False): 32,
            ("none", True): 4, ("relu", True): 6, ("gelu_tanh", True): 36}
"""(activation, bias) -> cublasLtEpilogue_t (DEFAULT, RELU, GELU, BIAS, RELU_BIAS, GELU_BIAS)."""

STATUS_NAMES = {0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED",
                3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
                8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
                13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
                15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}


class LibraryUnavailableError(DeviceError):
    """A program needs a library (cuBLASLt) that cannot be loaded on this machine."""


class LibraryCallError(DeviceError):
    """A cuBLASLt call failed; names the call, the status and the plan."""


def status_name(code: int) -> str:
    return library_status_name(STATUS_NAMES, "CUBLAS_STATUS_", code)


# --- finding the library ----------------------------------------------------------------------

def candidate_paths() -> list[Path]:
    """Where libcublasLt.so.13 may be: $NOVA_CUBLASLT, the nvidia wheels' lib folders (the
    `nvidia` namespace package: `cublas/lib`, `cu13/lib`), torch's lib folder, the CUDA
    toolkit ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda)."""
    return library_paths.candidate_paths(LIBRARY_SONAME, ENV_PATH,
                                         ("cublas/lib", "cu13/lib", "cu13/lib64"))


def find_library() -> str:
    """The first existing candidate, else the bare soname (left to the dynamic loader)."""
    return library_paths.find_library(candidate_paths(), LIBRARY_SONAME)


def unavailable_reason() -> str | None:
    """None when cuBLASLt loads, else why not (for the auto GEMM policy and error messages)."""
    try:
        load_library()
    except LibraryUnavailableError as exc:
        return exc.message if hasattr(exc, "message") else str(exc)
    return None


_loaded: dict[str, ctypes.CDLL] = {}
_load_lock = threading.Lock()


def load_library() -> ctypes.CDLL:
    """libcublasLt, loaded once (globally, so the native module's symbols resolve to it)."""
    with _load_lock:
        if "lib" in _loaded:
            return _loaded["lib"]
        path = find_library()
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            import llvmlite.binding as llvm

            llvm.load_library_permanently(path if os.sep in path else LIBRARY_SONAME)
        except (OSError, RuntimeError) as exc:
            looked = ", ".join(str(p) for p in candidate_paths()) or "(no wheel folders)"
            raise LibraryUnavailableError(
                f"cuBLASLt ({LIBRARY_SONAME}) cannot be loaded: {exc}. Looked in: {looked}, then "
                f"the system loader. Install the nvidia-cublas wheel, set {ENV_PATH} to the "
                "library's path, or compile the model with gemm='nova' (generated kernels "
                "only)") from None
        _loaded["lib"] = lib
        return lib


# --- the plan the native call reads -----------------------------------------------------------

class NativePlan(ctypes.Structure):
    """What `nova_rt_library_call` reads (PLAN_LLVM is the same struct in LLVM IR). Slots are
    indices into the call's operand array (-1: none): cuBLASLt's A is the program's B, its B the
    program's A (see the module doc)."""

    _fields_ = (
        ("handle", ctypes.c_void_p),
        ("desc", ctypes.c_void_p),
        ("layout_a", ctypes.c_void_p),
        ("layout_b", ctypes.c_void_p),
        ("layout_c", ctypes.c_void_p),
        ("layout_d", ctypes.c_void_p),
        ("algo", ctypes.c_uint64 * 8),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_uint64),
        ("default_stream", ctypes.c_void_p),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("slot_a", ctypes.c_int32),
        ("slot_b", ctypes.c_int32),
        ("slot_bias", ctypes.c_int32),
        ("slot_c", ctypes.c_int32),
        ("slot_d", ctypes.c_int32),
        ("lock", ctypes.c_int32),
        ("num_operands", ctypes.c_int64),
    )


PLAN_LLVM = "{ ptr, ptr, ptr, ptr, ptr, ptr, [8 x i64], ptr, i64, ptr, float, float, i32, i32, " \
            "i32, i32, i32, i32, i64 }"


class HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t."""

    _fields_ = (
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int32),
        ("waves", ctypes.c_float),
        ("reserved", ctypes.c_int32 * 4),
    )


@dataclass(frozen=True)
class Layout:
    """One cuBLASLt matrix layout (column-major rows x cols, leading dim, batching)."""

    rows: int
    cols: int
    ld: int
    batch: int = 1
    stride: int = 0


@dataclass(frozen=True)
class GemmSetup:
    """The cuBLASLt view of a LibraryPlan: everything plan creation sets, as plain values (the
    unit tests check this mapping without the library)."""

    trans_a: int
    trans_b: int
    a: Layout
    b: Layout
    c: Layout
    epilogue: int
    alignment: int
    slots: dict[str, int] = field(default_factory=dict)


def _alignment(plan: LibraryPlan) -> int:
    """The largest power of two up to 16 dividing every batch offset in bytes (buffers are at
    least 16-byte aligned): the alignment cuBLASLt may assume of each matrix."""
    size = ELEMENT_BYTES[plan.dtype]
    align = 16
    for stride in (plan.a_stride, plan.b_stride, plan.m * plan.n):
        if plan.batch > 1:
            while (stride * size) % align:
                align //= 2
    return align


def gemm_setup(plan: LibraryPlan) -> GemmSetup:
    """Map a row-major LibraryPlan onto cuBLASLt's column-major matmul (the module doc)."""
    m, n, k = plan.m, plan.n, plan.k
    # cuBLASLt A := program B, viewed column-major: [N, K] (op N) or, stored [N, K] row-major,
    # a [K, N] column-major matrix read transposed.
    a = Layout(k, n, k, plan.batch, plan.b_stride) if plan.trans_b else \
        Layout(n, k, n, plan.batch, plan.b_stride)
    b = Layout(m, k, m, plan.batch, plan.a_stride) if plan.trans_a else \
        Layout(k, m, k, plan.batch, plan.a_stride)
    c = Layout(n, m, n, plan.batch, m * n)
    slots = {name: i for i, name in enumerate(plan.operands)}
    return GemmSetup(
        trans_a=CUBLAS_OP_T if plan.trans_b else CUBLAS_OP_N,
        trans_b=CUBLAS_OP_T if plan.trans_a else CUBLAS_OP_N,
        a=a, b=b, c=c, epilogue=EPILOGUE[(plan.activation, plan.bias)],
        alignment=_alignment(plan),
        slots={"a": slots["b"], "b": slots["a"], "bias": slots.get("bias", -1),
               "c": slots.get("c", slots["d"]), "d": slots["d"]})


# --- ctypes calls made at plan creation -------------------------------------------------------

class CublasLtApi(LibraryApi):
    """The plan-creation entry points of libcublasLt, each checked (a failure raises a
    LibraryCallError naming the call and the status)."""

    def __init__(self, lib: Any) -> None:
        super().__init__(lib, status_name, LibraryCallError)


def _set(api: CublasLtApi, fn: str, obj: int, attr: int, value: Any) -> None:
    api(fn, ctypes.c_void_p(obj), ctypes.c_int(attr), ctypes.byref(value),
        ctypes.c_size_t(ctypes.sizeof(value)))


def _layout(api: CublasLtApi, dtype: str, layout: Layout) -> int:
    out = ctypes.c_void_p()
    api("cublasLtMatrixLayoutCreate", ctypes.byref(out), ctypes.c_int(CUDA_R[dtype]),
        ctypes.c_uint64(layout.rows), ctypes.c_uint64(layout.cols), ctypes.c_int64(layout.ld))
    handle = out.value or 0
    if layout.batch > 1:
        set_attr = "cublasLtMatrixLayoutSetAttribute"
        _set(api, set_attr, handle, LAYOUT_BATCH_COUNT, ctypes.c_int32(layout.batch))
        _set(api, set_attr, handle, LAYOUT_STRIDED_BATCH_OFFSET, ctypes.c_int64(layout.stride))
    return handle


def create_plan(api: CublasLtApi, handle: int, plan: LibraryPlan, workspace: int,
                workspace_size: int, default_stream: int) -> NativePlan:
    """Descriptors, layouts, preference and the heuristic's algorithm for `plan`."""
    setup = gemm_setup(plan)
    native = NativePlan()
    native.handle = handle
    desc = ctypes.c_void_p()
    api("cublasLtMatmulDescCreate", ctypes.byref(desc), ctypes.c_int(CUBLAS_COMPUTE_32F),
        ctypes.c_int(CUDA_R["float32"]))
    native.desc = desc.value
    set_desc = "cublasLtMatmulDescSetAttribute"
    _set(api, set_desc, desc.value or 0, DESC_TRANSA, ctypes.c_int32(setup.trans_a))
    _set(api, set_desc, desc.value or 0, DESC_TRANSB, ctypes.c_int32(setup.trans_b))
    _set(api, set_desc, desc.value or 0, DESC_EPILOGUE, ctypes.c_uint32(setup.epilogue))
    if plan.bias:
        _set(api, set_desc, desc.value or 0, DESC_BIAS_DATA_TYPE,
             ctypes.c_int32(CUDA_R[plan.dtype]))
    native.layout_a = _layout(api, plan.dtype, setup.a)
    native.layout_b = _layout(api, plan.dtype, setup.b)
    native.layout_c = _layout(api, plan.dtype, setup.c)
    native.layout_d = _layout(api, plan.dtype, setup.c)
    pref = ctypes.c_void_p()
    api("cublasLtMatmulPreferenceCreate", ctypes.byref(pref))
    try:
        set_pref = "cublasLtMatmulPreferenceSetAttribute"
        _set(api, set_pref, pref.value or 0, PREF_MAX_WORKSPACE_BYTES,
             ctypes.c_uint64(workspace_size))
        for attr in PREF_MIN_ALIGNMENT:
            _set(api, set_pref, pref.value or 0, attr, ctypes.c_uint32(setup.alignment))
        result = HeuristicResult()
        count = ctypes.c_int(0)
        api("cublasLtMatmulAlgoGetHeuristic", ctypes.c_void_p(handle), desc,
            ctypes.c_void_p(native.layout_a), ctypes.c_void_p(native.layout_b),
            ctypes.c_void_p(native.layout_c), ctypes.c_void_p(native.layout_d), pref,
            ctypes.c_int(1), ctypes.byref(result), ctypes.byref(count))
    finally:
        api("cublasLtMatmulPreferenceDestroy", pref)
    if count.value < 1:
        raise LibraryCallError(f"cuBLASLt has no algorithm for the GEMM {describe(plan)} "
                               "(compile the model with gemm='nova' to use generated kernels)")
    native.algo[:] = list(result.algo)
    native.workspace = workspace
    native.workspace_size = workspace_size
    native.default_stream = default_stream
    native.alpha = plan.alpha
    native.beta = 1.0 if plan.residual else 0.0
    native.slot_a, native.slot_b = setup.slots["a"], setup.slots["b"]
    native.slot_bias, native.slot_c = setup.slots["bias"], setup.slots["c"]
    native.slot_d = setup.slots["d"]
    native.lock = 0
    native.num_operands = len(plan.operands)
    return native


def describe(plan: LibraryPlan) -> str:
    batch = f"{plan.batch} x " if plan.batch > 1 else ""
    epilogue = "+".join([*(["bias"] if plan.bias else []), *(["residual"] if plan.residual
                                                             else []),
                         *([plan.activation] if plan.activation != "none" else [])])
    return (f"{batch}[{plan.m}x{plan.k}] @ [{plan.k}x{plan.n}] {plan.dtype}"
            f"{' + ' + epilogue if epilogue else ''}")


# --- the native per-call function -------------------------------------------------------------

LIBRARY_FUNCTIONS: dict[str, str] = {
    "cublasLtMatmul": "i32 (ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, "
                      "ptr, i64, ptr)",
    "cublasLtMatmulDescSetAttribute": "i32 (ptr, i32, ptr, i64)",
}
ERROR_CALLBACK_GLOBAL = "nova_cublaslt_error_callback"
CALL_NAME = "nova_rt_library_call"


def native_ir(prefix: str = "") -> str:
    """LLVM IR of `nova_rt_library_call(plan, operands, stream)` (see the module doc); a failed
    cuBLASLt call reports (call name, status, plan) through the error callback and returns 1."""
    p = PLAN_LLVM
    decls = []
    for name, signature in LIBRARY_FUNCTIONS.items():
        result, params = signature.split(" ", 1)
        decls.append(f"declare {result} @{prefix}{name}{params}")
    set_args = f"ptr %desc, i32 {DESC_BIAS_POINTER}, ptr %bias.cell, i64 8"
    matmul_args = ("ptr %handle, ptr %desc, ptr %alpha, ptr %a, ptr %la, ptr %b, ptr %lb, "
                   "ptr %beta, ptr %c, ptr %lc, ptr %d, ptr %ld, ptr %algo, ptr %ws, i64 %wss, "
                   "ptr %s")
    return f"""
@{ERROR_CALLBACK_GLOBAL} = global ptr null
@name.matmul = private unnamed_addr constant [15 x i8] c"cublasLtMatmul\\00"
@name.bias = private unnamed_addr constant [31 x i8] c"cublasLtMatmulDescSetAttribute\\00"
@name.count = private unnamed_addr constant [21 x i8] c"nova_rt_library_call\\00"
{chr(10).join(decls)}

{OPERAND_IR}

{fail_ir(ERROR_CALLBACK_GLOBAL, True)}

define i32 @{CALL_NAME}(ptr %plan, ptr %operands, i64 %num, ptr %stream) {{
entry:
  %want.at = getelementptr {p}, ptr %plan, i32 0, i32 18
  %want = load i64, ptr %want.at
  %count.ok = icmp eq i64 %num, %want
  br i1 %count.ok, label %start, label %bad.count
bad.count:
  %r0 = call i32 @fail(ptr @name.count, i32 {STATUS_BAD_COUNT}, ptr %plan)
  ret i32 1
start:
  %lock = getelementptr {p}, ptr %plan, i32 0, i32 17
  br label %spin
spin:
  %old = atomicrmw xchg ptr %lock, i32 1 acquire
  %free = icmp eq i32 %old, 0
  br i1 %free, label %locked, label %spin
locked:
  %desc.at = getelementptr {p}, ptr %plan, i32 0, i32 1
  %desc = load ptr, ptr %desc.at
  %bias.slot.at = getelementptr {p}, ptr %plan, i32 0, i32 14
  %bias.slot = load i32, ptr %bias.slot.at
  %has.bias = icmp sge i32 %bias.slot, 0
  br i1 %has.bias, label %set.bias, label %matmul
set.bias:
  %bias.value = call ptr @operand(ptr %operands, i32 %bias.slot)
  %bias.cell = alloca ptr, align 8
  store ptr %bias.value, ptr %bias.cell
  %set.status = call i32 @{prefix}cublasLtMatmulDescSetAttribute({set_args})
  %set.ok = icmp eq i32 %set.status, 0
  br i1 %set.ok, label %matmul, label %set.failed
set.failed:
  store atomic i32 0, ptr %lock release, align 4
  %r1 = call i32 @fail(ptr @name.bias, i32 %set.status, ptr %plan)
  ret i32 1
matmul:
  %handle.at = getelementptr {p}, ptr %plan, i32 0, i32 0
  %handle = load ptr, ptr %handle.at
  %la.at = getelementptr {p}, ptr %plan, i32 0, i32 2
  %la = load ptr, ptr %la.at
  %lb.at = getelementptr {p}, ptr %plan, i32 0, i32 3
  %lb = load ptr, ptr %lb.at
  %lc.at = getelementptr {p}, ptr %plan, i32 0, i32 4
  %lc = load ptr, ptr %lc.at
  %ld.at = getelementptr {p}, ptr %plan, i32 0, i32 5
  %ld = load ptr, ptr %ld.at
  %algo = getelementptr {p}, ptr %plan, i32 0, i32 6
  %ws.at = getelementptr {p}, ptr %plan, i32 0, i32 7
  %ws = load ptr, ptr %ws.at
  %wss.at = getelementptr {p}, ptr %plan, i32 0, i32 8
  %wss = load i64, ptr %wss.at
  %default.at = getelementptr {p}, ptr %plan, i32 0, i32 9
  %default = load ptr, ptr %default.at
  %none = icmp eq ptr %stream, null
  %s = select i1 %none, ptr %default, ptr %stream
  %alpha = getelementptr {p}, ptr %plan, i32 0, i32 10
  %beta = getelementptr {p}, ptr %plan, i32 0, i32 11
  %a.slot.at = getelementptr {p}, ptr %plan, i32 0, i32 12
  %a.slot = load i32, ptr %a.slot.at
  %a = call ptr @operand(ptr %operands, i32 %a.slot)
  %b.slot.at = getelementptr {p}, ptr %plan, i32 0, i32 13
  %b.slot = load i32, ptr %b.slot.at
  %b = call ptr @operand(ptr %operands, i32 %b.slot)
  %c.slot.at = getelementptr {p}, ptr %plan, i32 0, i32 15
  %c.slot = load i32, ptr %c.slot.at
  %c = call ptr @operand(ptr %operands, i32 %c.slot)
  %d.slot.at = getelementptr {p}, ptr %plan, i32 0, i32 16
  %d.slot = load i32, ptr %d.slot.at
  %d = call ptr @operand(ptr %operands, i32 %d.slot)
  %status = call i32 @{prefix}cublasLtMatmul({matmul_args})
  store atomic i32 0, ptr %lock release, align 4
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %done, label %failed
failed:
  %r2 = call i32 @fail(ptr @name.matmul, i32 %status, ptr %plan)
  ret i32 1
done:
  ret i32 0
}}
"""


def compile_native(describe_plan: Callable[[int], str], prefix: str = "",
                   symbols: Mapping[str, int] | None = None) -> NativeLibrary:
    """JIT-compile `native_ir`. Real use: libcublasLt is loaded first (its symbols resolve by
    name); tests pass `prefix` and `symbols` (`<prefix>cublasLtX` -> mock address)."""
    return jit_library(native_ir(prefix), CALL_NAME, ERROR_CALLBACK_GLOBAL, "cuBLASLt", "GEMM",
                       status_name, LibraryCallError, describe_plan, symbols)


class CublasLtRuntime:
    """cuBLASLt state of one device: the handle, the workspace, the native call and the plans
    made so far (shared by every program on the device: equal plans share descriptors)."""

    def __init__(self, device: Any, api: CublasLtApi | None = None,
                 native: NativeLibrary | None = None) -> None:
        self.device = device
        self.api = api or CublasLtApi(load_library())
        self._plans: dict[LibraryPlan, NativePlan] = {}
        self.tuning: dict[LibraryPlan, Tuning] = {}
        """The measured algorithm candidates of each plan (nova.runtime.cuda.gemm_tuning)."""
        self._by_address: dict[int, LibraryPlan] = {}
        self._lock = threading.Lock()
        self.native = native or compile_native(self.describe)
        make_current(device)
        out = ctypes.c_void_p()
        self.api("cublasLtCreate", ctypes.byref(out))
        self.handle = out.value or 0
        self.workspace = device.allocate(WORKSPACE_BYTES)

    def describe(self, address: int) -> str:
        plan = self._by_address.get(address)
        return describe(plan) if plan is not None else f"plan at {address:#x}"

    def plan(self, plan: LibraryPlan) -> int:
        """The address of `plan`'s NativePlan (made on first use)."""
        with self._lock:
            native = self._plans.get(plan)
            if native is None:
                make_current(self.device)
                native = create_plan(self.api, self.handle, plan, self.workspace.ptr,
                                     WORKSPACE_BYTES, self.device.default_stream.handle)
                if tuning_enabled():
                    self.tuning[plan] = tune_plan(self.api, self.device, plan, native)
                self._plans[plan] = native
                self._by_address[ctypes.addressof(native)] = plan
            return ctypes.addressof(native)


runtime_for = PerDevice(CublasLtRuntime)
"""The device's cuBLASLt state (made on first use; LibraryUnavailableError without the
library)."""
