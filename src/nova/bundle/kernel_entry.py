"""A device kernel's manifest entry: its argument types and its expanded parameters (`TypeSpec`,
`KernelParam`, `Kernel`), all a launch needs of the .nova format.

Part of the manifest schema of `nova.bundle.format` (docs/bundle-format.md), which re-exports
them; kept apart so that a cached Python kernel's first call, which reads one kernel entry from
the image cache, does not import the whole schema (its enum, the manifest's classes and
validators: about 0.3 ms of that call).
"""

from __future__ import annotations

from nova.records import Record


class TypeSpec(Record):
    """An argument/result type of an entry point or kernel as the runtime needs it.

    kind: 'scalar', 'memref' or 'vector' (kernel arguments only). dtype: 'i1','i8','i16','i32',
    'i64','index','f16','bf16','f32','f64' (a memref's or vector's element type). shape: memref
    sizes, -1 for dynamic; a vector's (N,). mlir: the type's MLIR spelling, for messages.
    """

    __match_args__ = ("kind", "dtype", "mlir", "shape")
    _fields = __match_args__

    kind: str
    dtype: str
    mlir: str
    shape: tuple[int, ...]

    def __init__(self, kind: str, dtype: str, mlir: str, shape: tuple[int, ...] = ()) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "mlir", mlir)
        object.__setattr__(self, "shape", shape)

    @property
    def rank(self) -> int:
        return len(self.shape)


class KernelParam(Record):
    """One expanded kernel parameter (a memref contributes 3 + 2*rank of them, a vector one).

    `align` is the value's alignment in bytes (a vector's is LLVM's, e.g. 16 for `<3 x i32>`);
    0 means not recorded (manifests written before the field existed, hand-built records), read
    as `alignment`'s natural default."""

    __match_args__ = ("llvm_type", "size", "arg_index", "align")
    _fields = __match_args__

    llvm_type: str  # 'ptr', 'i64', 'i32', 'float', '<3 x i32>', ...
    size: int  # bytes (a vector's LLVM alloc size: `<3 x i32>` takes 16)
    arg_index: int  # which MLIR kernel argument it comes from
    align: int

    def __init__(self, llvm_type: str, size: int, arg_index: int, align: int = 0) -> None:
        object.__setattr__(self, "llvm_type", llvm_type)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "arg_index", arg_index)
        object.__setattr__(self, "align", align)

    @property
    def alignment(self) -> int:
        """`align`, or when not recorded the largest power of two dividing `size` (exact for
        every parameter before vectors: pointers, integers and floats are aligned to their
        size)."""
        return self.align or (self.size & -self.size)


class Kernel(Record):
    """One gpu.func kernel of a device module: its MLIR arguments, the expanded parameters the
    launch passes (in order), its static shared memory and whether it uses barriers."""

    __match_args__ = ("name", "args", "params", "static_shared_bytes", "uses_barriers")
    _fields = __match_args__

    name: str
    args: tuple[TypeSpec, ...]
    params: tuple[KernelParam, ...]
    static_shared_bytes: int
    uses_barriers: bool

    def __init__(self, name: str, args: tuple[TypeSpec, ...], params: tuple[KernelParam, ...],
                 static_shared_bytes: int = 0, uses_barriers: bool = False) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "static_shared_bytes", static_shared_bytes)
        object.__setattr__(self, "uses_barriers", uses_barriers)
