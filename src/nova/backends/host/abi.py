"""Runtime-ABI calls from host LLVM IR: declarations derived from `nova.abi.ABI_FUNCTIONS`
and status checking.

This is the only place the host lowering turns an ABI name into an LLVM declaration, so the
signatures can never drift from the contract: every parameter and result type comes from the table.
A fallible call is followed by `status != 0 -> nova_rt_raise(); unreachable` (one raise block per
function, shared by all of its calls), which is how a runtime failure leaves compiled host code.
"""

from __future__ import annotations

from llvmlite import ir

from nova.abi import ABI_BY_NAME, AbiFunction, CType

PTR = ir.PointerType()
I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

_LLVM_TYPES: dict[CType, ir.Type] = {
    CType.VOID: ir.VoidType(),
    CType.PTR: PTR,
    CType.I8: I8,
    CType.I16: ir.IntType(16),
    CType.I32: I32,
    CType.I64: I64,
    CType.F32: ir.FloatType(),
    CType.F64: ir.DoubleType(),
}

RAISE = "nova_rt_raise"
"""Never returns: unwinds to the nova_rt_call_entry frame after a failed status."""


def llvm_type(ctype: CType) -> ir.Type:
    """The llvmlite type of one ABI C type."""
    return _LLVM_TYPES[ctype]


def function_type(fn: AbiFunction) -> ir.FunctionType:
    """The LLVM function type of an ABI function, straight from its table entry."""
    return ir.FunctionType(llvm_type(fn.result), [llvm_type(t) for _, t in fn.params])


class AbiCalls:
    """Declares ABI functions in one LLVM module on first use and emits (checked) calls to them.

    The raise block of each LLVM function is created lazily and shared by all fallible calls in that
    function, so a function without device interaction gets none.
    """

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self._raise_blocks: dict[str, ir.Block] = {}

    def declare(self, name: str) -> ir.Function:
        """The declaration of ABI function `name` (KeyError for a name outside the contract)."""
        fn = ABI_BY_NAME[name]
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        decl = ir.Function(self.module, function_type(fn), name)
        for (param_name, _), arg in zip(fn.params, decl.args, strict=True):
            arg.name = param_name
        if name == RAISE:
            decl.attributes.add("noreturn")
            decl.attributes.add("nounwind")
        return decl

    def call(self, builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Instruction:
        """Call ABI function `name` without looking at its result."""
        decl = self.declare(name)
        _check_arity(ABI_BY_NAME[name], args)
        return builder.call(decl, args)

    def call_checked(self, builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> None:
        """Call a fallible ABI function; on a nonzero status, raise (never continue).

        Leaves `builder` at the end of a fresh block that runs only on success."""
        fn = ABI_BY_NAME[name]
        if not fn.fallible:
            raise ValueError(f"{name} returns no status to check")
        status = self.call(builder, name, args)
        self.branch_on_status(builder, status, name)

    def branch_on_status(self, builder: ir.IRBuilder, status: ir.Value, what: str) -> None:
        """Branch to the raise block when `status` (an i32) is nonzero; continue in a new block."""
        failed = builder.icmp_unsigned("!=", status, ir.Constant(I32, 0), name=f"{what}.failed")
        ok = builder.append_basic_block(name=f"{what}.ok")
        builder.cbranch(failed, self.raise_block(builder), ok)
        builder.position_at_end(ok)

    def raise_block(self, builder: ir.IRBuilder) -> ir.Block:
        """The current function's `nova_rt_raise(); unreachable` block."""
        function = builder.function
        block = self._raise_blocks.get(function.name)
        if block is not None and block.parent is function:
            return block
        block = function.append_basic_block(name="nova.raise")
        raiser = ir.IRBuilder(block)
        raiser.call(self.declare(RAISE), [])
        raiser.unreachable()
        self._raise_blocks[function.name] = block
        return block


def _check_arity(fn: AbiFunction, args: list[ir.Value]) -> None:
    """Catch a call site that disagrees with the table before LLVM does (with a clearer message)."""
    expected = [llvm_type(t) for _, t in fn.params]
    actual = [a.type for a in args]
    if expected != actual:
        raise TypeError(f"ABI call {fn.name}: expected argument types {expected}, got {actual}")
