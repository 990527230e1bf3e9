"""Library plans on cuda: `ConvPlan` convolutions (nova.abi) run by cuDNN's legacy API.

Everything that costs more than a pointer read happens once per plan (at `nova.load`, from
`nova_rt_library_plan`), in Python through ctypes: the tensor, filter, convolution and activation
descriptors (NCHW, fp32 compute for every storage type; fp32 convolutions use
`CUDNN_FMA_MATH`, so they never use TF32 and match an fp32 reference to 1e-5, fp16/bf16 ones the
tensor-core math type the chosen algorithm reports), the algorithm from
`cudnnGetConvolutionForwardAlgorithm_v7` for the plan's exact shapes (a program is specialised
per batch size), the plan's own workspace, of the size that algorithm needs, and one run of the
plan on scratch operands (so cuDNN's lazy set-up of its kernels happens at load, not inside a
forward or a graph capture, and a configuration it rejects fails the load). The per-call path
is native code (LLVM IR, JIT-compiled once per device, like the cuBLASLt call): it binds the
device's cuDNN handle to the call's stream (`cudnnSetStream`, under a per-handle spin lock, so
two threads running programs on one device do not race on the handle's stream) and calls

- `cudnnConvolutionBiasActivationForward` (y = relu(conv(x, w) + z + bias), z = y with weight 0
  when the plan has no residual) when the plan has a bias and a ReLU and the dtype is fp32 or
  fp16 (the configurations cuDNN's fused call documents), else
- `cudnnConvolutionForward`, then `cudnnAddTensor` for the bias and for z, then
  `cudnnActivationForward` for the ReLU, each in place on y, as the plan needs.

No allocation and no synchronisation: graph capture records it like a kernel launch.

The library comes from the `nvidia-cudnn-cu13` wheel (`nvidia/cudnn/lib`), `NOVA_CUDNN` (a path)
or the system's `libcudnn.so.9`; when none loads, programs with convolution plans fail to load
with a `LibraryUnavailableError` saying where it looked (compile with `conv="nova"` to use
generated kernels only).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.abi import ConvPlan
from nova.runtime.cuda import library_paths
from nova.runtime.cuda.cublaslt import LibraryCallError, LibraryUnavailableError
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

LIBRARY_SONAME = "libcudnn.so.9"
ENV_PATH = "NOVA_CUDNN"
WORKSPACE_LIMIT = 256 << 20
"""The most workspace an algorithm may ask for (per plan, allocated at load)."""

# cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h enum values (cuDNN 9.19)
CUDNN_DATA = {"float32": 0, "float16": 2, "bfloat16": 9}
CUDNN_TENSOR_NCHW = 0
CUDNN_CROSS_CORRELATION = 1
CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, \
    CUDNN_FMA_MATH = 0, 1, 2, 3
CUDNN_ACTIVATION_RELU = 1
CUDNN_NOT_PROPAGATE_NAN = 0
MODE_FUSED, MODE_CHAIN = 0, 1
"""How the native call runs a plan: one cudnnConvolutionBiasActivationForward, or
cudnnConvolutionForward followed by AddTensor / ActivationForward steps."""
FUSED_DTYPES = ("float32", "float16")

STATUS_NAMES = {0: "CUDNN_STATUS_SUCCESS", 1001: "CUDNN_STATUS_NOT_INITIALIZED",
                1008: "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", 2000: "CUDNN_STATUS_BAD_PARAM",
                2002: "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
                2003: "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER",
                2011: "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH",
                3000: "CUDNN_STATUS_NOT_SUPPORTED", 3002: "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
                3003: "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE",
                3004: "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT",
                3007: "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
                4000: "CUDNN_STATUS_INTERNAL_ERROR",
                4003: "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
                4004: "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
                5000: "CUDNN_STATUS_EXECUTION_FAILED",
                5001: "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"}


def status_name(code: int) -> str:
    return library_status_name(STATUS_NAMES, "CUDNN_STATUS_", code)


# --- finding the library ----------------------------------------------------------------------

def candidate_paths() -> list[Path]:
    """Where libcudnn.so.9 may be: $NOVA_CUDNN, the nvidia-cudnn wheel (`nvidia/cudnn/lib`),
    torch's lib folder, the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda)."""
    return library_paths.candidate_paths(LIBRARY_SONAME, ENV_PATH, ("cudnn/lib",))


def find_library() -> str:
    """The first existing candidate, else the bare soname (left to the dynamic loader)."""
    return library_paths.find_library(candidate_paths(), LIBRARY_SONAME)


_loaded: dict[str, Any] = {}
_load_lock = threading.Lock()


def load_library() -> ctypes.CDLL:
    """libcudnn, loaded once. The front library opens its sub-libraries (ops, cnn, engines)
    from its own folder (RUNPATH $ORIGIN); creating a convolution descriptor here makes it load
    the convolution library now, so a broken installation is reported as unavailable (and the
    auto policy keeps generated kernels) rather than failing at the first plan."""
    with _load_lock:
        if "lib" in _loaded:
            return _loaded["lib"]
        path = find_library()
        try:
            lib = ctypes.CDLL(path)
            lib.cudnnGetVersion.restype = ctypes.c_size_t
            version = int(lib.cudnnGetVersion())
            if version < 90000:
                raise OSError(f"cuDNN {version} is older than 9.0")
            probe = ctypes.c_void_p()
            status = int(lib.cudnnCreateConvolutionDescriptor(ctypes.byref(probe)))
            if status:
                raise OSError(f"its convolution library does not load: {status_name(status)}")
            lib.cudnnDestroyConvolutionDescriptor(probe)
        except (OSError, AttributeError) as exc:
            looked = ", ".join(str(p) for p in candidate_paths()) or "(no wheel folders)"
            raise LibraryUnavailableError(
                f"cuDNN ({LIBRARY_SONAME}) cannot be loaded: {exc}. Looked in: {looked}, then the "
                f"system loader. Install the nvidia-cudnn-cu13 wheel, set {ENV_PATH} to the "
                "library's path, or compile the model with conv='nova' (generated kernels "
                "only)") from None
        _loaded["lib"] = lib
        return lib


def library_symbols(lib: Any) -> dict[str, int]:
    """The addresses of the functions the native call uses, taken from the front library (its
    sub-libraries export the same names; the call binds exactly these)."""
    return {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
            for name in LIBRARY_FUNCTIONS}


def unavailable_reason() -> str | None:
    """None when cuDNN loads, else why not (for the auto conv policy and error messages)."""
    try:
        load_library()
    except LibraryUnavailableError as exc:
        return str(exc)
    return None


# --- the plan the native call reads -----------------------------------------------------------

class NativeConvPlan(ctypes.Structure):
    """What the native call reads (PLAN_LLVM is the same struct in LLVM IR). Slots are indices
    into the call's operand array (-1: none); `lock` points to the handle's spin lock."""

    _fields_ = (
        ("handle", ctypes.c_void_p),
        ("x_desc", ctypes.c_void_p),
        ("w_desc", ctypes.c_void_p),
        ("conv_desc", ctypes.c_void_p),
        ("y_desc", ctypes.c_void_p),
        ("bias_desc", ctypes.c_void_p),
        ("act_desc", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_uint64),
        ("default_stream", ctypes.c_void_p),
        ("lock", ctypes.c_void_p),
        ("algo", ctypes.c_int32),
        ("mode", ctypes.c_int32),
        ("slot_x", ctypes.c_int32),
        ("slot_w", ctypes.c_int32),
        ("slot_bias", ctypes.c_int32),
        ("slot_z", ctypes.c_int32),
        ("slot_y", ctypes.c_int32),
        ("relu", ctypes.c_int32),
        ("one", ctypes.c_float),
        ("alpha2", ctypes.c_float),
        ("zero", ctypes.c_float),
        ("num_operands", ctypes.c_int64),
    )


PLAN_LLVM = ("{ ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64, ptr, ptr, i32, i32, i32, i32, i32, "
             "i32, i32, i32, float, float, float, i64 }")


class AlgoPerf(ctypes.Structure):
    """cudnnConvolutionFwdAlgoPerf_t (cudnn_cnn.h)."""

    _fields_ = (
        ("algo", ctypes.c_int32),
        ("status", ctypes.c_int32),
        ("time", ctypes.c_float),
        ("memory", ctypes.c_size_t),
        ("determinism", ctypes.c_int32),
        ("math_type", ctypes.c_int32),
        ("reserved", ctypes.c_int32 * 3),
    )


@dataclass(frozen=True)
class ConvSetup:
    """The cuDNN view of a ConvPlan: everything plan creation sets, as plain values (the unit
    tests check this mapping without the library)."""

    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]
    y: tuple[int, int, int, int]
    data_type: int
    math_type: int
    mode: int
    slots: dict[str, int]


def conv_setup(plan: ConvPlan) -> ConvSetup:
    p, q = plan.out_hw
    slots = {name: i for i, name in enumerate(plan.operands)}
    fused = plan.activation == "relu" and plan.bias and plan.dtype in FUSED_DTYPES
    return ConvSetup(
        x=(plan.n, plan.c, plan.h, plan.w), w=(plan.k, plan.c // plan.groups, plan.r, plan.s),
        y=(plan.n, plan.k, p, q), data_type=CUDNN_DATA[plan.dtype],
        math_type=CUDNN_FMA_MATH if plan.dtype == "float32" else CUDNN_TENSOR_OP_MATH,
        mode=MODE_FUSED if fused else MODE_CHAIN,
        slots={"x": slots["x"], "w": slots["w"], "bias": slots.get("bias", -1),
               "z": slots.get("z", -1), "y": slots["y"]})


def choose_algorithm(plan: ConvPlan, results: list[AlgoPerf]) -> AlgoPerf | None:
    """The first (best by cuDNN's heuristic) usable result: succeeded, within WORKSPACE_LIMIT,
    and for fp32 no tensor-core math (TF32)."""
    for result in results:
        if result.status != 0 or result.memory > WORKSPACE_LIMIT:
            continue
        if plan.dtype == "float32" and result.math_type not in (CUDNN_DEFAULT_MATH,
                                                                CUDNN_FMA_MATH):
            continue
        return result
    return None


def describe(plan: ConvPlan) -> str:
    p, q = plan.out_hw
    parts = [f"stride {plan.stride_h}x{plan.stride_w}", f"pad {plan.pad_h}x{plan.pad_w}"]
    if (plan.dil_h, plan.dil_w) != (1, 1):
        parts.append(f"dilation {plan.dil_h}x{plan.dil_w}")
    if plan.groups > 1:
        parts.append(f"{plan.groups} groups")
    epilogue = "+".join([*(["bias"] if plan.bias else []), *(["z"] if plan.residual else []),
                         *([plan.activation] if plan.activation != "none" else [])])
    return (f"[{plan.n}x{plan.c}x{plan.h}x{plan.w}] * [{plan.k}x{plan.c // plan.groups}x"
            f"{plan.r}x{plan.s}] -> [{plan.n}x{plan.k}x{p}x{q}] {plan.dtype} "
            f"({', '.join(parts)}){' + ' + epilogue if epilogue else ''}")


# --- ctypes calls made at plan creation -------------------------------------------------------

class CudnnApi(LibraryApi):
    """The plan-creation entry points of libcudnn, each checked (a failure raises a
    LibraryCallError naming the call and the status)."""

    def __init__(self, lib: Any) -> None:
        super().__init__(lib, status_name, LibraryCallError)


def _create(api: CudnnApi, what: str) -> int:
    out = ctypes.c_void_p()
    api(f"cudnnCreate{what}Descriptor", ctypes.byref(out))
    return out.value or 0


def _tensor(api: CudnnApi, dims: tuple[int, int, int, int], data_type: int) -> int:
    desc = _create(api, "Tensor")
    api("cudnnSetTensor4dDescriptor", ctypes.c_void_p(desc), ctypes.c_int(CUDNN_TENSOR_NCHW),
        ctypes.c_int(data_type), *(ctypes.c_int(d) for d in dims))
    return desc


def _descriptors(api: CudnnApi, plan: ConvPlan, setup: ConvSetup, native: NativeConvPlan) -> None:
    native.x_desc = _tensor(api, setup.x, setup.data_type)
    native.y_desc = _tensor(api, setup.y, setup.data_type)
    if plan.bias:
        native.bias_desc = _tensor(api, (1, plan.k, 1, 1), setup.data_type)
    native.w_desc = _create(api, "Filter")
    api("cudnnSetFilter4dDescriptor", ctypes.c_void_p(native.w_desc),
        ctypes.c_int(setup.data_type), ctypes.c_int(CUDNN_TENSOR_NCHW),
        *(ctypes.c_int(d) for d in setup.w))
    native.conv_desc = _create(api, "Convolution")
    conv = ctypes.c_void_p(native.conv_desc)
    api("cudnnSetConvolution2dDescriptor", conv, *(ctypes.c_int(v) for v in (
        plan.pad_h, plan.pad_w, plan.stride_h, plan.stride_w, plan.dil_h, plan.dil_w,
        CUDNN_CROSS_CORRELATION, CUDNN_DATA["float32"])))
    api("cudnnSetConvolutionGroupCount", conv, ctypes.c_int(plan.groups))
    api("cudnnSetConvolutionMathType", conv, ctypes.c_int(setup.math_type))
    if plan.activation == "relu":
        native.act_desc = _create(api, "Activation")
        api("cudnnSetActivationDescriptor", ctypes.c_void_p(native.act_desc),
            ctypes.c_int(CUDNN_ACTIVATION_RELU), ctypes.c_int(CUDNN_NOT_PROPAGATE_NAN),
            ctypes.c_double(0.0))


def _check_output(api: CudnnApi, plan: ConvPlan, setup: ConvSetup,
                  native: NativeConvPlan) -> None:
    dims = [ctypes.c_int() for _ in range(4)]
    api("cudnnGetConvolution2dForwardOutputDim", ctypes.c_void_p(native.conv_desc),
        ctypes.c_void_p(native.x_desc), ctypes.c_void_p(native.w_desc),
        *(ctypes.byref(d) for d in dims))
    got = tuple(d.value for d in dims)
    if got != setup.y:
        raise LibraryCallError(f"cuDNN computes output {list(got)} for the convolution "
                               f"{describe(plan)}, the plan says {list(setup.y)}")


def _algorithm(api: CudnnApi, handle: int, plan: ConvPlan, native: NativeConvPlan) -> AlgoPerf:
    results = (AlgoPerf * 16)()
    count = ctypes.c_int(0)
    api("cudnnGetConvolutionForwardAlgorithm_v7", ctypes.c_void_p(handle),
        ctypes.c_void_p(native.x_desc), ctypes.c_void_p(native.w_desc),
        ctypes.c_void_p(native.conv_desc), ctypes.c_void_p(native.y_desc), ctypes.c_int(16),
        ctypes.byref(count), results)
    chosen = choose_algorithm(plan, list(results)[:max(0, min(count.value, 16))])
    if chosen is None:
        raise LibraryCallError(f"cuDNN has no algorithm for the convolution {describe(plan)} "
                               "(compile the model with conv='nova' to use generated kernels)")
    return chosen


def create_plan(api: CudnnApi, handle: int, plan: ConvPlan,
                allocate: Callable[[int], int], default_stream: int,
                lock: int) -> NativeConvPlan:
    """Descriptors, the heuristic's algorithm and its workspace (`allocate(bytes)` -> device
    pointer) for `plan`; `lock` is the address of the handle's spin lock (an i32)."""
    setup = conv_setup(plan)
    native = NativeConvPlan()
    native.handle = handle
    _descriptors(api, plan, setup, native)
    _check_output(api, plan, setup, native)
    chosen = _algorithm(api, handle, plan, native)
    if plan.dtype != "float32":  # the tensor-core variant the heuristic ranked
        api("cudnnSetConvolutionMathType", ctypes.c_void_p(native.conv_desc),
            ctypes.c_int(chosen.math_type))
    native.algo = chosen.algo
    native.workspace_size = chosen.memory
    native.workspace = allocate(chosen.memory) if chosen.memory else None
    native.default_stream = default_stream
    native.lock = lock
    native.mode = setup.mode
    native.slot_x, native.slot_w = setup.slots["x"], setup.slots["w"]
    native.slot_bias, native.slot_z = setup.slots["bias"], setup.slots["z"]
    native.slot_y = setup.slots["y"]
    native.relu = int(plan.activation == "relu")
    native.one, native.zero = 1.0, 0.0
    native.alpha2 = 1.0 if plan.residual else 0.0
    native.num_operands = len(plan.operands)
    return native


# --- the native per-call function -------------------------------------------------------------

LIBRARY_FUNCTIONS: dict[str, str] = {
    "cudnnSetStream": "i32 (ptr, ptr)",
    "cudnnConvolutionBiasActivationForward":
        "i32 (ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32, ptr, i64, ptr, ptr, ptr, ptr, ptr, ptr, "
        "ptr, ptr)",
    "cudnnConvolutionForward": "i32 (ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32, ptr, i64, ptr, ptr, "
                               "ptr)",
    "cudnnAddTensor": "i32 (ptr, ptr, ptr, ptr, ptr, ptr, ptr)",
    "cudnnActivationForward": "i32 (ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)",
}
ERROR_CALLBACK_GLOBAL = "nova_cudnn_error_callback"
CALL_NAME = "nova_cudnn_conv_call"


def _field(index: int, name: str, ty: str) -> str:
    return (f"  %{name}.at = getelementptr {PLAN_LLVM}, ptr %plan, i32 0, i32 {index}\n"
            f"  %{name} = load {ty}, ptr %{name}.at\n")


def _names() -> str:
    lines = []
    for name in (*LIBRARY_FUNCTIONS, "nova_rt_library_call"):
        lines.append(f'@name.{name} = private unnamed_addr constant [{len(name) + 1} x i8] '
                     f'c"{name}\\00"')
    return "\n".join(lines)


def _step(label: str, call: str, name: str, next_label: str) -> str:
    """A block `label` running `call` (an i32 status), on to `next_label` when it succeeded,
    else to %finish reporting `name`."""
    return (f"{label}:\n  %st.{label} = {call}\n  %ok.{label} = icmp eq i32 %st.{label}, 0\n"
            f"  br i1 %ok.{label}, label %{next_label}, label %finish\n")


def native_ir(prefix: str = "") -> str:
    """LLVM IR of the per-call function `(plan, operands, num_operands, stream) -> i32` (see the
    module doc); a failed cuDNN call reports (call name, status, plan) through the error
    callback and returns 1."""
    decls = []
    for name, signature in LIBRARY_FUNCTIONS.items():
        result, params = signature.split(" ", 1)
        decls.append(f"declare {result} @{prefix}{name}{params}")
    f = PLAN_LLVM
    conv_args = ("ptr %handle, ptr %one, ptr %xd, ptr %x, ptr %wd, ptr %w, ptr %cd, i32 %algo, "
                 "ptr %ws, i64 %wss")
    fused = (f"call i32 @{prefix}cudnnConvolutionBiasActivationForward({conv_args}, ptr %alpha2, "
             "ptr %yd, ptr %z, ptr %bd, ptr %bias, ptr %ad, ptr %yd, ptr %y)")
    conv = (f"call i32 @{prefix}cudnnConvolutionForward({conv_args}, ptr %zero, ptr %yd, "
            "ptr %y)")
    add_bias = (f"call i32 @{prefix}cudnnAddTensor(ptr %handle, ptr %one, ptr %bd, ptr %bias, "
                "ptr %one, ptr %yd, ptr %y)")
    add_z = (f"call i32 @{prefix}cudnnAddTensor(ptr %handle, ptr %one, ptr %yd, ptr %z, "
             "ptr %one, ptr %yd, ptr %y)")
    relu = (f"call i32 @{prefix}cudnnActivationForward(ptr %handle, ptr %ad, ptr %one, "
            "ptr %yd, ptr %y, ptr %zero, ptr %yd, ptr %y)")
    steps = [("set.stream", f"call i32 @{prefix}cudnnSetStream(ptr %handle, ptr %s)",
              "cudnnSetStream", "dispatch"),
             ("fused", fused, "cudnnConvolutionBiasActivationForward", "done.ok"),
             ("conv", conv, "cudnnConvolutionForward", "maybe.bias"),
             ("add.bias", add_bias, "cudnnAddTensor", "maybe.z"),
             ("add.z", add_z, "cudnnAddTensor", "maybe.relu"),
             ("relu", relu, "cudnnActivationForward", "done.ok")]
    phis = ", ".join(f"[ %st.{label}, %{label} ]" for label, *_ in steps)
    names = ", ".join(f"[ @name.{name}, %{label} ]" for label, _, name, _ in steps)
    body = "".join(_step(label, call, name, nxt) for label, call, name, nxt in steps)
    return f"""
@{ERROR_CALLBACK_GLOBAL} = global ptr null
{_names()}
{chr(10).join(decls)}

{OPERAND_IR}

{fail_ir(ERROR_CALLBACK_GLOBAL, False)}

define i32 @{CALL_NAME}(ptr %plan, ptr %operands, i64 %num, ptr %stream) {{
entry:
{_field(22, "want", "i64")}  %count.ok = icmp eq i64 %num, %want
  br i1 %count.ok, label %start, label %bad.count
bad.count:
  call void @fail(ptr @name.nova_rt_library_call, i32 {STATUS_BAD_COUNT}, ptr %plan)
  ret i32 1
start:
{_field(10, "lock", "ptr")}  br label %spin
spin:
  %old = atomicrmw xchg ptr %lock, i32 1 acquire
  %free = icmp eq i32 %old, 0
  br i1 %free, label %locked, label %spin
locked:
{_field(0, "handle", "ptr")}{_field(1, "xd", "ptr")}{_field(2, "wd", "ptr")}\
{_field(3, "cd", "ptr")}{_field(4, "yd", "ptr")}{_field(5, "bd", "ptr")}{_field(6, "ad", "ptr")}\
{_field(7, "ws", "ptr")}{_field(8, "wss", "i64")}{_field(9, "default", "ptr")}\
{_field(11, "algo", "i32")}{_field(12, "mode", "i32")}{_field(13, "slot.x", "i32")}\
{_field(14, "slot.w", "i32")}{_field(15, "slot.bias", "i32")}{_field(16, "slot.z", "i32")}\
{_field(17, "slot.y", "i32")}{_field(18, "relu.on", "i32")}\
  %one = getelementptr {f}, ptr %plan, i32 0, i32 19
  %alpha2 = getelementptr {f}, ptr %plan, i32 0, i32 20
  %zero = getelementptr {f}, ptr %plan, i32 0, i32 21
  %none = icmp eq ptr %stream, null
  %s = select i1 %none, ptr %default, ptr %stream
  %x = call ptr @operand(ptr %operands, i32 %slot.x)
  %w = call ptr @operand(ptr %operands, i32 %slot.w)
  %y = call ptr @operand(ptr %operands, i32 %slot.y)
  %has.bias = icmp sge i32 %slot.bias, 0
  %bias.slot = select i1 %has.bias, i32 %slot.bias, i32 %slot.y
  %bias = call ptr @operand(ptr %operands, i32 %bias.slot)
  %has.z = icmp sge i32 %slot.z, 0
  %z.slot = select i1 %has.z, i32 %slot.z, i32 %slot.y
  %z = call ptr @operand(ptr %operands, i32 %z.slot)
  br label %set.stream
dispatch:
  %is.fused = icmp eq i32 %mode, {MODE_FUSED}
  br i1 %is.fused, label %fused, label %conv
maybe.bias:
  br i1 %has.bias, label %add.bias, label %maybe.z
maybe.z:
  br i1 %has.z, label %add.z, label %maybe.relu
maybe.relu:
  %has.relu = icmp ne i32 %relu.on, 0
  br i1 %has.relu, label %relu, label %done.ok
done.ok:
  br label %finish
{body}finish:
  %status = phi i32 {phis}, [ 0, %done.ok ]
  %failed.name = phi ptr {names}, [ null, %done.ok ]
  store atomic i32 0, ptr %lock release, align 4
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %done, label %failed
failed:
  call void @fail(ptr %failed.name, i32 %status, ptr %plan)
  ret i32 1
done:
  ret i32 0
}}
"""


_CALL_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_void_p)
NativeConv = NativeLibrary
"""The JIT-compiled per-call module of one device (nova.runtime.cuda.library_jit)."""


def compile_native(describe_plan: Callable[[int], str], prefix: str = "",
                   symbols: Mapping[str, int] | None = None) -> NativeConv:
    """JIT-compile `native_ir` with `symbols` (`<prefix>cudnnX` -> address: the library's,
    `library_symbols`, or mocks in tests)."""
    return jit_library(native_ir(prefix), CALL_NAME, ERROR_CALLBACK_GLOBAL, "cuDNN",
                       "convolution", status_name, LibraryCallError, describe_plan, symbols)


class CudnnRuntime:
    """cuDNN state of one device: the handle and its lock, the native call and the plans made
    so far (shared by every program on the device: equal plans share descriptors)."""

    def __init__(self, device: Any, api: CudnnApi | None = None,
                 native: NativeConv | None = None) -> None:
        self.device = device
        self.api = api or CudnnApi(load_library())
        self._plans: dict[ConvPlan, NativeConvPlan] = {}
        self._by_address: dict[int, ConvPlan] = {}
        self._workspaces: list[Any] = []
        self._lock = threading.Lock()
        self.handle_lock = ctypes.c_int32(0)
        self.native = native or compile_native(self.describe, "",
                                               library_symbols(self.api.lib))
        make_current(device)
        out = ctypes.c_void_p()
        self.api("cudnnCreate", ctypes.byref(out))
        self.handle = out.value or 0

    def describe(self, address: int) -> str:
        plan = self._by_address.get(address)
        return describe(plan) if plan is not None else f"plan at {address:#x}"

    def _allocate(self, size: int) -> int:
        buffer = self.device.allocate(size)
        self._workspaces.append(buffer)
        return int(buffer.ptr)

    def plan(self, plan: ConvPlan) -> int:
        """The address of `plan`'s NativeConvPlan (made on first use)."""
        with self._lock:
            native = self._plans.get(plan)
            if native is None:
                make_current(self.device)
                try:
                    native = create_plan(self.api, self.handle, plan, self._allocate,
                                         self.device.default_stream.handle,
                                         ctypes.addressof(self.handle_lock))
                except LibraryCallError as exc:
                    if "convolution" in str(exc):
                        raise
                    raise LibraryCallError(f"{exc}, preparing the convolution {describe(plan)} "
                                           "(compile the model with conv='nova' to use "
                                           "generated kernels)") from None
                self._by_address[ctypes.addressof(native)] = plan
                self._warm_up(native, plan)
                self._plans[plan] = native
            return ctypes.addressof(native)

    def _warm_up(self, native: NativeConvPlan, plan: ConvPlan) -> None:
        """Run the plan once now, on scratch operands on the default stream, and wait for it:
        cuDNN's one-time work for the chosen kernels (module loading, any lazy set-up) happens
        at `nova.load` rather than inside a forward or a graph capture, and a configuration the
        library rejects (status or launch failure) fails the load, naming the call."""
        from nova.runtime.native_support import take_error

        n, c, h, w, k, p, q = plan.n, plan.c, plan.h, plan.w, plan.k, *plan.out_hw
        counts = {"x": n * c * h * w, "w": k * (c // plan.groups) * plan.r * plan.s, "bias": k,
                  "z": n * k * p * q, "y": n * k * p * q}
        size = 4 if plan.dtype == "float32" else 2
        buffers = [self.device.allocate(counts[name] * size) for name in plan.operands]
        try:
            operands = (ctypes.c_void_p * len(buffers))(*(int(b.ptr) for b in buffers))
            take_error()
            status = _CALL_TYPE(self.native.call)(ctypes.addressof(native),
                                                 ctypes.addressof(operands), len(buffers), None)
            error = take_error()
            if status or error is not None:
                raise LibraryCallError(f"{error or 'the call failed'} (running the plan once at "
                                       "load; compile the model with conv='nova' to use "
                                       "generated kernels)")
            self.device.default_stream.synchronize()
        finally:
            for buffer in buffers:
                buffer.free()


runtime_for = PerDevice(CudnnRuntime)
"""The device's cuDNN state (made on first use; LibraryUnavailableError without the
library)."""
