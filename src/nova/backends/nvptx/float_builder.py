"""`FloatBuilder`: the IR helpers both NVPTX math implementations share (math.py's double
code, math32.py's single-precision code), for one float type `FLOAT`."""

from __future__ import annotations

from llvmlite import ir

from nova.backends.llvm.emitter import FunctionEmitter


class FloatBuilder:
    """Constants, intrinsics, FMA/Horner, selects and compares on values of type FLOAT."""

    FLOAT: ir.Type

    def __init__(self, fe: FunctionEmitter) -> None:
        self.fe = fe
        self.b = fe.builder

    def c(self, v: float) -> ir.Constant:
        return ir.Constant(self.FLOAT, v)

    def intr(self, name: str, *xs: ir.Value) -> ir.Value:
        return self.b.call(self.fe.module.intrinsic(name, self.FLOAT, len(xs)), list(xs))

    def fma(self, a: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.intr("llvm.fma", a, x, y)

    def poly(self, x: ir.Value, coeffs: list[float]) -> ir.Value:
        """Horner: coeffs[0] + x*(coeffs[1] + x*(...))."""
        acc: ir.Value = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(k))
        return acc

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def abs(self, x: ir.Value) -> ir.Value:
        return self.intr("llvm.fabs", x)

    def isnan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)
