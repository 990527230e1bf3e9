"""MLIR text building blocks for generated kernels: SSA naming, hoisted constants, index
arithmetic that folds known values, and the element-type table.

Index values are `int` (known at compile time) or `str` (an SSA name of type index); the helpers
fold `x * 1`, `x + 0`, `x / 1`, `x % 1` and int-int arithmetic, so kernels specialised to static
shapes carry no dead index code.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager

from nova.models.errors import ModelError

Index = int | str

STORAGE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
           "int64": "i64", "int32": "i32", "int8": "i8", "uint8": "i8", "bool": "i1"}
"""Graph dtype -> MLIR element type of its buffers."""

COMPUTE = {"float32": "f32", "float16": "f32", "bfloat16": "f32", "float64": "f64",
           "int64": "i64", "int32": "i64", "int8": "i64", "uint8": "i64", "bool": "i1"}
"""Graph dtype -> MLIR type kernels compute in (16-bit floats accumulate in f32)."""


def storage_type(dtype: str) -> str:
    try:
        return STORAGE[dtype]
    except KeyError:
        raise ModelError(f"dtype {dtype} has no kernel implementation") from None


def memref_type(numel: int, dtype: str) -> str:
    """The flat buffer type of a tensor (every buffer is 1-D, row-major)."""
    return f"memref<{max(numel, 1)}x{storage_type(dtype)}>"


def float_literal(value: float, ty: str) -> str:
    """An MLIR float constant spelling (hex bits for inf and nan)."""
    if value != value or value in (float("inf"), float("-inf")):
        if ty == "f64":
            return "0x" + struct.pack(">d", value).hex().upper()
        return "0x" + struct.pack(">f", value).hex().upper()
    return format(float(value), ".17e" if ty == "f64" else ".9e")


class Body:
    """The text of one function body: fresh SSA names, constants hoisted to the entry block, and
    nested regions by indentation."""

    def __init__(self, prefix: str = "v") -> None:
        self.prefix = prefix
        self.lines: list[str] = []
        self.const_lines: list[str] = []
        self._consts: dict[tuple[str, str], str] = {}
        self._count = 0
        self.depth = 1

    def fresh(self, hint: str = "") -> str:
        self._count += 1
        return f"%{self.prefix}{hint}{self._count}"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def op(self, text: str, hint: str = "") -> str:
        """Emit `%new = text` and return %new."""
        name = self.fresh(hint)
        self.line(f"{name} = {text}")
        return name

    def const(self, value: float | int | bool, ty: str) -> str:
        """A constant of type `ty`, emitted once at the top of the function."""
        if ty == "i1":
            spelled = "true" if value else "false"
        elif ty in ("index", "i64", "i32", "i8", "i16"):
            spelled = str(int(value))
        else:
            spelled = float_literal(float(value), ty)
        key = (spelled, ty)
        name = self._consts.get(key)
        if name is None:
            name = self.fresh("c")
            self._consts[key] = name
            typed = spelled if ty == "i1" else f"{spelled} : {ty}"  # `true` is an i1 already
            self.const_lines.append(f"  {name} = arith.constant {typed}")
        return name

    @contextmanager
    def nested(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def text(self) -> str:
        return "\n".join([*self.const_lines, *self.lines])

    # ---- index arithmetic (folding known values) ----------------------------------------------

    def ix(self, value: Index) -> str:
        """An SSA value for an index (materialising a constant)."""
        return self.const(value, "index") if isinstance(value, int) else value

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self.op(f"arith.addi {self.ix(a)}, {self.ix(b)} : index")

    def mul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 0 or b == 0:
            return 0
        if a == 1:
            return b
        if b == 1:
            return a
        return self.op(f"arith.muli {self.ix(a)}, {self.ix(b)} : index")

    def div(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        return self.op(f"arith.divui {a}, {self.ix(b)} : index")

    def rem(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        return self.op(f"arith.remui {a}, {self.ix(b)} : index")

    def lt(self, a: Index, b: Index) -> str:
        """An i1 `a < b` (unsigned compare is fine for the non-negative indices used here)."""
        return self.op(f"arith.cmpi ult, {self.ix(a)}, {self.ix(b)} : index")

    def linear(self, idx: list[Index], shape: tuple[int, ...]) -> Index:
        """Row-major linear index of `idx` in `shape`."""
        acc: Index = 0
        stride = 1
        for i, d in zip(reversed(idx), reversed(shape), strict=True):
            if d != 1:
                acc = self.add(acc, self.mul(i, stride))
            stride *= d
        return acc

    def delinearize(self, linear: Index, shape: tuple[int, ...]) -> list[Index]:
        """The multi-index of row-major `linear` in `shape`."""
        out: list[Index] = []
        rest = linear
        for i, d in enumerate(reversed(shape)):
            if d == 1:
                out.append(0)
                continue
            last = all(s == 1 for s in shape[:len(shape) - 1 - i])
            out.append(rest if last else self.rem(rest, d))
            rest = self.div(rest, d)
        return out[::-1]


def broadcast_index(idx: list[Index], out_shape: tuple[int, ...], in_shape: tuple[int, ...]) \
        -> list[Index]:
    """The index into an operand of shape `in_shape` broadcast (NumPy rules) to `out_shape`."""
    offset = len(out_shape) - len(in_shape)
    return [0 if d == 1 else idx[offset + i] for i, d in enumerate(in_shape)]
