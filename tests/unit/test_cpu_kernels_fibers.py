"""The CPU device's fiber machinery in isolation: context switch, scheduler, barrier rules.

Each test builds a tiny "kernel" directly against the fiber runtime (no MLIR), JITs it with MCJIT
and checks the exact interleaving GPU semantics demand.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from cpu_jit import jit_module
from llvmlite import ir

from nova.abi import CpuLaunch
from nova.backends.cpu import fibers as cf
from nova.backends.cpu.fibers import (
    BLOCK_CTX,
    I32,
    I64,
    PTR,
    THREAD_CTX,
    VOID,
    B,
    State,
    T,
    field,
    load_field,
    store_field,
)

STEPS = 4


def _build(thread_body, stack_bytes: int = cf.DEFAULT_STACK_BYTES) -> ir.Module:
    """Module exporting `i32 run(ptr launch, ptr out, i64 n)`: one block of n fibers, each running
    `thread_body(module, rt, b, tctx, out)` then exiting. bctx.PARAMS carries `out`."""
    module = ir.Module("fibers")
    module.triple = "x86_64-unknown-linux-gnu"
    rt = cf.fiber_runtime(module)
    main = ir.Function(module, ir.FunctionType(VOID, [PTR]), "fiber_main")
    main.linkage = "internal"
    b = ir.IRBuilder(main.append_basic_block("entry"))
    (tctx,) = main.args
    out = load_field(b, BLOCK_CTX, load_field(b, THREAD_CTX, tctx, T.BCTX), B.PARAMS)
    thread_body(module, rt, b, tctx, out)
    if b.block.terminator is None:
        b.call(rt.exit, [tctx])
        b.unreachable()

    run = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, I64]), "run")
    launch, out_arg, n = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    bctx = b.alloca(BLOCK_CTX)
    store_field(b, BLOCK_CTX, bctx, launch, B.LAUNCH)
    store_field(b, BLOCK_CTX, bctx, out_arg, B.PARAMS)
    store_field(b, BLOCK_CTX, bctx, main, B.ENTRY)
    for f in (B.BID_X, B.BID_Y, B.BID_Z):
        store_field(b, BLOCK_CTX, bctx, I64(0), f)
    status = b.call(rt.block_alloc, [bctx, n, I64(stack_bytes)])
    with b.if_then(b.icmp_unsigned("!=", status, I32(0))):
        b.ret(status)
    status = b.call(rt.run_block, [bctx])
    b.call(rt.block_free, [bctx])
    b.ret(status)
    return module


def _runner(module: ir.Module):
    loaded = jit_module(module)
    fn = loaded.function("run", ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

    def call(n: int, out: np.ndarray, block: tuple[int, int, int] | None = None):
        launch = CpuLaunch()
        launch.block[:] = block or (n, 1, 1)
        status = fn(ctypes.addressof(launch), out.ctypes.data, n)
        return status, launch.error.decode()

    call.loaded = loaded  # type: ignore[attr-defined]
    return call


def _linear(b: ir.IRBuilder, tctx: ir.Value) -> ir.Value:
    return load_field(b, THREAD_CTX, tctx, T.LINEAR)


def _counter_steps(kind: State):
    """Each thread, STEPS times: out[1 + step*n + linear] = out[0]++ ; wait(kind)."""

    def body(module, rt, b, tctx, out):
        bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
        n = load_field(b, BLOCK_CTX, bctx, B.NTHREADS)
        linear = _linear(b, tctx)

        def step(b, k):
            ticket = b.load(out, typ=I64)
            b.store(b.add(ticket, I64(1)), out)
            slot = b.add(I64(1), b.add(b.mul(k, n), linear))
            b.store(ticket, b.gep(out, [slot], source_etype=I64))
            b.call(rt.wait, [tctx, I32(kind)])

        cf.counted_loop(b, I64(STEPS), step, "steps")

    return body


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 70, 256])
def test_block_barrier_orders_every_step(n: int) -> None:
    run = _runner(_build(_counter_steps(State.WAIT_BLOCK)))
    out = np.zeros(1 + STEPS * n, np.int64)
    status, error = run(n, out)
    assert (status, error) == (0, "")
    # round-robin within a step, and no thread starts step k+1 before all finished step k
    assert out[0] == STEPS * n
    assert np.array_equal(out[1:], np.arange(STEPS * n))


@pytest.mark.parametrize("n", [1, 5, 32, 33, 64, 100])
def test_warp_barrier_completes_per_warp(n: int) -> None:
    run = _runner(_build(_counter_steps(State.WAIT_WARP)))
    out = np.zeros(1 + STEPS * n, np.int64)
    status, error = run(n, out)
    assert (status, error) == (0, "")
    tickets = out[1:].reshape(STEPS, n)
    for w in range(0, n, 32):
        lanes = tickets[:, w:w + 32]
        # within a warp: all lanes finish step k before any lane does step k+1, in lane order
        flat = lanes.reshape(-1)
        assert np.all(np.diff(flat) > 0), lanes
    assert sorted(out[1:].tolist()) == list(range(STEPS * n))


def _exit_early(limit: int, kind: State):
    """Threads with linear id >= limit exit at once; the others wait once at `kind`."""

    def body(module, rt, b, tctx, out):
        with b.if_then(b.icmp_unsigned(">=", _linear(b, tctx), I64(limit))):
            b.call(rt.exit, [tctx])
            b.unreachable()
        b.call(rt.wait, [tctx, I32(kind)])
        b.store(I64(7), out)

    return body


@pytest.mark.parametrize("kind", [State.WAIT_BLOCK, State.WAIT_WARP])
def test_barrier_divergence_is_an_error(kind: State) -> None:
    run = _runner(_build(_exit_early(3, kind)))
    out = np.zeros(1, np.int64)
    status, error = run(8, out)
    assert status == 1
    assert error.startswith("barrier divergence in block (0,0,0): 5 of 8 threads exited")
    assert out[0] == 0  # nobody passed the barrier


def test_all_threads_at_barrier_after_others_passed_is_fine() -> None:
    # every thread takes the barrier: no divergence, everyone passes
    run = _runner(_build(_exit_early(8, State.WAIT_BLOCK)))
    out = np.zeros(1, np.int64)
    assert run(8, out) == (0, "")
    assert out[0] == 7


def _fail_at(thread: int, step: int):
    def body(module, rt, b, tctx, out):
        linear = _linear(b, tctx)

        def one(b, k):
            hit = b.and_(b.icmp_unsigned("==", linear, I64(thread)),
                         b.icmp_unsigned("==", k, I64(step)))
            with b.if_then(hit):
                b.call(rt.fail, [tctx, cf.cstring(module, "boom: x != y")])
                b.unreachable()
            b.store(b.add(b.load(out, typ=I64), I64(1)), out)
            b.call(rt.wait, [tctx, I32(State.WAIT_BLOCK)])

        cf.counted_loop(b, I64(STEPS), one, "steps")

    return body


def test_failure_stops_the_block_with_ids() -> None:
    run = _runner(_build(_fail_at(5, 2)))
    out = np.zeros(1, np.int64)
    status, error = run(12, out, block=(4, 3, 1))
    assert status == 1
    assert error == "boom: x != y in block (0,0,0), thread (1,1,0)"
    assert out[0] == 2 * 12 + 5  # threads 0..4 did step 2, thread 5 failed, nobody ran after


def _fp_env_per_fiber(module, rt, b, tctx, out):
    """Thread i sets MXCSR rounding mode i%4 and x87 precision, then records both after every
    barrier: each fiber must keep its own floating-point control state."""
    linear = _linear(b, tctx)
    mode = b.trunc(b.urem(linear, I64(4)), I32)
    mxcsr = b.or_(I32(0x1F80), b.shl(mode, I32(13)))
    slot = b.alloca(I32)
    b.store(mxcsr, slot)
    ld = ir.InlineAsm(ir.FunctionType(VOID, [PTR]), "ldmxcsr ($0)", "r,~{memory}",
                      side_effect=True)
    st = ir.InlineAsm(ir.FunctionType(VOID, [PTR]), "stmxcsr ($0)", "r,~{memory}",
                      side_effect=True)
    b.call(ld, [slot])
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    n = load_field(b, BLOCK_CTX, bctx, B.NTHREADS)

    def step(b, k):
        b.call(rt.wait, [tctx, I32(State.WAIT_BLOCK)])
        b.call(st, [slot])
        idx = b.add(b.mul(k, n), linear)
        b.store(b.zext(b.load(slot, typ=I32), I64), b.gep(out, [idx], source_etype=I64))

    cf.counted_loop(b, I64(STEPS), step, "steps")
    # restore the default so the exit path (and the scheduler) are unaffected either way
    b.store(I32(0x1F80), slot)
    b.call(ld, [slot])


def test_each_fiber_keeps_its_mxcsr() -> None:
    run = _runner(_build(_fp_env_per_fiber))
    n = 8
    out = np.zeros(STEPS * n, np.int64)
    assert run(n, out) == (0, "")
    expected = 0x1F80 | ((np.arange(n) % 4) << 13)
    for k in range(STEPS):
        assert np.array_equal(out[k * n:(k + 1) * n], expected)


def _many_live_values(module, rt, b, tctx, out):
    """Keep 12 values live across each barrier (forces callee-saved registers and spills)."""
    linear = _linear(b, tctx)
    vals = [b.mul(b.add(linear, I64(i + 1)), I64(2 * i + 3)) for i in range(12)]
    for _ in range(3):
        b.call(rt.wait, [tctx, I32(State.WAIT_BLOCK)])
        vals = [b.add(v, vals[(i + 1) % 12]) for i, v in enumerate(vals)]
    total = vals[0]
    for v in vals[1:]:
        total = b.xor(total, v)
    b.store(total, b.gep(out, [linear], source_etype=I64))


def test_values_survive_switches() -> None:
    run = _runner(_build(_many_live_values))
    n = 40
    out = np.zeros(n, np.int64)
    assert run(n, out) == (0, "")
    for t in range(n):
        vals = [(t + i + 1) * (2 * i + 3) for i in range(12)]
        for _ in range(3):
            vals = [v + vals[(i + 1) % 12] for i, v in enumerate(vals)]
        total = 0
        for v in vals:
            total ^= v
        assert out[t] == total


def _overflow(module, rt, b, tctx, out):
    """Thread 0 exits; thread 1 fills a private array larger than its stack."""
    with b.if_then(b.icmp_unsigned("==", _linear(b, tctx), I64(0))):
        b.call(rt.exit, [tctx])
        b.unreachable()
    size = cf.MIN_STACK_BYTES + 4096
    buf = b.alloca(ir.ArrayType(ir.IntType(8), size))
    memset = module.declare_intrinsic("llvm.memset", [PTR, I64])
    b.call(memset, [buf, ir.IntType(8)(1), I64(size), ir.IntType(1)(1)])  # volatile
    b.store(b.load(b.gep(buf, [I64(0), I64(size - 1)]), typ=ir.IntType(8)),
            b.gep(out, [I64(0)], source_etype=ir.IntType(8)))
    b.call(rt.wait, [tctx, I32(State.WAIT_WARP)])


def test_stack_overflow_is_detected() -> None:
    run = _runner(_build(_overflow, stack_bytes=cf.MIN_STACK_BYTES))
    out = np.zeros(1, np.int64)
    status, error = run(2, out)
    assert status == 1
    assert error.startswith("fiber stack overflow in block (0,0,0), thread (1,0,0)")


def test_concurrent_calls_from_os_threads_are_independent() -> None:
    run = _runner(_build(_counter_steps(State.WAIT_BLOCK)))
    n = 96
    results: list[tuple[int, str, np.ndarray]] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(20):
            out = np.zeros(1 + STEPS * n, np.int64)
            status, error = run(n, out)
            with lock:
                results.append((status, error, out))

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 80
    for status, error, out in results:
        assert (status, error) == (0, "")
        assert np.array_equal(out[1:], np.arange(STEPS * n))


def test_runtime_is_defined_once_per_module() -> None:
    module = ir.Module("m")
    assert cf.fiber_runtime(module) is cf.fiber_runtime(module)
    text = str(module)
    assert text.count('define internal void @"__nova_fiber_switch"') == 1
    # only libc is declared, and everything of the runtime is private to the object
    declared = {f.name for f in module.functions if f.is_declaration}
    assert declared <= {"malloc", "free", "snprintf", "printf", "fflush", "mprotect", "dprintf"}
    assert all(f.linkage == "internal" for f in module.functions if not f.is_declaration)


def test_thread_ids_follow_x_fastest() -> None:
    def body(module, rt, b, tctx, out):
        linear = _linear(b, tctx)
        for j, f in enumerate((T.TID_X, T.TID_Y, T.TID_Z)):
            idx = b.add(b.mul(linear, I64(3)), I64(j))
            b.store(load_field(b, THREAD_CTX, tctx, f), b.gep(out, [idx], source_etype=I64))
        _ = field  # (field is re-exported for other tests)

    run = _runner(_build(body))
    out = np.zeros(3 * 24, np.int64)
    assert run(24, out, block=(2, 3, 4)) == (0, "")
    ids = out.reshape(24, 3)
    expected = [(x, y, z) for z in range(4) for y in range(3) for x in range(2)]
    assert [tuple(r) for r in ids] == expected
