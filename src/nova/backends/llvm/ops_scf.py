"""scf dialect handlers: structured control flow straight to basic blocks and phis.

* scf.for   -> header (phis for iv and iter_args, `iv < ub` test; `unsignedCmp` honored),
               body, latch (iv += step), exit; results are the header's iter phis.
* scf.if    -> then/else blocks and a merge block with one phi per result.
* scf.while -> `before` block (phis for its args) ending in scf.condition's branch, `after`
               block looping back; results are the condition's forwarded values.
* scf.parallel -> nested sequential loops; scf.reduce combines each value into an accumulator
               through its region (init values from the op).
* scf.execute_region -> its blocks inline, scf.yield branching to a merge block with phis.
* scf.index_switch -> an LLVM switch over case regions and a merge block.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir
from xdsl.ir import Block, Operation, Region, SSAValue

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, LoweredValue, attr
from nova.backends.llvm.target import Handler


def _expect(fe: FunctionEmitter, term: Operation, names: Sequence[str]) -> None:
    if term.name not in names:
        raise fe.error(term, f"expected {' or '.join(names)} as region terminator, "
                             f"found '{term.name}'")


def _emit_arms_into_merge(fe: FunctionEmitter, op: Operation,
                          arms: Sequence[tuple[Region, ir.Block]], merge: ir.Block) -> None:
    """Emit each arm region (ending in scf.yield) into its block, branching to `merge`.

    Shared by scf.if and scf.index_switch: every arm yields one value per result of `op`,
    and `merge` gets one phi per result fed from the block each arm ended in.
    """
    b = fe.builder
    incoming: list[tuple[list[LoweredValue], ir.Block]] = []
    for region, block in arms:
        b.position_at_end(block)
        term = fe.emit_inline(region.blocks[0], [])
        _expect(fe, term, ("scf.yield",))
        incoming.append(([fe.lookup_any(v) for v in term.operands], b.block))
        b.branch(merge)
    b.position_at_end(merge)
    for i, res in enumerate(op.results):
        phi = fe.make_phi(res.type)
        for values, block in incoming:
            fe.add_incoming(phi, values[i], block)
        fe.bind(res, phi)


def lower_for(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    lb, ub, step = (fe.lookup(v) for v in op.operands[:3])
    inits = [fe.lookup_any(v) for v in op.operands[3:]]
    unsigned = attr(op, "unsignedCmp") is not None
    pre = b.block
    header = fe.function.append_basic_block("for.header")
    body = fe.function.append_basic_block("for.body")
    exit_ = fe.function.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type, name="iv")
    iters = [fe.make_phi(r.type) for r in op.results]
    iv.add_incoming(lb, pre)
    for phi, init in zip(iters, inits, strict=True):
        fe.add_incoming(phi, init, pre)
    cond = (b.icmp_unsigned("<", iv, ub) if unsigned else b.icmp_signed("<", iv, ub))
    b.cbranch(cond, body, exit_)
    b.position_at_end(body)
    term = fe.emit_inline(op.regions[0].blocks[0], [iv, *iters])
    _expect(fe, term, ("scf.yield",))
    yielded = [fe.lookup_any(v) for v in term.operands]
    nxt = b.add(iv, step, name="iv.next")
    latch = b.block
    iv.add_incoming(nxt, latch)
    for phi, value in zip(iters, yielded, strict=True):
        fe.add_incoming(phi, value, latch)
    b.branch(header)
    b.position_at_end(exit_)
    for res, phi in zip(op.results, iters, strict=True):
        fe.bind(res, phi)


def lower_if(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    cond = fe.lookup(op.operands[0])
    then_region, else_region = op.regions[0], op.regions[1]
    then_bb = fe.function.append_basic_block("if.then")
    has_else = bool(else_region.blocks)
    else_bb = fe.function.append_basic_block("if.else") if has_else else None
    merge = fe.function.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb or merge)
    arms = [(then_region, then_bb)]
    if else_bb is not None:
        arms.append((else_region, else_bb))
    _emit_arms_into_merge(fe, op, arms, merge)


def lower_while(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    before_region, after_region = op.regions[0], op.regions[1]
    before_block = before_region.blocks[0]
    inits = [fe.lookup_any(v) for v in op.operands]
    pre = b.block
    before = fe.function.append_basic_block("while.before")
    after = fe.function.append_basic_block("while.after")
    exit_ = fe.function.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    phis = [fe.make_phi(a.type) for a in before_block.args]
    for phi, init in zip(phis, inits, strict=True):
        fe.add_incoming(phi, init, pre)
    cond_op = fe.emit_inline(before_block, phis)
    _expect(fe, cond_op, ("scf.condition",))
    cond = fe.lookup(cond_op.operands[0])
    forwarded = [fe.lookup_any(v) for v in cond_op.operands[1:]]
    b.cbranch(cond, after, exit_)
    b.position_at_end(after)
    term = fe.emit_inline(after_region.blocks[0], forwarded)
    _expect(fe, term, ("scf.yield",))
    yielded = [fe.lookup_any(v) for v in term.operands]
    for phi, value in zip(phis, yielded, strict=True):
        fe.add_incoming(phi, value, b.block)
    b.branch(before)
    b.position_at_end(exit_)
    for res, value in zip(op.results, forwarded, strict=True):
        fe.bind(res, value)


def lower_parallel(fe: FunctionEmitter, op: Operation) -> None:
    """scf.parallel as nested sequential loops (outermost dimension first)."""
    segs = attr(op, "operandSegmentSizes")
    n_lb, n_ub, n_step, _n_init = (list(segs.get_values()) if segs is not None  # type: ignore[attr-defined]
                                   else [0, 0, 0, 0])
    operands = list(op.operands)
    lbs = operands[:n_lb]
    ubs = operands[n_lb:n_lb + n_ub]
    steps = operands[n_lb + n_ub:n_lb + n_ub + n_step]
    inits = [fe.lookup_any(v) for v in operands[n_lb + n_ub + n_step:]]
    body_block = op.regions[0].blocks[0]
    results = _parallel_level(fe, lbs, ubs, steps, inits, body_block, [])
    for res, value in zip(op.results, results, strict=True):
        fe.bind(res, value)


def _parallel_level(fe: FunctionEmitter, lbs: list[SSAValue], ubs: list[SSAValue],
                    steps: list[SSAValue], accs: list[LoweredValue], body: Block,
                    ivs: list[ir.Value]) -> list[LoweredValue]:
    """Emit loop level len(ivs); returns the accumulators after the loop."""
    b = fe.builder
    if len(ivs) == len(lbs):
        term = fe.emit_inline(body, ivs)
        _expect(fe, term, ("scf.reduce", "scf.yield"))
        return _reduce(fe, term, accs)
    level = len(ivs)
    lb, ub, step = fe.lookup(lbs[level]), fe.lookup(ubs[level]), fe.lookup(steps[level])
    pre = b.block
    header = fe.function.append_basic_block("par.header")
    loop = fe.function.append_basic_block("par.body")
    exit_ = fe.function.append_basic_block("par.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(T.INDEX, name="piv")
    iv.add_incoming(lb, pre)
    phis = []
    for acc in accs:
        phi = b.phi(acc.type)  # type: ignore[union-attr]
        phi.add_incoming(acc, pre)
        phis.append(phi)
    b.cbranch(b.icmp_signed("<", iv, ub), loop, exit_)
    b.position_at_end(loop)
    new_accs = _parallel_level(fe, lbs, ubs, steps, list(phis), body, [*ivs, iv])
    latch = b.block
    iv.add_incoming(b.add(iv, step), latch)
    for phi, acc in zip(phis, new_accs, strict=True):
        phi.add_incoming(acc, latch)
    b.branch(header)
    b.position_at_end(exit_)
    return list(phis)


def _reduce(fe: FunctionEmitter, term: Operation, accs: list[LoweredValue]) -> list[LoweredValue]:
    """Apply each scf.reduce region: acc = region(acc, value)."""
    if term.name == "scf.yield" or not term.operands:
        return accs
    out = []
    for i, (value, region) in enumerate(zip(term.operands, term.regions, strict=True)):
        inner = fe.emit_inline(region.blocks[0], [accs[i], fe.lookup_any(value)])
        _expect(fe, inner, ("scf.reduce.return",))
        out.append(fe.lookup_any(inner.operands[0]))
    return out


def lower_execute_region(fe: FunctionEmitter, op: Operation) -> None:
    """Inline the region's blocks; each scf.yield feeds the merge block's phis."""
    b = fe.builder
    region = op.regions[0]
    merge = fe.function.append_basic_block("exec.end")
    with b.goto_block(merge):
        phis = [fe.make_phi(r.type) for r in op.results]
    blocks = list(region.blocks)
    for block in blocks:
        fe.blocks[block] = fe.function.append_basic_block("exec.bb")
        if block is not blocks[0]:
            with b.goto_block(fe.blocks[block]):
                fe.phis[block] = [fe.make_phi(a.type) for a in block.args]
            for arg, phi in zip(block.args, fe.phis[block], strict=True):
                fe.bind(arg, phi)
    b.branch(fe.blocks[blocks[0]])
    for block in blocks:
        b.position_at_end(fe.blocks[block])
        ops = list(block.ops)
        for inner in ops[:-1]:
            fe.emit_op(inner)
        last = ops[-1]
        if last.name == "scf.yield":
            for phi, v in zip(phis, last.operands, strict=True):
                fe.add_incoming(phi, fe.lookup_any(v), b.block)
            b.branch(merge)
        else:
            fe.emit_op(last)
    b.position_at_end(merge)
    for res, phi in zip(op.results, phis, strict=True):
        fe.bind(res, phi)


def lower_index_switch(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    flag = fe.lookup(op.operands[0])
    cases_attr = attr(op, "cases")
    cases = [int(v) for v in cases_attr.get_values()] if cases_attr is not None else []  # type: ignore[attr-defined]
    merge = fe.function.append_basic_block("switch.end")
    default_region, case_regions = op.regions[0], op.regions[1:]
    default_bb = fe.function.append_basic_block("switch.default")
    sw = b.switch(flag, default_bb)
    targets = [(default_region, default_bb)]
    for value, region in zip(cases, case_regions, strict=True):
        bb = fe.function.append_basic_block(f"switch.case{value}")
        sw.add_case(ir.Constant(flag.type, value), bb)
        targets.append((region, bb))
    _emit_arms_into_merge(fe, op, targets, merge)


HANDLERS: dict[str, Handler] = {
    "scf.for": lower_for,
    "scf.if": lower_if,
    "scf.while": lower_while,
    "scf.parallel": lower_parallel,
    "scf.execute_region": lower_execute_region,
    "scf.index_switch": lower_index_switch,
}
