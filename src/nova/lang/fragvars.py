"""Variables holding tensor-core fragments, turned into SSA block arguments.

Scalar variables live in rank-0 `memref.alloca` slots that LLVM promotes to registers, but a
`!gpu.mma_matrix` cannot be stored in a memref (it is an opaque per-warp value), and an
accumulator updated in a loop (`c = nova.mma.mma(a, b, c)`) must flow around the loop in
registers. So while translating, a fragment variable is read and written through placeholder ops
(`nova_lang.fragment_get/set`, never printed); once the kernel's CFG is complete,
`promote_fragments` replaces them with values and block arguments (`cf.br ^bb(%c : ...)`):

1. liveness of every variable per block (a variable read before it is written in a block, or
   live after it and not written there, is live on entry);
2. every block except the entry gets a block argument per variable live on entry to it (pruned
   SSA); the entry block starts each variable live there as a zero fragment (Python would raise
   UnboundLocalError for such a read; kernels read an undefined value, here zeros);
3. a walk of each block replaces reads with the current value and passes the values at its end
   to its successors' arguments;
4. arguments whose incoming values are all one other value (or the argument itself) are replaced
   by that value, repeatedly (Braun et al.'s trivial phi removal), so straight-line code and
   loops that do not change a fragment get no block arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, cf
from xdsl.dialects.builtin import FloatAttr, IntAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)

from nova.ir.locations import location_of, set_location


@irdl_op_definition
class FragmentGetOp(IRDLOperation):
    """Read fragment variable `slot` (placeholder, removed by promote_fragments)."""

    name = "nova_lang.fragment_get"
    slot = prop_def(IntAttr)
    res = result_def()

    def __init__(self, slot: int, ty: Attribute) -> None:
        super().__init__(properties={"slot": IntAttr(slot)}, result_types=[ty])


@irdl_op_definition
class FragmentSetOp(IRDLOperation):
    """Write fragment variable `slot` (placeholder, removed by promote_fragments)."""

    name = "nova_lang.fragment_set"
    slot = prop_def(IntAttr)
    value = operand_def()

    def __init__(self, slot: int, value: SSAValue) -> None:
        super().__init__(properties={"slot": IntAttr(slot)}, operands=[value])


def _slot(op: Operation) -> int:
    attr = op.properties["slot"]
    assert isinstance(attr, IntAttr)
    return attr.data


def _successors(block: Block) -> list[Block]:
    term = block.last_op
    return list(term.successors) if term is not None else []


def _liveness(blocks: Sequence[Block]) -> dict[Block, set[int]]:
    """The variables live on entry to each block (a backward dataflow fixpoint)."""
    uses: dict[Block, set[int]] = {}
    defs: dict[Block, set[int]] = {}
    for block in blocks:
        used: set[int] = set()
        written: set[int] = set()
        for op in block.ops:
            if isinstance(op, FragmentGetOp) and _slot(op) not in written:
                used.add(_slot(op))
            elif isinstance(op, FragmentSetOp):
                written.add(_slot(op))
        uses[block], defs[block] = used, written
    live_in: dict[Block, set[int]] = {b: set(uses[b]) for b in blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(blocks):
            out: set[int] = set()
            for succ in _successors(block):
                out |= live_in.get(succ, set())
            new = uses[block] | (out - defs[block])
            if new != live_in[block]:
                live_in[block] = new
                changed = True
    return live_in


class _Promoter:
    def __init__(self, blocks: Sequence[Block], types: dict[int, Attribute]) -> None:
        self.blocks = list(blocks)
        self.types = types
        self.live = _liveness(self.blocks)
        self.params: dict[Block, dict[int, BlockArgument]] = {}
        # per block, per outgoing edge (successor index): the values passed, by variable
        self.outgoing: dict[Block, list[dict[int, SSAValue]]] = {}
        self.replaced: dict[SSAValue, SSAValue] = {}

    def run(self) -> None:
        entry = self.blocks[0]
        for block in self.blocks[1:]:
            self.params[block] = {}
            for slot in sorted(self.live[block]):
                self.params[block][slot] = block.insert_arg(self.types[slot], len(block.args))
        self.params[entry] = {}
        initial = self._entry_values(entry)
        for block in self.blocks:
            self._rename(block, initial if block is entry else dict(self.params[block]))
        self._remove_trivial()
        for block in self.blocks:
            self._rewrite_terminator(block)

    def _entry_values(self, entry: Block) -> dict[int, SSAValue]:
        """Zero fragments for the variables live on entry (read before any assignment)."""
        from xdsl.dialects.llvm import LLVMStructType, ZeroOp

        from nova.ir.gpu.mma_ops import MMAMatrixType, SubgroupMmaConstantMatrixOp

        values: dict[int, SSAValue] = {}
        term = entry.last_op
        assert term is not None
        for slot in sorted(self.live[entry]):
            ty = self.types[slot]
            if isinstance(ty, LLVMStructType):  # a wgmma accumulator
                struct_zero = ZeroOp(result_types=[ty])
                entry.insert_op_before(struct_zero, term)
                values[slot] = struct_zero.res
                continue
            assert isinstance(ty, MMAMatrixType)
            zero = arith.ConstantOp(FloatAttr(0.0, ty.element_type))  # type: ignore[call-overload]
            fill = SubgroupMmaConstantMatrixOp(zero.result, ty)
            entry.insert_op_before(zero, term)
            entry.insert_op_before(fill, term)
            values[slot] = fill.res
        return values

    def _rename(self, block: Block, current: dict[int, SSAValue]) -> None:
        for op in list(block.ops):
            if isinstance(op, FragmentGetOp):
                op.res.replace_all_uses_with(current[_slot(op)])
                block.erase_op(op)
            elif isinstance(op, FragmentSetOp):
                current[_slot(op)] = op.value
                block.erase_op(op)
        self.outgoing[block] = [{s: current[s] for s in self.live[succ]}
                                for succ in _successors(block)]

    def _resolve(self, value: SSAValue) -> SSAValue:
        while value in self.replaced:
            value = self.replaced[value]
        return value

    def _incoming(self, block: Block, slot: int) -> list[SSAValue]:
        found = []
        for pred in self.blocks:
            for succ, values in zip(_successors(pred), self.outgoing[pred], strict=True):
                if succ is block:
                    found.append(self._resolve(values[slot]))
        return found

    def _remove_trivial(self) -> None:
        changed = True
        while changed:
            changed = False
            for block in self.blocks[1:]:
                for slot, arg in list(self.params[block].items()):
                    others = {v for v in self._incoming(block, slot) if v is not arg}
                    if len(others) == 1:
                        self.replaced[arg] = others.pop()
                        del self.params[block][slot]
                        changed = True
        for value in list(self.replaced):
            assert isinstance(value, BlockArgument)
            value.replace_all_uses_with(self._resolve(value))
            value.block.erase_arg(value)

    def _rewrite_terminator(self, block: Block) -> None:
        term = block.last_op
        if term is None or not term.successors:
            return
        lists = [[self._resolve(values[s]) for s in self.params[succ]]
                 for succ, values in zip(term.successors, self.outgoing[block], strict=True)]
        if not any(lists):
            return
        new: Operation
        if isinstance(term, cf.BranchOp):
            new = cf.BranchOp(term.successor, *lists[0])
        else:
            assert isinstance(term, cf.ConditionalBranchOp)
            new = cf.ConditionalBranchOp(term.cond, term.then_block, lists[0],
                                         term.else_block, lists[1])
        set_location(new, location_of(term))
        block.insert_op_before(new, term)
        block.erase_op(term)


def promote_fragments(blocks: Sequence[Block], types: dict[int, Attribute]) -> None:
    """Replace the fragment placeholders in `blocks` (the function's blocks, entry first) by SSA
    values and block arguments; `types` maps each variable to its MLIR type."""
    if types:
        _Promoter(blocks, types).run()
