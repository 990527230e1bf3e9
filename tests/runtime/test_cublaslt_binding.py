"""The cuBLASLt binding (nova.runtime.cuda.cublaslt) without a GPU: the row-major -> cuBLASLt
mapping, plan creation against a recording fake libcublasLt, and the native per-call function
JIT-compiled against mock cublasLtMatmul / cublasLtMatmulDescSetAttribute."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from nova.abi import LibraryPlan
from nova.runtime.cuda import cublaslt as lt
from nova.runtime.native_support import take_error


def test_setup_maps_row_major_onto_column_major() -> None:
    plan = LibraryPlan(m=5, n=7, k=3, dtype="float16", bias=True, residual=True,
                       activation="relu")
    s = lt.gemm_setup(plan)
    # cuBLASLt's A is the program's B [K, N] read column-major as [N, K]
    assert (s.trans_a, s.trans_b) == (lt.CUBLAS_OP_N, lt.CUBLAS_OP_N)
    assert s.a == lt.Layout(7, 3, 7)
    assert s.b == lt.Layout(3, 5, 3)
    assert s.c == lt.Layout(7, 5, 7, 1, 35)
    assert s.epilogue == 6  # RELU_BIAS
    assert s.slots == {"a": 1, "b": 0, "bias": 2, "c": 3, "d": 4}


def test_setup_transposes_and_batches() -> None:
    plan = LibraryPlan(m=4, n=6, k=8, dtype="float32", batch=3, a_stride=32, b_stride=48,
                       trans_a=True, trans_b=True)
    s = lt.gemm_setup(plan)
    assert (s.trans_a, s.trans_b) == (lt.CUBLAS_OP_T, lt.CUBLAS_OP_T)
    assert s.a == lt.Layout(8, 6, 8, 3, 48)  # B stored [N, K]: column-major [K, N]
    assert s.b == lt.Layout(4, 8, 4, 3, 32)  # A stored [K, M]: column-major [M, K]
    assert s.c == lt.Layout(6, 4, 6, 3, 24)
    assert s.epilogue == 1  # DEFAULT
    assert s.slots["c"] == s.slots["d"] == 2  # no residual: C is D (beta 0)
    assert s.slots["bias"] == -1


@pytest.mark.parametrize(("activation", "bias", "code"), [
    ("none", False, 1), ("relu", False, 2), ("gelu_tanh", False, 32), ("none", True, 4),
    ("relu", True, 6), ("gelu_tanh", True, 36)])
def test_epilogue_codes(activation: str, bias: bool, code: int) -> None:
    plan = LibraryPlan(m=2, n=2, k=2, dtype="float32", bias=bias, activation=activation)
    assert lt.gemm_setup(plan).epilogue == code


def test_alignment_follows_batch_offsets() -> None:
    assert lt.gemm_setup(LibraryPlan(m=3, n=5, k=7, dtype="float16")).alignment == 16
    odd = LibraryPlan(m=3, n=5, k=7, dtype="float16", batch=2, a_stride=21, b_stride=35)
    assert lt.gemm_setup(odd).alignment == 2


class FakeLt:
    """Records every call; `heuristics` is how many algorithms the heuristic reports."""

    def __init__(self, heuristics: int = 1, fail: str | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.heuristics = heuristics
        self.fail = fail
        self.next = 0x1000

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> int:
            self.calls.append((name, args))
            if name == self.fail:
                return 7
            if name.endswith("Create"):
                self.next += 0x10
                ctypes.cast(args[0], ctypes.POINTER(ctypes.c_void_p))[0] = self.next
            if name == "cublasLtMatmulAlgoGetHeuristic":
                count = min(self.heuristics, args[7].value)  # never past the caller's array
                if count:
                    ctypes.cast(args[8], ctypes.POINTER(lt.HeuristicResult))[0].algo[0] = 42
                ctypes.cast(args[9], ctypes.POINTER(ctypes.c_int))[0] = count
            return 0
        return call

    def values(self, name: str) -> list[tuple[int, int]]:
        """(attribute, value) pairs of every `name` call."""
        out = []
        for called, args in self.calls:
            if called == name:
                raw = ctypes.string_at(ctypes.addressof(args[2]._obj), args[3].value)
                out.append((args[1].value, int.from_bytes(raw, "little", signed=True)))
        return out


def test_create_plan_sets_descriptors_and_algorithm() -> None:
    fake = FakeLt()
    plan = LibraryPlan(m=64, n=32, k=16, dtype="bfloat16", batch=2, a_stride=1024, b_stride=0,
                       alpha=0.5, bias=True, activation="gelu_tanh")
    native = lt.create_plan(lt.CublasLtApi(fake), 0x77, plan, 0x5000, 1 << 20, 0x99)
    names = [c[0] for c in fake.calls]
    assert names.count("cublasLtMatrixLayoutCreate") == 4
    assert "cublasLtMatmulPreferenceDestroy" in names
    create = next(a for n, a in fake.calls if n == "cublasLtMatmulDescCreate")
    assert (create[1].value, create[2].value) == (lt.CUBLAS_COMPUTE_32F, 0)  # fp32, no TF32
    desc = dict(fake.values("cublasLtMatmulDescSetAttribute"))
    assert desc[lt.DESC_EPILOGUE] == 36 and desc[lt.DESC_BIAS_DATA_TYPE] == 14
    layout = fake.values("cublasLtMatrixLayoutSetAttribute")
    assert (lt.LAYOUT_BATCH_COUNT, 2) in layout and (lt.LAYOUT_STRIDED_BATCH_OFFSET, 0) in layout
    pref = dict(fake.values("cublasLtMatmulPreferenceSetAttribute"))
    assert pref[lt.PREF_MAX_WORKSPACE_BYTES] == 1 << 20
    assert native.algo[0] == 42 and native.alpha == 0.5 and native.beta == 0.0
    assert (native.workspace, native.default_stream, native.handle) == (0x5000, 0x99, 0x77)


def test_no_algorithm_is_a_clear_error() -> None:
    plan = LibraryPlan(m=3, n=3, k=3, dtype="float32")
    with pytest.raises(lt.LibraryCallError, match=r"no algorithm.*gemm='nova'"):
        lt.create_plan(lt.CublasLtApi(FakeLt(heuristics=0)), 1, plan, 0, 0, 0)


def test_failed_call_names_the_call_and_status() -> None:
    plan = LibraryPlan(m=3, n=3, k=3, dtype="float32")
    with pytest.raises(lt.LibraryCallError,
                       match="cublasLtMatrixLayoutCreate failed: CUBLAS_STATUS_INVALID_VALUE"):
        lt.create_plan(lt.CublasLtApi(FakeLt(fail="cublasLtMatrixLayoutCreate")), 1, plan, 0,
                       0, 0)


def test_missing_library_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lt.ENV_PATH, "/nonexistent/libcublasLt.so.13")
    monkeypatch.setattr(lt, "_loaded", {})
    monkeypatch.setattr(lt, "find_library", lambda: "/nonexistent/libcublasLt.so.13")
    with pytest.raises(lt.LibraryUnavailableError, match="gemm='nova'"):
        lt.load_library()
    assert "cannot be loaded" in (lt.unavailable_reason() or "")


_MATMUL = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * 14), ctypes.c_int64,
                           ctypes.c_void_p)
_SET = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                        ctypes.c_int64)


class MockNative:
    """The native call compiled against mock cuBLASLt functions that record their arguments."""

    def __init__(self, status: int = 0) -> None:
        self.matmuls: list[tuple[Any, ...]] = []
        self.biases: list[int] = []
        self.status = status

        def matmul(*args: Any) -> int:
            alpha = ctypes.c_float.from_address(args[2]).value
            beta = ctypes.c_float.from_address(args[7]).value
            self.matmuls.append((*args, alpha, beta))
            return self.status

        def set_attr(desc: int, attr: int, value: int, size: int) -> int:
            assert attr == lt.DESC_BIAS_POINTER and size == 8
            self.biases.append(ctypes.c_void_p.from_address(value).value or 0)
            return 0

        self._keep = (_MATMUL(matmul), _SET(set_attr))
        symbols = {f"mock_{n}": ctypes.cast(f, ctypes.c_void_p).value or 0 for n, f in zip(
            ("cublasLtMatmul", "cublasLtMatmulDescSetAttribute"), self._keep, strict=True)}
        self.native = lt.compile_native(lambda address: "the mock GEMM", "mock_", symbols)
        self.call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_void_p)(self.native.call)


def _native_plan(plan: LibraryPlan) -> lt.NativePlan:
    native = lt.create_plan(lt.CublasLtApi(FakeLt()), 0x77, plan, 0x5000, 4096, 0x99)
    native.desc = 0xD0
    return native


def test_native_call_passes_swapped_operands_bias_and_stream() -> None:
    mock = MockNative()
    plan = LibraryPlan(m=4, n=8, k=2, dtype="float16", alpha=2.0, bias=True, residual=True)
    native = _native_plan(plan)
    operands = (ctypes.c_void_p * 5)(0xA0, 0xB0, 0xB1A5, 0xC0, 0xD0D)  # a, b, bias, c, d
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 5, None) == 0
    assert mock.biases == [0xB1A5]
    (args,) = mock.matmuls
    handle, desc, _, a, la, b, lb, _, c, lc, d, ld, algo, ws, wss, stream, alpha, beta = args
    assert (handle, desc) == (0x77, 0xD0)
    assert (a, b, c, d) == (0xB0, 0xA0, 0xC0, 0xD0D)  # cuBLASLt A is the program's B
    assert (la, lb, lc, ld) == (native.layout_a, native.layout_b, native.layout_c,
                                native.layout_d)
    assert algo == ctypes.addressof(native) + lt.NativePlan.algo.offset
    assert (ws, wss, stream) == (0x5000, 4096, 0x99)  # null stream: the device's default
    assert (alpha, beta) == (2.0, 1.0)
    assert native.lock == 0
    mock.call(ctypes.addressof(native), ctypes.addressof(operands), 5, 0x5757)
    assert mock.matmuls[-1][15] == 0x5757


def test_native_call_without_bias_or_residual_writes_d_as_c() -> None:
    mock = MockNative()
    native = _native_plan(LibraryPlan(m=4, n=8, k=2, dtype="float32"))
    operands = (ctypes.c_void_p * 3)(0xA0, 0xB0, 0xD0D)
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 3, None) == 0
    assert mock.biases == []
    args = mock.matmuls[0]
    assert (args[3], args[5], args[8], args[10]) == (0xB0, 0xA0, 0xD0D, 0xD0D)
    assert args[-1] == 0.0  # beta


def test_native_call_failure_reports_and_unlocks() -> None:
    mock = MockNative(status=13)
    native = _native_plan(LibraryPlan(m=4, n=8, k=2, dtype="float32"))
    operands = (ctypes.c_void_p * 3)(0xA0, 0xB0, 0xD0D)
    take_error()
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 3, None) == 1
    error = take_error()
    assert isinstance(error, lt.LibraryCallError)
    assert "cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED" in str(error)
    assert "the mock GEMM" in str(error)
    assert native.lock == 0


def test_native_call_rejects_a_wrong_operand_count() -> None:
    mock = MockNative()
    native = _native_plan(LibraryPlan(m=4, n=8, k=2, dtype="float32"))
    operands = (ctypes.c_void_p * 3)(0xA0, 0xB0, 0xD0D)
    take_error()
    assert mock.call(ctypes.addressof(native), ctypes.addressof(operands), 2, None) == 1
    assert "wrong operand count" in str(take_error())
    assert mock.matmuls == [] and native.lock == 0


class TuningLt(FakeLt):
    """Reports three candidates (algo ids 10, 20, 30); cublasLtMatmul advances the fake clock
    `now` per run by the algo's entry in `seconds` (a fake clock: sleeping made the timing, and
    the test, depend on the machine's load), and refuses algo 30 (a candidate the library
    rejects)."""

    seconds: ClassVar[dict[int, float]] = {10: 0.002, 20: 0.0002}
    now = 0.0

    def __getattr__(self, name: str) -> Any:
        if name == "cublasLtMatmulAlgoGetHeuristic":
            def heuristic(*args: Any) -> int:
                # as cuBLASLt: at most the requested count (args[7]) of results. Writing all
                # three into create_plan's one-element buffer overran it into the Python heap
                # and crashed a later test at random (a pymalloc free list overwritten).
                self.calls.append((name, args))
                results = ctypes.cast(args[8], ctypes.POINTER(lt.HeuristicResult))
                algos = (10, 20, 30)[:args[7].value]
                for i, algo in enumerate(algos):
                    results[i].algo[0] = algo
                ctypes.cast(args[9], ctypes.POINTER(ctypes.c_int))[0] = len(algos)
                return 0
            return heuristic
        if name == "cublasLtMatmul":
            def matmul(*args: Any) -> int:
                algo = ctypes.cast(args[12], ctypes.POINTER(ctypes.c_uint64))[0]
                self.calls.append((name, (algo,)))
                if algo == 30:
                    return 15  # CUBLAS_STATUS_NOT_SUPPORTED
                self.now += self.seconds[algo]
                return 0
            return matmul
        return super().__getattr__(name)


class FakeBuffer:
    def __init__(self, nbytes: int) -> None:
        self.nbytes, self.ptr, self.freed = nbytes, 0x10000 + nbytes, False

    def free(self) -> None:
        self.freed = True


class FakeDevice:
    def __init__(self) -> None:
        self.buffers: list[FakeBuffer] = []
        self.zeroed: list[FakeBuffer] = []

    def allocate(self, nbytes: int) -> FakeBuffer:
        self.buffers.append(FakeBuffer(nbytes))
        return self.buffers[-1]

    def memset(self, buf: FakeBuffer, value: int) -> None:
        self.zeroed.append(buf)

    def synchronize(self) -> None:
        pass


def test_tuning_measures_every_candidate_and_keeps_the_fastest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.runtime.cuda import gemm_tuning

    fake = TuningLt()
    monkeypatch.setattr(gemm_tuning, "time", SimpleNamespace(perf_counter=lambda: fake.now))
    api = lt.CublasLtApi(fake)
    plan = LibraryPlan(m=64, n=32, k=16, dtype="float16", bias=True)
    native = lt.create_plan(api, 0x77, plan, 0x5000, 1 << 20, 0x99)
    device = FakeDevice()
    tuning = gemm_tuning.tune_plan(api, device, plan, native)
    assert tuning.chosen == 1 and native.algo[0] == 20
    assert tuning.seconds[2] is None  # refused: never chosen
    assert tuning.seconds[:2] == pytest.approx((0.002, 0.0002))  # per run, from the fake clock
    runs = [a[0] for n, a in fake.calls if n == "cublasLtMatmul"]
    per = gemm_tuning.WARMUP + gemm_tuning.RUNS
    assert runs == [10] * per + [20] * per + [30]
    # scratch operands of the plan's exact sizes (fp16: D^T is [N, M]; bias of N), all freed
    assert sorted(b.nbytes for b in device.buffers) == sorted([2 * 32 * 16, 2 * 16 * 64,
                                                                2 * 32 * 64, 2 * 32])
    assert all(b.freed for b in device.buffers) and len(device.zeroed) == 4


def test_tuning_with_one_candidate_keeps_the_heuristic_choice() -> None:
    from nova.runtime.cuda import gemm_tuning

    fake = FakeLt()
    api = lt.CublasLtApi(fake)
    plan = LibraryPlan(m=8, n=8, k=8, dtype="float32")
    native = lt.create_plan(api, 1, plan, 0, 1 << 20, 0)
    device = FakeDevice()
    assert gemm_tuning.tune_plan(api, device, plan, native) == gemm_tuning.Tuning((), 0)
    assert native.algo[0] == 42 and not device.buffers
