"""cf dialect handlers: br, cond_br, switch (block arguments become phis), and assert, whose
failing path is the target's `assert_fail` hook."""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir
from xdsl.ir import Block, Operation, SSAValue

from nova.backends.llvm.emitter import FunctionEmitter, attr
from nova.backends.llvm.target import Handler


def lower_br(fe: FunctionEmitter, op: Operation) -> None:
    fe.jump(op.successors[0], list(op.operands))


def lower_cond_br(fe: FunctionEmitter, op: Operation) -> None:
    """cond_br: each successor gets an edge block when it takes arguments, so its phis see a
    distinct predecessor even when both successors are the same block."""
    cond = fe.lookup(op.operands[0])
    sizes = _segment_sizes(op, 3)
    true_ops = list(op.operands[1:1 + sizes[1]])
    false_ops = list(op.operands[1 + sizes[1]:1 + sizes[1] + sizes[2]])
    edges = []
    for target, operands in ((op.successors[0], true_ops), (op.successors[1], false_ops)):
        if fe.phis.get(target):
            edge = fe.function.append_basic_block("cf.edge")
            with fe.builder.goto_block(edge):
                fe.jump(target, operands)
            edges.append(edge)
        else:
            edges.append(fe.blocks[target])
    fe.builder.cbranch(cond, edges[0], edges[1])


def _segment_sizes(op: Operation, count: int) -> list[int]:
    seg = attr(op, "operandSegmentSizes") or attr(op, "operand_segment_sizes")
    if seg is not None:
        return list(seg.get_values())  # type: ignore[attr-defined]
    raise ValueError(f"{op.name} without operandSegmentSizes")


def lower_switch(fe: FunctionEmitter, op: Operation) -> None:
    """cf.switch %flag : iN, [default: ^bb(args), v0: ^bb0(args), ...]."""
    flag = fe.lookup(op.operands[0])
    default_ops = list(getattr(op, "default_operands", ()))
    case_values = attr(op, "case_values")
    values = [int(v) for v in case_values.get_values()] if case_values is not None else []  # type: ignore[attr-defined]
    case_operands = list(getattr(op, "case_operand", ()))
    seg = attr(op, "case_operand_segments")
    seg_sizes = list(seg.get_values()) if seg is not None else [0] * len(values)  # type: ignore[attr-defined]

    def edge_for(target: Block, operands: Sequence[SSAValue]) -> ir.Block:
        if fe.phis.get(target):
            edge = fe.function.append_basic_block("cf.edge")
            with fe.builder.goto_block(edge):
                fe.jump(target, operands)
            return edge
        return fe.blocks[target]

    default = edge_for(op.successors[0], default_ops)
    cases = []
    start = 0
    for i, value in enumerate(values):
        operands = case_operands[start:start + seg_sizes[i]]
        start += seg_sizes[i]
        cases.append((value, edge_for(op.successors[i + 1], operands)))
    sw = fe.builder.switch(flag, default)
    for value, block in cases:
        sw.add_case(value, block)


def lower_assert(fe: FunctionEmitter, op: Operation) -> None:
    """cf.assert %cond, "msg": branch to a cold block that calls the target's assert_fail."""
    cond = fe.lookup(op.operands[0])
    msg = attr(op, "msg")
    message = str(getattr(msg, "data", msg or ""))
    fail = fe.function.append_basic_block("assert.fail")
    ok = fe.function.append_basic_block("assert.ok")
    fe.builder.cbranch(cond, ok, fail)
    fe.builder.position_at_end(fail)
    fe.target.assert_fail(fe, op, message)
    if not fe.builder.block.is_terminated:
        fe.builder.unreachable()
    fe.builder.position_at_end(ok)


HANDLERS: dict[str, Handler] = {
    "cf.br": lower_br,
    "cf.cond_br": lower_cond_br,
    "cf.switch": lower_switch,
    "cf.assert": lower_assert,
}
