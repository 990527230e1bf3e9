"""Barrier regions on the CPU device (nova.backends.cpu.regions): kernels whose only
synchronisation is block barriers run as resumable regions instead of fibers, with exactly the
fiber runtime's results, output order and errors. Every kernel here runs both ways (regions, and
fibers with NOVA_CPU_REGIONS off) and must agree; plus which kernels keep fibers, and the host
CPU target record (nova.backends.cpu.host_cpu, runtime check_cpu_target)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
import pytest
from cpu_jit import compile_cpu

from nova import config

I32 = ctypes.c_int32
I64 = ctypes.c_int64


def _module(body: str) -> str:
    return "module attributes {gpu.container_module} {\n  gpu.module @m {\n" + body + "\n  }\n}\n"


def _uses_fibers(mod: object, name: str) -> bool:
    functions = {f.name for f in mod.lowering.llvm_module.functions}  # type: ignore[attr-defined]
    return f"__nova_cpu_fiber.{name}" in functions


def _both(source: str, name: str, make_args: Callable[[], list], grid: tuple[int, int, int],
          block: tuple[int, int, int], os_threads: int = 1) -> list[np.ndarray]:
    """Run `name` as regions and as fibers; assert both agree (status, message, every array)
    and that the first really ran as regions; return the arrays."""
    results = []
    for regions in (True, False):
        with config.scoped(cpu_regions=regions):
            mod = compile_cpu(source)
        assert _uses_fibers(mod, name) is not regions
        args = make_args()
        status, error = mod.launch(name, args, grid=grid, block=block, check=False,
                                   os_threads=os_threads)
        results.append((status, error, [a for a in args if isinstance(a, np.ndarray)]))
    (s1, e1, a1), (s2, e2, a2) = results
    assert (s1, e1) == (s2, e2)
    for x, y in zip(a1, a2, strict=True):
        np.testing.assert_array_equal(x, y)
    return a1


NONUNIFORM = _module("""
    gpu.func @sides(%out: memref<?xi32>) workgroup(%tile: memref<64xi32, 3>) kernel {
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %t = gpu.thread_id x
      %d = gpu.block_dim x
      %ti = arith.index_cast %t : index to i32
      memref.store %ti, %tile[%t] : memref<64xi32, 3>
      %n1 = arith.addi %t, %c1 : index
      %nb = arith.remui %n1, %d : index
      %low = arith.cmpi ult, %t, %c5 : index
      %r = scf.if %low -> (i32) {
        gpu.barrier
        %v = memref.load %tile[%nb] : memref<64xi32, 3>
        %c100 = arith.constant 100 : i32
        %w = arith.addi %v, %c100 : i32
        scf.yield %w : i32
      } else {
        %k = arith.constant 7 : i32
        gpu.barrier
        %v = memref.load %tile[%nb] : memref<64xi32, 3>
        %w = arith.muli %v, %k : i32
        scf.yield %w : i32
      }
      gpu.barrier
      memref.store %r, %tile[%t] : memref<64xi32, 3>
      gpu.barrier
      %b = gpu.block_id x
      %base = arith.muli %b, %d : index
      %g = arith.addi %base, %t : index
      %back = memref.load %tile[%nb] : memref<64xi32, 3>
      memref.store %back, %out[%g] : memref<?xi32>
      gpu.return
    }
""")


@pytest.mark.parametrize("block", [1, 5, 13, 64])
def test_threads_at_different_barriers_resume_each_from_its_own(block: int) -> None:
    # threads wait at two different gpu.barrier ops (a non-uniform pass), then meet again
    (out,) = _both(NONUNIFORM, "sides", lambda: [np.zeros(3 * block, np.int32)], (3, 1, 1),
                   (block, 1, 1), os_threads=2)
    t = np.arange(block)
    nb = (t + 1) % block
    first = np.where(t < 5, nb + 100, nb * 7)
    np.testing.assert_array_equal(out, np.tile(first[(t + 1) % block], 3))


LIVE_VALUES = _module("""
    gpu.func @carry(%out: memref<?xf64>, %half: memref<?xf16>, %vec: memref<?xf32>,
                    %n: index) workgroup(%tile: memref<3x32xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %t = gpu.thread_id x
      %ty = gpu.thread_id y
      %d = gpu.block_dim x
      %b = gpu.block_id x
      %ti = arith.index_cast %t : index to i64
      %i8 = arith.trunci %ti : i64 to i8
      %i16 = arith.trunci %ti : i64 to i16
      %odd0 = arith.andi %ti, %ti : i64
      %one = arith.constant 1 : i64
      %oddv = arith.andi %odd0, %one : i64
      %odd = arith.cmpi eq, %oddv, %one : i64
      %f = arith.sitofp %ti : i64 to f64
      %h = arith.sitofp %i16 : i16 to f16
      %v0 = vector.broadcast %h : f16 to vector<4xf16>
      %v = arith.extf %v0 : vector<4xf16> to vector<4xf32>
      %view = memref.subview %out[%n] [%n] [1]
          : memref<?xf64> to memref<?xf64, strided<[1], offset: ?>>
      %acc = scf.for %k = %c0 to %c3 step %c1 iter_args(%a = %f) -> (f64) {
        %kf0 = arith.index_cast %k : index to i64
        %kf = arith.sitofp %kf0 : i64 to f32
        memref.store %kf, %tile[%k, %t] : memref<3x32xf32, 3>
        gpu.barrier
        %nb0 = arith.addi %t, %c1 : index
        %nb = arith.remui %nb0, %d : index
        %x = memref.load %tile[%k, %nb] : memref<3x32xf32, 3>
        %xd = arith.extf %x : f32 to f64
        %s = arith.addf %a, %xd : f64
        gpu.barrier
        scf.yield %s : f64
      }
      %i8e = arith.extsi %i8 : i8 to i64
      %i16e = arith.extsi %i16 : i16 to i64
      %sum0 = arith.addi %i8e, %i16e : i64
      %sumf = arith.sitofp %sum0 : i64 to f64
      %pick = arith.select %odd, %sumf, %acc : f64
      %total = arith.addf %pick, %acc : f64
      %base = arith.muli %b, %d : index
      %g = arith.addi %base, %t : index
      memref.store %total, %view[%g] : memref<?xf64, strided<[1], offset: ?>>
      memref.store %h, %half[%g] : memref<?xf16>
      %c4 = arith.constant 4 : index
      %g4 = arith.muli %g, %c4 : index
      vector.store %v, %vec[%g4] : memref<?xf32>, vector<4xf32>
      gpu.return
    }
""")


def test_values_of_every_kind_survive_barriers_in_a_loop() -> None:
    blocks, block = 4, 32
    n = blocks * block

    def args() -> list:
        return [np.zeros(2 * n, np.float64), np.zeros(n, np.float16),
                np.zeros(4 * n, np.float32), I64(n)]

    out, half, vec = _both(LIVE_VALUES, "carry", args, (blocks, 1, 1), (block, 1, 1))
    t = np.tile(np.arange(block), blocks)
    acc = t + 3.0  # 0 + 1 + 2 from the neighbours' tiles
    pick = np.where(t % 2 == 1, 2.0 * t, acc)
    np.testing.assert_array_equal(out[n:], pick + acc)
    np.testing.assert_array_equal(half, t.astype(np.float16))
    np.testing.assert_array_equal(vec, np.repeat(t.astype(np.float32), 4))


PRIVATE_AFTER = _module("""
    gpu.func @keep(%out: memref<?xf32>) workgroup(%tile: memref<64xf32, 3>)
        private(%p: memref<8xf32, 5>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      scf.for %i = %c0 to %c8 step %c1 {
        %ii = arith.index_cast %i : index to i32
        %if = arith.sitofp %ii : i32 to f32
        %v = arith.mulf %tf, %if : f32
        memref.store %v, %p[%i] : memref<8xf32, 5>
      }
      memref.store %tf, %tile[%t] : memref<64xf32, 3>
      gpu.barrier
      %d = gpu.block_dim x
      %n1 = arith.addi %t, %c1 : index
      %nb = arith.remui %n1, %d : index
      %other = memref.load %tile[%nb] : memref<64xf32, 3>
      %acc = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %other) -> (f32) {
        %x = memref.load %p[%i] : memref<8xf32, 5>
        %s = arith.addf %a, %x : f32
        scf.yield %s : f32
      }
      memref.store %acc, %out[%t] : memref<?xf32>
      gpu.return
    }
""")


def test_private_memory_is_kept_across_barriers() -> None:
    (out,) = _both(PRIVATE_AFTER, "keep", lambda: [np.zeros(48, np.float32)], (1, 1, 1),
                   (48, 1, 1))
    t = np.arange(48, dtype=np.float32)
    np.testing.assert_array_equal(out, (t + 1) % 48 + 28 * t)


PRINT_STEPS = _module("""
    gpu.func @steps() kernel {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %tz = gpu.thread_id z
      %b = gpu.block_id x
      gpu.printf "a b%ld (%ld,%ld,%ld)\\n", %b, %tx, %ty, %tz : index, index, index, index
      gpu.barrier
      gpu.printf "b b%ld (%ld,%ld,%ld)\\n", %b, %tx, %ty, %tz : index, index, index, index
      gpu.barrier
      gpu.printf "c b%ld\\n", %b : index
      gpu.return
    }
""")


def test_output_order_matches_fibers_in_3d_blocks(capfd: pytest.CaptureFixture[str]) -> None:
    _both(PRINT_STEPS, "steps", list, (2, 1, 1), (3, 2, 2))
    text = capfd.readouterr().out
    half = len(text) // 2
    assert text[:half] == text[half:]  # regions, then fibers: the same lines in the same order
    lines = text[:half].splitlines()
    assert len(lines) == 2 * 3 * 12
    threads = [(x, y, z) for z in range(2) for y in range(2) for x in range(3)]
    expected = [f"{step} b{b} ({x},{y},{z})" for b in range(2) for step in "ab"
                for x, y, z in threads]
    assert [ln for ln in lines if not ln.startswith("c")] == expected


EXIT_EARLY = _module("""
    gpu.func @early(%out: memref<?xi32>) kernel {
      %c4 = arith.constant 4 : index
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c1 = arith.constant 1 : index
      %late = arith.cmpi eq, %b, %c1 : index
      %lt = arith.cmpi ult, %t, %c4 : index
      %wait = arith.ori %lt, %late : i1
      scf.if %wait {
        gpu.barrier
        %one = arith.constant 1 : i32
        memref.store %one, %out[%t] : memref<?xi32>
      }
      gpu.return
    }
""")


def test_divergence_error_matches_the_fiber_runtime() -> None:
    # block 0: 12 of 16 threads exit while 4 wait; block 1 (never reached) would be fine
    (out,) = _both(EXIT_EARLY, "early", lambda: [np.zeros(16, np.int32)], (2, 1, 1),
                   (16, 1, 1))
    assert not out.any()


SHUFFLE = _module("""
    gpu.func @shuf(%out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      gpu.barrier
      %v, %ok = gpu.shuffle xor %ti, %c1, %c32 : i32
      memref.store %v, %out[%t] : memref<?xi32>
      gpu.return
    }
""")

BIG_PRIVATE = _module("""
    gpu.func @big(%out: memref<?xf32>) private(%p: memref<512xf32, 5>) kernel {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      memref.store %tf, %p[%c0] : memref<512xf32, 5>
      gpu.barrier
      %v = memref.load %p[%c0] : memref<512xf32, 5>
      memref.store %v, %out[%t] : memref<?xf32>
      gpu.return
    }
""")


def test_warp_operations_and_large_private_memory_keep_fibers() -> None:
    mod = compile_cpu(SHUFFLE)
    assert _uses_fibers(mod, "shuf")
    out = np.zeros(32, np.int32)
    mod.launch("shuf", [out], block=(32, 1, 1))
    np.testing.assert_array_equal(out, np.arange(32) ^ 1)
    mod = compile_cpu(BIG_PRIVATE)  # 2 KiB per thread: more than regions copy at a barrier
    assert _uses_fibers(mod, "big")
    out = np.zeros(8, np.float32)
    mod.launch("big", [out], block=(8, 1, 1))
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32))


def test_region_kernels_have_no_scheduler_and_vectorise() -> None:
    from test_cpu_kernels import REDUCE, _optimized_ir

    text = _optimized_ir(REDUCE)
    assert "@__nova_fiber_switch(" not in text and "@__nova_cpu_wait(" not in text
    assert "<4 x i32>" in text or "<8 x i32>" in text or "<16 x i32>" in text


# ---- the host CPU target ---------------------------------------------------------------------

def _record(source: str) -> tuple[str, str]:
    from nova.backends.cpu import host_cpu
    from nova.backends.cpu.target import lower_cpu_module
    from nova.ir.parser import parse_mlir

    gm = next(op for op in parse_mlir(source, "<t>").walk() if op.name == "gpu.module")
    module = lower_cpu_module(gm).llvm_module
    gv = module.globals[host_cpu.TARGET_SYMBOL]
    record = bytes(gv.initializer.constant).rstrip(b"\0").decode()
    return record, str(module)


def test_kernels_are_compiled_for_the_host_cpu_and_say_so() -> None:
    from nova.backends.cpu import host_cpu

    host = host_cpu.cpu_target("native")
    record, text = _record(SHUFFLE)
    assert record == host.record()
    assert record.startswith(f"cpu={host.name};features=+")
    assert f'"target-cpu"="{host.name}"' in text
    with config.scoped(cpu_arch="generic"):
        record, text = _record(SHUFFLE)
    assert record == "cpu=x86-64;features="
    assert '"target-cpu"="x86-64"' in text and "target-features" not in text


def test_unknown_cpu_arch_is_a_clear_error() -> None:
    from nova.backends.cpu import host_cpu
    from nova.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="unknown CPU-device architecture 'pentium'"):
        host_cpu.cpu_target("pentium")


def test_object_for_missing_cpu_features_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.errors import DeviceError
    from nova.runtime.cpu import module as cpu_module

    native = compile_cpu(SHUFFLE)
    with config.scoped(cpu_arch="generic"):
        portable = compile_cpu(SHUFFLE)
    from nova.abi import CPU_TARGET_SYMBOL

    def record(compiled) -> int:  # type: ignore[no-untyped-def]
        return int(compiled.loaded.engine.get_global_value_address(CPU_TARGET_SYMBOL))

    host = cpu_module._host_features()
    cpu_module.check_cpu_target(record(native), "m")  # this machine: fine
    monkeypatch.setattr(cpu_module, "_host_features", lambda: frozenset({"sse2"}))
    needed = sorted(f for f in host if f != "sse2")
    if needed:
        with pytest.raises(DeviceError, match=rf"compiled for CPU '[^']+' and uses features this "
                                              rf"CPU lacks: {needed[0]}, .*NOVA_CPU_ARCH=generic"):
            cpu_module.check_cpu_target(record(native), "m")
    cpu_module.check_cpu_target(record(portable), "m")  # generic: loads anywhere


# ---- uniformity (values all threads share are saved once) ------------------------------------

def _split(source: str) -> object:
    from nova.backends.cpu import regions
    from nova.backends.cpu.target import lower_cpu_module
    from nova.ir.parser import parse_mlir

    captured: list[object] = []
    original = regions.split_at_barriers

    def spy(body: object, wait: object) -> object:
        result = original(body, wait)  # type: ignore[arg-type]
        captured.append(result)
        return result

    gm = next(op for op in parse_mlir(source, "<t>").walk() if op.name == "gpu.module")
    regions.split_at_barriers = spy  # type: ignore[assignment]
    try:
        lower_cpu_module(gm)
    finally:
        regions.split_at_barriers = original  # type: ignore[assignment]
    (split,) = captured
    return split


def test_a_uniform_loop_counter_is_saved_once() -> None:
    from test_cpu_kernels import REDUCE

    split = _split(REDUCE)  # the stride of the tree reduction: the same in every thread
    assert split.uniform_bytes > 0  # type: ignore[attr-defined]


def test_barriers_in_divergent_code_share_nothing() -> None:
    assert _split(NONUNIFORM).uniform_bytes == 0  # type: ignore[attr-defined]
    assert _split(EXIT_EARLY).uniform_bytes == 0  # type: ignore[attr-defined]


COUNTDOWN = _module("""
    gpu.func @countdown(%out: memref<?xi64>, %steps: index) workgroup(%tile: memref<64xi64, 3>)
        kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t = gpu.thread_id x
      %d = gpu.block_dim x
      %var = memref.alloca() : memref<index>
      %mine = memref.alloca() : memref<index>
      memref.store %steps, %var[] : memref<index>
      memref.store %t, %mine[] : memref<index>
      %r = scf.while (%unused = %c0) : (index) -> index {
        %k = memref.load %var[] : memref<index>
        %more = arith.cmpi ugt, %k, %c0 : index
        scf.condition(%more) %k : index
      } do {
      ^bb0(%k: index):
        %m = memref.load %mine[] : memref<index>
        %ki = arith.index_cast %k : index to i64
        %mi = arith.index_cast %m : index to i64
        %v = arith.addi %ki, %mi : i64
        memref.store %v, %tile[%t] : memref<64xi64, 3>
        gpu.barrier
        %n1 = arith.addi %t, %c1 : index
        %nb = arith.remui %n1, %d : index
        %w = memref.load %tile[%nb] : memref<64xi64, 3>
        %wi = arith.index_cast %w : i64 to index
        memref.store %wi, %mine[] : memref<index>
        gpu.barrier
        %k1 = arith.subi %k, %c1 : index
        memref.store %k1, %var[] : memref<index>
        scf.yield %c0 : index
      }
      %fin = memref.load %mine[] : memref<index>
      %fi = arith.index_cast %fin : index to i64
      %b = gpu.block_id x
      %base = arith.muli %b, %d : index
      %g = arith.addi %base, %t : index
      memref.store %fi, %out[%g] : memref<?xi64>
      gpu.return
    }
""")


def test_variables_in_memory_shared_or_per_thread() -> None:
    from nova.backends.cpu.regions import FRAME_ALIGN

    # %var (the loop count in memory) and %k (its value, live across the first barrier) are
    # shared, 16 bytes each; %mine (different in every thread) is the one per-thread slot
    split = _split(COUNTDOWN)
    assert split.uniform_bytes == 32  # type: ignore[attr-defined]
    assert split.frame_bytes == FRAME_ALIGN  # type: ignore[attr-defined]
    blocks, block, steps = 3, 24, 5
    (out,) = _both(COUNTDOWN, "countdown", lambda: [np.zeros(blocks * block, np.int64),
                                                    I64(steps)], (blocks, 1, 1), (block, 1, 1))
    mine = np.arange(block, dtype=np.int64)
    for k in range(steps, 0, -1):
        mine = np.roll(mine + k, -1)
    np.testing.assert_array_equal(out, np.tile(mine, blocks))


TICKETS = _module("""
    gpu.func @tickets(%out: memref<?xi32>) workgroup(%ctr: memref<1xi32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %z = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %t = gpu.thread_id x
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %z, %ctr[%c0] : memref<1xi32, 3>
      }
      gpu.barrier
      %old = memref.atomic_rmw addi %one, %ctr[%c0] : (i32, memref<1xi32, 3>) -> i32
      gpu.barrier
      memref.store %old, %out[%t] : memref<?xi32>
      gpu.return
    }
""")


def test_atomic_results_are_per_thread() -> None:
    # regression: an atomic's old value has uniform operands but differs in every thread
    (out,) = _both(TICKETS, "tickets", lambda: [np.zeros(40, np.int32)], (1, 1, 1), (40, 1, 1))
    np.testing.assert_array_equal(out, np.arange(40))
