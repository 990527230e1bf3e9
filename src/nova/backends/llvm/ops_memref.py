"""memref dialect handlers: load/store with strided addressing, alloc/alloca/dealloc, dim/rank,
cast/subview/reinterpret_cast/collapse/expand/view views, atomic_rmw, globals, copy.

Views never touch memory: they compute a new `MemRefDescriptor` from the source's fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from llvmlite import ir
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    MemRefType,
    NoneAttr,
    UnrankedMemRefType,
)
from xdsl.ir import Attribute, Operation

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, ModuleEmitter, attr, int_attr, symbol_name
from nova.backends.llvm.target import Handler
from nova.errors import UnsupportedError
from nova.ir.locations import location_of

DYNAMIC = -(2**63)

# MLIR's AtomicRMWKind (alphabetical enum) -> LLVM atomicrmw operation, or None for a CAS loop.
ATOMIC_KINDS: dict[int, tuple[str, str | None]] = {
    0: ("addf", "fadd"), 1: ("addi", "add"), 2: ("andi", "and"), 3: ("assign", "xchg"),
    4: ("maximumf", "fmaximum"), 5: ("maxnumf", "fmax"), 6: ("maxs", "max"), 7: ("maxu", "umax"),
    8: ("minimumf", "fminimum"), 9: ("minnumf", "fmin"), 10: ("mins", "min"), 11: ("minu", "umin"),
    12: ("mulf", None), 13: ("muli", None), 14: ("ori", "or"), 15: ("xori", "xor"),
}


def _indices(fe: FunctionEmitter, op: Operation, start: int) -> list[ir.Value]:
    return [fe.lookup(v) for v in op.operands[start:]]


def element_pointer(fe: FunctionEmitter, op: Operation, memref_index: int, first_index: int,
                    checked: bool = False) -> tuple[ir.Value, M.MemRefDescriptor]:
    """Address of the element an op accesses (memref operand, then index operands). With
    `checked` and the target's `check_bounds` on, each index is first checked against its
    dimension's size (`check_indices`)."""
    desc = fe.lookup_memref(op.operands[memref_index])
    indices = _indices(fe, op, first_index)
    if checked and fe.target.check_bounds:
        check_indices(fe, op, memref_index, desc, indices)
    return desc.element_pointer(fe.builder, indices), desc


CHECKED_OPS = frozenset({"memref.load", "memref.store", "memref.atomic_rmw",
                         "memref.generic_atomic_rmw", "nvgpu.device_async_copy"})
"""The accesses `check_bounds` guards (backends that must prepare a failure path, like the CPU
device's fibers, look for these)."""


def check_indices(fe: FunctionEmitter, op: Operation, memref_index: int,
                  desc: M.MemRefDescriptor, indices: list[ir.Value]) -> None:
    """Branch to the target's `check_fail` unless 0 <= index < size in every dimension (one
    unsigned compare per dimension, so negative indices fail too). Dimensions whose index and
    size are both constants and in bounds emit nothing; the failing path names the first bad
    dimension, its index and size, the op, the memref and the op's source location."""
    b = fe.builder
    checks = [(d, index, size, b.icmp_unsigned("<", index, size))
              for d, (index, size) in enumerate(zip(indices, desc.sizes, strict=True))
              if not _statically_in_bounds(index, size)]
    if not checks:
        return
    ok = checks[0][3]
    for check in checks[1:]:
        ok = b.and_(ok, check[3])
    fail = fe.function.append_basic_block("bounds.fail")
    cont = fe.function.append_basic_block("bounds.ok")
    b.cbranch(ok, cont, fail).set_weights([BOUNDS_OK_WEIGHT, 1])
    b.position_at_end(fail)
    dim, index, size = _first_failure(b, checks)
    summary, fmt = bounds_messages(fe, op, memref_index)
    fe.target.check_fail(fe, op, summary, fmt, [index, dim, size])
    if not b.block.is_terminated:
        b.unreachable()
    b.position_at_end(cont)


BOUNDS_OK_WEIGHT = 1 << 20
"""Branch weight of the in-bounds edge (the failing edge weighs 1): keeps the check's cold path
out of the hot code layout."""


def _statically_in_bounds(index: ir.Value, size: ir.Value) -> bool:
    return (isinstance(index, ir.Constant) and isinstance(size, ir.Constant)
            and 0 <= int(index.constant) < int(size.constant))


def _first_failure(b: ir.IRBuilder, checks: list[tuple[int, ir.Value, ir.Value, ir.Value]]
                   ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(dimension, index, size) of the first failing check, chosen with selects (checked from
    the last dimension back, so the lowest failing one wins)."""
    dim, _, _, _ = checks[-1]
    chosen: list[ir.Value] = [M.const_index(dim), checks[-1][1], checks[-1][2]]
    for d, index, size, in_bounds in reversed(checks[:-1]):
        chosen = [b.select(in_bounds, old, new)
                  for old, new in zip(chosen, (M.const_index(d), index, size), strict=True)]
    return chosen[0], chosen[1], chosen[2]


def bounds_messages(fe: FunctionEmitter, op: Operation, memref_index: int) -> tuple[str, str]:
    """(summary, printf format) of a failed bounds check of `op`. The format takes the index,
    the dimension and the size (three i64, `%lld`); the summary is the static part (for
    targets whose failure report cannot be formatted, like CUDA's __assertfail)."""
    loc = fe.location(op)
    where = f" at {loc.filename}:{loc.line}:{loc.column}" if loc is not None else ""
    hint = op.operands[memref_index].name_hint
    what = f"{op.name} on %{hint}" if hint else op.name
    context = f"({what}{where})"
    escaped = context.replace("%", "%%")
    return (f"memref index out of bounds {context}",
            f"index %lld out of bounds for dimension %lld of size %lld {escaped}")


def _align(desc: M.MemRefDescriptor) -> int:
    return T.element_size(desc.ty.element_type)


def lower_load(fe: FunctionEmitter, op: Operation) -> None:
    ptr, desc = element_pointer(fe, op, 0, 1, checked=True)
    fe.bind(op.results[0], fe.builder.load(ptr, typ=desc.element_type, align=_align(desc)))


def lower_store(fe: FunctionEmitter, op: Operation) -> None:
    ptr, desc = element_pointer(fe, op, 1, 2, checked=True)
    fe.builder.store(fe.lookup(op.operands[0]), ptr, align=_align(desc))


def _alloc_sizes(fe: FunctionEmitter, op: Operation, ty: MemRefType) -> list[ir.Value]:
    dynamic = iter(op.operands)
    return [M.const_index(d) if not T.is_dynamic(d) else fe.lookup(next(dynamic))
            for d in ty.get_shape()]


def lower_alloc(fe: FunctionEmitter, op: Operation) -> None:
    ty = op.results[0].type
    assert isinstance(ty, MemRefType)
    sizes = _alloc_sizes(fe, op, ty)
    elem = T.scalar_type(ty.element_type)
    count = M.num_elements(fe.builder, sizes)
    if op.name == "memref.alloca":
        base = fe.target.stack_alloc(fe, op, elem, count)
    else:
        nbytes = fe.builder.mul(count, M.const_index(T.element_size(ty.element_type)))
        align = int_attr(op, "alignment") or 16
        base = fe.target.alloc(fe, op, nbytes, align)
    space = fe.module.address_space(ty)
    if base.type != ir.PointerType(addrspace=space):
        base = fe.builder.addrspacecast(base, ir.PointerType(addrspace=space))
    desc = M.identity_descriptor(fe.builder, ty, base, sizes)
    if op.name == "memref.alloca":
        desc = _unowned(fe, desc)
    fe.bind(op.results[0], desc)


def _unowned(fe: FunctionEmitter, desc: M.MemRefDescriptor) -> M.MemRefDescriptor:
    """`desc` with the target's marker as its allocated pointer (memory nothing may free:
    stack and global memrefs), when the target has one (`TargetBase.unowned_allocated`)."""
    marker = fe.target.unowned_allocated
    if marker is None:
        return desc
    return replace(desc, allocated=ir.Constant(T.I64, marker).inttoptr(desc.allocated.type))


def lower_dealloc(fe: FunctionEmitter, op: Operation) -> None:
    desc = fe.lookup_memref(op.operands[0])
    fe.target.dealloc(fe, op, desc.allocated)


def lower_dim(fe: FunctionEmitter, op: Operation) -> None:
    src = op.operands[0]
    index = fe.lookup(op.operands[1])
    if isinstance(src.type, UnrankedMemRefType):
        raise fe.unsupported(op, "memref.dim of an unranked memref")
    desc = fe.lookup_memref(src)
    if isinstance(index, ir.Constant):
        # A constant index outside the rank is undefined behaviour upstream (mlir-opt accepts
        # it); there is no size to read, so refuse it rather than compute garbage.
        position = int(index.constant)
        if position >= 1 << 63:  # the constant as a signed index (-1 is 2^64 - 1)
            position -= 1 << 64
        if not 0 <= position < len(desc.sizes):
            raise UnsupportedError(
                f"memref.dim index {position} is out of range for {src.type} of rank "
                f"{len(desc.sizes)} (a constant index must be in [0, {len(desc.sizes)}))",
                location_of(op))
        fe.bind(op.results[0], desc.sizes[position])
        return
    value: ir.Value = ir.Constant(T.INDEX, 0)
    for i, size in enumerate(desc.sizes):
        value = fe.builder.select(fe.builder.icmp_signed("==", index, M.const_index(i)),
                                  size, value)
    fe.bind(op.results[0], value)


def lower_rank(fe: FunctionEmitter, op: Operation) -> None:
    src = op.operands[0]
    if isinstance(src.type, MemRefType):
        fe.bind(op.results[0], M.const_index(src.type.get_num_dims()))
    else:
        fe.bind(op.results[0], fe.builder.extract_value(fe.lookup(src), 0))


def lower_cast(fe: FunctionEmitter, op: Operation) -> None:
    """memref.cast between ranked types re-views the same fields (static facts of the new type
    become constants); to/from unranked builds/reads a {rank, ptr} with a stack descriptor."""
    src, res = op.operands[0], op.results[0]
    if isinstance(src.type, MemRefType) and isinstance(res.type, MemRefType):
        desc = fe.lookup_memref(src)
        fe.bind(res, M.MemRefDescriptor(res.type, desc.allocated, desc.aligned, desc.offset,
                                        desc.sizes, desc.strides).with_type(res.type))
    elif isinstance(src.type, MemRefType):
        desc = fe.lookup_memref(src)
        packed = desc.pack(fe.builder)
        slot = fe.alloca(packed.type)
        fe.builder.store(packed, slot)
        agg: ir.Value = ir.Constant(T.UNRANKED_STRUCT, ir.Undefined)
        agg = fe.builder.insert_value(agg, M.const_index(desc.rank), 0)
        agg = fe.builder.insert_value(agg, slot, 1)
        fe.bind(res, agg)
    elif isinstance(res.type, MemRefType):
        ptr = fe.builder.extract_value(fe.lookup(src), 1)
        st = T.memref_struct(res.type.get_num_dims(), fe.module.address_space(res.type))
        fe.bind(res, M.unpack(fe.builder, res.type, fe.builder.load(ptr, typ=st)))
    else:
        fe.bind(res, fe.lookup(src))


def _mixed(fe: FunctionEmitter, static: list[int], dynamic: list[ir.Value]) -> list[ir.Value]:
    it = iter(dynamic)
    return [fe.lookup(next(it)) if v == DYNAMIC else M.const_index(v) for v in static]


def _offsets_sizes_strides(fe: FunctionEmitter, op: Operation
                           ) -> tuple[list[ir.Value], list[ir.Value], list[ir.Value]]:
    """The mixed static/dynamic offsets, sizes and strides of a subview or reinterpret_cast
    (operand 0 is the source; operandSegmentSizes splits the dynamic operands after it)."""
    segs = list(attr(op, "operandSegmentSizes").get_values())  # type: ignore[union-attr]
    ops = list(op.operands[1:])
    dyn_off, dyn_size, dyn_stride = (ops[:segs[1]], ops[segs[1]:segs[1] + segs[2]],
                                     ops[segs[1] + segs[2]:])
    offsets = _mixed(fe, list(attr(op, "static_offsets").get_values()), dyn_off)  # type: ignore[union-attr]
    sizes = _mixed(fe, list(attr(op, "static_sizes").get_values()), dyn_size)  # type: ignore[union-attr]
    strides = _mixed(fe, list(attr(op, "static_strides").get_values()), dyn_stride)  # type: ignore[union-attr]
    return offsets, sizes, strides


def lower_subview(fe: FunctionEmitter, op: Operation) -> None:
    """offset' = offset + sum(off_i * stride_i); stride'_i = stride_i * step_i; dropped unit
    dimensions (rank-reducing) are removed by matching the result type's rank."""
    src = fe.lookup_memref(op.operands[0])
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)
    offsets, sizes, steps = _offsets_sizes_strides(fe, op)
    b = fe.builder
    offset = M.linear_index(b, src.offset, offsets, src.strides)
    strides = [_mul(b, s, k) for s, k in zip(src.strides, steps, strict=True)]
    keep = _kept_dims(sizes, res_ty)
    desc = M.MemRefDescriptor(res_ty, src.allocated, src.aligned, offset,
                              [sizes[i] for i in keep], [strides[i] for i in keep])
    fe.bind(op.results[0], M.specialize(desc))


def _mul(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    if isinstance(y, ir.Constant) and y.constant == 1:
        return x
    if isinstance(x, ir.Constant) and isinstance(y, ir.Constant):
        return M.const_index(int(x.constant) * int(y.constant))
    return b.mul(x, y)


def _kept_dims(sizes: list[ir.Value], res_ty: MemRefType) -> list[int]:
    """Which source dimensions survive a rank-reducing subview: static unit dimensions are
    dropped from the left until the rank matches. (A unit dimension is only ever indexed by 0,
    so which of several candidates is dropped does not change any address.)"""
    excess = len(sizes) - res_ty.get_num_dims()
    keep = []
    for d, size in enumerate(sizes):
        if excess > 0 and isinstance(size, ir.Constant) and size.constant == 1:
            excess -= 1
            continue
        keep.append(d)
    return keep


def lower_reinterpret_cast(fe: FunctionEmitter, op: Operation) -> None:
    src = op.operands[0]
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)
    if isinstance(src.type, MemRefType):
        sdesc = fe.lookup_memref(src)
        allocated, aligned = sdesc.allocated, sdesc.aligned
    else:
        ptr = fe.builder.extract_value(fe.lookup(src), 1)
        st = T.memref_struct(0, fe.module.address_space(res_ty))
        loaded = fe.builder.load(ptr, typ=st)
        allocated = fe.builder.extract_value(loaded, 0)
        aligned = fe.builder.extract_value(loaded, 1)
    offsets, sizes, strides = _offsets_sizes_strides(fe, op)
    fe.bind(op.results[0], M.specialize(
        M.MemRefDescriptor(res_ty, allocated, aligned, offsets[0], sizes, strides)))


def lower_collapse_shape(fe: FunctionEmitter, op: Operation) -> None:
    """collapse_shape: each group's size is the product of its sizes; its stride the innermost."""
    src = fe.lookup_memref(op.operands[0])
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)  # the op's verifier requires a memref result
    groups = _reassociation(op)
    b = fe.builder
    sizes, strides = [], []
    for group in groups:
        sizes.append(M.num_elements(b, [src.sizes[i] for i in group]))
        strides.append(src.strides[group[-1]])
    fe.bind(op.results[0], M.specialize(
        M.MemRefDescriptor(res_ty, src.allocated, src.aligned, src.offset, sizes, strides)))


def lower_expand_shape(fe: FunctionEmitter, op: Operation) -> None:
    """expand_shape of a contiguous group: result sizes from the type/output_shape operands,
    strides row-major within each group scaled by the source stride."""
    src = fe.lookup_memref(op.operands[0])
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)
    dyn = [fe.lookup(v) for v in op.operands[1:]]
    static = attr(op, "static_output_shape")
    shape = (list(static.get_values()) if isinstance(static, DenseArrayBase)
             else list(res_ty.get_shape()))
    sizes = _mixed_values(shape, dyn)
    strides: list[ir.Value] = [M.const_index(0)] * len(sizes)
    b = fe.builder
    for src_dim, group in enumerate(_reassociation(op)):
        running = src.strides[src_dim]
        for i in reversed(group):
            strides[i] = running
            running = _mul(b, running, sizes[i])
    fe.bind(op.results[0], M.specialize(
        M.MemRefDescriptor(res_ty, src.allocated, src.aligned, src.offset, sizes, strides)))


def _mixed_values(static: list[int], dynamic: list[ir.Value]) -> list[ir.Value]:
    it = iter(dynamic)
    return [next(it) if T.is_dynamic(v) else M.const_index(v) for v in static]


def _reassociation(op: Operation) -> list[list[int]]:
    raw = attr(op, "reassociation")
    return [[int(getattr(i, "value", i).data) for i in group.data]
            for group in raw.data]  # type: ignore[union-attr]


def lower_atomic_rmw(fe: FunctionEmitter, op: Operation) -> None:
    """memref.atomic_rmw: LLVM atomicrmw (acq_rel) where one exists, else a cmpxchg loop."""
    value = fe.lookup(op.operands[0])
    ptr, _desc = element_pointer(fe, op, 1, 2, checked=True)
    kind_num = int_attr(op, "kind")
    if kind_num not in ATOMIC_KINDS:
        raise fe.error(op, f"unknown atomic_rmw kind {kind_num}")
    kind, llvm_op = ATOMIC_KINDS[kind_num]
    if llvm_op is not None:
        fe.bind(op.results[0], fe.builder.atomic_rmw(llvm_op, ptr, value, "acq_rel"))
        return

    def combine(b: ir.IRBuilder, old: ir.Value) -> ir.Value:
        return b.fmul(old, value) if kind == "mulf" else b.mul(old, value)

    fe.bind(op.results[0], cas_loop(fe, ptr, value.type, combine))


def cas_loop(fe: FunctionEmitter, ptr: ir.Value, ty: ir.Type,
             combine: Callable[[ir.IRBuilder, ir.Value], ir.Value]) -> ir.Value:
    """old = *ptr; repeat new = combine(old) until cmpxchg(ptr, old, new) succeeds. Floats are
    exchanged as same-width integers. Returns the value seen before the update."""
    b = fe.builder
    ity = ty if isinstance(ty, ir.IntType) else ir.IntType(T.element_size_llvm(ty) * 8)
    init = b.load(ptr, typ=ty)
    pre = b.block
    loop = fe.function.append_basic_block("atomic.loop")
    done = fe.function.append_basic_block("atomic.done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(ty)
    old.add_incoming(init, pre)
    new = combine(b, old)
    old_i = old if ty == ity else b.bitcast(old, ity)
    new_i = new if ty == ity else b.bitcast(new, ity)
    pair = b.cmpxchg(ptr, old_i, new_i, "acq_rel", "monotonic")
    seen_i = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    seen = seen_i if ty == ity else b.bitcast(seen_i, ty)
    old.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return old


def lower_generic_atomic_rmw(fe: FunctionEmitter, op: Operation) -> None:
    """memref.generic_atomic_rmw: the region computes the new value from the current one."""
    ptr, desc = element_pointer(fe, op, 0, 1, checked=True)
    body = op.regions[0].blocks[0]

    def combine(b: ir.IRBuilder, old: ir.Value) -> ir.Value:
        term = fe.emit_inline(body, [old])
        return fe.lookup(term.operands[0])

    fe.bind(op.results[0], cas_loop(fe, ptr, desc.element_type, combine))


def emit_global(me: ModuleEmitter, op: Operation) -> None:
    """memref.global -> an LLVM global array in the target's address space for its memory
    space. Workgroup (shared) globals get an undef initializer (they cannot be initialized)."""
    name = symbol_name(op)
    ty = attr(op, "type")
    assert isinstance(ty, MemRefType)
    elem = T.scalar_type(ty.element_type)
    count = 1
    for d in ty.get_shape():
        count *= d
    arr = ir.ArrayType(elem, count)
    space = me.address_space(ty)
    gv = ir.GlobalVariable(me.module, arr, name, addrspace=space)
    init = attr(op, "initial_value")
    if isinstance(init, DenseIntOrFPElementsAttr):
        values = list(init.get_values())
        if len(values) == 1 and count != 1:
            values = values * count
        if isinstance(elem, ir.IntType):
            mask = (1 << elem.width) - 1
            gv.initializer = ir.Constant(arr, [ir.Constant(elem, int(v) & mask) for v in values])
        else:
            gv.initializer = ir.Constant(arr, [ir.Constant(elem, float(v)) for v in values])
    elif init is not None or space in (3,):
        gv.initializer = ir.Constant(arr, ir.Undefined if space == 3 else None)
    else:
        gv.linkage = "external"  # a declaration
    if attr(op, "constant") is not None:
        gv.global_constant = True
    visibility = attr(op, "sym_visibility")
    defined = init is not None or space == 3
    if defined and getattr(visibility, "data", "") == "private":
        gv.linkage = "internal"
    gv.align = int_attr(op, "alignment") or max(T.element_size(ty.element_type), 4)
    me.globals[name] = gv
    me.global_ops[name] = op


def lower_get_global(fe: FunctionEmitter, op: Operation) -> None:
    name = attr(op, "name")
    sym = name.root_reference.data  # type: ignore[union-attr]
    gv = fe.module.globals.get(sym)
    if gv is None:
        raise fe.error(op, f"memref.get_global of unknown global @{sym}")
    ty = op.results[0].type
    assert isinstance(ty, MemRefType)
    sizes = [M.const_index(d) for d in ty.get_shape()]
    ptr: ir.Value = M.opaque(fe.builder, gv)
    space = fe.module.address_space(ty)
    if gv.type.addrspace != space:
        ptr = fe.builder.addrspacecast(ptr, ir.PointerType(addrspace=space))
    fe.bind(op.results[0], _unowned(fe, M.identity_descriptor(fe.builder, ty, ptr, sizes)))


def _contiguous(ty: Attribute) -> bool:
    """True when a memref type's layout is the identity (row-major, dense)."""
    return isinstance(ty, MemRefType) and isinstance(ty.layout, NoneAttr)


def lower_copy(fe: FunctionEmitter, op: Operation) -> None:
    """memref.copy: `llvm.memcpy` when both sides have the identity layout, else element loops
    over the shape (strided on either side)."""
    src = fe.lookup_memref(op.operands[0])
    dst = fe.lookup_memref(op.operands[1])
    b = fe.builder
    if _contiguous(op.operands[0].type) and _contiguous(op.operands[1].type):
        size = T.element_size(src.ty.element_type)
        nbytes = b.mul(M.num_elements(b, src.sizes), M.const_index(size))
        src_ptr = src.element_pointer(b, [M.const_index(0)] * src.rank)
        dst_ptr = dst.element_pointer(b, [M.const_index(0)] * dst.rank)
        memcpy = fe.module.declare(
            f"llvm.memcpy.p{dst.address_space}.p{src.address_space}.i64",
            ir.FunctionType(T.VOID, [dst_ptr.type, src_ptr.type, T.I64, T.I1]))
        b.call(memcpy, [dst_ptr, src_ptr, nbytes, ir.Constant(T.I1, 0)])
        return

    def nest(level: int, idx: list[ir.Value]) -> None:
        if level == src.rank:
            value = b.load(src.element_pointer(b, idx), typ=src.element_type)
            b.store(value, dst.element_pointer(b, idx))
            return
        pre = b.block
        header = fe.function.append_basic_block("copy.header")
        body = fe.function.append_basic_block("copy.body")
        exit_ = fe.function.append_basic_block("copy.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(T.INDEX)
        iv.add_incoming(M.const_index(0), pre)
        b.cbranch(b.icmp_signed("<", iv, src.sizes[level]), body, exit_)
        b.position_at_end(body)
        nest(level + 1, [*idx, iv])
        iv.add_incoming(b.add(iv, M.const_index(1)), b.block)
        b.branch(header)
        b.position_at_end(exit_)

    nest(0, [])


def lower_identity(fe: FunctionEmitter, op: Operation) -> None:
    """Ops that only assert facts (assume_alignment) or change nothing in the fields."""
    if op.results:
        fe.bind(op.results[0], fe.lookup_any(op.operands[0]))


def lower_memory_space_cast(fe: FunctionEmitter, op: Operation) -> None:
    src = fe.lookup_memref(op.operands[0])
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)
    to = ir.PointerType(addrspace=fe.module.address_space(res_ty))
    b = fe.builder

    def cast(p: ir.Value) -> ir.Value:
        return p if p.type == to else b.addrspacecast(p, to)

    fe.bind(op.results[0], M.MemRefDescriptor(res_ty, cast(src.allocated), cast(src.aligned),
                                              src.offset, src.sizes, src.strides))


def lower_view(fe: FunctionEmitter, op: Operation) -> None:
    """memref.view as upstream lowers it: the aligned pointer advances by the byte shift (an i8
    GEP), the offset is 0 and the strides row-major over the static and operand sizes. The
    allocated pointer stays the source's, so a view never owns memory."""
    src = fe.lookup_memref(op.operands[0])
    res_ty = op.results[0].type
    assert isinstance(res_ty, MemRefType)
    b = fe.builder
    shift = fe.lookup(op.operands[1])
    base = src.aligned
    if not (isinstance(shift, ir.Constant) and shift.constant == 0):
        base = b.gep(base, [shift], inbounds=True, source_etype=T.I8)
    sizes = _mixed_values(list(res_ty.get_shape()), [fe.lookup(v) for v in op.operands[2:]])
    desc = M.identity_descriptor(b, res_ty, base, sizes)
    fe.bind(op.results[0], M.MemRefDescriptor(res_ty, src.allocated, base, desc.offset,
                                              desc.sizes, desc.strides))


def lower_extract_aligned_pointer(fe: FunctionEmitter, op: Operation) -> None:
    src = fe.lookup_memref(op.operands[0])
    fe.bind(op.results[0], fe.builder.ptrtoint(src.aligned, T.INDEX))


def lower_extract_strided_metadata(fe: FunctionEmitter, op: Operation) -> None:
    src = fe.lookup_memref(op.operands[0])
    base_ty = op.results[0].type
    assert isinstance(base_ty, MemRefType)
    fe.bind(op.results[0], M.MemRefDescriptor(base_ty, src.allocated, src.aligned,
                                              M.const_index(0), [], []))
    rest = [src.offset, *src.sizes, *src.strides]
    for res, value in zip(op.results[1:], rest, strict=True):
        fe.bind(res, value)


HANDLERS: dict[str, Handler] = {
    "memref.load": lower_load,
    "memref.store": lower_store,
    "memref.alloc": lower_alloc,
    "memref.alloca": lower_alloc,
    "memref.dealloc": lower_dealloc,
    "memref.dim": lower_dim,
    "memref.rank": lower_rank,
    "memref.cast": lower_cast,
    "memref.subview": lower_subview,
    "memref.reinterpret_cast": lower_reinterpret_cast,
    "memref.collapse_shape": lower_collapse_shape,
    "memref.expand_shape": lower_expand_shape,
    "memref.atomic_rmw": lower_atomic_rmw,
    "memref.generic_atomic_rmw": lower_generic_atomic_rmw,
    "memref.get_global": lower_get_global,
    "memref.copy": lower_copy,
    "memref.view": lower_view,
    "memref.assume_alignment": lower_identity,
    "memref.memory_space_cast": lower_memory_space_cast,
    "memref.extract_aligned_pointer_as_index": lower_extract_aligned_pointer,
    "memref.extract_strided_metadata": lower_extract_strided_metadata,
}
