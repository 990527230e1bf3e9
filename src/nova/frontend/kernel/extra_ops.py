"""Upstream MLIR ops that xDSL 0.74 lacks and the LLVM emitter already lowers, for kernels:
`memref.generic_atomic_rmw` + `memref.atomic_yield` (for `nova.atomic_cas`; a cmpxchg loop around
the region, `nova.backends.llvm.ops_memref.lower_generic_atomic_rmw`) and `math.erfc` (accurate
where 1 - erf(x) cancels). They print in MLIR's generic form, which upstream mlir-opt accepts.

    %old = "memref.generic_atomic_rmw"(%a, %i) ({
    ^bb0(%current: i32):
      ...
      "memref.atomic_yield"(%new) : (i32) -> ()
    }) : (memref<?xi32>, index) -> i32

(Nova's text parser does not register them yet: they belong in `nova.ir` with their custom
syntax; until then `kern.mlir()` of a kernel using them does not re-parse with Nova.)
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class ErfcOp(IRDLOperation):
    """`math.erfc %x : f32`: the complementary error function."""

    name = "math.erfc"
    operand = operand_def()
    result = result_def()

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value], result_types=[value.type])

    def verify_(self) -> None:
        if self.result.type != self.operand.type:
            raise VerifyException("'math.erfc' op result type must be the operand type")


@irdl_op_definition
class AtomicYieldOp(IRDLOperation):
    """`memref.atomic_yield %new`: the value a generic_atomic_rmw region stores."""

    name = "memref.atomic_yield"
    result = operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])


@irdl_op_definition
class GenericAtomicRMWOp(IRDLOperation):
    """Atomically replace `memref[indices]` by what the region computes from its current value;
    the result is the value it replaced."""

    name = "memref.generic_atomic_rmw"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()
    atomic_body = region_def("single_block")

    def __init__(self, ref: SSAValue, indices: list[SSAValue], element: Attribute) -> None:
        super().__init__(operands=[ref, indices], result_types=[element],
                         regions=[Region(Block(arg_types=[element]))])

    @property
    def current(self) -> SSAValue:
        """The region's argument: the element's current value."""
        return self.atomic_body.blocks[0].args[0]

    def verify_(self) -> None:
        ty = self.memref.type
        assert isinstance(ty, MemRefType)
        if self.result.type != ty.element_type:
            raise VerifyException("'memref.generic_atomic_rmw' op result type must be the "
                                  "memref's element type")
        if len(self.indices) != ty.get_num_dims():
            raise VerifyException("'memref.generic_atomic_rmw' op expects one index per "
                                  "dimension")
        block = self.atomic_body.blocks[0]
        last = block.last_op
        if not isinstance(last, AtomicYieldOp) or last.result.type != self.result.type:
            raise VerifyException("'memref.generic_atomic_rmw' op region must end with a "
                                  "memref.atomic_yield of the element type")
