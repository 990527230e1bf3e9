"""`nvgpu.ldmatrix` and `nvgpu.mma.sync` on the CPU device: warp collectives with PTX's exact
lane layouts (see nova.ir.dialects.nvgpu_mma), so a kernel that computes on the fragments in
registers gets the same values on the CPU device as on a GPU.

Each lane holds its own registers (a flat row-major vector, types.register_vector_type); the
lanes of a warp exchange them through the block context's per-thread slots (cpu/fibers.py),
between two warp barriers, as `gpu.shuffle` does:

- ldmatrix: each lane writes its row address `&memref[indices]` to its slot; after the barrier
  lane l reads, for tile j, row `l / 4` of the tile (the address of lane `8j + l / 4`) at 32-bit
  word `l % 4`, or under `transpose` the 16-bit elements at column `l / 4` of rows `2 (l % 4)` and
  `2 (l % 4) + 1` (the addresses of lanes `8j + 2 (l % 4) + {0, 1}`).
- mma.sync m16n8k16: each lane writes its A (16 bytes) and B (8 bytes) registers to its slot;
  after the barrier it reads rows g and g + 8 of A (from lanes 4g .. 4g + 3) and columns 2t and
  2t + 1 of B (lanes 8t .. 8t + 7) and computes its four D elements (rows g, g + 8, columns 2t,
  2t + 1): `C + sum_k A * B` in k order in f32 (f16 products are exact in f32; an f16
  accumulator is widened and rounded to f16 once at the end). Tensor cores do not promise this
  summation order, so results agree exactly whenever the sums are exact in f32, else within f32
  rounding, as for the WMMA emulation (cpu/mma.py).

PTX requires every lane of the warp to execute these ops (`.sync.aligned`); in a partial last
warp the CPU device substitutes the calling lane for a source lane that does not exist.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.cpu import gpu_ops as cpu
from nova.backends.cpu.fibers import I32, I64, PTR, State
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.mma_sync_common import check
from nova.backends.llvm.target import Handler
from nova.ir.dialects.nvgpu_mma import LdMatrixOp, MmaSyncOp

B_OFFSET = 16
"""Byte offset of the B registers in a lane's slot (after A's 16 bytes)."""

FIBER_OPS = frozenset({"nvgpu.ldmatrix", "nvgpu.mma.sync"})
"""The ops that wait at warp barriers (so their kernels must run as fibers)."""


def _mask(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(T.I32, len(indices)), indices)


class _Warp:
    """The calling lane's position in its warp and the slot of any lane."""

    def __init__(self, fe: FunctionEmitter) -> None:
        self.fe = fe
        self.linear, self.lane, self.base, self.lanes = cpu._lane_info(fe)
        b = fe.builder
        self.group = b.lshr(self.lane, I64(2))
        self.quad = b.and_(self.lane, I64(3))

    def slot(self, relative: ir.Value, offset: int = 0) -> ir.Value:
        """Byte address of the slot of lane `relative` of this warp (+ offset): the calling
        lane's own when that lane does not exist (partial warp)."""
        b = self.fe.builder
        exists = b.icmp_unsigned("<", relative, self.lanes)
        src = b.add(self.base, b.select(exists, relative, self.lane))
        ptr = cpu._slot(self.fe, src)
        return b.gep(ptr, [I64(offset)], source_etype=T.I8) if offset else ptr

    def wait(self) -> None:
        cpu._wait(self.fe, State.WAIT_WARP)


def _concat(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    """Concatenate equal-length vectors (a power-of-two count)."""
    while len(parts) > 1:
        width = parts[0].type.count
        parts = [b.shuffle_vector(parts[i], parts[i + 1], _mask(list(range(2 * width))))
                 for i in range(0, len(parts), 2)]
    return parts[0]


def lower_ldmatrix(fe: FunctionEmitter, op: Operation) -> None:
    check(fe, op)
    assert isinstance(op, LdMatrixOp)
    b = fe.builder
    desc = fe.lookup_memref(op.srcMemref)
    own = desc.element_pointer(b, [fe.lookup(v) for v in op.indices])
    flat = fe.lower_type(op.res.type)
    assert isinstance(flat, ir.VectorType)
    per = flat.count // op.tiles
    row_type = ir.VectorType(flat.element, per)
    warp = _Warp(fe)
    b.store(own, warp.slot(warp.lane))
    warp.wait()
    rows = []
    for j in range(op.tiles):
        if op.transposed:
            elems = []
            for h in range(2):
                source = b.add(I64(8 * j + h), b.shl(warp.quad, I64(1)))
                row = b.load(warp.slot(source), typ=PTR)
                elem = b.load(b.gep(row, [warp.group], source_etype=flat.element),
                              typ=flat.element)
                elem.align = 2
                elems.append(elem)
            value: ir.Value = ir.Constant(row_type, ir.Undefined)
            for h, elem in enumerate(elems):
                value = b.insert_element(value, elem, I32(h))
        else:
            row = b.load(warp.slot(b.add(I64(8 * j), warp.group)), typ=PTR)
            word = b.load(b.gep(row, [b.shl(warp.quad, I64(2))], source_etype=T.I8), typ=T.I32)
            word.align = T.element_size_llvm(flat.element)
            value = b.bitcast(word, row_type)
        rows.append(value)
    warp.wait()
    fe.bind(op.res, rows[0] if len(rows) == 1 else _concat(b, rows))


def _gather(b: ir.IRBuilder, warp: _Warp, lanes: list[ir.Value], offset: int,
            vty: ir.VectorType) -> ir.Value:
    """The `vty` registers of `lanes` (relative lane numbers), concatenated."""
    loads = []
    for lane in lanes:
        value = b.load(warp.slot(lane, offset), typ=vty)
        value.align = 2
        loads.append(value)
    return _concat(b, loads)


def lower_mma_sync(fe: FunctionEmitter, op: Operation) -> None:
    check(fe, op)
    assert isinstance(op, MmaSyncOp)
    b = fe.builder
    a, bm, c = (fe.lookup(v) for v in op.operands)
    warp = _Warp(fe)
    own = warp.slot(warp.lane)
    b.store(a, own).align = 2
    b.store(bm, b.gep(own, [I64(B_OFFSET)], source_etype=T.I8)).align = 2
    warp.wait()
    # A of lanes 4g + q: <8 x half> each (element 2i + h = row g + 8 (i % 2), k = 2q + 8 (i / 2)
    # + h); B of lanes 4n + q for n = 2t, 2t + 1: <4 x half> (element 2i + h = k 2q + 8i + h)
    group4 = b.shl(warp.group, I64(2))
    a_all = _gather(b, warp, [b.add(group4, I64(q)) for q in range(4)], 0, a.type)
    col0 = b.shl(warp.quad, I64(3))
    b_all = _gather(b, warp, [b.add(col0, I64(q)) for q in range(8)], B_OFFSET, bm.type)
    warp.wait()
    a_rows = [b.fpext(b.shuffle_vector(a_all, a_all, _mask(
        [8 * ((k % 8) // 2) + 2 * (2 * (k // 8) + r) + k % 2 for k in range(16)])),
        ir.VectorType(T.F32, 16)) for r in range(2)]
    b_cols = [b.fpext(b.shuffle_vector(b_all, b_all, _mask(
        [16 * n + 4 * ((k % 8) // 2) + 2 * (k // 8) + k % 2 for k in range(16)])),
        ir.VectorType(T.F32, 16)) for n in range(2)]
    out: ir.Value = ir.Constant(c.type, ir.Undefined)
    wide = ir.VectorType(T.F32, 16)
    # an ordered reduction (no reassoc flag): acc + p0 + p1 + ... in k order, as 16 fadds
    reduce = fe.module.declare("llvm.vector.reduce.fadd.v16f32",
                               ir.FunctionType(T.F32, [T.F32, wide]))
    for e in range(4):
        acc = b.extract_element(c, I32(e))
        if acc.type != T.F32:
            acc = b.fpext(acc, T.F32)
        acc = b.call(reduce, [acc, b.fmul(a_rows[e // 2], b_cols[e % 2])])
        if c.type.element != T.F32:
            acc = b.fptrunc(acc, c.type.element)
        out = b.insert_element(out, acc, I32(e))
    fe.bind(op.res, out)


HANDLERS: dict[str, Handler] = {
    "nvgpu.ldmatrix": lower_ldmatrix,
    "nvgpu.mma.sync": lower_mma_sync,
}
