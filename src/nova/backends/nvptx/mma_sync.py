"""`nvgpu.mma.sync` and `nvgpu.ldmatrix` on NVPTX: the LLVM NVPTX intrinsics upstream's
`--convert-nvgpu-to-nvvm` + `mlir-translate` produce.

An n-D vector is a flat row-major LLVM vector here (types.register_vector_type): a
`vector<4x2xf16>` is `<8 x half>`, register i being lanes 2i and 2i + 1.

- ldmatrix -> `llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<N>[.trans].b16.p3(ptr addrspace(3))`
  at the address of `memref[indices]` (each lane its own), returning N i32 registers (one i32
  for N = 1), each bitcast to the row's `<32/w x T>` and concatenated. PTX has only the b16
  form; 8- and 32-bit elements move the same 32 bits per register, as upstream does.
- mma.sync m16n8k16 f16 -> `llvm.nvvm.mma.m16n8k16.row.col.f32.f32` (A: 4 x <2 x half>, B: 2 x
  <2 x half>, C: 4 x float -> {4 x float}) or `...row.col.f16.f16` (C: 2 x <2 x half> ->
  {2 x <2 x half>}), i.e. `mma.sync.aligned.m16n8k16.row.col.{f32.f16.f16.f32|f16.f16.f16.f16}`.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.mma_sync_common import check
from nova.backends.llvm.target import Handler
from nova.ir.dialects.nvgpu_mma import LdMatrixOp, MmaSyncOp


def _mask(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(T.I32, len(indices)), indices)


def split(b: ir.IRBuilder, flat: ir.Value, width: int) -> list[ir.Value]:
    """The registers (`<width x T>` each, or scalars for width 1) of a flat vector."""
    count = flat.type.count // width
    if width == 1:
        return [b.extract_element(flat, ir.Constant(T.I32, i)) for i in range(count)]
    return [b.shuffle_vector(flat, flat, _mask(list(range(i * width, (i + 1) * width))))
            for i in range(count)]


def concat(b: ir.IRBuilder, parts: list[ir.Value], flat_type: ir.VectorType) -> ir.Value:
    """The flat vector of registers `parts` (vectors or scalars)."""
    out: ir.Value = ir.Constant(flat_type, ir.Undefined)
    lane = 0
    for part in parts:
        elems = ([part] if not isinstance(part.type, ir.VectorType)
                 else [b.extract_element(part, ir.Constant(T.I32, i))
                       for i in range(part.type.count)])
        for elem in elems:
            out = b.insert_element(out, elem, ir.Constant(T.I32, lane))
            lane += 1
    return out


def lower_ldmatrix(fe: FunctionEmitter, op: Operation) -> None:
    check(fe, op)
    assert isinstance(op, LdMatrixOp)
    b = fe.builder
    desc = fe.lookup_memref(op.srcMemref)
    ptr = desc.element_pointer(b, [fe.lookup(v) for v in op.indices])
    tiles = op.tiles
    trans = ".trans" if op.transposed else ""
    name = (f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{tiles}{trans}.b16"
            f".p{ptr.type.addrspace}")
    ret = T.I32 if tiles == 1 else ir.LiteralStructType([T.I32] * tiles)
    fn = fe.module.declare(name, ir.FunctionType(ret, [ptr.type]))
    result = b.call(fn, [ptr])
    words = [result] if tiles == 1 else [b.extract_value(result, i) for i in range(tiles)]
    flat = fe.lower_type(op.res.type)
    assert isinstance(flat, ir.VectorType)
    per = flat.count // tiles
    row_type = ir.VectorType(flat.element, per)
    fe.bind(op.res, concat(b, [b.bitcast(w, row_type) for w in words], flat))


def lower_mma_sync(fe: FunctionEmitter, op: Operation) -> None:
    check(fe, op)
    assert isinstance(op, MmaSyncOp)
    b = fe.builder
    a, bm, c = (fe.lookup(v) for v in op.operands)
    f32_acc = c.type.element == T.F32
    regs = [*split(b, a, 2), *split(b, bm, 2), *split(b, c, 1 if f32_acc else 2)]
    acc = "f32" if f32_acc else "f16"
    out_reg = T.F32 if f32_acc else ir.VectorType(T.F16, 2)
    ret = ir.LiteralStructType([out_reg] * (4 if f32_acc else 2))
    fn = fe.module.declare(f"llvm.nvvm.mma.m16n8k16.row.col.{acc}.{acc}",
                           ir.FunctionType(ret, [r.type for r in regs]))
    result = b.call(fn, regs)
    parts = [b.extract_value(result, i) for i in range(len(ret.elements))]
    fe.bind(op.res, concat(b, parts, c.type))


HANDLERS: dict[str, Handler] = {
    "nvgpu.ldmatrix": lower_ldmatrix,
    "nvgpu.mma.sync": lower_mma_sync,
}
