"""Barrier region splitting: a CPU-device kernel with block barriers as resumable regions.

Why: running every GPU thread of a block as a fiber costs a context switch per thread and
barrier (~9.4 million switches for a 2^20-element tree reduction) and hides the threads from the
vectoriser. Work-group compilers for CPUs (pocl's "loop fission around barriers", Intel's OpenCL
CPU runtime) instead cut a kernel at its barriers into regions and run each region for all
threads of the block in a plain loop. This module does that cut on the kernel body's LLVM IR
(after the emitter has flattened scf/cf into basic blocks, so structured and unstructured
control flow, Python kernels and MLIR alike, are handled the same way). See docs/cpu-device.md.

`split_at_barriers(body, wait)` rewrites the body function `void body(ptr tctx, params...)` in
place into a *resumable* function:

- every block barrier (`call @__nova_cpu_wait(tctx, WAIT_BLOCK)`) ends its basic block; what
  followed it moves to a new continuation block `barrier<k>.cont`;
- the body reads ThreadCtx.state on entry and jumps to the start (0) or continuation k (k + 1);
  at barrier k it saves its live values, writes state k + 1 and returns; at its end it writes
  `exit_state` (= number of barriers + 1) and returns;
- a value live across any barrier (live at the start of a continuation) is demoted to an alloca
  (stored after its definition, loaded before each use: LLVM's SROA rebuilds SSA form from it),
  and at a barrier the values live into that continuation are copied from their allocas into
  the thread's slots of the per-block *frame*; the continuation copies them back. The frame is
  structure-of-arrays: value v of thread t lives at `frame + offset_v * nthreads + t * size_v`,
  so a loop over threads touches consecutive slots (vectorisable).

The kernel entry (cpu target) then runs a block as passes: each pass calls the body once per
thread, in thread order, from the thread's state; when every thread is in the same state the
pass is a loop whose body is the one region inlined with a constant state. That is exactly the
order in which the fiber scheduler runs threads (each thread until it waits, in order), so
results, printf order and the barrier-divergence error stay as they were.

`split_at_barriers` returns None when the kernel needs fibers after all: an alloca in the body
(private memory would not survive a return at a barrier), a warp barrier, or a live value of a
type the frame cannot hold (aggregates).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

from llvmlite import ir

from nova.backends.cpu import fibers as cf
from nova.backends.cpu import uniformity
from nova.backends.cpu.fibers import BLOCK_CTX, I64, THREAD_CTX, B, State, T, load_field

FRAME_ALIGN = 64
"""Alignment of the frame and of each value's array in it (a cache line)."""
MAX_PRIVATE_BYTES = 1024
"""Private memory (allocas) per thread up to which a kernel is split: it is copied to the frame
at every barrier and back after it; kernels with more keep fibers."""


@dataclass(frozen=True)
class SplitKernel:
    """A body rewritten by `split_at_barriers`: its states are 0 (start), k + 1 (after barrier
    k) and `exit_state`; each thread needs `frame_bytes` bytes of frame."""

    barriers: int
    frame_bytes: int
    uniform_bytes: int = 0
    """Bytes of the values all threads share (saved once, read through BlockCtx.uniform_in)."""
    uniform_passes: bool = False
    """No barrier lies in divergent code (nova.backends.cpu.uniformity): every pass ends with
    all threads in one state, so a pass need not record each thread's."""

    @property
    def exit_state(self) -> int:
        return self.barriers + 1


def _is_call_to(instr: ir.Instruction, fn: ir.Function) -> bool:
    return isinstance(instr, ir.CallInstr) and instr.callee is fn


def successors(block: ir.Block) -> list[ir.Block]:
    term = block.terminator
    if term is None:
        return []
    found = [op for op in term.operands if isinstance(op, ir.Block)]
    if isinstance(term, ir.SwitchInstr):
        found = [term.default, *(blk for _, blk in term.cases)]
    return found


def _phis(block: ir.Block) -> list[ir.PhiInstr]:
    return [i for i in block.instructions if isinstance(i, ir.PhiInstr)]


def slot_size(ty: ir.Type) -> int | None:
    """Bytes of one frame slot for a value of type `ty` (a power of two), or None (aggregates
    and anything else the frame does not hold)."""
    if isinstance(ty, ir.IntType):
        size = max(1, (ty.width + 7) // 8)
    elif isinstance(ty, ir.PointerType):
        size = 8
    elif isinstance(ty, ir.VectorType):
        elem = slot_size(ty.element)
        if elem is None:
            return None
        size = elem * ty.count
    else:
        size = {"half": 2, "bfloat": 2, "float": 4, "double": 8}.get(str(ty), 0)
        if not size:
            return None
    return 1 << (size - 1).bit_length()


def type_bytes(ty: ir.Type) -> int | None:
    """Bytes of private memory of type `ty` (scalars, vectors and arrays of them), or None."""
    if isinstance(ty, ir.ArrayType):
        elem = type_bytes(ty.element)
        return None if elem is None else elem * ty.count
    return slot_size(ty)


def _private(instr: ir.Instruction) -> int | None:
    """Bytes of a static alloca (constant count), or None."""
    size = type_bytes(instr.allocated_type)
    count = instr.operands[0] if instr.operands else ir.Constant(I64, 1)
    if size is None or not isinstance(count, ir.Constant):
        return None
    return size * int(count.constant)


def _eligible(body: ir.Function, wait: ir.Function,
              ) -> tuple[list[ir.CallInstr], list[ir.AllocaInstr]] | None:
    """The block barriers and the private memory (static allocas of the entry block) of
    `body`, or None when it cannot be split (see the module docstring)."""
    barriers = []
    allocas = []
    for block in body.blocks:
        for instr in block.instructions:
            if instr.opname == "alloca":
                size = _private(instr)
                if block is not body.blocks[0] or size is None or size > MAX_PRIVATE_BYTES:
                    return None
                allocas.append(instr)
            if _is_call_to(instr, wait):
                kind = instr.args[1]
                if not (isinstance(kind, ir.Constant) and kind.constant == State.WAIT_BLOCK):
                    return None
                barriers.append(instr)
    return barriers, allocas


def _split_block(body: ir.Function, barrier: ir.CallInstr, k: int) -> ir.Block:
    """Cut the barrier's block after the call (the call is dropped, the block ends with a
    branch to the new continuation block, which takes the rest and the terminator)."""
    block = barrier.parent
    i = block.instructions.index(barrier)
    cont = body.append_basic_block(f"barrier{k}.cont")
    rest = block.instructions[i + 1:]
    del block.instructions[i:]
    cont.instructions = rest
    for instr in rest:
        instr.parent = cont
    cont.terminator, block.terminator = block.terminator, None
    for succ in successors(cont):
        for phi in _phis(succ):
            phi.incomings = [(v, cont if blk is block else blk) for v, blk in phi.incomings]
    ir.IRBuilder(block).branch(cont)
    return cont


def liveness(blocks: list[ir.Block]) -> dict[ir.Block, set[ir.Instruction]]:
    """Live-in instruction values of every block (phi operands count as used at the end of
    their incoming block)."""
    defs: dict[ir.Block, set[ir.Instruction]] = {}
    upward: dict[ir.Block, set[ir.Instruction]] = {}
    edge_uses: dict[ir.Block, set[ir.Instruction]] = {b: set() for b in blocks}
    for block in blocks:
        d: set[ir.Instruction] = set()
        u: set[ir.Instruction] = set()
        for instr in block.instructions:
            if isinstance(instr, ir.PhiInstr):
                for value, pred in instr.incomings:
                    if isinstance(value, ir.Instruction) and pred in edge_uses:
                        edge_uses[pred].add(value)
            else:
                u.update(op for op in instr.operands
                         if isinstance(op, ir.Instruction) and op not in d)
            d.add(instr)
        defs[block], upward[block] = d, u
    live_in: dict[ir.Block, set[ir.Instruction]] = {b: set(upward[b]) for b in blocks}
    succs = {b: successors(b) for b in blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(blocks):
            out = set(edge_uses[block])
            for s in succs[block]:
                out |= live_in[s]
            new = upward[block] | (out - defs[block])
            if new != live_in[block]:
                live_in[block] = new
                changed = True
    return live_in


@dataclass
class _Frame:
    """The body's view of the frame: each demoted value's alloca and its frame slot."""

    allocas: dict[ir.Instruction, ir.Value]
    slots: dict[ir.Instruction, tuple[ir.Value, ir.Value, int]]
    """Saved value -> (where a continuation reads it, where a barrier writes it, alignment):
    the thread's frame slot twice, or for a uniform value its place in uniform_in/_out."""
    private: list[tuple[ir.Value, ir.Value, ir.Value, int]]
    """The body's own allocas (private memory): (alloca, read, write, bytes), copied whole."""
    uniform_bytes: int = 0


def _layout(entry_builder: ir.IRBuilder, tctx: ir.Value, values: Iterable[ir.Instruction],
            saved: set[ir.Instruction], kept: list[ir.AllocaInstr],
            shared: set[ir.Instruction]) -> tuple[_Frame, int]:
    """Allocas (in the entry block) for `values`, read/write slot pointers for those `saved`
    and for the body's own allocas `kept` (in uniform_in/_out for those in `shared`, else in
    the thread's frame slots); the frame bytes per thread."""
    b = entry_builder
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    frame = load_field(b, BLOCK_CTX, bctx, B.FRAME)
    n = load_field(b, BLOCK_CTX, bctx, B.NTHREADS)
    linear = load_field(b, THREAD_CTX, tctx, T.LINEAR)
    uniform_in = load_field(b, BLOCK_CTX, bctx, B.UNIFORM_IN)
    uniform_out = load_field(b, BLOCK_CTX, bctx, B.UNIFORM_OUT)
    allocas: dict[ir.Instruction, ir.Value] = {}
    slots: dict[ir.Instruction, tuple[ir.Value, ir.Value, int]] = {}
    private: list[tuple[ir.Value, ir.Value, ir.Value, int]] = []
    offset = 0
    uniform = 0

    def slot(v: ir.Instruction, size: int) -> tuple[ir.Value, ir.Value]:
        nonlocal offset, uniform
        if v in shared:
            where = I64(uniform)
            uniform += -(-size // 16) * 16
            return (cf.gep(b, uniform_in, [where], cf.I8), cf.gep(b, uniform_out, [where], cf.I8))
        where = b.add(b.mul(n, I64(offset)), b.mul(linear, I64(size)))
        offset += -(-size // FRAME_ALIGN) * FRAME_ALIGN
        ptr = cf.gep(b, frame, [where], cf.I8)
        return ptr, ptr

    for value in values:
        allocas[value] = cf.alloca(b, value.type, name="demoted")
        if value in saved:
            size = slot_size(value.type)
            assert size is not None
            slots[value] = (*slot(value, size), min(size, 16))
    for alloca in kept:
        size = _private(alloca)
        assert size is not None
        size = -(-size // 8) * 8
        private.append((alloca, *slot(alloca, size), size))
    return _Frame(allocas, slots, private, uniform), offset


def _demote(value: ir.Instruction, slot: ir.Value, users: list[ir.Instruction]) -> None:
    """Store `value` into its alloca after its definition; load it before every use."""
    block = value.parent
    b = ir.IRBuilder(block)
    if isinstance(value, ir.PhiInstr):
        b.position_before(next(i for i in block.instructions if not isinstance(i, ir.PhiInstr)))
    else:
        b.position_before(block.instructions[block.instructions.index(value) + 1])
    b.store(value, slot)
    for user in users:
        if isinstance(user, ir.PhiInstr):
            new = []
            for v, pred in user.incomings:
                if v is value:
                    b.position_before(pred.terminator)
                    v = b.load(slot, typ=value.type)
                new.append((v, pred))
            user.incomings = new
        else:
            b.position_before(user)
            replace_use(user, value, b.load(slot, typ=value.type))


def replace_use(user: ir.Instruction, old: ir.Value, new: ir.Value) -> None:
    """`user.replace_usage`, also for the fields that llvmlite's getelementptr, extractvalue
    and insertvalue print from instead of their operand list."""
    user.replace_usage(old, new)
    for name in ("pointer", "aggregate", "value"):
        if name in user.__dict__ and user.__dict__[name] is old:
            user.__dict__[name] = new
    if isinstance(user, ir.GEPInstr):
        user.indices = [new if i is old else i for i in user.indices]


def _users(body: ir.Function, values: set[ir.Instruction]) -> dict[ir.Instruction,
                                                                    list[ir.Instruction]]:
    found: dict[ir.Instruction, list[ir.Instruction]] = {v: [] for v in values}
    for block in body.blocks:
        for instr in block.instructions:
            used = ([v for v, _ in instr.incomings] if isinstance(instr, ir.PhiInstr)
                    else instr.operands)
            for v in {id(u): u for u in used if isinstance(u, ir.Instruction)}.values():
                if v in found:
                    found[v].append(instr)
    return found


_PURE = frozenset({
    "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "icmp", "select",
    "bitcast", "ptrtoint", "inttoptr", "zext", "sext", "trunc", "getelementptr"})
"""Opcodes of instructions that a continuation may recompute instead of saving their value."""
_CONTEXTS = (THREAD_CTX, BLOCK_CTX, cf.LAUNCH_CTX)


def _context_field(ptr: ir.Value) -> bool:
    """A field of the thread, block or launch context that stays the same while a block runs
    (everything but ThreadCtx.state, which the resumable body itself writes)."""
    if not (isinstance(ptr, ir.GEPInstr) and ptr.source_etype in _CONTEXTS):
        return False
    if not all(isinstance(i, ir.Constant) for i in ptr.indices):
        return False
    return not (ptr.source_etype is THREAD_CTX and ptr.indices[1].constant == T.STATE)


class _Remat:
    """Which saved values are cheap pure functions of the kernel's arguments and its contexts
    (ids, block sizes, workgroup and parameter pointers, memref descriptors): a continuation
    recomputes those (`clone`) instead of keeping a per-thread copy in the frame."""

    def __init__(self, entry: ir.Block) -> None:
        self.entry = entry
        self.memo: dict[ir.Instruction, bool] = {}

    def available(self, v: ir.Value) -> bool:
        if not isinstance(v, ir.Instruction):
            return not isinstance(v, ir.Block)
        return v.parent is self.entry or self(v)

    def __call__(self, v: ir.Instruction) -> bool:
        if v not in self.memo:
            self.memo[v] = False  # cycles (through phis) are not recomputable
            if isinstance(v, ir.LoadInstr):
                ptr = v.operands[0]
                ok = _context_field(ptr) and self.available(ptr.pointer)
            else:
                ok = v.opname in _PURE and all(self.available(o) for o in v.operands)
            self.memo[v] = ok
        return self.memo[v]

    def clone(self, b: ir.IRBuilder, v: ir.Value, done: dict[ir.Value, ir.Value]) -> ir.Value:
        """Emit a copy of `v`'s computation at `b` (operands first); `done` maps the values
        already copied at this position."""
        if not isinstance(v, ir.Instruction) or v.parent is self.entry:
            return v
        if v in done:
            return done[v]
        operands = [self.clone(b, o, done) for o in v.operands]
        c = copy.copy(v)
        c.parent = b.block
        c.operands = operands
        c.metadata = dict(v.metadata)
        if isinstance(c, ir.GEPInstr):
            c.pointer, c.indices = operands[0], operands[1:]
        for cached in ("_StrCaching__cached_str", "_StringReferenceCaching__cached_refstr"):
            c.__dict__.pop(cached, None)
        c._set_name("remat")
        b._insert(c)
        done[v] = c
        return c


def _copy(b: ir.IRBuilder, values: set[ir.Instruction], frame: _Frame, to_frame: bool) -> None:
    for alloca, read, write, size in frame.private:
        ty = alloca.allocated_type
        src, dst = (alloca, write) if to_frame else (read, alloca)
        single = not alloca.operands or alloca.operands[0].constant == 1
        if single and slot_size(ty) is not None:  # a scalar: SROA keeps it in a register
            b.store(b.load(src, typ=ty, align=8), dst, align=8)
        else:
            b.call(memcpy(b.module), [dst, src, I64(size), ir.Constant(ir.IntType(1), 0)])
    for v in frame.slots:  # the layout's order: deterministic output
        if v not in values:
            continue
        read, write, align = frame.slots[v]
        if to_frame:
            b.store(b.load(frame.allocas[v], typ=v.type), write, align=align)
        else:
            b.store(b.load(read, typ=v.type, align=align), frame.allocas[v])


def memcpy(module: ir.Module) -> ir.Function:
    name = "llvm.memcpy.p0.p0.i64"
    found = module.globals.get(name)
    if isinstance(found, ir.Function):
        return found
    return ir.Function(module, ir.FunctionType(cf.VOID, [cf.PTR, cf.PTR, I64, ir.IntType(1)]),
                       name)


def _join_block(barrier: ir.CallInstr, block: ir.Block, cont: ir.Block) -> None:
    """Undo `_split_block` (the body stays as the emitter made it)."""
    del block.instructions[-1]
    block.instructions.append(barrier)
    for instr in cont.instructions:
        instr.parent = block
    block.instructions += cont.instructions
    block.terminator = cont.terminator
    for succ in successors(cont):
        for phi in _phis(succ):
            phi.incomings = [(v, block if blk is cont else blk) for v, blk in phi.incomings]
    body = block.parent
    body.blocks.remove(cont)


def split_at_barriers(body: ir.Function, wait: ir.Function) -> SplitKernel | None:
    """Rewrite `body` into a resumable function (see the module docstring), or return None and
    leave it untouched when it cannot be split."""
    found = _eligible(body, wait)
    if found is None:
        return None
    barriers, kept = found
    entry = body.blocks[0]
    conts = [_split_block(body, barrier, k) for k, barrier in enumerate(barriers)]
    blocks = list(body.blocks)
    live = liveness(blocks)
    demoted: set[ir.Instruction] = set()
    for cont in conts:
        demoted |= live[cont]
    # the entry block (allocas) runs again on every resume: its values need no saving
    demoted = {v for v in demoted if v.parent is not entry}
    for cont in conts:
        live[cont] &= demoted
    remat = _Remat(entry)
    saved = {v for v in demoted if not remat(v)}
    if any(slot_size(v.type) is None for v in saved):
        for k in reversed(range(len(conts))):
            _join_block(barriers[k], barriers[k].parent, conts[k])
        return None
    order = sorted(demoted, key=lambda v: (blocks.index(v.parent),
                                           v.parent.instructions.index(v)))
    divergence = uniformity.analyse(body, [barrier.parent for barrier in barriers])
    shared: set[ir.Instruction] = set()
    if divergence is not None:  # every pass of a block is uniform: share the uniform values
        shared = {v for v in saved if divergence.uniform(v)}
        promoted = set(divergence.variables.values())
        shared |= {a for a in kept if a in promoted and a not in divergence.allocas}
    tctx = body.args[0]
    start = entry.terminator
    assert isinstance(start, ir.Branch)
    del entry.instructions[-1]
    entry.terminator = None
    b = ir.IRBuilder(entry)
    frame, frame_bytes = _layout(b, tctx, order, saved, kept, shared)
    for cont in conts:  # before demotion rewrites the operands the copies are made from
        cb = ir.IRBuilder(cont)
        cb.position_before(cont.instructions[0])
        done: dict[ir.Value, ir.Value] = {}
        for v in order:
            if v in live[cont] and v not in saved:
                cb.store(remat.clone(cb, v, done), frame.allocas[v])
    users = _users(body, demoted)
    for v in order:
        _demote(v, frame.allocas[v], users[v])
    exit_state = len(barriers) + 1
    for block in blocks:
        if isinstance(block.terminator, ir.Ret):
            rb = ir.IRBuilder(block)
            rb.position_before(block.terminator)
            cf.store_field(rb, THREAD_CTX, tctx, I64(exit_state), T.STATE)
    for k, cont in enumerate(conts):
        pred = barriers[k].parent
        del pred.instructions[-1]  # the branch to the continuation
        pred.terminator = None
        pb = ir.IRBuilder(pred)
        _copy(pb, live[cont], frame, to_frame=True)
        cf.store_field(pb, THREAD_CTX, tctx, I64(k + 1), T.STATE)
        pb.ret_void()
        cb = ir.IRBuilder(cont)
        cb.position_before(cont.instructions[0])
        _copy(cb, live[cont], frame, to_frame=False)
    b.position_at_end(entry)
    state = load_field(b, THREAD_CTX, tctx, T.STATE)
    switch = b.switch(state, start.operands[0])
    for k, cont in enumerate(conts):
        switch.add_case(I64(k + 1), cont)
    return SplitKernel(len(barriers), frame_bytes, frame.uniform_bytes, divergence is not None)
