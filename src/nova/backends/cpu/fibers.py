"""Fiber runtime of the CPU device, emitted into every CPU kernel object (LLVM IR, no libraries).

Why: kernels that use barriers, warp operations or asserts need every GPU thread of a block to be
able to stop in the middle of its code and let the others catch up (docs/architecture.md, "CPU
device barriers"). Each GPU thread therefore runs as a *fiber*: its own small stack plus a
hand-written x86-64 SysV context switch, scheduled cooperatively by a per-block scheduler.

What this module adds to an `llvmlite.ir.Module` (once per module, all `internal`, so several CPU
objects can live in one process without symbol clashes, and nothing is mutable global state:
every datum lives in per-call memory, so the runtime may call kernels from many OS threads):

- `__nova_fiber_switch(ptr save_sp, ptr next_sp)`: saves rbp, rbx, r12-r15, MXCSR and the x87
  control word on the current stack, stores rsp into *save_sp, switches to next_sp and restores.
- `__nova_fiber_init(ptr stack_top, ptr fn, ptr arg) -> ptr`: lays out a fresh stack so that the
  first switch to it enters a trampoline that calls fn(arg) (fn must never return). The new fiber
  inherits the caller's MXCSR and x87 control word.
  Both are `naked` functions whose body is inline asm: llvmlite's IR builder has no module-level
  asm, and a naked internal function is the same machine code with a private symbol.
- `__nova_cpu_block_alloc(ptr bctx, i64 nthreads, i64 stack_bytes) -> i32` /
  `__nova_cpu_block_free(ptr bctx)`: per kernel call scratch (thread contexts, stacks,
  warp-exchange slots, warp barrier counters), reused by every block the call runs. The stacks
  are one page-aligned block published in the CpuLaunch (`fiber_stacks`...), so the runtime
  can recognise an overflow into its guard zone and release the block after a fault.
- `__nova_cpu_run_block(ptr bctx) -> i32`: runs all threads of the current block as fibers,
  round-robin, until all exited (0), or a thread failed / barriers diverged / a stack overflowed
  (1, message in launch->error).
- `__nova_cpu_wait(ptr tctx, i32 kind)`: arrive at the block barrier (WAIT_BLOCK) or the warp
  barrier (WAIT_WARP) and switch away; returns once the barrier completed. A fiber that stops
  hands over directly to the next ready fiber of the current pass (one switch per fiber and
  barrier), and to the scheduler only at the end of a pass.
- `__nova_cpu_exit(ptr tctx)` / `__nova_cpu_fail(ptr tctx, ptr message)`: the thread finished /
  failed (trap, failed bounds check: the block stops); both switch away for good.
- `__nova_cpu_assert(ptr tctx, ptr msg, ptr file, i32 line, ptr function, ptr error)`: the thread
  failed a `cf.assert`. As `__assertfail` on CUDA it writes CUDA's report to stderr
  (`FILE:LINE: FUNCTION: block: [x,y,z], thread: [x,y,z] Assertion `MSG` failed.`), and the
  thread ends; the block's other threads run on until they finish or fail too (each failing
  one reports), as the threads of a warp do on the GPU. The first failure's `error` (with its
  block and thread) becomes launch->error, and the block then fails (no further block starts).

Barrier rules (GPU semantics made checkable): a block barrier completes when every thread of the
block waits at one; a warp barrier when every lane of the warp (the last warp of a block may have
fewer than 32) waits at one. A thread that exited never arrives, so if every live thread waits and
no barrier can complete, the block fails with "barrier divergence in block (x,y,z)".

Stack limit: each fiber has `stack_bytes` (default 64 KiB, rounded up to whole pages) of stack,
which must hold the kernel's frame (private arrays, allocas) plus libc calls such as printf
(~several KiB). The stacks lie side by side, fiber 0 lowest, in one malloc block, above a
page-aligned zone of `GUARD_BYTES` made PROT_NONE (mprotect) for the call. An overflow is caught two
ways:
- the bottom `CANARY_BYTES` of every stack hold a pattern checked whenever the fiber switches
  away; a damaged canary (a shallow overflow into the stack below) stops the block with "fiber
  stack overflow" before any other fiber runs on the damaged stack;
- a deep overflow (recursion) runs down through the stacks below it into the guard zone and
  faults there: the fault guard turns it into a KernelFault naming a fiber stack overflow,
  and nothing outside the region (the malloc heap) is ever written.
Per-stack guard pages would need one mprotect per thread and call (~µs each); the single zone
costs two per call (protect, and unprotect before free). A frame larger than the guard zone
could still jump over it; the CPU target rejects, at compile time, kernels whose static private
memory cannot fit (cpu_target.private_bytes), so only huge dynamic allocas can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import llvmlite.binding as llvm_binding
from llvmlite import ir

DEFAULT_STACK_BYTES = 64 * 1024
MIN_STACK_BYTES = 8 * 1024
PAGE_BYTES = 4096
GUARD_BYTES = 64 * 1024
"""No-access zone below the lowest fiber stack (at least one default stack)."""
PROT_NONE = 0
PROT_READ_WRITE = 3
CANARY_BYTES = 64
CANARY_WORD = 0x4E4F56415F535441  # "NOVA_STA"
WARP_SIZE = 32
SLOT_BYTES = 32
"""Each thread owns one 32-byte exchange slot: scalars of up to SCALAR_SLOT_BYTES (warp
shuffles, reductions), or a lane's mma.sync A and B registers (24 bytes, cpu/mma_sync.py)."""
SCALAR_SLOT_BYTES = 8
ERROR_BYTES = 512
OVERFLOW_BASE = 2
"""BlockCtx.FAILED = OVERFLOW_BASE + linear id: that thread's stack canary was damaged."""
DIVERGENCE_FORMAT = ("barrier divergence in block (%lld,%lld,%lld): %lld of %lld threads exited, "
                     "%lld wait at gpu.barrier, the rest at warp operations; no barrier can "
                     "complete")
"""launch->error when no barrier of a block can complete (fibers and barrier regions)."""
STAGGER_LINES = 64
"""Fiber i's stack top sits (i % STAGGER_LINES) cache lines below the end of its stack."""

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


class State(IntEnum):
    """A fiber's scheduling state (ThreadCtx.state)."""

    READY = 0
    WAIT_BLOCK = 1
    WAIT_WARP = 2
    EXITED = 3


class T(IntEnum):
    """Field indices of ThreadCtx, one per GPU thread of a block."""

    BCTX = 0  # ptr: the BlockCtx
    TID_X = 1
    TID_Y = 2
    TID_Z = 3
    LINEAR = 4  # x + y*bx + z*bx*by
    SP = 5  # ptr: saved stack pointer while switched out
    STATE = 6  # i64: State


THREAD_CTX = ir.LiteralStructType([PTR, I64, I64, I64, I64, PTR, I64])


class B(IntEnum):
    """Field indices of BlockCtx, one per kernel call (per calling OS thread)."""

    LAUNCH = 0  # ptr CpuLaunch
    PARAMS = 1  # ptr void** params
    BID_X = 2
    BID_Y = 3
    BID_Z = 4
    NTHREADS = 5
    THREADS = 6  # ptr [nthreads x ThreadCtx]
    SCHED_SP = 7  # ptr: the scheduler's saved stack pointer
    SLOTS = 8  # ptr [nthreads x SLOT_BYTES]
    WORKGROUP = 9  # ptr static workgroup memory of the block
    FAILED = 10  # i64: 0, 1 (message written), or OVERFLOW_BASE + linear id of the thread
    ENTRY = 11  # ptr: void fiber_entry(ptr tctx), noreturn
    STACKS = 12  # ptr
    STACK_BYTES = 13
    N_EXITED = 14
    N_WAIT_BLOCK = 15
    WARP_WAIT = 16  # ptr [nwarps x i64]
    BDIM_X = 17  # launch->block and ->grid, copied here so that the fast path's loads of them
    BDIM_Y = 18  # come from a non-escaping alloca (LLVM then keeps them in registers)
    BDIM_Z = 19
    GDIM_X = 20
    GDIM_Y = 21
    GDIM_Z = 22
    ASSERTED = 23  # i64: 1 once a thread of the block failed a cf.assert (launch->error set)
    FRAME = 24  # ptr: the frame of a region-split kernel (cpu_regions), per call
    UNIFORM_IN = 25  # ptr: its uniform values as the current pass reads them
    UNIFORM_OUT = 26  # ptr: ... and as the pass writes them (copied to UNIFORM_IN after it)


BLOCK_CTX = ir.LiteralStructType([PTR, PTR, I64, I64, I64, I64, PTR, PTR, PTR, PTR, I64, PTR,
                                  PTR, I64, I64, I64, PTR, I64, I64, I64, I64, I64, I64, I64,
                                  PTR, PTR, PTR])

LAUNCH_CTX = ir.LiteralStructType([
    ir.ArrayType(I64, 3), ir.ArrayType(I64, 3), ir.ArrayType(I64, 3), I64, I64, PTR, I64,
    ir.ArrayType(I8, ERROR_BYTES), I64, PTR, I64, I64])
"""nova.abi.CPU_LAUNCH_LLVM."""


class L(IntEnum):
    """Field indices of CpuLaunch."""

    GRID = 0
    BLOCK = 1
    CLUSTER = 2
    BLOCK_BEGIN = 3
    BLOCK_END = 4
    DYNAMIC_SHARED = 5
    DYNAMIC_SHARED_BYTES = 6
    ERROR = 7
    CURRENT_BLOCK = 8
    FIBER_STACKS = 9
    FIBER_STACKS_BYTES = 10
    FIBER_GUARD_BYTES = 11


def _asm(*lines: str) -> str:
    """Join AT&T lines into one LLVM inline-asm string (`$` escaped as `$$`)."""
    return "\\0A".join(line.replace("$", "$$") for line in lines)


SWITCH_ASM = _asm(
    "pushq %rbp", "pushq %rbx", "pushq %r12", "pushq %r13", "pushq %r14", "pushq %r15",
    "subq $16, %rsp", "stmxcsr 8(%rsp)", "fnstcw (%rsp)",
    "movq %rsp, (%rdi)", "movq %rsi, %rsp",
    "ldmxcsr 8(%rsp)", "fldcw (%rsp)", "addq $16, %rsp",
    "popq %r15", "popq %r14", "popq %r13", "popq %r12", "popq %rbx", "popq %rbp",
    "retq",
)
"""rdi = where to save the current rsp, rsi = rsp to resume. Frame (low to high): x87 CW at +0,
MXCSR at +8, r15, r14, r13, r12, rbx, rbp, return address."""

INIT_ASM = _asm(
    "leaq -88(%rdi), %rax",  # stack_top is 16-aligned; trampoline runs with rsp = top-16
    "leaq 1f(%rip), %rcx", "movq %rcx, 64(%rax)",
    "movq $0, 56(%rax)", "movq $0, 48(%rax)",  # rbp, rbx
    "movq %rsi, 40(%rax)", "movq %rdx, 32(%rax)",  # r12 = fn, r13 = arg
    "movq $0, 24(%rax)", "movq $0, 16(%rax)",  # r14, r15
    "stmxcsr 8(%rax)", "fnstcw (%rax)",
    "retq",
    "1:", "movq %r13, %rdi", "callq *%r12", "ud2",
)
"""rdi = stack top (16-aligned), rsi = entry function, rdx = its argument; returns the initial
saved rsp for __nova_fiber_switch. Label 1 is the start trampoline."""


@dataclass(frozen=True)
class FiberRuntime:
    """Handles to the fiber runtime functions defined in one module."""

    switch: ir.Function
    init: ir.Function
    block_alloc: ir.Function
    block_free: ir.Function
    run_block: ir.Function
    wait: ir.Function
    exit: ir.Function
    fail: ir.Function
    assert_fail: ir.Function
    snprintf: ir.Function


def _get_or_declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    existing = module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    return ir.Function(module, fnty, name)


def libc(module: ir.Module, name: str) -> ir.Function:
    """Declare (once) one of the libc functions the CPU object may call."""
    sigs = {
        "malloc": ir.FunctionType(PTR, [I64]),
        "free": ir.FunctionType(VOID, [PTR]),
        "snprintf": ir.FunctionType(I32, [PTR, I64, PTR], var_arg=True),
        "dprintf": ir.FunctionType(I32, [I32, PTR], var_arg=True),
        "printf": ir.FunctionType(I32, [PTR], var_arg=True),
        "fflush": ir.FunctionType(I32, [PTR]),
        "mprotect": ir.FunctionType(I32, [PTR, I64, I32]),
    }
    return _get_or_declare(module, name, sigs[name])


def cstring(module: ir.Module, text: str, prefix: str = "__nova_str") -> ir.Constant:
    """A private NUL-terminated constant string (deduplicated per module); returns its pointer."""
    data = text.encode() + b"\0"
    cache: dict[bytes, ir.GlobalVariable] = module.__dict__.setdefault("_nova_cstrings", {})
    gv = cache.get(data)
    if gv is None:
        ty = ir.ArrayType(I8, len(data))
        gv = ir.GlobalVariable(module, ty, module.get_unique_name(prefix))
        gv.linkage = "private"
        gv.global_constant = True
        gv.unnamed_addr = True
        gv.initializer = ir.Constant(ty, bytearray(data))
        cache[data] = gv
    return gv.bitcast(PTR)


def field(b: ir.IRBuilder, struct: ir.LiteralStructType, base: ir.Value, index: int,
          *more: int) -> ir.Value:
    """Pointer to field `index` (and sub-indices) of the struct at `base`."""
    idx = [I32(0), I32(index), *(I32(i) for i in more)]
    return gep(b, base, idx, struct)


def alloca(b: ir.IRBuilder, ty: ir.Type, name: str = "") -> ir.Value:
    """An alloca whose uses print as opaque `ptr` (llvmlite types it `T*`)."""
    slot = b.alloca(ty, name=name)
    slot.type = PTR
    return slot


def gep(b: ir.IRBuilder, base: ir.Value, indices: list[ir.Value], source: ir.Type,
        inbounds: bool = True) -> ir.Value:
    """getelementptr whose result is an opaque `ptr` whatever llvmlite thinks `base` points to
    (its alloca and globals carry typed pointers, which would make stores of other types fail)."""
    result = b.gep(base, indices, inbounds=inbounds, source_etype=source)
    result.type = PTR
    return result


def load_field(b: ir.IRBuilder, struct: ir.LiteralStructType, base: ir.Value, index: int,
               *more: int) -> ir.Value:
    ptr = field(b, struct, base, index, *more)
    ty = struct.elements[index]
    for _ in more:
        ty = ty.element
    return b.load(ptr, typ=ty)


def store_field(b: ir.IRBuilder, struct: ir.LiteralStructType, base: ir.Value, value: ir.Value,
                index: int, *more: int) -> None:
    b.store(value, field(b, struct, base, index, *more))


def counted_loop(b: ir.IRBuilder, count: ir.Value, body: Callable[[ir.IRBuilder, ir.Value], None],
                 name: str = "loop") -> None:
    """for (i = 0; i < count; ++i) body(b, i); leaves `b` after the loop."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(count.type, name=f"{name}.i")
    i.add_incoming(ir.Constant(count.type, 0), pre)
    b.cbranch(b.icmp_signed("<", i, count), loop, done)
    b.position_at_end(loop)
    body(b, i)
    nxt = b.add(i, ir.Constant(count.type, 1))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def _naked(module: ir.Module, name: str, fnty: ir.FunctionType, asm: str) -> ir.Function:
    fn = ir.Function(module, fnty, name)
    fn.linkage = "internal"
    for attr in ("naked", "noinline", "nounwind"):
        fn.attributes.add(attr)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(ir.InlineAsm(ir.FunctionType(VOID, []), asm, "~{memory}", side_effect=True), [])
    b.unreachable()
    return fn


def _internal(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    fn = ir.Function(module, fnty, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    return fn


def fiber_runtime(module: ir.Module) -> FiberRuntime:
    """Define the fiber runtime in `module` (once; later calls return the same handles)."""
    cached = module.__dict__.get("_nova_fiber_runtime")
    if cached is not None:
        return cached
    # The context switch is inline asm: LLVM aborts the whole process when it emits inline asm
    # without the x86 asm parser, so register it before anyone emits this module.
    llvm_binding.initialize_native_asmparser()
    switch = _naked(module, "__nova_fiber_switch", ir.FunctionType(VOID, [PTR, PTR]), SWITCH_ASM)
    init = _naked(module, "__nova_fiber_init", ir.FunctionType(PTR, [PTR, PTR, PTR]), INIT_ASM)
    snprintf = libc(module, "snprintf")
    rt = FiberRuntime(
        switch=switch,
        init=init,
        block_alloc=_internal(module, "__nova_cpu_block_alloc",
                              ir.FunctionType(I32, [PTR, I64, I64])),
        block_free=_internal(module, "__nova_cpu_block_free", ir.FunctionType(VOID, [PTR])),
        run_block=_internal(module, "__nova_cpu_run_block", ir.FunctionType(I32, [PTR])),
        wait=_internal(module, "__nova_cpu_wait", ir.FunctionType(VOID, [PTR, I32])),
        exit=_internal(module, "__nova_cpu_exit", ir.FunctionType(VOID, [PTR])),
        fail=_internal(module, "__nova_cpu_fail", ir.FunctionType(VOID, [PTR, PTR])),
        assert_fail=_internal(module, "__nova_cpu_assert",
                              ir.FunctionType(VOID, [PTR, PTR, PTR, I32, PTR, PTR])),
        snprintf=snprintf,
    )
    for fn in (rt.exit, rt.fail, rt.assert_fail):
        fn.attributes.add("noreturn")
        fn.attributes.add("noinline")
    rt.wait.attributes.add("noinline")
    _define_block_alloc(module, rt)
    _define_block_free(module, rt)
    _define_wait(module, rt)
    _define_exit(module, rt)
    _define_fail(module, rt)
    _define_assert(module, rt)
    _define_run_block(module, rt)
    module.__dict__["_nova_fiber_runtime"] = rt
    return rt


def _define_block_alloc(module: ir.Module, rt: FiberRuntime) -> None:
    """Allocate thread contexts, stacks, slots and warp counters; set each thread's ids.
    Returns 1 (with launch->error set) when malloc or mprotect fails; block_free then
    releases whatever was allocated."""
    malloc = libc(module, "malloc")
    fn = rt.block_alloc
    bctx, n, requested = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
    null = ir.Constant(PTR, None)
    nwarps = b.udiv(b.add(n, I64(WARP_SIZE - 1)), I64(WARP_SIZE))
    threads = b.call(malloc, [b.mul(n, I64(8 * len(THREAD_CTX.elements)))])
    stack_bytes = b.and_(b.add(requested, I64(PAGE_BYTES - 1)),
                         I64(-PAGE_BYTES & 0xFFFFFFFFFFFFFFFF))
    stacks = _map_stacks(module, b, launch, n, stack_bytes)
    slots = b.call(malloc, [b.mul(n, I64(SLOT_BYTES))])
    warp_wait = b.call(malloc, [b.mul(nwarps, I64(8))])
    for idx, value in ((B.THREADS, threads), (B.STACKS, stacks), (B.SLOTS, slots),
                       (B.WARP_WAIT, warp_wait)):
        store_field(b, BLOCK_CTX, bctx, value, idx)
    store_field(b, BLOCK_CTX, bctx, n, B.NTHREADS)
    store_field(b, BLOCK_CTX, bctx, stack_bytes, B.STACK_BYTES)
    bad = b.or_(b.or_(b.icmp_unsigned("==", threads, null), b.icmp_unsigned("==", stacks, null)),
                b.or_(b.icmp_unsigned("==", slots, null), b.icmp_unsigned("==", warp_wait, null)))
    with b.if_then(bad, likely=False):
        msg = cstring(module, "CPU device: out of memory allocating %lld fiber stacks of %lld "
                              "bytes for one block")
        err = field(b, LAUNCH_CTX, launch, L.ERROR, 0)
        b.call(rt.snprintf, [err, I64(ERROR_BYTES), msg, n, stack_bytes])
        b.ret(I32(1))
    bx = load_field(b, LAUNCH_CTX, launch, L.BLOCK, 0)
    by = load_field(b, LAUNCH_CTX, launch, L.BLOCK, 1)

    def init_thread(b: ir.IRBuilder, i: ir.Value) -> None:
        t = b.gep(threads, [i], inbounds=True, source_etype=THREAD_CTX)
        store_field(b, THREAD_CTX, t, bctx, T.BCTX)
        store_field(b, THREAD_CTX, t, b.urem(i, bx), T.TID_X)
        store_field(b, THREAD_CTX, t, b.urem(b.udiv(i, bx), by), T.TID_Y)
        store_field(b, THREAD_CTX, t, b.udiv(i, b.mul(bx, by)), T.TID_Z)
        store_field(b, THREAD_CTX, t, i, T.LINEAR)

    counted_loop(b, n, init_thread, "init")
    b.ret(I32(0))


def _map_stacks(module: ir.Module, b: ir.IRBuilder, launch: ir.Value, n: ir.Value,
                stack_bytes: ir.Value) -> ir.Value:
    """Page-aligned malloc memory for the guard zone plus `n` stacks of `stack_bytes` (a page
    multiple); make the zone PROT_NONE and publish it in launch->fiber_stacks*. Returns the
    lowest stack's bottom, or null (nothing allocated, nothing published) on failure.

    Plain malloc, aligned by hand, with the raw pointer in the 8 bytes below the zone (for
    free): glibc hands the same warm pages back call after call, where a fresh mmap (or
    aligned_alloc, which mmaps large blocks every time) page-faults every stack again (~15x
    slower small barrier kernels)."""
    null = ir.Constant(PTR, None)
    total = b.add(b.mul(n, stack_bytes), I64(GUARD_BYTES))
    store_field(b, LAUNCH_CTX, launch, null, L.FIBER_STACKS)
    store_field(b, LAUNCH_CTX, launch, I64(0), L.FIBER_STACKS_BYTES)
    store_field(b, LAUNCH_CTX, launch, I64(0), L.FIBER_GUARD_BYTES)
    raw = b.call(libc(module, "malloc"), [b.add(total, I64(PAGE_BYTES + 8))])
    result = alloca(b, PTR, name="stacks")
    b.store(null, result)
    with b.if_then(b.icmp_unsigned("!=", raw, null), likely=True):
        offset = b.and_(b.sub(I64(0), b.add(b.ptrtoint(raw, I64), I64(8))), I64(PAGE_BYTES - 1))
        zone = gep(b, raw, [b.add(offset, I64(8))], I8)  # page-aligned, >= raw + 8
        b.store(raw, gep(b, zone, [I64(-1)], I64))
        guarded = b.call(libc(module, "mprotect"), [zone, I64(GUARD_BYTES), I32(PROT_NONE)])
        with b.if_else(b.icmp_signed("==", guarded, I32(0)), likely=True) as (ok, failed):
            with ok:
                store_field(b, LAUNCH_CTX, launch, zone, L.FIBER_STACKS)
                store_field(b, LAUNCH_CTX, launch, total, L.FIBER_STACKS_BYTES)
                store_field(b, LAUNCH_CTX, launch, I64(GUARD_BYTES), L.FIBER_GUARD_BYTES)
                b.store(gep(b, zone, [I64(GUARD_BYTES)], I8), result)
            with failed:
                b.call(libc(module, "free"), [raw])
    return b.load(result, typ=PTR)


def _define_block_free(module: ir.Module, rt: FiberRuntime) -> None:
    """Free the per-call scratch, and the stacks once their guard zone is accessible again
    (unpublishing them)."""
    free = libc(module, "free")
    fn = rt.block_free
    (bctx,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    for idx in (B.THREADS, B.SLOTS, B.WARP_WAIT):
        b.call(free, [load_field(b, BLOCK_CTX, bctx, idx)])
    launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
    region = load_field(b, LAUNCH_CTX, launch, L.FIBER_STACKS)
    with b.if_then(b.icmp_unsigned("!=", region, ir.Constant(PTR, None))):
        b.call(libc(module, "mprotect"), [region, I64(GUARD_BYTES), I32(PROT_READ_WRITE)])
        b.call(libc(module, "free"), [b.load(gep(b, region, [I64(-1)], I64), typ=PTR)])
        store_field(b, LAUNCH_CTX, launch, ir.Constant(PTR, None), L.FIBER_STACKS)
        store_field(b, LAUNCH_CTX, launch, I64(0), L.FIBER_STACKS_BYTES)
    b.ret_void()


def _define_wait(module: ir.Module, rt: FiberRuntime) -> None:
    fn = rt.wait
    tctx, kind = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    store_field(b, THREAD_CTX, tctx, b.zext(kind, I64), T.STATE)
    is_block = b.icmp_unsigned("==", kind, I32(State.WAIT_BLOCK))
    with b.if_else(is_block) as (then, otherwise):
        with then:
            ptr = field(b, BLOCK_CTX, bctx, B.N_WAIT_BLOCK)
            b.store(b.add(b.load(ptr, typ=I64), I64(1)), ptr)
        with otherwise:
            warp = b.udiv(load_field(b, THREAD_CTX, tctx, T.LINEAR), I64(WARP_SIZE))
            ptr = b.gep(load_field(b, BLOCK_CTX, bctx, B.WARP_WAIT), [warp], source_etype=I64)
            b.store(b.add(b.load(ptr, typ=I64), I64(1)), ptr)
    _switch_onward(module, b, rt, tctx, bctx)
    b.ret_void()


def _switch_to_scheduler(b: ir.IRBuilder, rt: FiberRuntime, tctx: ir.Value,
                         bctx: ir.Value) -> None:
    sched_sp = load_field(b, BLOCK_CTX, bctx, B.SCHED_SP)
    b.call(rt.switch, [field(b, THREAD_CTX, tctx, T.SP), sched_sp])


def _canary(b: ir.IRBuilder, bctx: ir.Value, linear: ir.Value) -> ir.Value:
    """Bottom of fiber `linear`'s stack (the canary), see _map_stacks's layout."""
    stacks = load_field(b, BLOCK_CTX, bctx, B.STACKS)
    stack_bytes = load_field(b, BLOCK_CTX, bctx, B.STACK_BYTES)
    return b.gep(stacks, [b.mul(linear, stack_bytes)], source_etype=I8)


def _canary_intact(b: ir.IRBuilder, bottom: ir.Value) -> ir.Value:
    intact = I1(1)
    for w in (0, CANARY_BYTES // 8 - 1):  # both ends: cheap, and any overflow of the stack
        # crosses the whole canary (frames are contiguous and grow down)
        word = b.load(b.gep(bottom, [I64(w)], source_etype=I64), typ=I64)
        intact = b.and_(intact, b.icmp_unsigned("==", word, I64(CANARY_WORD)))
    return intact


def _switch_onward(module: ir.Module, b: ir.IRBuilder, rt: FiberRuntime, tctx: ir.Value,
                   bctx: ir.Value) -> None:
    """Leave the current fiber: check its stack canary (a damaged one fails the block), then
    hand over directly to the next ready fiber of this pass, or to the scheduler when there is
    none (one switch per fiber and barrier instead of two)."""
    linear = load_field(b, THREAD_CTX, tctx, T.LINEAR)
    with b.if_then(b.not_(_canary_intact(b, _canary(b, bctx, linear))), likely=False):
        # no snprintf here: this stack is exhausted (printf wants KiBs); the scheduler writes
        # the message on the thread's own stack (FAILED = OVERFLOW_BASE + linear id)
        store_field(b, BLOCK_CTX, bctx, b.add(linear, I64(OVERFLOW_BASE)), B.FAILED)
        _switch_to_scheduler(b, rt, tctx, bctx)
        b.unreachable()
    n = load_field(b, BLOCK_CTX, bctx, B.NTHREADS)
    threads = load_field(b, BLOCK_CTX, bctx, B.THREADS)
    fn = b.function
    head = fn.append_basic_block("next.head")
    check = fn.append_basic_block("next.check")
    found = fn.append_basic_block("next.found")
    none = fn.append_basic_block("next.none")
    done = fn.append_basic_block("next.done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(linear, pre)
    nxt = b.add(j, I64(1))
    b.cbranch(b.icmp_unsigned("<", nxt, n), check, none)
    b.position_at_end(check)
    other = b.gep(threads, [nxt], inbounds=True, source_etype=THREAD_CTX)
    ready = b.icmp_unsigned("==", load_field(b, THREAD_CTX, other, T.STATE), I64(State.READY))
    j.add_incoming(nxt, check)
    b.cbranch(ready, found, head)
    b.position_at_end(found)
    b.call(rt.switch, [field(b, THREAD_CTX, tctx, T.SP), load_field(b, THREAD_CTX, other, T.SP)])
    b.branch(done)
    b.position_at_end(none)
    _switch_to_scheduler(b, rt, tctx, bctx)
    b.branch(done)
    b.position_at_end(done)


def _define_exit(module: ir.Module, rt: FiberRuntime) -> None:
    fn = rt.exit
    (tctx,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    store_field(b, THREAD_CTX, tctx, I64(State.EXITED), T.STATE)
    ptr = field(b, BLOCK_CTX, bctx, B.N_EXITED)
    b.store(b.add(b.load(ptr, typ=I64), I64(1)), ptr)
    _switch_onward(module, b, rt, tctx, bctx)
    b.unreachable()


def _ids(b: ir.IRBuilder, bctx: ir.Value, tctx: ir.Value | None) -> list[ir.Value]:
    ids = [load_field(b, BLOCK_CTX, bctx, f) for f in (B.BID_X, B.BID_Y, B.BID_Z)]
    if tctx is not None:
        ids += [load_field(b, THREAD_CTX, tctx, f) for f in (T.TID_X, T.TID_Y, T.TID_Z)]
    return ids


def _define_fail(module: ir.Module, rt: FiberRuntime) -> None:
    """Record `message` with the block and thread ids in launch->error, then stop the block."""
    fn = rt.fail
    tctx, message = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
    fmt = cstring(module, "%s in block (%lld,%lld,%lld), thread (%lld,%lld,%lld)")
    err = field(b, LAUNCH_CTX, launch, L.ERROR, 0)
    asserted = load_field(b, BLOCK_CTX, bctx, B.ASSERTED)
    with b.if_then(b.icmp_unsigned("==", asserted, I64(0))):  # else keep the assert's error
        b.call(rt.snprintf, [err, I64(ERROR_BYTES), fmt, message, *_ids(b, bctx, tctx)])
    store_field(b, BLOCK_CTX, bctx, I64(1), B.FAILED)
    store_field(b, THREAD_CTX, tctx, I64(State.EXITED), T.STATE)
    _switch_to_scheduler(b, rt, tctx, bctx)
    b.unreachable()


ASSERT_REPORT = ("%s:%d: %s: block: [%lld,%lld,%lld], thread: [%lld,%lld,%lld] Assertion `%s` "
                 "failed.\n")
"""CUDA's device-assert report (what `__assertfail` prints), file:line: function: ids, message."""
STDERR_FD = 2


def _define_assert(module: ir.Module, rt: FiberRuntime) -> None:
    """A failed cf.assert: report it on stderr as CUDA does, record the block's first failure,
    and end the thread as `exit` does (the others run on; the scheduler fails the block)."""
    fn = rt.assert_fail
    tctx, message, file, line, function, error = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    ids = _ids(b, bctx, tctx)
    b.call(libc(module, "fflush"), [ir.Constant(PTR, None)])  # the thread's printf output first
    b.call(libc(module, "dprintf"), [I32(STDERR_FD), cstring(module, ASSERT_REPORT), file, line,
                                     function, *ids, message])
    asserted = field(b, BLOCK_CTX, bctx, B.ASSERTED)
    with b.if_then(b.icmp_unsigned("==", b.load(asserted, typ=I64), I64(0))):
        launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
        fmt = cstring(module, "%s in block (%lld,%lld,%lld), thread (%lld,%lld,%lld)")
        err = field(b, LAUNCH_CTX, launch, L.ERROR, 0)
        b.call(rt.snprintf, [err, I64(ERROR_BYTES), fmt, error, *ids])
        b.store(I64(1), asserted)
    b.call(rt.exit, [tctx])
    b.unreachable()


def _report_overflow(module: ir.Module, b: ir.IRBuilder, rt: FiberRuntime, bctx: ir.Value,
                     tctx: ir.Value) -> None:
    """launch->error = the fiber stack overflow message for thread `tctx` (a damaged canary)."""
    launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
    fmt = cstring(module, "fiber stack overflow in block (%lld,%lld,%lld), thread "
                          "(%lld,%lld,%lld): a GPU thread used more than its %lld bytes of "
                          "CPU-device stack (large private arrays or allocas, deep recursion); "
                          "raise the CPU fiber stack size (NOVA_CPU_STACK_KIB)")
    b.call(rt.snprintf, [field(b, LAUNCH_CTX, launch, L.ERROR, 0), I64(ERROR_BYTES), fmt,
                         *_ids(b, bctx, tctx), load_field(b, BLOCK_CTX, bctx, B.STACK_BYTES)])


def _define_run_block(module: ir.Module, rt: FiberRuntime) -> None:
    """The scheduler: start every thread as a fiber, then run passes over the fibers (each ready
    fiber runs until it waits, exits or fails) and complete barriers between passes."""
    fn = rt.run_block
    (bctx,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    launch = load_field(b, BLOCK_CTX, bctx, B.LAUNCH)
    err = field(b, LAUNCH_CTX, launch, L.ERROR, 0)
    n = load_field(b, BLOCK_CTX, bctx, B.NTHREADS)
    threads = load_field(b, BLOCK_CTX, bctx, B.THREADS)
    stacks = load_field(b, BLOCK_CTX, bctx, B.STACKS)
    stack_bytes = load_field(b, BLOCK_CTX, bctx, B.STACK_BYTES)
    entry_fn = load_field(b, BLOCK_CTX, bctx, B.ENTRY)
    warp_wait = load_field(b, BLOCK_CTX, bctx, B.WARP_WAIT)
    nwarps = b.udiv(b.add(n, I64(WARP_SIZE - 1)), I64(WARP_SIZE))
    sched_sp = field(b, BLOCK_CTX, bctx, B.SCHED_SP)
    released = alloca(b, I1, name="released")
    for f in (B.FAILED, B.N_EXITED, B.N_WAIT_BLOCK, B.ASSERTED):
        store_field(b, BLOCK_CTX, bctx, I64(0), f)

    def thread(b: ir.IRBuilder, i: ir.Value) -> ir.Value:
        return b.gep(threads, [i], inbounds=True, source_etype=THREAD_CTX)

    def canary_ptr(b: ir.IRBuilder, i: ir.Value) -> ir.Value:
        return b.gep(stacks, [b.mul(i, stack_bytes)], source_etype=I8)

    def start(b: ir.IRBuilder, i: ir.Value) -> None:
        t = thread(b, i)
        store_field(b, THREAD_CTX, t, I64(State.READY), T.STATE)
        bottom = canary_ptr(b, i)
        for w in range(CANARY_BYTES // 8):
            b.store(I64(CANARY_WORD), b.gep(bottom, [I64(w)], source_etype=I64))
        # stagger the tops by whole cache lines: stacks a power of two apart would otherwise
        # map their hot frames onto the same L1 sets and thrash at every switch
        stagger = b.mul(b.and_(i, I64(STAGGER_LINES - 1)), I64(64))
        top = b.gep(bottom, [b.sub(stack_bytes, stagger)], source_etype=I8)
        top_int = b.and_(b.ptrtoint(top, I64), I64(~15 & 0xFFFFFFFFFFFFFFFF))
        sp = b.call(rt.init, [b.inttoptr(top_int, PTR), entry_fn, t])
        store_field(b, THREAD_CTX, t, sp, T.SP)

    def zero_warp(b: ir.IRBuilder, w: ir.Value) -> None:
        b.store(I64(0), b.gep(warp_wait, [w], source_etype=I64))

    counted_loop(b, nwarps, zero_warp, "zero")
    counted_loop(b, n, start, "start")

    sched = b.append_basic_block("sched")
    b.branch(sched)
    b.position_at_end(sched)

    def run_one(b: ir.IRBuilder, i: ir.Value) -> None:
        t = thread(b, i)
        ready = b.icmp_unsigned("==", load_field(b, THREAD_CTX, t, T.STATE), I64(State.READY))
        with b.if_then(ready):
            b.call(rt.switch, [sched_sp, load_field(b, THREAD_CTX, t, T.SP)])
            failed = load_field(b, BLOCK_CTX, bctx, B.FAILED)
            with b.if_then(b.icmp_unsigned("!=", failed, I64(0)), likely=False):
                with b.if_then(b.icmp_unsigned(">=", failed, I64(OVERFLOW_BASE))):
                    _report_overflow(module, b, rt, bctx,
                                     thread(b, b.sub(failed, I64(OVERFLOW_BASE))))
                b.ret(I32(1))
    counted_loop(b, n, run_one, "pass")
    n_exited = load_field(b, BLOCK_CTX, bctx, B.N_EXITED)
    done = b.icmp_unsigned("==", n_exited, n)
    asserted = b.icmp_unsigned("!=", load_field(b, BLOCK_CTX, bctx, B.ASSERTED), I64(0))
    with b.if_then(done):
        b.ret(b.zext(asserted, I32))
    b.store(I1(0), released)
    n_wait_block = load_field(b, BLOCK_CTX, bctx, B.N_WAIT_BLOCK)
    with b.if_then(b.icmp_unsigned("==", n_wait_block, n)):
        def release_all(b: ir.IRBuilder, i: ir.Value) -> None:
            store_field(b, THREAD_CTX, thread(b, i), I64(State.READY), T.STATE)

        counted_loop(b, n, release_all, "relblock")
        store_field(b, BLOCK_CTX, bctx, I64(0), B.N_WAIT_BLOCK)
        b.store(I1(1), released)

    def check_warp(b: ir.IRBuilder, w: ir.Value) -> None:
        first = b.mul(w, I64(WARP_SIZE))
        remaining = b.sub(n, first)
        full = b.icmp_unsigned("<", remaining, I64(WARP_SIZE))
        lanes = b.select(full, remaining, I64(WARP_SIZE))
        counter = b.gep(warp_wait, [w], source_etype=I64)
        with b.if_then(b.icmp_unsigned("==", b.load(counter, typ=I64), lanes)):
            def release_lane(b: ir.IRBuilder, lane: ir.Value) -> None:
                t = thread(b, b.add(first, lane))
                store_field(b, THREAD_CTX, t, I64(State.READY), T.STATE)

            counted_loop(b, lanes, release_lane, "rellane")
            b.store(I64(0), counter)
            b.store(I1(1), released)

    counted_loop(b, nwarps, check_warp, "warps")
    with b.if_then(b.load(released, typ=I1), likely=True):
        b.branch(sched)
    with b.if_then(asserted):  # the threads that failed an assert never reach the barrier
        b.ret(I32(1))
    fmt = cstring(module, DIVERGENCE_FORMAT)
    b.call(rt.snprintf, [err, I64(ERROR_BYTES), fmt, *_ids(b, bctx, None), n_exited, n,
                         n_wait_block])
    b.ret(I32(1))
