"""The warp-level tensor-core ops of MLIR's `nvgpu` dialect whose register layout is known:
`nvgpu.mma.sync` and `nvgpu.ldmatrix`.

Unlike `gpu.subgroup_mma_*` (opaque fragments), these ops hand each lane a small vector whose
elements sit at positions the PTX ISA documents, so a kernel can compute on the accumulator
fragments in registers (e.g. the online softmax of flash attention) and reuse one mma's result
as the next one's A operand.

- `%d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>,
  vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>`: PTX `mma.sync.aligned.m16n8k16.row.col`,
  D = A x B + C for the warp's 16x16 A, 16x8 B and 16x8 C/D tiles. With lane `l`, `g = l / 4`,
  `t = l % 4`: A register i holds row `g + 8 * (i % 2)`, columns `2t + 8 * (i / 2) + {0, 1}`;
  B register i holds rows (k) `2t + 8 * i + {0, 1}` of column `g`; C/D register i holds row
  `g + 8 * i`, columns `2t + {0, 1}` (f32 or f16 accumulator, same positions).
- `%r = nvgpu.ldmatrix %m[%i, %j] {numTiles = 4 : i32, transpose = false} : memref<..xf16,
  #gpu.address_space<workgroup>> -> vector<4x2xf16>`: PTX `ldmatrix.sync.aligned.m8n8.x4.b16`.
  Each lane supplies the address `&m[%i, %j]` of one row of an 8x8 tile (lanes 8j..8j+7 the rows
  of tile j); register j of lane `l` receives row `l / 4`, elements `2 (l % 4) + {0, 1}` of tile
  j (`transpose`: elements (`2 (l % 4) + {0, 1}`, `l / 4`), i.e. the tile transposed).

Syntax, attribute names and verifier messages are MLIR 22's (`mlir-opt` is the oracle); upstream
accepts other shapes and element types (tf32, i8, f64 ...), which parse and verify here too.
What the backends lower is checked by `mma_sync_lowering_error` / `ldmatrix_lowering_error` and
reported at the op: mma.sync m16n8k16 with f16 A/B and C = D of f16 or f32; ldmatrix of 16-bit
elements (any numTiles, transposed or not) or of 8/32-bit ones untransposed.
"""

from __future__ import annotations

from typing import Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    UnitAttr,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AddressSpace,
    AddressSpaceAttr,
    UnprefixedVerifyError,
    parse_memref_read,
    print_attr_dict,
    print_memref_read,
    split_properties,
)

WARP_SIZE = 32
SHARED_ADDRESS_SPACE = 3
"""NVGPUDialect::kSharedMemoryAddressSpace."""

MMA_SHAPE = (16, 8, 16)
"""The one mma.sync shape the backends lower."""


def _bit_width(ty: Attribute) -> int | None:
    width = getattr(ty, "bitwidth", None)
    if isinstance(ty, IntegerType):
        return ty.width.data
    return width if isinstance(width, int) else None


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """`%d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [m, n, k]} : (A, B, C) -> D`."""

    name = "nvgpu.mma.sync"
    matrixA = operand_def(VectorType)
    matrixB = operand_def(VectorType)
    matrixC = operand_def(VectorType)
    mmaShape = prop_def(ArrayAttr)
    tf32Enabled = opt_prop_def(UnitAttr)
    res = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue,
                 shape: tuple[int, int, int] = MMA_SHAPE,
                 result_type: Attribute | None = None) -> None:
        super().__init__(operands=[a, b, c], result_types=[result_type or c.type],
                         properties={"mmaShape": ArrayAttr([IntegerAttr(d, i64)
                                                            for d in shape])})

    def shape(self) -> list[int]:
        """mmaShape as integers."""
        return [int(d.value.data) if isinstance(d, IntegerAttr) else -1
                for d in self.mmaShape.data]

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        names = parser.parse_comma_separated_list(Parser.Delimiter.PAREN,
                                                  parser.parse_unresolved_operand)
        attrs = dict(parser.parse_optional_attr_dict())
        props = split_properties(attrs, ("mmaShape", "tf32Enabled"))
        parser.parse_punctuation(":")
        pos = parser.pos
        types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        res_type = parser.parse_type()
        if len(names) != 3 or len(types) != 3:
            parser.raise_error(f"'{cls.name}' expects 3 operands and 3 operand types", pos,
                               parser.pos)
        operands = [parser.resolve_operand(n, t) for n, t in zip(names, types, strict=True)]
        return cls.create(operands=operands, result_types=[res_type], properties=props,
                          attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(")")
        props: dict[str, Attribute] = {"mmaShape": self.mmaShape}
        if self.tf32Enabled is not None:
            props["tf32Enabled"] = self.tf32Enabled
        print_attr_dict(printer, {**props, **self.attributes})
        printer.print_string(" : (")
        printer.print_list([v.type for v in self.operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        shape = self.shape()
        if len(shape) != 3:
            raise VerifyException(f"'{self.name}' op mmaShape must have 3 elements (m, n, k)")
        a, b, c = (v.type for v in self.operands)
        assert isinstance(a, VectorType) and isinstance(b, VectorType)
        assert isinstance(c, VectorType)
        elem = a.element_type
        width = _bit_width(elem)
        if width == 64 and not isinstance(elem, IntegerType):
            shape_k, per_a = 4, 1
        elif width in (4, 8, 16, 32) and (not isinstance(elem, IntegerType) or width in (4, 8)):
            shape_k, per_a = 128 // width, 32 // width
        else:
            raise UnprefixedVerifyError("expected input data type (i4,i8,f16,bf16,tf32,f64) "
                                        f"supported by {self.name}")
        for which, ty in (("A", a), ("B", b), ("C", c)):
            if ty.get_num_dims() != 2:
                raise UnprefixedVerifyError(f"matrix{which} must be 2 dimensional vector")
        self._check_sizes(shape, a, b, c, elem)
        m, n, k = shape
        tiles = (m // 8, n // 8, k // shape_k)
        expected = (("A", a, (tiles[0] * tiles[2], per_a)), ("B", b, (tiles[2] * tiles[1], per_a)),
                    ("C", c, (tiles[0] * tiles[1], 2)))
        for which, ty, (rows, cols) in expected:
            if ty.get_shape() != (rows, cols):
                raise VerifyException(f"'{self.name}' op expected matrix {which} to be shaped "
                                      f"({rows} x {cols})")

    def _check_sizes(self, shape: list[int], a: VectorType, b: VectorType, c: VectorType,
                     elem: Attribute) -> None:
        m, n, k = shape
        for which, ty, want in (("A", a, m * k), ("B", b, k * n), ("C", c, m * n)):
            rows, cols = ty.get_shape()
            if rows * cols * WARP_SIZE != want:
                raise VerifyException(f"'{self.name}' op expected {want} warp-wide matrix "
                                      f"{which} elements")
        if self.tf32Enabled is not None and not isinstance(elem, Float32Type):
            raise VerifyException(f"'{self.name}' op expected tf32 tensor cores only for F32 "
                                  "operands")


def _is_shared(ty: MemRefType) -> bool:
    """NVGPUDialect::hasSharedMemoryAddressSpace: memory space 3 or
    #gpu.address_space<workgroup>."""
    space = ty.memory_space
    if isinstance(space, AddressSpaceAttr):
        return space.data == AddressSpace.WORKGROUP
    return isinstance(space, IntegerAttr) and int(space.value.data) == SHARED_ADDRESS_SPACE


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`%r = nvgpu.ldmatrix %m[%i, ..] {numTiles = N : i32, transpose = B} : memref<..> ->
    vector<Nx..>`."""

    name = "nvgpu.ldmatrix"
    srcMemref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    numTiles = prop_def(IntegerAttr)
    transpose = prop_def(IntegerAttr)
    res = result_def(VectorType)

    def __init__(self, src: SSAValue, indices: list[SSAValue], num_tiles: int, transpose: bool,
                 result_type: Attribute) -> None:
        super().__init__(operands=[src, indices], result_types=[result_type],
                         properties={"numTiles": IntegerAttr(num_tiles, i32),
                                     "transpose": BoolAttr(transpose, IntegerType(1))})

    @property
    def tiles(self) -> int:
        return int(self.numTiles.value.data)

    @property
    def transposed(self) -> bool:
        return bool(self.transpose.value.data)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands, res_type, props, attrs = parse_memref_read(parser, ("numTiles", "transpose"))
        return cls.create(operands=operands, result_types=[res_type], properties=props,
                          attributes=attrs)

    def print(self, printer: Printer) -> None:
        print_memref_read(printer, self.srcMemref, self.indices,
                          {"numTiles": self.numTiles, "transpose": self.transpose,
                           **self.attributes}, self.res.type)

    def verify_(self) -> None:
        if not isinstance(self.numTiles.type, IntegerType) or self.numTiles.type.width.data != 32:
            raise VerifyException(f"'{self.name}' op attribute 'numTiles' failed to satisfy "
                                  "constraint: 32-bit signless integer attribute")
        if self.transpose.type != IntegerType(1):
            raise VerifyException(f"'{self.name}' op attribute 'transpose' failed to satisfy "
                                  "constraint: bool attribute")
        src = self.srcMemref.type
        res = self.res.type
        assert isinstance(src, MemRefType) and isinstance(res, VectorType)
        if src.element_type != res.element_type:
            raise VerifyException(f"'{self.name}' op failed to verify that srcMemref and res have "
                                  "same element type")
        width = _bit_width(res.element_type) or 0
        if not _is_shared(src):
            raise UnprefixedVerifyError(
                "expected nvgpu.ldmatrix srcMemref must have a memory space attribute of "
                f"IntegerAttr({SHARED_ADDRESS_SPACE}) or gpu::AddressSpaceAttr(Workgroup)")
        if width > 32:
            raise UnprefixedVerifyError("nvgpu.ldmatrix works for 32b or lower")
        if self.transposed and width != 16:
            raise UnprefixedVerifyError("nvgpu.ldmatrix transpose works only at 16b granularity")
        shape = res.get_shape()
        if len(shape) != 2:
            raise UnprefixedVerifyError("results must be 2 dimensional vector")
        if width == 0 or shape[1] != 32 // width:
            raise UnprefixedVerifyError(f"expected vector register shape[1] = "
                                        f"{32 // width if width else 0}")
        if shape[0] != self.tiles:
            raise UnprefixedVerifyError("expected vector register shape[0] and numTiles to "
                                        "match")


# ---- what the LLVM lowering supports ---------------------------------------------------------

def mma_sync_lowering_error(op: MmaSyncOp) -> str | None:
    """Why the backends cannot lower this mma.sync (None when they can)."""
    if op.shape() != list(MMA_SHAPE) or op.tf32Enabled is not None:
        return (f"mmaShape {op.shape()} is not supported (only [16, 8, 16] with f16 "
                "operands)")
    a, b, c = (v.type for v in op.operands)
    assert isinstance(a, VectorType) and isinstance(b, VectorType)
    assert isinstance(c, VectorType)
    if not (isinstance(a.element_type, Float16Type) and isinstance(b.element_type, Float16Type)):
        return f"operands of {a.element_type} are not supported (only f16 A and B)"
    if not isinstance(c.element_type, Float16Type | Float32Type):
        return f"accumulators of {c.element_type} are not supported (only f16 or f32)"
    if op.res.type != c:
        return f"result type {op.res.type} differs from the accumulator's {c}"
    return None


def ldmatrix_lowering_error(op: LdMatrixOp) -> str | None:
    """Why the backends cannot lower this ldmatrix (None when they can)."""
    src = op.srcMemref.type
    assert isinstance(src, MemRefType)
    if len(op.indices) != src.get_num_dims() or src.get_num_dims() < 1:
        return "expected one index per dimension of a memref of rank >= 1"
    if op.tiles not in (1, 2, 4):
        return f"numTiles = {op.tiles} is not supported (1, 2 or 4)"
    return None


NVGPU_MMA_OPS: tuple[type[IRDLOperation], ...] = (MmaSyncOp, LdMatrixOp)
"""The ops of this module, for the `nvgpu` dialect's op list (nova.ir.context)."""

__all__ = ["MMA_SHAPE", "NVGPU_MMA_OPS", "LdMatrixOp", "MmaSyncOp",
           "ldmatrix_lowering_error", "mma_sync_lowering_error"]
