"""NovaExecutor on the cpu device with hand-made bundles (no compiler needed)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

import nova
from nova.bundle.format import EntryPoint
from nova.errors import ArgumentError, BundleFormatError, DeviceError, RuntimeFailure
from nova.runtime.cuda.device import check_arch
from nova.runtime.executor import NovaModule, load

sys.path.insert(0, str(Path(__file__).parent))
from executor_bundles import ENTRIES, HOST_IR, build_bundle


@pytest.fixture(scope="module")
def bundle() -> bytes:
    return build_bundle()


@pytest.fixture
def mod(bundle: bytes) -> NovaModule:
    with load(bundle, "cpu") as module:
        yield module


def test_entries_and_lookup(mod: NovaModule) -> None:
    assert mod.entries == tuple(e.name for e in ENTRIES)
    assert mod["add"] is mod.add
    with pytest.raises(KeyError, match="no entry 'nope'"):
        mod["nope"]
    with pytest.raises(AttributeError, match="nope"):
        mod.nope  # noqa: B018
    assert "main" in dir(mod)


def test_kernel_launch_fills_numpy_array_and_prints(mod: NovaModule,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    a = np.zeros(8, np.float32)
    assert mod.main(a) is None
    assert a.tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    out = capfd.readouterr().out
    assert out.startswith("Unranked Memref base@ = 0x")
    assert out.endswith("rank = 1 offset = 0 sizes = [8] strides = [1] data = \n"
                        "[0,  2,  4,  6,  8,  10,  12,  14]\n")


def test_non_contiguous_array_is_staged_and_copied_back(mod: NovaModule) -> None:
    big = np.full(16, -1.0, np.float32)
    view = big[::2]
    mod.fill_async(view)
    assert big[::2].tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert (big[1::2] == -1).all()


def test_device_buffer_used_in_place(mod: NovaModule) -> None:
    device = nova.get_device("cpu")
    buf = device.to_device(np.zeros(8, np.float32))
    mod.fill_async(buf)
    assert buf.numpy().tolist() == [0, 2, 4, 6, 8, 10, 12, 14]


def test_scalars_in_and_out(mod: NovaModule, capfd: pytest.CaptureFixture[str]) -> None:
    assert mod.add(2, -7) == -5
    assert mod.add(np.int64(1) << 40, 1) == (1 << 40) + 1
    assert mod.scale(1.25) == 2.5
    assert isinstance(mod.scale(np.float32(3)), float)
    assert capfd.readouterr().out == "-5\n1099511627777\n"


def test_memref_result_from_device_memory(mod: NovaModule) -> None:
    result = mod.sevens(5)
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.int32
    assert result.tolist() == [7] * 5


def test_host_assert_raises_runtime_failure(mod: NovaModule) -> None:
    with pytest.raises(RuntimeFailure, match="host assertion failed: x must be >0"):
        mod.scale(-1.0)
    assert mod.scale(2.0) == 4.0  # the unwind left the module usable


def test_failed_abi_call_unwinds_and_names_the_call(mod: NovaModule) -> None:
    with pytest.raises(RuntimeFailure, match=r"nova_rt_mem_free: 0x1234 was not allocated"):
        mod.bad_free()
    assert mod.add(1, 1) == 2


def test_kernel_fault_is_raised_with_the_kernel_name(mod: NovaModule) -> None:
    with pytest.raises(RuntimeFailure, match="@faulty"):
        mod.fault()
    a = np.zeros(8, np.float32)
    mod.fill_async(a)  # the stream's error was consumed; later work runs
    assert a[3] == 6


@pytest.mark.parametrize(("entry", "args", "message"), [
    ("add", (1,), r"add: expected 2 argument\(s\), got 1"),
    ("add", (1, "x"), r"add: argument 1: expected i64, got str"),
    ("add", (1, 2.5), r"add: argument 1: expected i64, got float"),
    ("add", (1, 1 << 64), r"add: argument 1: 18446744073709551616 does not fit i64"),
    ("scale", (True,), r"scale: argument 0: expected f32, got bool"),
    ("main", (np.zeros(8, np.float64),), r"main: argument 0: expected memref<8xf32>, got an "
                                          r"array with element type float64"),
    ("main", (np.zeros(7, np.float32),), r"main: argument 0: expected memref<8xf32>, got an "
                                          r"array with shape \(7,\)"),
    ("main", (np.zeros((8, 1), np.float32),), r"argument 0: expected memref<8xf32>, got an "
                                              r"array with rank 2"),
    ("main", ([0.0] * 8,), r"main: argument 0: expected memref<8xf32> \(an array\), got list"),
])
def test_argument_errors(mod: NovaModule, entry: str, args: tuple, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        mod[entry](*args)


def test_close_and_context_manager(bundle: bytes) -> None:
    module = load(bundle, "cpu")
    with module:
        assert module.add(1, 2) == 3
    with pytest.raises(RuntimeFailure, match="was closed"):
        module.add(1, 2)
    module.close()  # idempotent


def test_load_from_path(bundle: bytes, tmp_path: Path) -> None:
    path = tmp_path / "prog.nova"
    path.write_bytes(bundle)
    with nova.load(str(path), device="cpu") as module:
        assert module.name == str(path)
        assert module.add(40, 2) == 42


def test_load_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BundleFormatError):
        load(b"not a bundle at all", "cpu")
    with pytest.raises(BundleFormatError, match="cannot read"):
        load(tmp_path / "missing.nova", "cpu")


def test_unresolved_symbol_is_named_before_linking() -> None:
    host = HOST_IR + """
declare void @definitely_not_in_libc(i64)
define void @__nova_entry_odd(ptr %args, ptr %results) {
  call void @definitely_not_in_libc(i64 1)
  ret void
}
"""
    entries = (*ENTRIES, EntryPoint("odd", "__nova_entry_odd", (), ()))
    with pytest.raises(BundleFormatError, match="'definitely_not_in_libc'"):
        load(build_bundle(host, entries), "cpu")


def test_missing_cpu_object_is_a_device_error() -> None:
    module = load(build_bundle(with_cpu_object=False), "cpu")
    with module, pytest.raises(DeviceError, match="no CPU object"):
        module.main(np.zeros(8, np.float32))


def test_concurrent_calls_from_threads(mod: NovaModule) -> None:
    def work(i: int) -> object:
        if i % 5 == 0:
            try:
                mod.scale(-1.0)
            except RuntimeFailure as exc:
                return str(exc)
            return "no error"
        return mod.add(i, i)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(200)))
    for i, value in enumerate(results):
        assert value == ("host assertion failed: x must be >0" if i % 5 == 0 else 2 * i)


def test_ten_thousand_calls_keep_memory_flat(mod: NovaModule) -> None:
    device = nova.get_device("cpu")
    a = np.zeros(8, np.float32)
    buf = device.to_device(a)
    for _ in range(200):  # warm up caches and plans
        mod.fill_async(a)
        mod.fill_async(buf)
        mod.add(1, 2)
    gc.collect()
    pool_before = device.pool.stats()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(10_000):
        mod.fill_async(a)
        mod.fill_async(buf)
        mod.add(1, 2)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    pool_after = device.pool.stats()
    assert growth < 64 * 1024, f"host memory grew by {growth} bytes over 30 000 calls"
    assert pool_after.bytes_in_use == pool_before.bytes_in_use
    assert pool_after.bytes_reserved == pool_before.bytes_reserved


def test_check_arch() -> None:
    manifest = SimpleNamespace(arch="sm_90")
    nova.get_device("cpu").check_bundle(manifest, "p")  # type: ignore[arg-type]  # runs anything
    check_arch(manifest, SimpleNamespace(kind="cuda", arch="sm_90", name="H100"), "p")  # type: ignore[arg-type]
    check_arch(manifest, SimpleNamespace(kind="cuda", arch="sm_100", name="B200"), "p")  # type: ignore[arg-type]
    with pytest.raises(BundleFormatError, match="built for sm_90, but the device 'A100' is sm_80"):
        check_arch(manifest, SimpleNamespace(kind="cuda", arch="sm_80", name="A100"), "p")  # type: ignore[arg-type]
    with pytest.raises(BundleFormatError, match="sm_90a"):
        check_arch(SimpleNamespace(arch="sm_90a"),  # type: ignore[arg-type]
                   SimpleNamespace(kind="cuda", arch="sm_100", name="B200"), "p")  # type: ignore[arg-type]


def test_runtime_does_not_import_the_compiler(bundle: bytes, tmp_path: Path) -> None:
    path = tmp_path / "p.nova"
    path.write_bytes(bundle)
    code = (
        "import sys, nova\n"
        f"m = nova.load({str(path)!r}, 'cpu')\n"
        "assert m.add(1, 2) == 3\n"
        "bad = [n for n in sys.modules if n.split('.')[0] == 'xdsl' or n.startswith(("
        "'nova.ir', 'nova.passes', 'nova.backends', 'nova.compiler', 'nova.lang'))]\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("[]"), done.stdout


def test_output_order_between_python_and_program(mod: NovaModule,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    sys.stdout.write("before\n")
    sys.stdout.flush()
    mod.add(3, 4)
    sys.stdout.write("after\n")
    sys.stdout.flush()
    assert capfd.readouterr().out == "before\n7\nafter\n"


def test_threads_each_have_their_own_unwind_frames(mod: NovaModule) -> None:
    errors: list[str] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        for _ in range(50):
            try:
                mod.bad_free()
            except RuntimeFailure as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 200
    assert all("nova_rt_mem_free" in e for e in errors)


def test_libm_and_compiler_builtins_resolve(capfd: pytest.CaptureFixture[str]) -> None:
    host = HOST_IR + """
declare float @sinf(float)
declare half @__truncsfhf2(float)
define void @__nova_entry_builtins(ptr %args, ptr %results) {
  %s = call float @sinf(float 0.0)
  %h = call half @__truncsfhf2(float 1.0)
  %bits = bitcast half %h to i16
  %w = zext i16 %bits to i64
  call void @nova_rt_print_i64(i64 %w)
  call void @nova_rt_print_newline()
  ret void
}
"""
    entries = (*ENTRIES, EntryPoint("builtins", "__nova_entry_builtins", (), ()))
    with load(build_bundle(host, entries), "cpu") as module:
        module.builtins()
    assert capfd.readouterr().out == "15360\n"  # 0x3C00, the half-precision 1.0


def test_ctrl_c_inside_a_runtime_callback_unwinds_then_interrupts(
        mod: NovaModule, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = nova.get_device("cpu").default_stream
    original = stream.synchronize
    calls = []

    def interrupted() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        original()

    monkeypatch.setattr(stream, "synchronize", interrupted)
    with pytest.raises(KeyboardInterrupt, match="nova_rt_stream_synchronize was interrupted"):
        mod.main(np.zeros(8, np.float32))
    monkeypatch.undo()
    assert mod.add(2, 2) == 4


def test_array_info_keeps_bfloat16_of_a_cuda_array_interface_object() -> None:
    """Regression (models on an H200): a cuda Buffer of bfloat16 is described by its
    __cuda_array_interface__, whose typestr for ml_dtypes' bfloat16 is '<V2'; the executor then
    refused it as 'element type |V2'. The object's own NumPy dtype wins when the sizes agree."""
    import ml_dtypes

    from nova.runtime import marshal

    bf16 = np.dtype(ml_dtypes.bfloat16)

    class CudaLike:
        dtype = bf16
        __cuda_array_interface__: ClassVar[dict[str, object]] = {
            "shape": (4,), "typestr": bf16.str, "data": (4096, False), "version": 3,
            "strides": None}

    info = marshal.array_info(CudaLike())
    assert info is not None and info.dtype == bf16 and info.on_device

    class TorchLike:  # a dtype that is not a NumPy dtype: the typestr decides
        dtype = "torch.float32"
        __cuda_array_interface__: ClassVar[dict[str, object]] = {
            "shape": (4,), "typestr": "<f4", "data": (4096, False), "version": 3,
            "strides": None}

    info = marshal.array_info(TorchLike())
    assert info is not None and info.dtype == np.dtype(np.float32)
