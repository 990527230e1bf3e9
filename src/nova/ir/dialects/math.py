"""`math` ops that xDSL 0.74 lacks: `math.erfc` (the complementary error function, accurate where
`1 - erf(x)` cancels; Python kernels' `erfc` builds it, every device target lowers it) and
`math.sincos` (`%sin, %cos = math.sincos %x : f32`: both of one float scalar or vector, lowered
as the target's sin and cos).

`MATH` is xDSL's math dialect plus these ops, with MLIR's syntax (`%y = math.erfc %x : f32`,
`math.erfc %x fastmath<fast> : f64`), as xDSL's other unary float ops print.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import AnyFloat, VectorType
from xdsl.dialects.math import FloatingPointLikeUnaryMathOperation, Math
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure, SameOperandsAndResultType
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.erfc %x : f32`: erfc(x) = 1 - erf(x), of a float scalar or vector."""

    name = "math.erfc"

    traits = traits_def(Pure(), SameOperandsAndResultType())


def is_float_like(ty: Attribute) -> bool:
    """MLIR's FloatLike: a float, or a vector (or tensor) of floats."""
    return isinstance(ty.element_type if isinstance(ty, VectorType) else ty, AnyFloat)


@irdl_op_definition
class SincosOp(IRDLOperation):
    """`%sin, %cos = math.sincos %x fastmath<...> : T`: sin(x) and cos(x) of one value."""

    name = "math.sincos"

    T: ClassVar = VarConstraint("T", AnyAttr())
    operand = operand_def(T)
    sin = result_def(T)
    cos = result_def(T)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))

    assembly_format = "$operand (`fastmath` `` $fastmath^)? attr-dict `:` type($operand)"

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, fastmath: FastMathFlagsAttr | None = None) -> None:
        super().__init__(properties={"fastmath": fastmath}, operands=[operand],
                         result_types=[operand.type, operand.type])

    def verify_(self) -> None:
        if not is_float_like(self.operand.type):
            raise VerifyException("'math.sincos' op operand #0 must be floating-point-like, but "
                                  f"got '{self.operand.type}'")


MATH = Dialect("math", [*Math.operations, ErfcOp, SincosOp], list(Math.attributes))
