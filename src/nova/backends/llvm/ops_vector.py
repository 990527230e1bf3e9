"""vector dialect handlers: `vector.print` of scalars, through the target's `print_value` hook
(each target prints its own way: host runtime calls, vprintf on NVPTX, ...). Vector values are
not supported by the LLVM lowering."""

from __future__ import annotations

from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler


def lower_print(fe: FunctionEmitter, op: Operation) -> None:
    """`vector.print %x : T` (scalars) -> Target.print_value(fe, op, value, T); the hook also
    handles the op's punctuation and `str` form (it receives the op)."""
    if op.operands:
        value = op.operands[0]
        fe.target.print_value(fe, op, fe.lookup(value), value.type)
    else:
        fe.target.print_value(fe, op, None, None)


HANDLERS: dict[str, Handler] = {"vector.print": lower_print}
