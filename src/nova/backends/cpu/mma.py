"""`gpu.subgroup_mma_*` on the CPU device: warp-collective tensor-core ops emulated per lane.

How a fragment's elements are spread over a warp's lanes is opaque to the program, so on the CPU
device every lane holds the whole 16x16 tile, row-major, as one `<256 x T>` vector
(`types.mma_fragment_type`), and the ops become vector code:

- load_matrix: a warp barrier, then each lane reads the tile into its own copy: row r (16
  contiguous elements) from `&memref[i, j] + r * leadDimension`; `transpose` means the memory
  holds the tile column-major, so the copy is transposed (one shufflevector).
- store_matrix: a warp barrier, lane 0 of the warp writes the tile (transposed back under
  `transpose`), another warp barrier. Only one lane writes: every lane holds identical values,
  and one writer makes the store a single ordinary write sequence (no write-write race between
  lanes to reason about, 1/32 of the memory traffic). The barriers make the emulation as
  collective as `wmma.*.sync.aligned` is: no lane of the warp stores before every lane finished
  the loads that precede the store (e.g. `C = load(out); D = A*B + C; store(D, out)`), and every
  lane sees the stored tile afterwards. They also make kernels that use these ops run as fibers
  (cpu_target.needs_fibers), since plain loops over threads would run a whole lane first.
- compute: `D[i][j] = C[i][j] + sum_k A[i][k] * B[k][j]`, summed in k order in f32 (f16 inputs
  are widened; f16 x f16 products are exact in f32); an f16 accumulator is widened, summed in f32
  and rounded to f16 once at the end. a_transpose/b_transpose only name the layout the fragment
  was loaded with (PTX requires them to match the loads' layouts), and the copies here are
  already logical matrices, so they change nothing. Difference from the GPU: tensor cores do not
  promise this summation order or IEEE rounding of intermediate sums; results agree exactly
  whenever the sums are exact in f32 (e.g. small integers), else within f32 rounding.
- constant_matrix: a splat; elementwise: one vector op (mma_common.elementwise).
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.cpu.fibers import I32, I64, THREAD_CTX, State, load_field
from nova.backends.cpu.fibers import T as ThreadField
from nova.backends.cpu.gpu_ops import runtime, tctx
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.mma_common import (
    check_supported,
    elementwise,
    is_transposed,
    lead_dimension,
)
from nova.backends.llvm.target import Handler
from nova.ir.gpu.mma_ops import MMAElementwiseOpAttr

N = T.MMA_TILE
"""Rows and columns of a tile."""

MMA_FIBER_OPS = frozenset({"gpu.subgroup_mma_load_matrix", "gpu.subgroup_mma_store_matrix"})
"""The ops that wait at warp barriers (so their kernels must run as fibers)."""


def _mask(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(T.I32, len(indices)), indices)


TRANSPOSE = [c * N + r for r in range(N) for c in range(N)]
"""Shuffle mask: element (r, c) of the result is element (c, r) of the source."""


def _warp_barrier(fe: FunctionEmitter) -> None:
    fe.builder.call(runtime(fe).wait, [tctx(fe), I32(State.WAIT_WARP)])


def _row_pointers(fe: FunctionEmitter, op: Operation, memref_operand: int) -> list[ir.Value]:
    """Addresses of the tile's 16 rows: &memref[indices] + r * leadDimension."""
    desc = fe.lookup_memref(op.operands[memref_operand])
    indices = [fe.lookup(v) for v in op.operands[memref_operand + 1:]]
    base = desc.element_pointer(fe.builder, indices)
    ld = lead_dimension(op)
    return [fe.builder.gep(base, [I64(r * ld)], source_etype=desc.element_type) if r else base
            for r in range(N)]


def _concat(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    """Concatenate equal-length vectors (a power-of-two count) by a shufflevector tree."""
    while len(parts) > 1:
        width = parts[0].type.count
        mask = _mask(list(range(2 * width)))
        parts = [b.shuffle_vector(parts[i], parts[i + 1], mask) for i in range(0, len(parts), 2)]
    return parts[0]


def lower_load_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    b = fe.builder
    elem = T.scalar_type(op.results[0].type.element_type)  # type: ignore[attr-defined]
    row_type = ir.VectorType(elem, N)
    _warp_barrier(fe)
    rows = []
    for ptr in _row_pointers(fe, op, 0):
        row = b.load(ptr, typ=row_type)
        row.align = T.element_size_llvm(elem)
        rows.append(row)
    tile = _concat(b, rows)
    if is_transposed(op):
        tile = b.shuffle_vector(tile, tile, _mask(TRANSPOSE))
    fe.bind(op.results[0], tile)


def lower_store_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    b = fe.builder
    tile = fe.lookup(op.operands[0])
    if is_transposed(op):
        tile = b.shuffle_vector(tile, tile, _mask(TRANSPOSE))
    elem = tile.type.element
    _warp_barrier(fe)
    linear = load_field(b, THREAD_CTX, tctx(fe), ThreadField.LINEAR)
    lane = b.and_(linear, I64(31))
    with b.if_then(b.icmp_unsigned("==", lane, I64(0))):
        for r, ptr in enumerate(_row_pointers(fe, op, 1)):
            row = b.shuffle_vector(tile, tile, _mask(list(range(r * N, (r + 1) * N))))
            store = b.store(row, ptr)
            store.align = T.element_size_llvm(elem)
    _warp_barrier(fe)


def _broadcast(b: ir.IRBuilder, tile: ir.Value, pick: list[int]) -> ir.Value:
    """The vector whose element e is tile[pick[e]] (the second shuffle operand is unused)."""
    return b.shuffle_vector(tile, tile, _mask(pick))


def lower_compute(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    b = fe.builder
    wide = ir.VectorType(T.F32, N * N)
    a, bm, c = (fe.lookup(v) for v in op.operands)
    a, bm = b.fpext(a, wide), b.fpext(bm, wide)
    acc = c if c.type == wide else b.fpext(c, wide)
    for k in range(N):
        col = _broadcast(b, a, [i * N + k for i in range(N) for _ in range(N)])
        row = _broadcast(b, bm, [k * N + j for _ in range(N) for j in range(N)])
        acc = b.fadd(acc, b.fmul(col, row))
    fe.bind(op.results[0], acc if c.type == wide else b.fptrunc(acc, c.type))


def lower_constant_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    b = fe.builder
    value = fe.lookup(op.operands[0])
    llty = fe.lower_type(op.results[0].type)
    one = b.insert_element(ir.Constant(ir.VectorType(value.type, 1), ir.Undefined), value,
                           I32(0))
    fe.bind(op.results[0], b.shuffle_vector(one, one, _mask([0] * llty.count)))


def lower_elementwise(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    kind = op.properties["opType"]
    assert isinstance(kind, MMAElementwiseOpAttr)
    args = [fe.lookup(v) for v in op.operands]
    fe.bind(op.results[0], elementwise(fe.builder, kind.data, args,
                                       fe.lower_type(op.results[0].type)))


HANDLERS: dict[str, Handler] = {
    "gpu.subgroup_mma_load_matrix": lower_load_matrix,
    "gpu.subgroup_mma_store_matrix": lower_store_matrix,
    "gpu.subgroup_mma_compute": lower_compute,
    "gpu.subgroup_mma_constant_matrix": lower_constant_matrix,
    "gpu.subgroup_mma_elementwise": lower_elementwise,
}
