"""Uniformity of a CPU-device kernel body's values (which are the same in every thread of a
block), for barrier regions (nova.backends.cpu.regions).

Why: a value live across a barrier is saved per thread; when it is the same for all threads (a
loop counter such as the stride of a tree reduction) one copy is enough, and the region loop can
read it once before the loop instead of once per thread, so the branches on it become loop
invariant and the loop can vectorise.

The analysis is the classic optimistic divergence analysis of GPU compilers, on LLVM IR:
- divergent at the start: loads of the thread ids (ThreadCtx tid/linear), loads of memory other
  than the invariant context fields and the body's promotable allocas, calls other than LLVM
  intrinsics;
- an instruction with a divergent operand is divergent;
- a conditional branch or switch on a divergent value makes every block reachable from it
  before its immediate post-dominator *influenced*: phis there and at the post-dominator are
  divergent, and a store there makes its alloca divergent (which makes its loads divergent);
- a promotable alloca (only loaded and stored through, the Python frontend's variables) is
  divergent when a divergent value is stored into it;
- iterate to a fixed point.

`analyse(body, barrier_blocks)` returns the divergent instructions and allocas, or None when a
barrier lies in influenced code (threads may then wait at different barriers or exit while
others wait, so the block's passes are not all uniform and nothing may be shared).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from nova.backends.cpu.fibers import BLOCK_CTX, LAUNCH_CTX, THREAD_CTX, T

_THREAD_IDS = frozenset({T.TID_X, T.TID_Y, T.TID_Z, T.LINEAR})
_PURE = frozenset({
    "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or",
    "xor", "fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "icmp", "fcmp", "select",
    "getelementptr", "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp",
    "sitofp", "ptrtoint", "inttoptr", "bitcast", "addrspacecast", "extractelement",
    "insertelement", "shufflevector", "extractvalue", "insertvalue", "freeze"})
"""Opcodes whose result depends only on their operands (uniform operands: uniform result)."""


def successors(block: ir.Block) -> list[ir.Block]:
    term = block.terminator
    if term is None:
        return []
    if isinstance(term, ir.SwitchInstr):
        return [term.default, *(blk for _, blk in term.cases)]
    return [op for op in term.operands if isinstance(op, ir.Block)]


def post_dominators(blocks: list[ir.Block]) -> dict[ir.Block, set[ir.Block]]:
    """Each block's post-dominators (itself included); exits post-dominate only themselves."""
    succs = {b: successors(b) for b in blocks}
    everything = set(blocks)
    pdom = {b: ({b} if not succs[b] else set(everything)) for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            if not succs[b]:
                continue
            new = set.intersection(*(pdom[s] for s in succs[b])) | {b}
            if new != pdom[b]:
                pdom[b], changed = new, True
    return pdom


def _ipdom(block: ir.Block, pdom: dict[ir.Block, set[ir.Block]]) -> ir.Block | None:
    strict = pdom[block] - {block}
    for p in strict:
        if pdom[p] == strict:
            return p
    return None


def _influenced(block: ir.Block, join: ir.Block | None) -> set[ir.Block]:
    """Blocks reachable from `block`'s successors without passing `join`."""
    seen: set[ir.Block] = set()
    todo = [s for s in successors(block) if s is not join]
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.add(b)
        todo += [s for s in successors(b) if s is not join and s not in seen]
    return seen


def promotable(entry: ir.Block, blocks: list[ir.Block]) -> dict[ir.Value, ir.Instruction]:
    """Pointers (an entry alloca, its bitcasts and all-zero GEPs) -> the alloca, for allocas
    only loaded from and stored to through them."""
    derived: dict[ir.Value, ir.Instruction] = {}
    for instr in entry.instructions:
        if isinstance(instr, ir.AllocaInstr):
            derived[instr] = instr
    users: dict[ir.Value, list[ir.Instruction]] = {}
    for block in blocks:
        for instr in block.instructions:
            ops = ([v for v, _ in instr.incomings] if isinstance(instr, ir.PhiInstr)
                   else instr.operands)
            for op in ops:
                users.setdefault(op, []).append(instr)
    changed = True
    while changed:
        changed = False
        for instr in [i for b in blocks for i in b.instructions]:
            if instr in derived:
                continue
            zero_gep = isinstance(instr, ir.GEPInstr) and all(
                isinstance(i, ir.Constant) and i.constant == 0 for i in instr.indices)
            if (zero_gep or instr.opname == "bitcast") and instr.operands[0] in derived:
                derived[instr] = derived[instr.operands[0]]
                changed = True
    bad = set()
    for ptr, alloca in derived.items():
        for user in users.get(ptr, []):
            if isinstance(user, ir.LoadInstr) or user in derived:
                continue
            if isinstance(user, ir.StoreInstr) and user.operands[1] is ptr \
                    and user.operands[0] is not ptr:
                continue
            bad.add(alloca)
    return {p: a for p, a in derived.items() if a not in bad}


@dataclass
class Divergence:
    """The divergent instructions and promotable allocas of a body (everything else is
    uniform)."""

    values: set[ir.Instruction]
    allocas: set[ir.Instruction]
    variables: dict[ir.Value, ir.Instruction]
    """Pointers into promotable allocas (see `promotable`)."""

    def uniform(self, v: ir.Value) -> bool:
        return not (isinstance(v, ir.Instruction) and v in self.values)


def _load_divergent(instr: ir.LoadInstr, d: Divergence) -> bool:
    ptr = instr.operands[0]
    if ptr in d.variables:
        return d.variables[ptr] in d.allocas
    contexts = (THREAD_CTX, BLOCK_CTX, LAUNCH_CTX)
    if isinstance(ptr, ir.GEPInstr) and ptr.source_etype in contexts and all(
            isinstance(i, ir.Constant) for i in ptr.indices):
        if ptr.source_etype is THREAD_CTX and ptr.indices[1].constant in _THREAD_IDS:
            return True
        return not d.uniform(ptr.pointer)
    return True


def _divergent(instr: ir.Instruction, block: ir.Block, d: Divergence,
               influenced: set[ir.Block]) -> bool:
    if isinstance(instr, ir.LoadInstr):
        return _load_divergent(instr, d)
    if isinstance(instr, ir.PhiInstr):
        return block in influenced or not all(d.uniform(v) for v, _ in instr.incomings)
    if isinstance(instr, ir.CallInstr):
        name = getattr(instr.callee, "name", "")
        if not name.startswith("llvm.") or isinstance(instr.type, ir.VoidType):
            return True
        return not all(d.uniform(a) for a in instr.args)
    if isinstance(instr, (ir.AllocaInstr, ir.StoreInstr)) or isinstance(instr.type, ir.VoidType):
        return False
    if instr.opname.split(" ")[0] not in _PURE:
        return True  # atomics (each thread gets another old value), anything reading memory
    return not all(d.uniform(o) for o in instr.operands)


def analyse(body: ir.Function, barrier_blocks: list[ir.Block]) -> Divergence | None:
    """See the module docstring."""
    blocks = list(body.blocks)
    pdom = post_dominators(blocks)
    d = Divergence(set(), set(), promotable(blocks[0], blocks))
    influenced: set[ir.Block] = set()  # strictly between a divergent branch and its join
    merging: set[ir.Block] = set()  # ... or the join (phis there merge the sides)
    branched: set[ir.Block] = set()
    changed = True
    while changed:
        changed = False
        for block in blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.StoreInstr) and instr.operands[1] in d.variables:
                    alloca = d.variables[instr.operands[1]]
                    if alloca not in d.allocas and (
                            block in influenced or not d.uniform(instr.operands[0])):
                        d.allocas.add(alloca)
                        changed = True
                elif instr not in d.values and _divergent(instr, block, d, merging):
                    d.values.add(instr)
                    changed = True
            term = block.terminator
            if block in branched or not isinstance(term, (ir.ConditionalBranch, ir.SwitchInstr)):
                continue
            if not d.uniform(term.operands[0]):
                branched.add(block)
                join = _ipdom(block, pdom)
                region = _influenced(block, join)
                influenced |= region
                merging |= region | ({join} if join is not None else set())
                changed = True
    if any(b in influenced for b in barrier_blocks):
        return None
    return d
