"""The `llvm` dialect subset (nova.ir.dialects.llvm) on every LLVM target: struct constants and
member access are LLVM's own `zeroinitializer` / `undef`, `extractvalue` and `insertvalue`."""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.llvm import ExtractValueOp, InsertValueOp
from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler


def _position(op: ExtractValueOp | InsertValueOp) -> list[int]:
    return [int(i) for i in op.position.get_values()]


def lower_zero(fe: FunctionEmitter, op: Operation) -> None:
    fe.bind(op.results[0], ir.Constant(fe.lower_type(op.results[0].type), None))


def lower_undef(fe: FunctionEmitter, op: Operation) -> None:
    fe.bind(op.results[0], ir.Constant(fe.lower_type(op.results[0].type), ir.Undefined))


def lower_extractvalue(fe: FunctionEmitter, op: Operation) -> None:
    assert isinstance(op, ExtractValueOp)
    fe.bind(op.res, fe.builder.extract_value(fe.lookup(op.container), _position(op)))


def lower_insertvalue(fe: FunctionEmitter, op: Operation) -> None:
    assert isinstance(op, InsertValueOp)
    fe.bind(op.res, fe.builder.insert_value(fe.lookup(op.container), fe.lookup(op.value),
                                            _position(op)))


HANDLERS: dict[str, Handler] = {
    "llvm.mlir.zero": lower_zero,
    "llvm.mlir.undef": lower_undef,
    "llvm.extractvalue": lower_extractvalue,
    "llvm.insertvalue": lower_insertvalue,
}
