"""`math` ops that xDSL 0.74 lacks: `math.erfc` (the complementary error function, accurate where
`1 - erf(x)` cancels; Python kernels' `erfc` builds it, every device target lowers it).

`MATH` is xDSL's math dialect plus these ops, with MLIR's syntax (`%y = math.erfc %x : f32`,
`math.erfc %x fastmath<fast> : f64`), as xDSL's other unary float ops print.
"""

from __future__ import annotations

from xdsl.dialects.math import FloatingPointLikeUnaryMathOperation, Math
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure, SameOperandsAndResultType


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """`%y = math.erfc %x : f32`: erfc(x) = 1 - erf(x), of a float scalar or vector."""

    name = "math.erfc"

    traits = traits_def(Pure(), SameOperandsAndResultType())


MATH = Dialect("math", [*Math.operations, ErfcOp], list(Math.attributes))
