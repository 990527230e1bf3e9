"""Hopper warpgroup MMA (`nova.ir.dialects.nvvm_wgmma`) on the CPU device, with PTX's exact
operand addressing and accumulator layout.

Shared memory addresses. On a GPU, `memref.extract_aligned_pointer_as_index` of a workgroup
memref is its shared memory address, which wgmma matrix descriptors carry (bits 0-13: address
>> 4). The CPU device gives workgroup memrefs addresses in the same kind of window: the block's
dynamic shared memory at 0 .. its size rounded up to 1024, the static workgroup memory after
it (`shared_address`); `host_pointer` maps a window address back. Offsets inside the dynamic
shared memory keep their value modulo 1024, as on NVPTX, where a module using wgmma aligns its
dynamic shared memory (and workgroup attributions) to 1024 bytes: so the swizzle patterns,
functions of address bits 4-9, agree on both devices.

`nvvm.wgmma.mma_async`: every thread computes its own accumulator elements at the op, from the
shared memory the descriptors address (PTX forbids writing those bytes until the wait_group
that retires the MMA, so reading them early is exact), calling one module helper
(`__nova_wgmma_f32`). Thread t of the warpgroup (t = linear id mod 128, warp w = t / 32, lane
l) holds, for the n8 column group i, elements 4i, 4i + 1 at row 16 w + l / 4, columns
8 i + 2 (l % 4) + {0, 1}, and 4i + 2, 4i + 3 at row 16 w + l / 4 + 8. Each element is
`C + sum_k A * B` in k order in f32 (f16/bf16 products are exact in f32); scale-d `zero` drops
C, scale `neg` negates an input.

Descriptor decoding (CUTLASS's GMMA layouts; mode 0 none, 1 128-byte, 2 64-byte, 3 32-byte
swizzle; W = 16, 128, 64, 32 bytes; LBO / SBO the leading / stride byte offsets), for element
(mn, k) of an operand, 16-bit elements:
- K-major (A `row`, B `col`): byte offset (mn % 8) W + (mn / 8) SBO + (k % 8) 2 +
  (k / 8) (LBO without swizzle, else 16);
- MN-major (A `col`, B `row`), E = W / 2 elements per row: (mn % E) 2 + (mn / E) (SBO
  without swizzle, else LBO) + (k % 8) W + (k / 8) (LBO without swizzle, else SBO);
then the address start + offset is swizzled by XOR-ing bits 4.. with bits 7.. (3 bits for 128B,
2 for 64B, 1 for 32B). The base offset field (bits 49-51) is not modelled: the CPU device
computes the pattern from the absolute address, which is what the hardware does when base
offset is 0 (tiles aligned to the pattern's 1024, 512 or 256 bytes, as CUTLASS requires).

fence, commit_group, wait_group and the async proxy fence (`nvvm.fence.proxy`) have nothing
left to order on the CPU device: no-ops.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from nova.backends.cpu import gpu_ops as cpu
from nova.backends.cpu.fibers import BLOCK_CTX, LAUNCH_CTX, B, L, load_field
from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.target import Handler
from nova.backends.llvm.wgmma_common import check, check_fence, transposed
from nova.ir.dialects.nvvm_wgmma import WARPGROUP_SIZE, WGMMAScaleIn, WGMMAScaleOut, WGMMAType

I1, I16, I32, I64, F32 = T.I1, ir.IntType(16), T.I32, T.I64, T.F32
WINDOW_ALIGN = 1024
"""Alignment of the static workgroup memory's window address (after the dynamic memory)."""
HELPER = "__nova_wgmma_f32"
ELEMENT = "__nova_wgmma_element"

FLAG_BF16, FLAG_TRANS_A, FLAG_TRANS_B, FLAG_NEG_A, FLAG_NEG_B, FLAG_SCALE_D = (
    1, 2, 4, 8, 16, 32)


def _c(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _window(fe: FunctionEmitter) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(dynamic shared base, its size rounded up to WINDOW_ALIGN, static workgroup base, the
    dynamic size)."""
    b = fe.builder
    block = cpu.bctx(fe)
    launch = load_field(b, BLOCK_CTX, block, B.LAUNCH)
    dyn = load_field(b, LAUNCH_CTX, launch, L.DYNAMIC_SHARED)
    size = load_field(b, LAUNCH_CTX, launch, L.DYNAMIC_SHARED_BYTES)
    size = b.zext(size, I64) if size.type != I64 else size
    rounded = b.and_(b.add(size, _c(WINDOW_ALIGN - 1)), _c(-WINDOW_ALIGN))
    return dyn, rounded, load_field(b, BLOCK_CTX, block, B.WORKGROUP), size


def lower_extract_aligned_pointer(fe: FunctionEmitter, op: Operation) -> None:
    """The aligned pointer's address: the window address (module docstring) for a workgroup
    memref, the host address otherwise."""
    src = fe.lookup_memref(op.operands[0])
    b = fe.builder
    ty = op.operands[0].type
    addr = b.ptrtoint(src.aligned, I64)
    if isinstance(ty, MemRefType) and T.memory_space_name(ty) in ("workgroup", 3):
        dyn, rounded, static, size = _window(fe)
        from_dyn = b.sub(addr, b.ptrtoint(dyn, I64))
        in_dyn = b.icmp_unsigned("<", from_dyn, size)
        from_static = b.add(b.sub(addr, b.ptrtoint(static, I64)), rounded)
        addr = b.select(in_dyn, from_dyn, from_static)
    fe.bind(op.results[0], addr if T.INDEX == I64 else b.trunc(addr, T.INDEX))


def _no_op(fe: FunctionEmitter, op: Operation) -> None:
    return None


# ---- the helpers (emitted once per module) -----------------------------------------------


def _field(b: ir.IRBuilder, desc: ir.Value, shift: int) -> ir.Value:
    """A 14-bit descriptor field, in bytes (the field holds the value >> 4)."""
    return b.shl(b.and_(b.lshr(desc, _c(shift)), _c(0x3FFF)), _c(4))


def _element_function(module: ir.Module) -> ir.Function:
    """`float elem(i64 desc, i64 mn, i64 k, i1 mn_major, i1 bf16, ptr dyn, i64 dyn_bytes,
    ptr static)`: element (mn, k) of the operand `desc` describes (module docstring)."""
    existing = module.globals.get(ELEMENT)
    if isinstance(existing, ir.Function):
        return existing
    fnty = ir.FunctionType(F32, [I64, I64, I64, I1, I1, T.PTR, I64, T.PTR])
    fn = ir.Function(module, fnty, ELEMENT)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    desc, mn, k, mn_major, bf16, dyn, dyn_bytes, static = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    start, lbo, sbo = _field(b, desc, 0), _field(b, desc, 16), _field(b, desc, 32)
    mode = b.lshr(desc, _c(62))
    none = b.icmp_unsigned("==", mode, _c(0))
    # W: 16 (none), 128 (1), 64 (2), 32 (3)
    width = b.select(none, _c(16), b.lshr(_c(256), mode))
    k_lo, k_hi = b.urem(k, _c(8)), b.udiv(k, _c(8))
    k_major = b.add(b.add(b.mul(b.urem(mn, _c(8)), width), b.mul(b.udiv(mn, _c(8)), sbo)),
                    b.add(b.mul(k_lo, _c(2)), b.mul(k_hi, b.select(none, lbo, _c(16)))))
    per_row = b.lshr(width, _c(1))
    mn_off = b.add(b.mul(b.urem(mn, per_row), _c(2)),
                   b.mul(b.udiv(mn, per_row), b.select(none, sbo, lbo)))
    mn_major_off = b.add(mn_off, b.add(b.mul(k_lo, width),
                                       b.mul(k_hi, b.select(none, lbo, sbo))))
    addr = b.add(start, b.select(mn_major, mn_major_off, k_major))
    # swizzle: bits 4.. ^= bits 7.. (3, 2, 1 bits for modes 1, 2, 3; none for 0)
    bits = b.select(none, _c(0), b.sub(_c(4), mode))
    mask = b.sub(b.shl(_c(1), bits), _c(1))
    addr = b.xor(addr, b.shl(b.and_(b.lshr(addr, _c(7)), mask), _c(4)))
    in_dyn = b.icmp_unsigned("<", addr, dyn_bytes)
    host = b.select(in_dyn, b.gep(dyn, [addr], source_etype=T.I8),
                    b.gep(static, [b.sub(addr, dyn_bytes)], source_etype=T.I8))
    raw = b.load(host, typ=I16)
    raw.align = 2
    as_bf16 = b.bitcast(b.shl(b.zext(raw, I32), ir.Constant(I32, 16)), F32)
    as_f16 = b.fpext(b.bitcast(raw, T.F16), F32)
    b.ret(b.select(bf16, as_bf16, as_f16))
    return fn


class _Loop:
    """`for i in range(start, stop)` in LLVM IR: `with _Loop(b, fn, stop) as i: ...`."""

    def __init__(self, b: ir.IRBuilder, fn: ir.Function, stop: ir.Value,
                 name: str) -> None:
        self.b, self.fn, self.stop, self.name = b, fn, stop, name

    def __enter__(self) -> ir.Value:
        b = self.b
        self.pre = b.block
        self.head = self.fn.append_basic_block(f"{self.name}.head")
        self.body = self.fn.append_basic_block(f"{self.name}.body")
        self.exit = self.fn.append_basic_block(f"{self.name}.exit")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.index = b.phi(I64)
        self.index.add_incoming(_c(0), self.pre)
        b.cbranch(b.icmp_unsigned("<", self.index, self.stop), self.body, self.exit)
        b.position_at_end(self.body)
        return self.index

    def __exit__(self, *exc: object) -> None:
        b = self.b
        self.index.add_incoming(b.add(self.index, _c(1)), b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)


def _helper_function(module: ir.Module) -> ir.Function:
    """`void f(ptr acc, i64 descA, i64 descB, i64 n, i32 flags, i64 t, ptr dyn, i64 dyn_bytes,
    ptr static)`: one m64nNk16 MMA for warpgroup thread t, accumulating into acc[N / 2]."""
    existing = module.globals.get(HELPER)
    if isinstance(existing, ir.Function):
        return existing
    elem = _element_function(module)
    fnty = ir.FunctionType(T.VOID, [T.PTR, I64, I64, I64, I32, I64, T.PTR, I64, T.PTR])
    fn = ir.Function(module, fnty, HELPER)
    fn.linkage = "internal"
    acc, desc_a, desc_b, n, flags, t, dyn, dyn_bytes, static = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arr32, arr16 = ir.ArrayType(F32, 32), ir.ArrayType(F32, 16)
    a_vals, b_col = M.opaque(b, b.alloca(arr32)), M.opaque(b, b.alloca(arr16))

    def flag(bit: int) -> ir.Value:
        return b.icmp_unsigned("!=", b.and_(flags, ir.Constant(I32, bit)), ir.Constant(I32, 0))

    bf16, trans_a, trans_b = flag(FLAG_BF16), flag(FLAG_TRANS_A), flag(FLAG_TRANS_B)
    sign_a = b.select(flag(FLAG_NEG_A), ir.Constant(F32, -1.0), ir.Constant(F32, 1.0))
    sign_b = b.select(flag(FLAG_NEG_B), ir.Constant(F32, -1.0), ir.Constant(F32, 1.0))
    keep_c = flag(FLAG_SCALE_D)
    warp, lane = b.and_(b.lshr(t, _c(5)), _c(3)), b.and_(t, _c(31))
    row0 = b.add(b.mul(warp, _c(16)), b.lshr(lane, _c(2)))
    window = [dyn, dyn_bytes, static]
    with _Loop(b, fn, _c(32), "a") as i:  # A rows row0 and row0 + 8, k = 0 .. 15
        row = b.add(row0, b.mul(b.lshr(i, _c(4)), _c(8)))
        value = b.call(elem, [desc_a, row, b.and_(i, _c(15)), trans_a, bf16, *window])
        b.store(b.fmul(value, sign_a), b.gep(a_vals, [_c(0), i], source_etype=arr32))
    with _Loop(b, fn, b.lshr(n, _c(2)), "col") as j:  # N / 4 columns: group i = j / 2
        col = b.add(b.mul(b.lshr(j, _c(1)), _c(8)),
                    b.add(b.mul(b.and_(lane, _c(3)), _c(2)), b.and_(j, _c(1))))
        with _Loop(b, fn, _c(16), "bk") as k:
            value = b.call(elem, [desc_b, col, k, trans_b, bf16, *window])
            b.store(b.fmul(value, sign_b), b.gep(b_col, [_c(0), k], source_etype=arr16))
        for half in range(2):  # rows row0 (elements 4i + j % 2), row0 + 8 (4i + 2 + j % 2)
            index = b.add(b.mul(b.lshr(j, _c(1)), _c(4)), b.add(_c(2 * half), b.and_(j, _c(1))))
            slot = b.gep(acc, [index], source_etype=F32)
            total = b.select(keep_c, b.load(slot, typ=F32), ir.Constant(F32, 0.0))
            for kk in range(16):
                av = b.load(b.gep(a_vals, [_c(0), _c(16 * half + kk)], source_etype=arr32),
                            typ=F32)
                bv = b.load(b.gep(b_col, [_c(0), _c(kk)], source_etype=arr16), typ=F32)
                total = b.fadd(total, b.fmul(av, bv))
            b.store(total, slot)
    b.ret_void()
    return fn


def lower_mma_async(fe: FunctionEmitter, op: Operation) -> None:
    mma = check(fe, op)
    b = fe.builder
    regs = mma.n // 2
    struct = fe.lookup(mma.inouts)
    buf = fe.alloca(ir.ArrayType(F32, regs))
    for i in range(regs):
        b.store(b.extract_value(struct, i), b.gep(buf, [_c(0), _c(i)],
                                                  source_etype=ir.ArrayType(F32, regs)))
    trans_a, trans_b = transposed(mma)
    flags = ((FLAG_BF16 if mma.types[0] == WGMMAType.BF16 else 0)
             | (FLAG_TRANS_A if trans_a else 0) | (FLAG_TRANS_B if trans_b else 0)
             | (FLAG_NEG_A if WGMMAScaleIn(mma.scaleA.data) == WGMMAScaleIn.NEG else 0)
             | (FLAG_NEG_B if WGMMAScaleIn(mma.scaleB.data) == WGMMAScaleIn.NEG else 0)
             | (FLAG_SCALE_D if WGMMAScaleOut(mma.scaleD.data) == WGMMAScaleOut.ONE else 0))
    linear, _, _, _ = cpu._lane_info(fe)
    t = b.urem(linear, _c(WARPGROUP_SIZE))
    dyn, rounded, static, _ = _window(fe)
    helper = _helper_function(fe.module.module)
    b.call(helper, [buf, fe.lookup(mma.descriptorA), fe.lookup(mma.descriptorB), _c(mma.n),
                    ir.Constant(I32, flags), t, dyn, rounded, static])
    out: ir.Value = ir.Constant(struct.type, ir.Undefined)
    for i in range(regs):
        value = b.load(b.gep(buf, [_c(0), _c(i)], source_etype=ir.ArrayType(F32, regs)),
                       typ=F32)
        out = b.insert_value(out, value, i)
    fe.bind(mma.res, out)


def lower_fence_proxy(fe: FunctionEmitter, op: Operation) -> None:
    """One proxy on the CPU device: nothing to order (the support check still applies)."""
    check_fence(fe, op)


HANDLERS: dict[str, Handler] = {
    "nvvm.fence.proxy": lower_fence_proxy,
    "nvvm.wgmma.fence.aligned": _no_op,
    "nvvm.wgmma.commit.group.sync.aligned": _no_op,
    "nvvm.wgmma.wait.group.sync.aligned": _no_op,
    "nvvm.wgmma.mma_async": lower_mma_async,
    "memref.extract_aligned_pointer_as_index": lower_extract_aligned_pointer,
}
"""The CPU device's wgmma handlers (and the window addresses of workgroup memrefs)."""
