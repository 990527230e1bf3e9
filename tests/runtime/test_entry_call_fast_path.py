"""The cheap path of an entry call: memoised memref slots, precomputed scalar checks, and the
per-call stdout flush only for programs that can print (cpu device; cuda decisions read the
bundle's images without running them)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

import nova
from nova.bundle.format import PayloadKind
from nova.bundle.reader import read_bundle
from nova.errors import ArgumentError, DeviceError, RuntimeFailure
from nova.runtime import executor
from nova.runtime.runner_utils import gpu_images_may_print, program_may_print

QUIET = """
func.func @touch(%x: memref<8xf32>, %n: index, %a: f32, %flag: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<8xf32>
  %s = arith.addf %v, %a : f32
  memref.store %s, %x[%c0] : memref<8xf32>
  return %s : f32
}

func.func @scale(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<8xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %x[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}
"""

HOST_PRINT = """
func.func @show(%v: i64) {
  vector.print %v : i64
  return
}
"""

KERNEL_PRINTF = """
func.func @hello(%v: i32) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.printf "kernel %d\\n", %v : i32
    gpu.terminator
  }
  return
}
"""


@pytest.fixture(scope="module")
def quiet() -> nova.NovaModule:
    with nova.compile(QUIET, device="cpu") as module:
        yield module


def _bundle(source: str) -> bytes:
    from nova.compiler.driver import compile_to_bundle

    return compile_to_bundle(source, "fast_path.mlir")


def test_same_buffer_again_reuses_the_descriptor_and_sees_new_scalars(
        quiet: nova.NovaModule) -> None:
    buf = quiet.device.to_device(np.zeros(8, np.float32))
    for step in range(1, 4):
        assert quiet.touch(buf, step, 1.5, True) == pytest.approx(1.5 * step)
    assert quiet.touch(buf, 0, 2, 0) == pytest.approx(6.5)  # int for f32, int for i1
    assert quiet.touch(buf, 0, np.float32(0.5), np.bool_(False)) == pytest.approx(7.0)
    assert quiet.touch(buf, 0, float("inf"), False) == float("inf")
    assert np.isnan(quiet.touch(buf, 0, float("nan"), False))
    assert np.isnan(buf.numpy()[0])  # stored in place


@pytest.mark.parametrize(("args", "message"), [
    ((1 << 64, 1.0, True), r"touch: argument 1: 18446744073709551616 does not fit index"),
    ((1.0, 1.0, True), r"touch: argument 1: expected index, got float"),
    ((0, "x", True), r"touch: argument 2: expected f32, got str"),
    ((0, True, True), r"touch: argument 2: expected f32, got bool"),
    ((0, 1.0, 2), r"touch: argument 3: expected i1, got int"),
])
def test_scalar_errors_after_the_memref_slot_is_memoised(quiet: nova.NovaModule, args: tuple,
                                                         message: str) -> None:
    buf = quiet.device.to_device(np.zeros(8, np.float32))
    quiet.touch(buf, 0, 0.0, False)
    with pytest.raises(ArgumentError, match=message):
        quiet.touch(buf, *args)
    assert quiet.touch(buf, 0, 1.0, False) == 1.0  # the plan is still usable


def test_freed_buffer_and_freed_base_raise_after_memoised_calls(quiet: nova.NovaModule) -> None:
    buf = quiet.device.to_device(np.ones(8, np.float32))
    quiet.scale(buf)
    quiet.scale(buf)
    buf.free()
    with pytest.raises(DeviceError, match="use of a freed Buffer"):
        quiet.scale(buf)
    base = quiet.device.to_device(np.ones(16, np.float32))
    view = base.view(np.float32, (8,))
    quiet.scale(view)
    base.free()
    with pytest.raises(DeviceError, match="use of a freed Buffer"):
        quiet.scale(view)


def test_a_buffer_whose_shape_changed_is_checked_again(quiet: nova.NovaModule) -> None:
    buf = quiet.device.to_device(np.ones(16, np.float32)).view(np.float32, (8,))
    quiet.scale(buf)
    buf.shape = (16,)
    with pytest.raises(ArgumentError, match=r"scale: argument 0: expected memref<8xf32>, got an "
                                            r"array with shape \(16,\)"):
        quiet.scale(buf)
    buf.shape = (8,)
    quiet.scale(buf)
    assert buf.numpy().tolist() == [4.0] * 8


def test_numpy_array_reshaped_in_place_is_checked_again(quiet: nova.NovaModule) -> None:
    a = np.ones(8, np.float32)
    quiet.scale(a)
    quiet.scale(a)
    assert a.tolist() == [4.0] * 8  # used in place (cpu), synchronized before returning
    a.shape = (2, 4)
    with pytest.raises(ArgumentError, match="rank 2"):
        quiet.scale(a)


def test_alternating_buffers_and_arrays_keep_their_own_results(quiet: nova.NovaModule) -> None:
    one = quiet.device.to_device(np.ones(8, np.float32))
    two = quiet.device.to_device(np.full(8, 3.0, np.float32))
    host = np.full(8, 5.0, np.float32)
    for _ in range(2):
        quiet.scale(one)
        quiet.scale(two)
        quiet.scale(host)
    assert one.numpy().tolist() == [4.0] * 8
    assert two.numpy().tolist() == [12.0] * 8
    assert host.tolist() == [20.0] * 8


def test_wrong_argument_count_and_closed_module() -> None:
    module = nova.compile(QUIET, device="cpu")
    with pytest.raises(ArgumentError, match=r"scale: expected 1 argument\(s\), got 0"):
        module.scale()
    module.close()
    with pytest.raises(RuntimeFailure, match="was closed"):
        module.scale(np.ones(8, np.float32))
    with pytest.raises(RuntimeFailure, match="was closed"):
        module.scale()  # closed is reported before the argument count


def _count_flushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = executor.flush_stdout

    def counting() -> None:
        calls.append(1)
        original()

    monkeypatch.setattr(executor, "flush_stdout", counting)
    return calls


def test_quiet_program_skips_the_flush_per_call(quiet: nova.NovaModule,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    flushes = _count_flushes(monkeypatch)
    buf = quiet.device.to_device(np.ones(8, np.float32))
    for _ in range(5):
        quiet.scale(buf)
        quiet.touch(buf, 0, 1.0, True)
    assert flushes == []
    quiet.synchronize()  # synchronize() still flushes (cuda printf output appears there)
    assert flushes == [1]


@pytest.mark.parametrize("source", [HOST_PRINT, KERNEL_PRINTF], ids=["host", "kernel"])
def test_printing_programs_flush_after_every_call_in_order(
        source: str, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    flushes = _count_flushes(monkeypatch)
    with nova.compile(source, device="cpu") as module:
        entry = module[module.entries[0]]
        for value in (1, 2):
            sys.stdout.write(f"python {value}\n")
            sys.stdout.flush()
            entry(value)
        assert len(flushes) == 2
    out = capfd.readouterr().out
    prefix = "" if source is HOST_PRINT else "kernel "
    assert out == f"python 1\n{prefix}1\npython 2\n{prefix}2\n"


@pytest.mark.parametrize(("source", "cpu", "cuda"), [
    (QUIET, False, False),
    (HOST_PRINT, True, True),
    (KERNEL_PRINTF, True, True),
], ids=["quiet", "host-print", "kernel-printf"])
def test_program_may_print_reads_the_images_of_the_device_kind(source: str, cpu: bool,
                                                               cuda: bool) -> None:
    bundle = read_bundle(_bundle(source))
    assert program_may_print(bundle, nova.get_device("cpu")) is cpu
    has_gpu_image = any(m.payload(kind) is not None for m in bundle.manifest.modules
                        for kind in (PayloadKind.PTX, PayloadKind.CUBIN))
    if source is KERNEL_PRINTF and not has_gpu_image:
        pytest.skip("no PTX backend here: the cuda decision has no image to read")
    cuda_like = SimpleNamespace(images_may_print=gpu_images_may_print)  # CudaDevice's hook
    assert program_may_print(bundle, cuda_like) is cuda  # type: ignore[arg-type]


NAMED_LIKE_METHODS = """
func.func @close(%x: memref<8xf32>) { return }
func.func @entries(%x: memref<8xf32>) { return }
func.func @forward(%x: memref<8xf32>) { return }
"""


def test_entries_are_instance_attributes_but_never_shadow_the_module_api() -> None:
    mod = nova.compile(NAMED_LIKE_METHODS, device="cpu")
    try:
        assert vars(mod)["forward"] is mod["forward"]  # a dict hit, no __getattr__ per call
        assert mod.forward is mod["forward"]
        assert mod.entries == ("close", "entries", "forward")  # the property, not the entry
        assert callable(mod.close) and mod.close is not mod["close"]
        assert "close" not in vars(mod) and "entries" not in vars(mod)
        mod["close"](np.zeros(8, np.float32))  # an entry named like a method: by item
    finally:
        mod.close()
    assert mod._abi is None  # the method ran
