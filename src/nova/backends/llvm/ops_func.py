"""func dialect handlers: func.return / gpu.return, func.call, func.constant-free calls.

Calls pass memref arguments expanded into descriptor fields (as function parameters are declared,
see types.py) and unpack struct results; several results come back as one struct.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import FunctionType, SymbolRefAttr
from xdsl.ir import Operation

from nova.backends.llvm.emitter import FunctionEmitter, attr


def lower_return(fe: FunctionEmitter, op: Operation) -> None:
    """func.return / gpu.return: ret void, the value, or a struct of the values."""
    values = fe.operands(op)
    if not values:
        fe.builder.ret_void()
    elif len(values) == 1:
        fe.builder.ret(values[0])
    else:
        st = ir.LiteralStructType([v.type for v in values])
        agg: ir.Value = ir.Constant(st, ir.Undefined)
        for i, v in enumerate(values):
            agg = fe.builder.insert_value(agg, v, i)
        fe.builder.ret(agg)


def lower_call(fe: FunctionEmitter, op: Operation) -> None:
    """func.call @f(args): a direct call to the lowered (or declared) function."""
    callee = attr(op, "callee")
    assert isinstance(callee, SymbolRefAttr)
    name = callee.root_reference.data
    fn = fe.module.functions.get(name)
    if fn is None:
        ftype = FunctionType.from_lists([v.type for v in op.operands],
                                        [r.type for r in op.results])
        fn = fe.module.declare(name, fe.module.function_type(ftype))
    result = fe.builder.call(fn, fe.flat_args(op.operands))
    if len(op.results) == 1:
        fe.bind_from_llvm(op.results[0], result)
    elif len(op.results) > 1:
        for i, res in enumerate(op.results):
            fe.bind_from_llvm(res, fe.builder.extract_value(result, i))


HANDLERS = {
    "func.return": lower_return,
    "gpu.return": lower_return,
    "func.call": lower_call,
}
