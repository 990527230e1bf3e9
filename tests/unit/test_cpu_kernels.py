"""CPU-device kernels end to end: MLIR -> lower_cpu_module -> x86-64 object -> MCJIT -> ctypes,
compared with NumPy. Covers the fast loop path, barriers (loops, uniform ifs), workgroup and
private memory, atomics across OS threads, printf, asserts and barrier divergence."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_jit import compile_cpu

I64 = ctypes.c_int64
I32 = ctypes.c_int32
F32 = ctypes.c_float


def _module(body: str) -> str:
    return "module attributes {gpu.container_module} {\n  gpu.module @m {\n" + body + "\n  }\n}\n"


ELEMENTWISE = _module("""
    gpu.func @saxpy(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %a: f32, %n: index,
                    %m: index) kernel {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %c0 = arith.muli %bx, %dx : index
      %col = arith.addi %c0, %tx : index
      %r0 = arith.muli %by, %dy : index
      %row = arith.addi %r0, %ty : index
      %in_r = arith.cmpi ult, %row, %n : index
      %in_c = arith.cmpi ult, %col, %m : index
      %in = arith.andi %in_r, %in_c : i1
      scf.if %in {
        %xv = memref.load %x[%row, %col] : memref<?x?xf32>
        %yv = memref.load %y[%row, %col] : memref<?x?xf32>
        %ax = arith.mulf %a, %xv : f32
        %s = arith.addf %ax, %yv : f32
        memref.store %s, %y[%row, %col] : memref<?x?xf32>
      }
      gpu.return
    }
""")


def test_elementwise_2d_fast_path() -> None:
    mod = compile_cpu(ELEMENTWISE)
    assert mod.kernel("saxpy").uses_barriers is False
    n, m = 37, 53
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, m)).astype(np.float32)
    y = rng.standard_normal((n, m)).astype(np.float32)
    expected = np.float32(2.5) * x + y
    mod.launch("saxpy", [x, y, F32(2.5), I64(n), I64(m)], grid=(4, 5, 1), block=(16, 8, 1))
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_elementwise_over_two_os_threads() -> None:
    mod = compile_cpu(ELEMENTWISE)
    n, m = 64, 64
    x = np.ones((n, m), np.float32)
    y = np.arange(n * m, dtype=np.float32).reshape(n, m)
    expected = 3 * x + y
    mod.launch("saxpy", [x, y, F32(3.0), I64(n), I64(m)], grid=(8, 8, 1), block=(8, 8, 1),
               os_threads=2)
    np.testing.assert_array_equal(y, expected)


REDUCE = _module("""
    gpu.func @block_sum(%in: memref<?xi32>, %out: memref<?xi32>)
        workgroup(%buf: memref<256xi32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %base = arith.muli %b, %d : index
      %g = arith.addi %base, %t : index
      %v = memref.load %in[%g] : memref<?xi32>
      memref.store %v, %buf[%t] : memref<256xi32, 3>
      gpu.barrier
      %half0 = arith.divui %d, %c2 : index
      %r = scf.while (%s = %half0) : (index) -> index {
        %go = arith.cmpi ugt, %s, %c0 : index
        scf.condition(%go) %s : index
      } do {
      ^bb0(%s: index):
        %lt = arith.cmpi ult, %t, %s : index
        scf.if %lt {
          %o = arith.addi %t, %s : index
          %a = memref.load %buf[%t] : memref<256xi32, 3>
          %bb = memref.load %buf[%o] : memref<256xi32, 3>
          %sum = arith.addi %a, %bb : i32
          memref.store %sum, %buf[%t] : memref<256xi32, 3>
        }
        gpu.barrier
        %next = arith.divui %s, %c2 : index
        scf.yield %next : index
      }
      %is0 = arith.cmpi eq, %t, %c0 : index
      scf.if %is0 {
        %total = memref.load %buf[%c0] : memref<256xi32, 3>
        memref.store %total, %out[%b] : memref<?xi32>
      }
      gpu.return
    }
""")


@pytest.mark.parametrize(("block", "os_threads"), [(256, 1), (64, 2), (2, 1), (128, 3)])
def test_block_reduction_with_barrier_in_loop(block: int, os_threads: int) -> None:
    mod = compile_cpu(REDUCE)
    assert mod.kernel("block_sum").uses_barriers is True
    assert mod.kernel("block_sum").static_shared_bytes == 256 * 4
    blocks = 24
    rng = np.random.default_rng(block)
    data = rng.integers(-1000, 1000, blocks * block).astype(np.int32)
    out = np.zeros(blocks, np.int32)
    mod.launch("block_sum", [data, out], grid=(blocks, 1, 1), block=(block, 1, 1),
               os_threads=os_threads)
    np.testing.assert_array_equal(out, data.reshape(blocks, block).sum(axis=1))


SHARED_GLOBAL = _module("""
    memref.global "private" @tile : memref<64xi64, 3>
    gpu.func @rotate(%out: memref<?xi64>) kernel {
      %c1 = arith.constant 1 : index
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %tile = memref.get_global @tile : memref<64xi64, 3>
      %bi = arith.index_cast %b : index to i64
      %ti = arith.index_cast %t : index to i64
      %c1000 = arith.constant 1000 : i64
      %hi = arith.muli %bi, %c1000 : i64
      %v = arith.addi %hi, %ti : i64
      memref.store %v, %tile[%t] : memref<64xi64, 3>
      gpu.barrier
      %n1 = arith.addi %t, %c1 : index
      %nb = arith.remui %n1, %d : index
      %w = memref.load %tile[%nb] : memref<64xi64, 3>
      %base = arith.muli %b, %d : index
      %g = arith.addi %base, %t : index
      memref.store %w, %out[%g] : memref<?xi64>
      gpu.return
    }
""")


def test_workgroup_global_is_per_block_across_os_threads() -> None:
    mod = compile_cpu(SHARED_GLOBAL)
    blocks, block = 64, 48
    out = np.zeros(blocks * block, np.int64)
    mod.launch("rotate", [out], grid=(blocks, 1, 1), block=(block, 1, 1), os_threads=4)
    b = np.repeat(np.arange(blocks), block)
    t = np.tile(np.arange(block), blocks)
    np.testing.assert_array_equal(out, b * 1000 + (t + 1) % block)


UNIFORM_IF = _module("""
    gpu.func @uniform_if(%out: memref<?xi32>)
        workgroup(%buf: memref<32xi32, 3>) kernel {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %g0 = arith.muli %b, %d : index
      %g = arith.addi %g0, %t : index
      %parity = arith.remui %b, %c2 : index
      %even = arith.cmpi eq, %parity, %c0 : index
      %r = scf.if %even -> (i32) {
        %ti = arith.index_cast %t : index to i32
        memref.store %ti, %buf[%t] : memref<32xi32, 3>
        gpu.barrier
        %last = arith.subi %d, %c1 : index
        %mirror = arith.subi %last, %t : index
        %v = memref.load %buf[%mirror] : memref<32xi32, 3>
        scf.yield %v : i32
      } else {
        %m = arith.constant -1 : i32
        scf.yield %m : i32
      }
      memref.store %r, %out[%g] : memref<?xi32>
      gpu.return
    }
""")


def test_barrier_inside_block_uniform_if() -> None:
    mod = compile_cpu(UNIFORM_IF)
    blocks, block = 6, 32
    out = np.zeros(blocks * block, np.int32)
    mod.launch("uniform_if", [out], grid=(blocks, 1, 1), block=(block, 1, 1))
    expected = np.where((np.arange(blocks) % 2 == 0)[:, None],
                        np.arange(block)[::-1][None, :], -1).reshape(-1)
    np.testing.assert_array_equal(out, expected)


ATOMICS = _module("""
    gpu.func @histogram(%data: memref<?xi32>, %bins: memref<16xi32>, %total: memref<1xi64>,
                        %n: index) kernel {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %g0 = arith.muli %b, %d : index
      %g = arith.addi %g0, %t : index
      %in = arith.cmpi ult, %g, %n : index
      scf.if %in {
        %v = memref.load %data[%g] : memref<?xi32>
        %bin = arith.index_cast %v : i32 to index
        %one = arith.constant 1 : i32
        %old = memref.atomic_rmw addi %one, %bins[%bin] : (i32, memref<16xi32>) -> i32
        %v64 = arith.extsi %v : i32 to i64
        %old2 = memref.atomic_rmw addi %v64, %total[%c0] : (i64, memref<1xi64>) -> i64
      }
      gpu.return
    }
""")


@pytest.mark.parametrize("os_threads", [1, 2, 4])
def test_atomics_from_many_blocks_on_concurrent_os_threads(os_threads: int) -> None:
    mod = compile_cpu(ATOMICS)
    n = 200_000
    data = np.random.default_rng(7).integers(0, 16, n).astype(np.int32)
    bins = np.zeros(16, np.int32)
    total = np.zeros(1, np.int64)
    block = 128
    grid = (n + block - 1) // block
    mod.launch("histogram", [data, bins, total, I64(n)], grid=(grid, 1, 1), block=(block, 1, 1),
               os_threads=os_threads)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=16))
    assert total[0] == data.astype(np.int64).sum()


IDS = _module("""
    func.func @linear_id() -> index {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %tz = gpu.thread_id z
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %a = arith.muli %tz, %dy : index
      %b = arith.addi %a, %ty : index
      %c = arith.muli %b, %dx : index
      %r = arith.addi %c, %tx : index
      return %r : index
    }
    gpu.func @ids(%out: memref<?x12xi64>) kernel {
      %l = func.call @linear_id() : () -> index
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %bz = gpu.block_id z
      %gx = gpu.grid_dim x
      %gy = gpu.grid_dim y
      %a = arith.muli %bz, %gy : index
      %b = arith.addi %a, %by : index
      %c = arith.muli %b, %gx : index
      %blk = arith.addi %c, %bx : index
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %dz = gpu.block_dim z
      %n0 = arith.muli %dx, %dy : index
      %n = arith.muli %n0, %dz : index
      %row0 = arith.muli %blk, %n : index
      %row = arith.addi %row0, %l : index
      %lane = gpu.lane_id
      %sg = gpu.subgroup_id : index
      %nsg = gpu.num_subgroups : index
      %sgs = gpu.subgroup_size : index
      %gid = gpu.global_id x
      %cb = gpu.cluster_block_id x
      %ci = gpu.cluster_id x
      %cd = gpu.cluster_dim x
      %cdb = gpu.cluster_dim_blocks x
      %vals = arith.constant 0 : index
      %i0 = arith.constant 0 : index
      %i1 = arith.constant 1 : index
      %i2 = arith.constant 2 : index
      %i3 = arith.constant 3 : index
      %i4 = arith.constant 4 : index
      %i5 = arith.constant 5 : index
      %i6 = arith.constant 6 : index
      %i7 = arith.constant 7 : index
      %i8 = arith.constant 8 : index
      %i9 = arith.constant 9 : index
      %i10 = arith.constant 10 : index
      %i11 = arith.constant 11 : index
      %v0 = arith.index_cast %l : index to i64
      memref.store %v0, %out[%row, %i0] : memref<?x12xi64>
      %v1 = arith.index_cast %blk : index to i64
      memref.store %v1, %out[%row, %i1] : memref<?x12xi64>
      %v2 = arith.index_cast %lane : index to i64
      memref.store %v2, %out[%row, %i2] : memref<?x12xi64>
      %v3 = arith.index_cast %sg : index to i64
      memref.store %v3, %out[%row, %i3] : memref<?x12xi64>
      %v4 = arith.index_cast %nsg : index to i64
      memref.store %v4, %out[%row, %i4] : memref<?x12xi64>
      %v5 = arith.index_cast %sgs : index to i64
      memref.store %v5, %out[%row, %i5] : memref<?x12xi64>
      %v6 = arith.index_cast %gid : index to i64
      memref.store %v6, %out[%row, %i6] : memref<?x12xi64>
      %v7 = arith.index_cast %cb : index to i64
      memref.store %v7, %out[%row, %i7] : memref<?x12xi64>
      %v8 = arith.index_cast %ci : index to i64
      memref.store %v8, %out[%row, %i8] : memref<?x12xi64>
      %v9 = arith.index_cast %cd : index to i64
      memref.store %v9, %out[%row, %i9] : memref<?x12xi64>
      %v10 = arith.index_cast %cdb : index to i64
      memref.store %v10, %out[%row, %i10] : memref<?x12xi64>
      %tz = gpu.thread_id z
      %v11 = arith.index_cast %tz : index to i64
      memref.store %v11, %out[%row, %i11] : memref<?x12xi64>
      gpu.return
    }
""")


def test_ids_and_device_function_calls() -> None:
    mod = compile_cpu(IDS)
    grid, block, cluster = (4, 3, 2), (5, 7, 2), (2, 1, 1)
    n = 5 * 7 * 2
    nblocks = 4 * 3 * 2
    out = np.full((nblocks * n, 12), -1, np.int64)
    mod.launch("ids", [out], grid=grid, block=block, cluster=cluster, os_threads=2)
    rows = out.reshape(nblocks, n, 12)
    for blk in range(nblocks):
        bx = blk % 4
        for lin in range(n):
            r = rows[blk, lin]
            tx, tz = lin % 5, lin // 35
            assert r[0] == lin and r[1] == blk
            assert (r[2], r[3], r[4], r[5]) == (lin % 32, lin // 32, 3, 32)
            assert r[6] == bx * 5 + tx
            assert (r[7], r[8], r[9], r[10]) == (bx % 2, bx // 2, 2, 2)
            assert r[11] == tz


PRINTF = _module("""
    gpu.func @hello(%k: i32) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %f = arith.constant 1.5 : f32
      %i8v = arith.constant -3 : i8
      gpu.printf "block %lld thread %lld k=%d f=%.2f c=%d\\n", %b, %t, %k, %f, %i8v
        : index, index, i32, f32, i8
      gpu.return
    }
""")


def test_printf_goes_to_stdout_in_thread_order(capfd: pytest.CaptureFixture[str]) -> None:
    mod = compile_cpu(PRINTF)
    mod.launch("hello", [I32(42)], grid=(2, 1, 1), block=(3, 1, 1))
    out = capfd.readouterr().out
    expected = "".join(f"block {b} thread {t} k=42 f=1.50 c=-3\n"
                       for b in range(2) for t in range(3))
    assert out == expected


ASSERT = _module("""
    gpu.func @check(%data: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %g0 = arith.muli %b, %d : index
      %g = arith.addi %g0, %t : index
      %v = memref.load %data[%g] : memref<?xi32>
      %z = arith.constant 0 : i32
      %ok = arith.cmpi sge, %v, %z : i32
      cf.assert %ok, "value must be non-negative"
      %one = arith.constant 1 : i32
      %w = arith.addi %v, %one : i32
      memref.store %w, %data[%g] : memref<?xi32>
      gpu.return
    }
""")


def test_assert_failure_reports_block_and_thread() -> None:
    mod = compile_cpu(ASSERT)
    data = np.arange(4 * 8, dtype=np.int32)
    mod.launch("check", [data], grid=(4, 1, 1), block=(8, 1, 1))
    np.testing.assert_array_equal(data, np.arange(32) + 1)
    data[2 * 8 + 5] = -7
    status, error = mod.launch("check", [data], grid=(4, 1, 1), block=(8, 1, 1), check=False)
    assert status != 0
    assert error.startswith("assertion failed: value must be non-negative")
    assert error.endswith("in block (2,0,0), thread (5,0,0)")
    assert "<test>:" in error  # the source location of the cf.assert
    # from two OS threads at once: the one running block 2 fails, the other finishes its blocks
    data[:] = np.arange(32)
    data[2 * 8 + 5] = -7
    status, error = mod.launch("check", [data], grid=(4, 1, 1), block=(8, 1, 1), check=False,
                               os_threads=2)
    assert status != 0 and error.endswith("in block (2,0,0), thread (5,0,0)")
    np.testing.assert_array_equal(data[:16], np.arange(16) + 1)


DIVERGENT = _module("""
    gpu.func @divergent(%out: memref<?xi32>) kernel {
      %c4 = arith.constant 4 : index
      %t = gpu.thread_id x
      %lt = arith.cmpi ult, %t, %c4 : index
      scf.if %lt {
        gpu.barrier
        %one = arith.constant 1 : i32
        memref.store %one, %out[%t] : memref<?xi32>
      }
      gpu.return
    }
""")


def test_barrier_divergence_is_reported() -> None:
    mod = compile_cpu(DIVERGENT)
    out = np.zeros(16, np.int32)
    status, error = mod.launch("divergent", [out], grid=(3, 1, 1), block=(16, 1, 1), check=False)
    assert status != 0
    assert error.startswith("barrier divergence in block (0,0,0): 12 of 16 threads exited")
    assert not out.any()


ATTRIBUTIONS = _module("""
    gpu.func @scratch(%out: memref<?xf32>) workgroup(%view: memref<64xf32, 3>)
        private(%p: memref<4xf32, 5>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %t = gpu.thread_id x
      %tf0 = arith.index_cast %t : index to i32
      %tf = arith.sitofp %tf0 : i32 to f32
      scf.for %i = %c0 to %c4 step %c1 {
        %if0 = arith.index_cast %i : index to i32
        %if = arith.sitofp %if0 : i32 to f32
        %v = arith.addf %tf, %if : f32
        memref.store %v, %p[%i] : memref<4xf32, 5>
      }
      %a = memref.load %p[%c0] : memref<4xf32, 5>
      %b = memref.load %p[%c1] : memref<4xf32, 5>
      %s = arith.addf %a, %b : f32
      memref.store %s, %view[%t] : memref<64xf32, 3>
      gpu.barrier
      %d = gpu.block_dim x
      %last = arith.subi %d, %c1 : index
      %m = arith.subi %last, %t : index
      %r = memref.load %view[%m] : memref<64xf32, 3>
      memref.store %r, %out[%t] : memref<?xf32>
      gpu.return
    }
""")


def test_private_and_workgroup_attributions() -> None:
    mod = compile_cpu(ATTRIBUTIONS)
    out = np.zeros(40, np.float32)
    mod.launch("scratch", [out], grid=(1, 1, 1), block=(40, 1, 1))
    t = np.arange(40)[::-1].astype(np.float32)
    np.testing.assert_array_equal(out, 2 * t + 1)


def test_module_is_self_contained_and_reentrant() -> None:
    from nova.backends.cpu.target import lower_cpu_module
    from nova.ir.parser import parse_mlir

    module = parse_mlir(REDUCE + ASSERT.replace("@m", "@m2"), "<test>")
    for gm in (op for op in module.walk() if op.name == "gpu.module"):
        llvm_module = lower_cpu_module(gm).llvm_module
        assert llvm_module.triple == "x86_64-unknown-linux-gnu"
        declared = {f.name for f in llvm_module.functions
                    if f.is_declaration and not f.name.startswith("llvm.")}  # intrinsics
        assert declared <= {"malloc", "free", "snprintf", "printf", "fflush", "mprotect",
                            "dprintf"}
        defined = [f for f in llvm_module.functions if not f.is_declaration]
        exported = {f.name for f in defined if f.linkage not in ("internal", "private")}
        assert exported in ({"block_sum"}, {"check"})
        for gv in llvm_module.global_values:
            if not isinstance(gv, type(defined[0])):
                assert gv.global_constant, f"mutable global {gv.name}"


VECADD = _module("""
    gpu.func @vecadd(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %t = gpu.thread_id x
      %bi = gpu.block_id x
      %bd = gpu.block_dim x
      %i0 = arith.muli %bi, %bd : index
      %i = arith.addi %i0, %t : index
      %x = memref.load %a[%i] : memref<?xf32>
      %y = memref.load %b[%i] : memref<?xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %b[%i] : memref<?xf32>
      gpu.return
    }
""")


def _optimized_ir(source: str) -> str:
    import llvmlite.binding as llvm

    from nova.backends.device import DeviceTarget, lower_device_module
    from nova.backends.llvm.codegen import optimize
    from nova.backends.x86 import target_machine
    from nova.ir.parser import parse_mlir

    gm = next(op for op in parse_mlir(source, "<test>").walk() if op.name == "gpu.module")
    lowering = lower_device_module(gm, DeviceTarget.CPU)
    module = llvm.parse_assembly(str(lowering.llvm_module))
    optimize(module, target_machine())
    return str(module)


def test_fast_path_inlines_the_body_and_vectorises() -> None:
    text = _optimized_ir(VECADD)
    # body inlined, no runtime calls, no workgroup malloc (llvm.assume is only an optimizer
    # hint, from unrolling the block loop around the atomic current_block store)
    calls = [line for line in text.splitlines() if "call " in line and "@llvm.assume" not in line]
    assert not calls
    assert "alloca" not in text  # thread context promoted to registers
    assert "<4 x float>" in text or "<8 x float>" in text


def test_fiber_path_uses_the_scheduler() -> None:
    # an assert can stop a thread anywhere: fibers (block barriers alone run as regions,
    # test_cpu_regions.py)
    text = _optimized_ir(ASSERT)
    assert "@__nova_fiber_switch(" in text and "@__nova_fiber_init(" in text


def test_device_lowering_describes_kernels() -> None:
    from nova.backends.device import DeviceTarget, lower_device_module
    from nova.ir.parser import parse_mlir

    gm = next(op for op in parse_mlir(ELEMENTWISE, "<test>").walk() if op.name == "gpu.module")
    (kernel,) = lower_device_module(gm, DeviceTarget.CPU).kernels
    assert kernel.name == "saxpy"
    assert [a.kind for a in kernel.args] == ["memref", "memref", "scalar", "scalar", "scalar"]
    assert [p.llvm_type for p in kernel.params] == (
        ["ptr", "ptr", "i64", "i64", "i64", "i64", "i64"] * 2 + ["float", "i64", "i64"])
    assert [p.arg_index for p in kernel.params] == [0] * 7 + [1] * 7 + [2, 3, 4]


BIG_PRIVATE = _module("""
    gpu.func @big(%out: memref<?xf32>) private(%p: memref<16384xf32, 5>) kernel {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %p[%t] : memref<16384xf32, 5>
      gpu.barrier
      %r = memref.load %p[%t] : memref<16384xf32, 5>
      memref.store %r, %out[%t] : memref<?xf32>
      gpu.return
    }
""")


def test_private_memory_beyond_the_fiber_stack_is_rejected() -> None:
    from nova.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match=r"kernel @big needs 65536 bytes of private memory"):
        compile_cpu(BIG_PRIVATE)
    # a larger fiber stack makes it fit
    mod = compile_cpu(BIG_PRIVATE, stack_bytes=128 * 1024)
    out = np.zeros(8, np.float32)
    mod.launch("big", [out], block=(8, 1, 1))
    assert (out == 1).all()


DYNAMIC_SHARED = _module("""
    gpu.func @dyn(%out: memref<?xi8>, %n: index) kernel {
      %c1 = arith.constant 1 : index
      %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %t = gpu.thread_id x
      %d = gpu.block_dim x
      %b = gpu.block_id x
      %tb = arith.addi %t, %b : index
      %v = arith.index_cast %tb : index to i8
      memref.store %v, %smem[%t] : memref<?xi8, #gpu.address_space<workgroup>>
      gpu.barrier
      %last = arith.subi %d, %c1 : index
      %m = arith.subi %last, %t : index
      %w = memref.load %smem[%m] : memref<?xi8, #gpu.address_space<workgroup>>
      %g0 = arith.muli %b, %d : index
      %g = arith.addi %g0, %t : index
      memref.store %w, %out[%g] : memref<?xi8>
      gpu.return
    }
""")


def test_dynamic_shared_memory_is_per_os_thread_scratch() -> None:
    """gpu.dynamic_shared_memory views launch->dynamic_shared, which the runtime gives each OS
    thread separately."""
    mod = compile_cpu(DYNAMIC_SHARED)
    blocks, block = 16, 50
    out = np.zeros(blocks * block, np.int8)
    mod.launch("dyn", [out, I64(block)], grid=(blocks, 1, 1), block=(block, 1, 1),
               os_threads=2, dynamic_shared=block)
    expected = (np.arange(block)[::-1][None, :] + np.arange(blocks)[:, None]).reshape(-1)
    np.testing.assert_array_equal(out, expected.astype(np.int8))


def test_fiber_stack_size_comes_from_config() -> None:
    from nova import config
    from nova.errors import UnsupportedError

    with config.scoped(cpu_stack_kib=128):
        mod = compile_cpu(BIG_PRIVATE)  # 64 KiB of private memory fits a 128 KiB stack
    out = np.zeros(4, np.float32)
    mod.launch("big", [out], block=(4, 1, 1))
    assert (out == 1).all()
    with config.scoped(cpu_stack_kib=4), pytest.raises(UnsupportedError, match="at least 24 KiB"):
        compile_cpu(BIG_PRIVATE)


def _symbolic(source: str) -> str:
    """The same program with MLIR's symbolic gpu address spaces instead of 3 / 5."""
    return (source.replace(", 3>", ", #gpu.address_space<workgroup>>")
            .replace(", 5>", ", #gpu.address_space<private>>"))


def test_symbolic_address_spaces() -> None:
    assert "#gpu.address_space<workgroup>" in _symbolic(SHARED_GLOBAL)
    mod = compile_cpu(_symbolic(REDUCE))
    blocks, block = 8, 64
    data = np.arange(blocks * block, dtype=np.int32)
    out = np.zeros(blocks, np.int32)
    mod.launch("block_sum", [data, out], grid=(blocks, 1, 1), block=(block, 1, 1), os_threads=2)
    np.testing.assert_array_equal(out, data.reshape(blocks, block).sum(axis=1))
    mod = compile_cpu(_symbolic(SHARED_GLOBAL))
    out64 = np.zeros(4 * 16, np.int64)
    mod.launch("rotate", [out64], grid=(4, 1, 1), block=(16, 1, 1), os_threads=2)
    b = np.repeat(np.arange(4), 16)
    t = np.tile(np.arange(16), 4)
    np.testing.assert_array_equal(out64, b * 1000 + (t + 1) % 16)
    mod = compile_cpu(_symbolic(ATTRIBUTIONS))
    out32 = np.zeros(40, np.float32)
    mod.launch("scratch", [out32], block=(40, 1, 1))
    np.testing.assert_array_equal(out32, 2 * np.arange(40)[::-1].astype(np.float32) + 1)


LIBDEVICE = _module("""
    func.func private @__nv_expf(f32) -> f32
    func.func private @cbrt(f64) -> f64
    gpu.func @ext(%x: memref<?xf32>, %y: memref<?xf64>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<?xf32>
      %e = func.call @__nv_expf(%v) : (f32) -> f32
      memref.store %e, %x[%t] : memref<?xf32>
      %w = memref.load %y[%t] : memref<?xf64>
      %c = func.call @cbrt(%w) : (f64) -> f64
      memref.store %c, %y[%t] : memref<?xf64>
      gpu.return
    }
""")


def test_libdevice_and_libm_declarations() -> None:
    from nova.errors import UnsupportedError

    mod = compile_cpu(LIBDEVICE)
    x = np.linspace(-2, 2, 16).astype(np.float32)
    y = np.linspace(-27, 27, 16)
    expected_x, expected_y = np.exp(x), np.cbrt(y)
    mod.launch("ext", [x, y], block=(16, 1, 1))
    np.testing.assert_allclose(x, expected_x, rtol=1e-6)
    np.testing.assert_allclose(y, expected_y, rtol=1e-14)
    with pytest.raises(UnsupportedError, match=r"function @__nv_no_such_fn is declared but not"):
        compile_cpu(LIBDEVICE.replace("@__nv_expf", "@__nv_no_such_fn"))
