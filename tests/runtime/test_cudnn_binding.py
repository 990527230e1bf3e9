"""The cuDNN binding (nova.runtime.cuda.cudnn) and the library dispatcher
(nova.runtime.cuda.library) without a GPU: the ConvPlan -> cuDNN mapping, plan creation against
a recording fake libcudnn, and the native per-call function JIT-compiled against mock cuDNN
functions that record their arguments."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any

import pytest

from nova.abi import ConvPlan, LibraryPlan
from nova.runtime.cuda import cudnn
from nova.runtime.cuda.library import Dispatch, ProgramLibraries, dispatch_address
from nova.runtime.native_support import take_error

# --- the mapping ------------------------------------------------------------------------------


def test_setup_maps_nchw_and_picks_the_fused_call() -> None:
    plan = ConvPlan(n=2, c=8, h=9, w=7, k=6, r=3, s=3, dtype="float16", stride_h=2, pad_h=1,
                    pad_w=1, groups=2, bias=True, residual=True, activation="relu")
    s = cudnn.conv_setup(plan)
    assert s.x == (2, 8, 9, 7) and s.w == (6, 4, 3, 3) and s.y == (2, 6, 5, 7)
    assert s.data_type == 2 and s.math_type == cudnn.CUDNN_TENSOR_OP_MATH
    assert s.mode == cudnn.MODE_FUSED
    assert s.slots == {"x": 0, "w": 1, "bias": 2, "z": 3, "y": 4}


@pytest.mark.parametrize(("dtype", "bias", "activation", "mode"), [
    ("float32", True, "relu", cudnn.MODE_FUSED),
    ("float32", True, "none", cudnn.MODE_CHAIN),   # identity needs one algorithm: chain
    ("float32", False, "relu", cudnn.MODE_CHAIN),  # the fused call needs a bias
    ("bfloat16", True, "relu", cudnn.MODE_CHAIN),  # not a documented fused configuration
])
def test_mode_follows_what_the_fused_call_supports(dtype: str, bias: bool, activation: str,
                                                   mode: int) -> None:
    plan = ConvPlan(n=1, c=1, h=3, w=3, k=1, r=1, s=1, dtype=dtype, bias=bias,
                    activation=activation)
    assert cudnn.conv_setup(plan).mode == mode


def test_fp32_never_uses_tensor_core_math() -> None:
    plan = ConvPlan(n=1, c=4, h=5, w=5, k=4, r=3, s=3, dtype="float32")
    assert cudnn.conv_setup(plan).math_type == cudnn.CUDNN_FMA_MATH
    tf32 = cudnn.AlgoPerf(algo=1, status=0, memory=0, math_type=cudnn.CUDNN_TENSOR_OP_MATH)
    failed = cudnn.AlgoPerf(algo=6, status=3000, memory=0, math_type=cudnn.CUDNN_FMA_MATH)
    huge = cudnn.AlgoPerf(algo=4, status=0, memory=cudnn.WORKSPACE_LIMIT + 1,
                          math_type=cudnn.CUDNN_FMA_MATH)
    fma = cudnn.AlgoPerf(algo=0, status=0, memory=64, math_type=cudnn.CUDNN_FMA_MATH)
    chosen = cudnn.choose_algorithm(plan, [tf32, failed, huge, fma])
    assert chosen is not None and chosen.algo == 0
    assert cudnn.choose_algorithm(plan, [tf32, failed, huge]) is None
    half = ConvPlan(n=1, c=4, h=5, w=5, k=4, r=3, s=3, dtype="float16")
    chosen = cudnn.choose_algorithm(half, [tf32, fma])
    assert chosen is not None and chosen.algo == 1


def test_describe_names_shapes_and_epilogue() -> None:
    plan = ConvPlan(n=32, c=64, h=56, w=56, k=64, r=3, s=3, dtype="float16", pad_h=1, pad_w=1,
                    bias=True, activation="relu")
    assert cudnn.describe(plan) == ("[32x64x56x56] * [64x64x3x3] -> [32x64x56x56] float16 "
                                    "(stride 1x1, pad 1x1) + bias+relu")


# --- plan creation against a fake library -----------------------------------------------------


class FakeCudnn:
    """Records every call; reports `results` from the algorithm heuristic and `out_dims` as the
    convolution's output."""

    def __init__(self, results: list[tuple[int, int, int, int]], out_dims: tuple[int, ...],
                 fail: str | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.results = results  # (algo, status, memory, math type)
        self.out_dims = out_dims
        self.fail = fail
        self.next = 0x1000

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> int:
            self.calls.append((name, args))
            if name == self.fail:
                return 2000
            if name.startswith("cudnnCreate"):
                self.next += 0x10
                ctypes.cast(args[0], ctypes.POINTER(ctypes.c_void_p))[0] = self.next
            if name == "cudnnGetConvolution2dForwardOutputDim":
                for ref, value in zip(args[3:], self.out_dims, strict=True):
                    ref._obj.value = value
            if name == "cudnnGetConvolutionForwardAlgorithm_v7":
                perf = ctypes.cast(args[7], ctypes.POINTER(cudnn.AlgoPerf))
                results = self.results[:args[5].value]  # as cuDNN: at most the requested count
                for i, (algo, status, memory, math) in enumerate(results):
                    perf[i] = cudnn.AlgoPerf(algo=algo, status=status, memory=memory,
                                             math_type=math)
                args[6]._obj.value = len(results)
            return 0
        return call

    def ints(self, name: str) -> list[list[int]]:
        """The int arguments of every `name` call."""
        return [[a.value for a in args if isinstance(a, ctypes.c_int)]
                for called, args in self.calls if called == name]


_PLAN = ConvPlan(n=2, c=4, h=6, w=6, k=8, r=3, s=3, dtype="float16", pad_h=1, pad_w=1,
                 bias=True, residual=True, activation="relu")


def _create(plan: ConvPlan, fake: FakeCudnn) -> tuple[cudnn.NativeConvPlan, list[int]]:
    allocations: list[int] = []

    def allocate(size: int) -> int:
        allocations.append(size)
        return 0xABC000

    lock = ctypes.c_int32(0)
    native = cudnn.create_plan(cudnn.CudnnApi(fake), 0x77, plan, allocate, 0x99,
                               ctypes.addressof(lock))
    return native, allocations


def test_create_plan_sets_descriptors_algorithm_and_workspace() -> None:
    fake = FakeCudnn([(1, 0, 4096, cudnn.CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)], (2, 8, 6, 6))
    native, allocations = _create(_PLAN, fake)
    assert fake.ints("cudnnSetTensor4dDescriptor") == [[0, 2, 2, 4, 6, 6], [0, 2, 2, 8, 6, 6],
                                                       [0, 2, 1, 8, 1, 1]]
    assert fake.ints("cudnnSetFilter4dDescriptor") == [[2, 0, 8, 4, 3, 3]]
    assert fake.ints("cudnnSetConvolution2dDescriptor") == [[1, 1, 1, 1, 1, 1, 1, 0]]
    assert fake.ints("cudnnSetConvolutionGroupCount") == [[1]]
    # tensor-core math first, then the variant the heuristic ranked best
    assert fake.ints("cudnnSetConvolutionMathType") == [[1], [2]]
    assert fake.ints("cudnnSetActivationDescriptor") == [[1, 0]]
    assert allocations == [4096]
    assert (native.algo, native.workspace, native.workspace_size) == (1, 0xABC000, 4096)
    assert (native.handle, native.default_stream, native.mode) == (0x77, 0x99, cudnn.MODE_FUSED)
    assert (native.one, native.alpha2, native.zero, native.relu) == (1.0, 1.0, 0.0, 1)
    assert native.num_operands == 5 and native.bias_desc and native.act_desc


def test_fp32_plan_keeps_fma_math_and_needs_no_workspace() -> None:
    plan = ConvPlan(n=1, c=3, h=5, w=5, k=2, r=3, s=3, dtype="float32", groups=1)
    fake = FakeCudnn([(1, 0, 0, cudnn.CUDNN_TENSOR_OP_MATH), (0, 0, 0, cudnn.CUDNN_FMA_MATH)],
                     (1, 2, 3, 3))
    native, allocations = _create(plan, fake)
    assert fake.ints("cudnnSetConvolutionMathType") == [[cudnn.CUDNN_FMA_MATH]]
    assert native.algo == 0 and allocations == [] and not native.workspace
    assert not native.bias_desc and not native.act_desc and native.mode == cudnn.MODE_CHAIN
    assert (native.slot_bias, native.slot_z, native.slot_y) == (-1, -1, 2)


def test_no_algorithm_is_a_clear_error() -> None:
    fake = FakeCudnn([(0, 3000, 0, 0)], (2, 8, 6, 6))
    with pytest.raises(cudnn.LibraryCallError, match=r"no algorithm.*conv='nova'"):
        _create(_PLAN, fake)


def test_output_shape_disagreement_is_a_clear_error() -> None:
    fake = FakeCudnn([(0, 0, 0, 1)], (2, 8, 5, 5))
    with pytest.raises(cudnn.LibraryCallError, match=r"output \[2, 8, 5, 5\].*\[2, 8, 6, 6\]"):
        _create(_PLAN, fake)


def test_failed_call_names_the_call_and_status() -> None:
    fake = FakeCudnn([], (2, 8, 6, 6), fail="cudnnSetFilter4dDescriptor")
    with pytest.raises(cudnn.LibraryCallError,
                       match="cudnnSetFilter4dDescriptor failed: CUDNN_STATUS_BAD_PARAM"):
        _create(_PLAN, fake)


def test_missing_library_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cudnn.ENV_PATH, "/nonexistent/libcudnn.so.9")
    monkeypatch.setattr(cudnn, "_loaded", {})
    monkeypatch.setattr(cudnn, "find_library", lambda: "/nonexistent/libcudnn.so.9")
    with pytest.raises(cudnn.LibraryUnavailableError, match="conv='nova'"):
        cudnn.load_library()
    assert "cannot be loaded" in (cudnn.unavailable_reason() or "")
    assert cudnn.candidate_paths()[0] == cudnn.Path("/nonexistent/libcudnn.so.9")


# --- the native per-call function -------------------------------------------------------------

_P = ctypes.c_void_p
_SIGNATURES = {
    "cudnnSetStream": (_P, _P),
    "cudnnConvolutionBiasActivationForward": (*[_P] * 7, ctypes.c_int32, _P, ctypes.c_int64,
                                              *[_P] * 8),
    "cudnnConvolutionForward": (*[_P] * 7, ctypes.c_int32, _P, ctypes.c_int64, _P, _P, _P),
    "cudnnAddTensor": (_P,) * 7,
    "cudnnActivationForward": (_P,) * 8,
}
_SCALARS = {"cudnnConvolutionBiasActivationForward": (1, 10), "cudnnConvolutionForward": (1, 10),
            "cudnnAddTensor": (1, 4), "cudnnActivationForward": (2, 5)}


class MockNative:
    """The native call compiled against mock cuDNN functions; each records (name, args) with the
    float scalars (alpha, beta) read through their pointers."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._keep = []
        symbols = {}
        for name, params in _SIGNATURES.items():
            def record(*args: Any, _name: str = name) -> int:
                scalars = tuple(ctypes.c_float.from_address(args[i]).value
                                for i in _SCALARS.get(_name, ()))
                self.calls.append((_name, (*args, *scalars)))
                return 3000 if _name == fail else 0
            fn = ctypes.CFUNCTYPE(ctypes.c_int32, *params)(record)
            self._keep.append(fn)
            symbols[f"mockdnn_{name}"] = ctypes.cast(fn, ctypes.c_void_p).value or 0
        self.native = cudnn.compile_native(lambda address: "the mock conv", "mockdnn_", symbols)
        self.call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_void_p)(self.native.call)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def _native_plan(plan: ConvPlan) -> tuple[cudnn.NativeConvPlan, ctypes.c_int32]:
    lock = ctypes.c_int32(0)
    math = cudnn.CUDNN_FMA_MATH if plan.dtype == "float32" else cudnn.CUDNN_TENSOR_OP_MATH
    fake = FakeCudnn([(1, 0, 256, math)], cudnn.conv_setup(plan).y)
    native = cudnn.create_plan(cudnn.CudnnApi(fake), 0x77, plan, lambda size: 0x5000, 0x99,
                               ctypes.addressof(lock))
    return native, lock


def test_native_fused_call_binds_the_stream_and_passes_every_operand() -> None:
    mock = MockNative()
    native, lock = _native_plan(_PLAN)
    operands = (ctypes.c_void_p * 5)(0xA0, 0xB0, 0xB1A5, 0x2000, 0xD0D)  # x, w, bias, z, y
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 5, None) == 0
    assert mock.names() == ["cudnnSetStream", "cudnnConvolutionBiasActivationForward"]
    assert mock.calls[0][1] == (0x77, 0x99)  # null stream: the device's default
    args = mock.calls[1][1]
    (handle, _, xd, x, wd, w, cd, algo, ws, wss, _, zd, z, bd, bias, ad, yd, y,
     alpha1, alpha2) = args
    assert (handle, x, w, z, bias, y) == (0x77, 0xA0, 0xB0, 0x2000, 0xB1A5, 0xD0D)
    assert (xd, wd, cd, bd, ad) == (native.x_desc, native.w_desc, native.conv_desc,
                                    native.bias_desc, native.act_desc)
    assert zd == yd == native.y_desc
    assert (algo, ws, wss, alpha1, alpha2) == (1, 0x5000, 256, 1.0, 1.0)
    assert lock.value == 0
    mock.call(ctypes.addressof(native), ctypes.addressof(operands), 5, 0x5757)
    assert mock.calls[-2] == ("cudnnSetStream", (0x77, 0x5757))


def test_native_fused_call_without_residual_reads_y_as_z_with_weight_zero() -> None:
    mock = MockNative()
    plan = ConvPlan(n=1, c=2, h=4, w=4, k=2, r=1, s=1, dtype="float32", bias=True,
                    activation="relu")
    native, _ = _native_plan(plan)
    operands = (ctypes.c_void_p * 4)(0xA0, 0xB0, 0xB1A5, 0xD0D)
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 4, None) == 0
    args = mock.calls[1][1]
    assert (args[12], args[17], args[-1]) == (0xD0D, 0xD0D, 0.0)  # z = y, alpha2 = 0


def test_native_chain_runs_conv_then_bias_residual_and_relu_in_place() -> None:
    mock = MockNative()
    plan = ConvPlan(n=1, c=2, h=4, w=4, k=2, r=1, s=1, dtype="bfloat16", bias=True,
                    residual=True, activation="relu")
    native, _ = _native_plan(plan)
    operands = (ctypes.c_void_p * 5)(0xA0, 0xB0, 0xB1A5, 0x2000, 0xD0D)
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 5, 0x31) == 0
    assert mock.names() == ["cudnnSetStream", "cudnnConvolutionForward", "cudnnAddTensor",
                            "cudnnAddTensor", "cudnnActivationForward"]
    conv = mock.calls[1][1]
    assert (conv[3], conv[5], conv[12], conv[-2], conv[-1]) == (0xA0, 0xB0, 0xD0D, 1.0, 0.0)
    bias, z, relu = (c[1] for c in mock.calls[2:])
    assert (bias[2], bias[3], bias[5], bias[6], bias[-2], bias[-1]) == (
        native.bias_desc, 0xB1A5, native.y_desc, 0xD0D, 1.0, 1.0)
    assert (z[2], z[3], z[6]) == (native.y_desc, 0x2000, 0xD0D)
    assert (relu[1], relu[4], relu[7], relu[-2], relu[-1]) == (native.act_desc, 0xD0D, 0xD0D,
                                                               1.0, 0.0)


def test_native_chain_with_nothing_to_add_is_one_conv() -> None:
    mock = MockNative()
    native, _ = _native_plan(ConvPlan(n=1, c=2, h=4, w=4, k=2, r=1, s=1, dtype="float16"))
    operands = (ctypes.c_void_p * 3)(0xA0, 0xB0, 0xD0D)
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 3, None) == 0
    assert mock.names() == ["cudnnSetStream", "cudnnConvolutionForward"]


def test_native_failure_reports_the_call_and_unlocks() -> None:
    mock = MockNative(fail="cudnnAddTensor")
    plan = ConvPlan(n=1, c=2, h=4, w=4, k=2, r=1, s=1, dtype="float32", bias=True)
    native, lock = _native_plan(plan)
    operands = (ctypes.c_void_p * 4)(0xA0, 0xB0, 0xB1A5, 0xD0D)
    take_error()
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 4, None) == 1
    error = take_error()
    assert isinstance(error, cudnn.LibraryCallError)
    assert "cudnnAddTensor failed: CUDNN_STATUS_NOT_SUPPORTED (3000)" in str(error)
    assert "the mock conv" in str(error)
    assert lock.value == 0


def test_native_call_rejects_a_wrong_operand_count() -> None:
    mock = MockNative()
    native, lock = _native_plan(ConvPlan(n=1, c=2, h=4, w=4, k=2, r=1, s=1, dtype="float32"))
    operands = (ctypes.c_void_p * 3)(0xA0, 0xB0, 0xD0D)
    take_error()
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 2, None) == 1
    assert "wrong operand count" in str(take_error())
    assert mock.calls == [] and lock.value == 0


# --- the device runtime: plans made once, run once at load ------------------------------------


class _Buffer:
    def __init__(self, ptr: int, nbytes: int) -> None:
        self.ptr, self.nbytes, self.freed = ptr, nbytes, False

    def free(self) -> None:
        self.freed = True


class _FakeDevice:
    def __init__(self) -> None:
        self.buffers: list[_Buffer] = []
        self.syncs = 0
        self.default_stream = SimpleNamespace(handle=0x99, synchronize=self._sync)

    def _sync(self) -> None:
        self.syncs += 1

    def allocate(self, nbytes: int) -> _Buffer:
        self.buffers.append(_Buffer(0x100000 * (len(self.buffers) + 1), nbytes))
        return self.buffers[-1]


def _runtime(fail: str | None = None) -> tuple[cudnn.CudnnRuntime, _FakeDevice, MockNative]:
    device, mock = _FakeDevice(), MockNative(fail=fail)
    fake = FakeCudnn([(1, 0, 256, cudnn.CUDNN_TENSOR_OP_MATH)], cudnn.conv_setup(_PLAN).y)
    return cudnn.CudnnRuntime(device, cudnn.CudnnApi(fake), mock.native), device, mock


def test_runtime_makes_each_plan_once_and_runs_it_at_load() -> None:
    runtime, device, mock = _runtime()
    address = runtime.plan(_PLAN)
    assert runtime.plan(_PLAN) == address
    native = cudnn.NativeConvPlan.from_address(address)
    workspace, *scratch = device.buffers
    assert (workspace.nbytes, workspace.freed, native.workspace) == (256, False, workspace.ptr)
    # x, w, bias, z, y in the plan's storage type (fp16), freed after the warm-up
    assert [b.nbytes for b in scratch] == [2 * 2 * 4 * 36, 2 * 8 * 4 * 9, 2 * 8, 2 * 2 * 8 * 36,
                                           2 * 2 * 8 * 36]
    assert all(b.freed for b in scratch) and device.syncs == 1
    assert mock.names() == ["cudnnSetStream", "cudnnConvolutionBiasActivationForward"]
    assert mock.calls[0][1] == (runtime.handle, 0x99)
    args = mock.calls[1][1]
    assert (args[3], args[5], args[12], args[14], args[17]) == tuple(b.ptr for b in (
        scratch[0], scratch[1], scratch[3], scratch[2], scratch[4]))
    assert runtime.describe(address).startswith("[2x4x6x6] * [8x4x3x3]")


def test_runtime_reports_a_plan_cudnn_rejects_at_load() -> None:
    runtime, device, _ = _runtime(fail="cudnnConvolutionBiasActivationForward")
    with pytest.raises(cudnn.LibraryCallError,
                       match="cudnnConvolutionBiasActivationForward failed: "
                             r"CUDNN_STATUS_NOT_SUPPORTED \(3000\) for the convolution "
                             "the mock conv.*conv='nova'"):
        runtime.plan(_PLAN)
    assert all(b.freed for b in device.buffers[1:]) and device.syncs == 0
    assert _PLAN not in runtime._plans  # not kept: the next load tries again


def test_runtime_names_the_convolution_a_descriptor_call_failed_for() -> None:
    fake = FakeCudnn([], (2, 8, 6, 6), fail="cudnnSetConvolutionGroupCount")
    runtime = cudnn.CudnnRuntime(_FakeDevice(), cudnn.CudnnApi(fake), MockNative().native)
    with pytest.raises(cudnn.LibraryCallError,
                       match=r"cudnnSetConvolutionGroupCount failed: CUDNN_STATUS_BAD_PARAM "
                             r"\(2000\), preparing the convolution \[2x4x6x6\].*conv='nova'"):
        runtime.plan(_PLAN)


# --- the dispatcher ---------------------------------------------------------------------------

_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                         ctypes.c_void_p)


class _FakeRuntime:
    def __init__(self, tag: int, seen: list[tuple[int, ...]]) -> None:
        def call(plan: int, operands: int, num: int, stream: int | None) -> int:
            seen.append((tag, plan, operands, num, stream or 0))
            return tag

        self._keep = _CALL(call)
        self.native = SimpleNamespace(call=ctypes.cast(self._keep, ctypes.c_void_p).value)
        self.made: list[Any] = []

    def plan(self, plan: Any) -> int:
        self.made.append(plan)
        return 0x1000 + len(self.made)


def test_dispatcher_routes_each_plan_to_its_library() -> None:
    seen: list[tuple[int, ...]] = []
    gemm, conv = _FakeRuntime(0, seen), _FakeRuntime(7, seen)
    plans = [LibraryPlan(m=2, n=2, k=2, dtype="float32"),
             ConvPlan(n=1, c=1, h=2, w=2, k=1, r=1, s=1, dtype="float32")]
    libraries = ProgramLibraries(None, plans, {"gemm": gemm, "conv2d": conv})  # type: ignore[list-item]
    assert libraries.call == dispatch_address()
    handles = [libraries.plan(0), libraries.plan(1)]
    assert libraries.plan(1) == handles[1] and len(conv.made) == 1  # made once
    record = Dispatch.from_address(handles[1])
    assert (record.call, record.plan) == (conv.native.call, 0x1001)
    dispatch = _CALL(libraries.call)
    assert dispatch(handles[0], 0x10, 3, None) == 0
    assert dispatch(handles[1], 0x20, 4, 0x5150) == 7
    assert seen == [(0, 0x1001, 0x10, 3, 0), (7, 0x1001, 0x20, 4, 0x5150)]
    assert gemm.made == plans[:1] and conv.made == plans[1:]


# --- the real library, where it is installed (no GPU needed for descriptors) ------------------


@pytest.mark.parametrize("plan", [
    _PLAN,
    ConvPlan(n=3, c=6, h=11, w=7, k=4, r=3, s=2, dtype="bfloat16", stride_h=2, stride_w=1,
             pad_h=1, pad_w=0, dil_h=1, dil_w=2, groups=2, bias=True),
    ConvPlan(n=1, c=8, h=5, w=5, k=8, r=3, s=3, dtype="float32", pad_h=1, pad_w=1, groups=8),
])
def test_real_library_accepts_the_descriptors(plan: ConvPlan) -> None:
    """Signatures and enum values against the installed libcudnn: every descriptor call of plan
    creation succeeds and cuDNN's output shape is the plan's (skipped where cuDNN is absent)."""
    if cudnn.unavailable_reason() is not None:
        pytest.skip(f"cuDNN not installed: {cudnn.unavailable_reason()}")
    api = cudnn.CudnnApi(cudnn.load_library())
    setup = cudnn.conv_setup(plan)
    native = cudnn.NativeConvPlan()
    cudnn._descriptors(api, plan, setup, native)
    cudnn._check_output(api, plan, setup, native)
    assert set(cudnn.library_symbols(api.lib)) == set(cudnn.LIBRARY_FUNCTIONS)
    assert all(cudnn.library_symbols(api.lib).values())
