"""Nova kernel types: scalar types (bool, int8..uint64, float16/bfloat16/float32/float64), array
types (element type + rank), the promotion rules between them, and their MLIR/NumPy spellings.

Scalar type objects are also callable inside kernels as casts (`nova.uint8(x)`) and on the host as
NumPy scalar constructors (`nova.float32(1.5)` -> `np.float32(1.5)`).

Promotion rules (binary arithmetic and comparisons; documented in docs/python-kernels.md):

- Python literals are *weak*: an int literal next to a typed integer takes that integer's type
  (it must fit, else a located error asks for an explicit cast); an int or float literal next to a
  typed float takes the float's type; a float literal next to an integer gives float64. Alone, an
  int literal is int64, a float literal float64, True/False bool.
- Two integers: the wider width wins; with mixed signedness, the signed type wins only when it is
  strictly wider, else the unsigned type of the wider width (C's usual conversions, without C's
  promotion of narrow types to int: int8 + int8 is int8 and wraps around).
- Integer with float: the float type (as C). Two floats: the wider; float16 with bfloat16 gives
  float32. bool in arithmetic counts as the other operand's type (int64 when both are bool).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from nova.errors import ArgumentError
from nova.records import Record

if TYPE_CHECKING:  # xDSL is imported only to build MLIR: launching a cached kernel never does
    from xdsl.dialects.builtin import MemRefType
    from xdsl.ir import Attribute


def _ml_dtypes(load: bool) -> ModuleType | None:
    """ml_dtypes, which gives NumPy its bfloat16 (without it bfloat16 still works in kernels).
    Imported on demand (`load`): a bfloat16 NumPy dtype exists only once it has been imported,
    so recognising one never needs the import."""
    import sys

    module = sys.modules.get("ml_dtypes")
    if module is None and load:
        try:
            import ml_dtypes as module
        except ImportError:  # pragma: no cover - depends on the environment
            return None
    return module

SHARED_MEMORY_SPACE = 3
"""The memref memory space of workgroup (shared) memory (NVVM's address space 3)."""


class ScalarType(Record):
    """A kernel scalar type: `kind` is 'bool', 'int', 'uint' or 'float'."""

    _fields = ("name", "kind", "bits")
    __match_args__ = ("name", "kind", "bits")
    __eq__ = object.__eq__  # eq=False: identity
    __hash__ = object.__hash__

    name: str
    kind: str
    bits: int

    def __init__(self, name: str, kind: str, bits: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "bits", bits)

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def mlir(self) -> Attribute:
        """The MLIR type (integers are signless: signedness lives in the ops Nova picks)."""
        from xdsl.dialects.builtin import (
            BFloat16Type,
            Float16Type,
            Float32Type,
            Float64Type,
            IntegerType,
        )

        if self.kind == "float":
            return {16: BFloat16Type() if self.name == "bfloat16" else Float16Type(),
                    32: Float32Type(), 64: Float64Type()}[self.bits]
        return IntegerType(self.bits)

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    @property
    def np_dtype(self) -> np.dtype:
        """The NumPy dtype (bfloat16 needs ml_dtypes; raises KernelTypeUnavailable without)."""
        if self.name == "bfloat16":
            ml = _ml_dtypes(True)
            if ml is None:

                raise ArgumentError("bfloat16 NumPy arrays need the ml_dtypes package "
                                    "(pip install ml_dtypes)")
            return np.dtype(ml.bfloat16)
        return np.dtype(self.name)

    def min_max(self) -> tuple[int, int]:
        """The range of an integer type."""
        if self.kind == "bool":
            return 0, 1
        if self.kind == "uint":
            return 0, (1 << self.bits) - 1
        return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1

    def __call__(self, value: Any) -> Any:
        """On the host, a NumPy scalar of this type (inside kernels the translator casts)."""
        try:
            return self.np_dtype.type(value)
        except (TypeError, ValueError, OverflowError) as exc:
            from nova.errors import ScalarConversionError  # made on first use (nova.errors)

            raise ScalarConversionError(
                f"nova.{self.name}() cannot convert {_describe(value)}: {exc}") from None

    def __getitem__(self, dims: Any) -> ArrayType:
        """`nova.float32[:]`, `nova.float32[:, :]`: an array type for signatures."""
        items = dims if isinstance(dims, tuple) else (dims,)
        if not items or not all(isinstance(d, slice) and d == slice(None) for d in items):
            raise TypeError(f"array types are written {self.name}[:], {self.name}[:, :], ...")
        return ArrayType(self, len(items))

    def __repr__(self) -> str:
        return f"nova.{self.name}"

    def __str__(self) -> str:
        return self.name


bool_ = ScalarType("bool", "bool", 1)
int8 = ScalarType("int8", "int", 8)
int16 = ScalarType("int16", "int", 16)
int32 = ScalarType("int32", "int", 32)
int64 = ScalarType("int64", "int", 64)
uint8 = ScalarType("uint8", "uint", 8)
uint16 = ScalarType("uint16", "uint", 16)
uint32 = ScalarType("uint32", "uint", 32)
uint64 = ScalarType("uint64", "uint", 64)
float16 = ScalarType("float16", "float", 16)
bfloat16 = ScalarType("bfloat16", "float", 16)
float32 = ScalarType("float32", "float", 32)
float64 = ScalarType("float64", "float", 64)

SCALAR_TYPES: tuple[ScalarType, ...] = (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                        uint64, float16, bfloat16, float32, float64)
BY_NAME: dict[str, ScalarType] = {t.name: t for t in SCALAR_TYPES}


class ArrayType(Record):
    """A C-contiguous array of `dtype` with `ndim` dimensions. `shape` is None for arguments
    (sizes known at run time) and the static shape for shared/local arrays; `space` is 0 (global
    or private) or SHARED_MEMORY_SPACE.

    Kernel arguments also carry two facts a launch checks on the actual pointers (see
    launch.refine) and the compiler may then rely on: `align`, a byte alignment of the data
    pointer beyond the element's own (16 lets LLVM merge neighbouring accesses into 16-byte vector
    loads/stores), and `noalias`, that the array's bytes overlap no other array argument (LLVM
    `noalias`: reads of an array the kernel never writes become `ld.global.nc`). They are part of
    the signature, so each combination compiles once; explicit types (`nova.float32[:]`) assume
    neither."""

    __match_args__ = ("dtype", "ndim", "shape", "space", "align", "noalias")
    _fields = __match_args__

    dtype: ScalarType
    ndim: int
    shape: tuple[int, ...] | None
    space: int
    align: int
    noalias: bool

    def __init__(self, dtype: ScalarType, ndim: int, shape: tuple[int, ...] | None = None,
                 space: int = 0, align: int = 0, noalias: bool = False) -> None:
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "space", space)
        object.__setattr__(self, "align", align)
        object.__setattr__(self, "noalias", noalias)
        # signatures are hashed on every launch: hash the fields once
        object.__setattr__(self, "_hash", hash((dtype, ndim, shape, space, align, noalias)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]  # set by __init__

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        o: ArrayType = other
        return (self.dtype, self.ndim, self.shape, self.space, self.align, self.noalias) == \
            (o.dtype, o.ndim, o.shape, o.space, o.align, o.noalias)

    def arg_attrs(self) -> dict[str, Attribute]:
        """The MLIR argument attributes (`llvm.noalias`, `llvm.align`) stating these facts."""
        from xdsl.dialects.builtin import IntegerAttr, UnitAttr

        out: dict[str, Attribute] = {}
        if self.noalias:
            out["llvm.noalias"] = UnitAttr()
        if self.align:
            out["llvm.align"] = IntegerAttr(self.align, 64)
        return out

    @property
    def mlir(self) -> MemRefType:
        from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType

        dims = self.shape if self.shape is not None else (DYNAMIC_INDEX,) * self.ndim
        space = IntegerAttr(self.space, 64) if self.space else None
        if space is None:
            return MemRefType(self.dtype.mlir, list(dims))
        return MemRefType(self.dtype.mlir, list(dims), memory_space=space)

    def __str__(self) -> str:
        where = "shared " if self.space == SHARED_MEMORY_SPACE else ""
        dims = "x".join(str(d) for d in self.shape) if self.shape else f"{self.ndim}d"
        return f"{where}array({self.dtype}, {dims})"


MMA_SHAPE = (16, 16, 16)
"""The (m, n, k) of the tensor-core fragments kernels can use (WMMA's m16n16k16)."""
FRAGMENT_KINDS = ("a", "b", "c")
"""Fragment kinds: the multiplicands A (m x k) and B (k x n), the accumulator C (m x n)."""


class FragmentType(Record):
    """A warp's tensor-core matrix fragment (`nova.mma`): `kind` 'a', 'b' or 'c', the element
    type, and for A/B the layout the fragment was loaded with ('row' or 'col'; the tensor-core
    multiply must know it, so it is part of the type; accumulators have none). The MLIR type is
    upstream's opaque `!gpu.mma_matrix<16x16xT, "AOp"|"BOp"|"COp">`."""

    __match_args__ = ("kind", "dtype", "layout")
    _fields = __match_args__

    kind: str
    dtype: ScalarType
    layout: str | None

    def __init__(self, kind: str, dtype: ScalarType, layout: str | None = None) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "layout", layout)

    @property
    def mlir(self) -> Attribute:
        from nova.ir.gpu.mma_ops import MMAMatrixType

        rows, cols = {"a": (MMA_SHAPE[0], MMA_SHAPE[2]), "b": (MMA_SHAPE[2], MMA_SHAPE[1]),
                      "c": (MMA_SHAPE[0], MMA_SHAPE[1])}[self.kind]
        return MMAMatrixType((rows, cols), self.dtype.mlir, f"{self.kind.upper()}Op")

    def __str__(self) -> str:
        layout = f", {self.layout}-major" if self.layout else ""
        return f"mma fragment ({self.kind}, {self.dtype}{layout})"


class WgmmaAccType(Record):
    """A warpgroup's float32 wgmma accumulator for an m64nNk16 tile (`nova.wgmma`): each of
    the 128 threads holds N / 2 elements at the positions the PTX ISA gives (see
    nova.ir.dialects.nvvm_wgmma). The MLIR type is `!llvm.struct<(f32, ...)>` with N / 2
    members, as upstream's NVVM ops type it."""

    __match_args__ = ("n",)
    _fields = __match_args__

    n: int

    def __init__(self, n: int) -> None:
        object.__setattr__(self, "n", n)

    @property
    def mlir(self) -> Attribute:
        from xdsl.dialects.builtin import f32
        from xdsl.dialects.llvm import LLVMStructType

        return LLVMStructType.from_type_list([f32] * (self.n // 2))

    def __str__(self) -> str:
        return f"wgmma accumulator (64x{self.n}, float32)"


FRAGMENT_TYPES = (FragmentType, WgmmaAccType)
"""Types of values held in registers across statements (fragment variables, nova.lang.fragvars)."""

NovaType = ScalarType | ArrayType
"""The types of kernel parameters (signatures)."""
ValueType = ScalarType | ArrayType | FragmentType | WgmmaAccType
"""The types of values inside a kernel."""


def from_numpy_dtype(dtype: Any) -> ScalarType | None:
    """The scalar type of a NumPy dtype, or None when kernels do not support it."""
    dt = np.dtype(dtype)
    ml = _ml_dtypes(False)
    if ml is not None and dt == np.dtype(ml.bfloat16):
        return bfloat16
    if dt == np.bool_:
        return bool_
    return BY_NAME.get(dt.name)


def resolve_dtype(obj: Any) -> ScalarType | None:
    """A scalar type from a Nova type, NumPy dtype/scalar class or dtype string; else None."""
    if isinstance(obj, ScalarType):
        return obj
    if obj is bool:
        return bool_
    if obj is int:
        return int64
    if obj is float:
        return float64
    try:
        return from_numpy_dtype(obj)
    except TypeError:
        return None


def _int_promote(a: ScalarType, b: ScalarType) -> ScalarType:
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return BY_NAME[f"uint{max(a.bits, b.bits)}"]


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The common type of two typed operands (module docstring rules)."""
    if a is b:
        return a
    if a.is_bool:
        return int64 if b.is_bool else b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        if a.bits == b.bits:  # float16 with bfloat16
            return float32
        return a if a.bits > b.bits else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    return _int_promote(a, b)


def literal_type(value: Any) -> ScalarType:
    """The type of a Python literal standing alone."""
    if isinstance(value, bool | np.bool_):
        return bool_
    if isinstance(value, np.generic):
        found = from_numpy_dtype(value.dtype)
        if found is not None:
            return found
    if isinstance(value, int | np.integer):
        return int64
    return float64


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{text[:60]}..." if len(text) > 60 else text
