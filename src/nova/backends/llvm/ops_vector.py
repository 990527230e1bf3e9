"""vector dialect handlers for 1-D fixed-size vectors (`vector<N x T>` -> LLVM `<N x T>`), the
same on the host, NVPTX and CPU-device targets.

What each op becomes (upstream's VectorToLLVM lowering, where one exists):

* broadcast / from_elements / step / constant_mask / create_mask: insertelement+shufflevector
  splats, insertelement chains, constant vectors, `icmp slt <0..N-1>, splat(n)`;
* extract / insert: extractelement / insertelement at the static or dynamic position (an empty
  position is the whole vector; a static -1 is MLIR's poison position -> undef);
* shuffle: shufflevector; bitcast: bitcast; shape_cast: the value itself (n-D vectors are
  flat row-major, types.register_vector_type, so any shape_cast keeps every lane in place);
  fma: `math.fma` lane by lane (through the target's math hook, as the math ops);
* load / store: one `<N x T>` load/store at the element address, aligned to the element size
  or to the op's `alignment` attribute (upstream MLIR's, in bytes) when that is larger;
  maskedload / maskedstore: `llvm.masked.load/store` (LLVM 22 form: the alignment is the
  pointer argument's `align` attribute), which never touch masked-off lanes;
* transfer_read / transfer_write (minor identity permutation map only): a plain vector
  load/store where `in_bounds = [true]` and no mask, else a masked load/store whose mask is
  `(dim - index) > lane` for the transferred (innermost) dimension, and-ed with the op's mask;
  lanes read out of bounds take the padding value, lanes written out of bounds are dropped;
* reduction: a sequential chain of the scalar arith op over the lanes (float add/mul start from
  the accumulator, else from 0.0 / 1.0, like `llvm.vector.reduce.fadd/fmul` without
  reassociation; other kinds fold the accumulator in last), so every target computes the same
  bits;
* print of a vector: upstream's runner format `( a, b, c )` then the op's punctuation. On the
  host (and any target printing piecewise) the op is expanded into scalar `vector.print`s
  (open, elements, commas, close) emitted through the target's own handler; on NVPTX one
  `vprintf`, on the CPU device one libc `printf` (scalars too) prints the whole op, so lines
  of different threads do not interleave.

Memory accesses need a unit stride in the memref's innermost dimension (known from its type);
anything else, and scalable vectors (types.vector_type), is a located UnsupportedError. n-D
vectors reach only the ops of N_D_OPS (extract/insert of an element or of a static sub-vector,
from_elements, broadcast of a scalar, shape_cast, fma); the others reject them at the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from llvmlite import ir
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    VectorType,
)
from xdsl.dialects.vector import DYNAMIC_INDEX
from xdsl.ir import Attribute, Block, Operation, SSAValue

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import (
    FunctionEmitter,
    attr,
    enum_text,
    int_attr,
    intrinsic_suffix,
)
from nova.backends.llvm.ops_arith import FLOAT_MINMAX, INT_BINARY
from nova.backends.llvm.ops_math import lanewise
from nova.backends.llvm.target import Handler
from nova.ir.locations import location_of, set_location

POISON_POSITION = -1
"""MLIR's static position meaning "poison" in vector.extract/insert/shuffle."""

Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


# --- helpers ---------------------------------------------------------------------------------
def i32(value: int) -> ir.Constant:
    return ir.Constant(T.I32, value)


def splat(b: ir.IRBuilder, scalar: ir.Value, vty: ir.VectorType) -> ir.Value:
    """`scalar` in every lane of a `vty` vector (insertelement + zero-mask shufflevector)."""
    one = b.insert_element(ir.Constant(vty, ir.Undefined), scalar, i32(0))
    return b.shuffle_vector(one, ir.Constant(vty, ir.Undefined),
                            ir.Constant(ir.VectorType(T.I32, vty.count), 0))


def lane_indices(count: int, ty: ir.IntType = T.I64) -> ir.Constant:
    """The constant vector <0, 1, ..., count-1>."""
    return ir.Constant(ir.VectorType(ty, count), [ir.Constant(ty, i) for i in range(count)])


def vector_llvm(fe: FunctionEmitter, value: SSAValue) -> ir.VectorType:
    """The LLVM vector type of an MLIR vector value (raises for n-D/scalable vectors)."""
    llty = fe.lower_type(value.type)
    assert isinstance(llty, ir.VectorType)
    return llty


def static_position(op: Operation) -> list[int]:
    """The `static_position` of vector.extract/insert (dynamic entries are DYNAMIC_INDEX)."""
    found = attr(op, "static_position")
    assert isinstance(found, DenseArrayBase)
    return [int(v) for v in found.get_values()]


def position(fe: FunctionEmitter, op: Operation, dynamic: Sequence[SSAValue],
             vector: SSAValue) -> ir.Value | None:
    """The lane index of an extract/insert of one element (None for an empty position: the
    whole vector; an undef index for MLIR's poison position). An n-D vector's position is
    linearised row-major (types.register_vector_type); a position naming a sub-vector is
    handled by `sub_vector_lanes`."""
    static = static_position(op)
    if not static:
        return None
    shape = vector.type.get_shape()  # type: ignore[attr-defined]
    if POISON_POSITION in static:
        return ir.Constant(T.I64, ir.Undefined)
    b = fe.builder
    dyn = iter(dynamic)
    linear: ir.Value = ir.Constant(T.I64, 0)
    for pos, dim in zip(static, shape, strict=False):
        index = b.zext(fe.lookup(next(dyn)), T.I64) if pos == DYNAMIC_INDEX else \
            ir.Constant(T.I64, pos)
        if isinstance(index, ir.Constant) and isinstance(linear, ir.Constant):
            linear = ir.Constant(T.I64, int(linear.constant) * dim + int(index.constant))
        else:
            linear = b.add(b.mul(linear, ir.Constant(T.I64, dim)), index)
    return linear


def sub_vector_lanes(fe: FunctionEmitter, op: Operation, vector: SSAValue) -> list[int] | None:
    """For an extract/insert whose static position names a sub-vector of an n-D vector: the
    flat lanes of that sub-vector (None when the position names one element or is empty)."""
    static = static_position(op)
    shape = vector.type.get_shape()  # type: ignore[attr-defined]
    if not static or len(static) == len(shape):
        return None
    if any(p < 0 for p in static):
        raise fe.unsupported(op, "a dynamic or poison position of a sub-vector is not "
                                 "supported (only static ones)")
    inner = math.prod(shape[len(static):])
    first = 0
    for pos, dim in zip(static, shape, strict=False):
        first = first * dim + pos
    return list(range(first * inner, (first + 1) * inner))


# --- value ops -------------------------------------------------------------------------------
def lower_broadcast(fe: FunctionEmitter, op: Operation) -> None:
    """Scalar or vector<1xT> -> every lane; a vector of the result's length -> itself."""
    vty = vector_llvm(fe, op.results[0])
    source = op.operands[0]
    value = fe.lookup(source)
    if isinstance(source.type, VectorType):
        count = vector_llvm(fe, source).count
        if count == vty.count:
            fe.bind(op.results[0], value)
            return
        if count != 1:
            raise fe.unsupported(op, f"broadcast of {source.type} to {op.results[0].type}")
        value = fe.builder.extract_element(value, i32(0))
    fe.bind(op.results[0], splat(fe.builder, value, vty))


def lower_extract(fe: FunctionEmitter, op: Operation) -> None:
    vector = fe.lookup(op.operands[0])
    vector_llvm(fe, op.operands[0])
    lanes = sub_vector_lanes(fe, op, op.operands[0])
    if lanes is not None:
        fe.bind(op.results[0], fe.builder.shuffle_vector(
            vector, ir.Constant(vector.type, ir.Undefined),
            ir.Constant(ir.VectorType(T.I32, len(lanes)), lanes)))
        return
    index = position(fe, op, op.operands[1:], op.operands[0])
    fe.bind(op.results[0], vector if index is None else fe.builder.extract_element(vector, index))


def lower_insert(fe: FunctionEmitter, op: Operation) -> None:
    value = fe.lookup(op.operands[0])
    dest = fe.lookup(op.operands[1])
    dty = vector_llvm(fe, op.operands[1])
    lanes = sub_vector_lanes(fe, op, op.operands[1])
    if lanes is not None:
        # widen the value to the destination's length, then pick its lanes where they go
        wide = fe.builder.shuffle_vector(
            value, ir.Constant(value.type, ir.Undefined),
            ir.Constant(ir.VectorType(T.I32, dty.count),
                        [lanes.index(i) if i in lanes else 0 for i in range(dty.count)]))
        mask = [dty.count + i if i in lanes else i for i in range(dty.count)]
        fe.bind(op.results[0], fe.builder.shuffle_vector(
            dest, wide, ir.Constant(ir.VectorType(T.I32, dty.count), mask)))
        return
    index = position(fe, op, op.operands[2:], op.operands[1])
    inserted = value if index is None else fe.builder.insert_element(dest, value, index)
    fe.bind(op.results[0], inserted)


def lower_from_elements(fe: FunctionEmitter, op: Operation) -> None:
    vty = vector_llvm(fe, op.results[0])
    out: ir.Value = ir.Constant(vty, ir.Undefined)
    for lane, value in enumerate(fe.operands(op)):
        out = fe.builder.insert_element(out, value, i32(lane))
    fe.bind(op.results[0], out)


def lower_step(fe: FunctionEmitter, op: Operation) -> None:
    vty = vector_llvm(fe, op.results[0])
    fe.bind(op.results[0], lane_indices(vty.count, vty.element))


def lower_constant_mask(fe: FunctionEmitter, op: Operation) -> None:
    vty = vector_llvm(fe, op.results[0])
    sizes = attr(op, "mask_dim_sizes")
    assert isinstance(sizes, DenseArrayBase)
    (size,) = [int(v) for v in sizes.get_values()]
    fe.bind(op.results[0], ir.Constant(vty, [ir.Constant(T.I1, int(i < size))
                                             for i in range(vty.count)]))


def lower_create_mask(fe: FunctionEmitter, op: Operation) -> None:
    """Lane i is set iff i < n (signed: n <= 0 clears all lanes, n >= N sets all)."""
    vty = vector_llvm(fe, op.results[0])
    if len(op.operands) != 1:
        raise fe.unsupported(op, "only 1-D masks are supported")
    bound = splat(fe.builder, fe.lookup(op.operands[0]), ir.VectorType(T.I64, vty.count))
    fe.bind(op.results[0], fe.builder.icmp_signed("<", lane_indices(vty.count), bound))


def lower_shuffle(fe: FunctionEmitter, op: Operation) -> None:
    v1, v2 = fe.operands(op)
    for value in op.operands:
        vector_llvm(fe, value)
    found = attr(op, "mask")
    assert isinstance(found, DenseArrayBase)
    picks = [int(v) for v in found.get_values()]
    # a poison lane (-1) may be any value: lane 0 is as good as undef
    mask = ir.Constant(ir.VectorType(T.I32, len(picks)), [i32(max(p, 0)) for p in picks])
    fe.bind(op.results[0], fe.builder.shuffle_vector(v1, v2, mask))


def lower_bitcast(fe: FunctionEmitter, op: Operation) -> None:
    (x,) = fe.operands(op)
    vector_llvm(fe, op.operands[0])
    to = vector_llvm(fe, op.results[0])
    fe.bind(op.results[0], fe.builder.bitcast(x, to) if x.type != to else x)


def lower_shape_cast(fe: FunctionEmitter, op: Operation) -> None:
    """shape_cast keeps every lane (the verifier ensures the same count; n-D vectors are flat
    row-major)."""
    vector_llvm(fe, op.operands[0])
    vector_llvm(fe, op.results[0])
    fe.bind(op.results[0], fe.lookup(op.operands[0]))


def lower_fma(fe: FunctionEmitter, op: Operation) -> None:
    """a * b + c, rounded once, lane by lane through the target's `math.fma`."""

    vty = vector_llvm(fe, op.results[0])
    elem = op.results[0].type.element_type  # type: ignore[attr-defined]

    def scalar(fe: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
        return fe.target.math_function(fe, "math.fma", args, elem)

    fe.bind(op.results[0], lanewise(fe, fe.operands(op), vty, scalar))


# --- reductions ------------------------------------------------------------------------------
def _float_add(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.fadd(x, y)


def _float_mul(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.fmul(x, y)


def combiner(fe: FunctionEmitter, op: Operation, kind: str, elem: ir.Type) -> Combine:
    """The scalar binary op of reduction `kind` on elements of LLVM type `elem`."""
    is_int = isinstance(elem, ir.IntType)
    if kind == "add":
        return INT_BINARY["addi"] if is_int else _float_add
    if kind == "mul":
        return INT_BINARY["muli"] if is_int else _float_mul
    if is_int and kind in ("minsi", "maxsi", "minui", "maxui"):
        return INT_BINARY[kind]
    if is_int and kind in ("and", "or", "xor"):
        return INT_BINARY[f"{kind}i"]
    if not is_int and kind in FLOAT_MINMAX:
        fn = fe.module.intrinsic(FLOAT_MINMAX[kind], elem, 2)
        return lambda b, x, y: b.call(fn, [x, y])
    raise fe.unsupported(op, f"reduction <{kind}> on {elem}")


def lower_reduction(fe: FunctionEmitter, op: Operation) -> None:
    vector = fe.lookup(op.operands[0])
    vty = vector_llvm(fe, op.operands[0])
    kind = enum_text(attr(op, "kind")) or ""
    combine = combiner(fe, op, kind, vty.element)
    b = fe.builder
    acc = fe.lookup(op.operands[1]) if len(op.operands) > 1 else None
    lanes = [b.extract_element(vector, i32(i)) for i in range(vty.count)]
    ordered_float = not isinstance(vty.element, ir.IntType) and kind in ("add", "mul")
    if ordered_float:  # ((start op v0) op v1) ..., as llvm.vector.reduce.fadd/fmul
        total = acc if acc is not None else ir.Constant(vty.element, 0.0 if kind == "add"
                                                        else 1.0)
        for lane in lanes:
            total = combine(b, total, lane)
    else:
        total = lanes[0]
        for lane in lanes[1:]:
            total = combine(b, total, lane)
        if acc is not None:
            total = combine(b, total, acc)
    fe.bind(op.results[0], total)


# --- memory ----------------------------------------------------------------------------------
def element_address(fe: FunctionEmitter, op: Operation, memref: SSAValue,
                    indices: Sequence[SSAValue], what: str) -> tuple[ir.Value, M.MemRefDescriptor]:
    """Address of the first lane and the memref's descriptor, after checking that lanes are
    contiguous (unit stride in the innermost dimension, known from the type)."""
    ty = memref.type
    if not isinstance(ty, MemRefType) or ty.get_num_dims() == 0:
        raise fe.unsupported(op, f"{what} needs a ranked memref of rank >= 1")
    if T.static_strides(ty)[-1] != 1:
        raise fe.unsupported(op, f"{what} needs a unit stride in the innermost dimension of "
                                 f"{ty} (known from its type)")
    desc = fe.lookup_memref(memref)
    index_values = [fe.lookup(i) for i in indices]
    return desc.element_pointer(fe.builder, index_values), desc


def alignment(desc: M.MemRefDescriptor) -> int:
    """Alignment of a vector access: the element's size (what the memref guarantees)."""
    return T.element_size_llvm(desc.element_type)


def access_alignment(fe: FunctionEmitter, op: Operation, desc: M.MemRefDescriptor) -> int:
    """A vector.load/store's alignment: its `alignment` attribute (upstream MLIR's promise
    about the accessed address, in bytes) when that says more than the element size. Generated
    kernels set it where index math through div/rem hides an alignment they know, which LLVM
    would otherwise not prove and would split the access into scalar ones."""
    promised = int_attr(op, "alignment")
    if promised is not None and (promised <= 0 or promised & (promised - 1)):
        raise fe.error(op, f"alignment {promised} is not a positive power of two")
    return max(alignment(desc), promised or 0)


def check_elements(fe: FunctionEmitter, op: Operation, memref: SSAValue,
                   vector: SSAValue) -> ir.VectorType:
    """The vector's LLVM type, after checking it holds the memref's element type."""
    vty = vector_llvm(fe, vector)
    elem = memref.type.element_type  # type: ignore[attr-defined]
    if elem != vector.type.element_type:  # type: ignore[attr-defined]
        raise fe.unsupported(op, f"{vector.type} does not hold the elements of {memref.type}")
    return vty


def masked_load(fe: FunctionEmitter, ptr: ir.Value, mask: ir.Value, passthru: ir.Value,
                align: int) -> ir.Value:
    """`llvm.masked.load` (LLVM 22: alignment as the pointer's `align` attribute)."""
    vty = passthru.type
    pty = ptr.type
    name = f"llvm.masked.load.{intrinsic_suffix(vty)}.p{pty.addrspace}"
    fn = fe.module.declare(name, ir.FunctionType(vty, [pty, mask.type, vty]))
    call = fe.builder.call(fn, [ptr, mask, passthru], arg_attrs={0: ()})
    call.arg_attributes[0].align = align
    return call


def masked_store(fe: FunctionEmitter, value: ir.Value, ptr: ir.Value, mask: ir.Value,
                 align: int) -> None:
    """`llvm.masked.store` (LLVM 22: alignment as the pointer's `align` attribute)."""
    vty = value.type
    pty = ptr.type
    name = f"llvm.masked.store.{intrinsic_suffix(vty)}.p{pty.addrspace}"
    fn = fe.module.declare(name, ir.FunctionType(T.VOID, [vty, pty, mask.type]))
    call = fe.builder.call(fn, [value, ptr, mask], arg_attrs={1: ()})
    call.arg_attributes[1].align = align


def lower_load(fe: FunctionEmitter, op: Operation) -> None:
    vty = check_elements(fe, op, op.operands[0], op.results[0])
    ptr, desc = element_address(fe, op, op.operands[0], op.operands[1:], "vector.load")
    fe.bind(op.results[0], fe.builder.load(ptr, typ=vty, align=access_alignment(fe, op, desc)))


def lower_store(fe: FunctionEmitter, op: Operation) -> None:
    check_elements(fe, op, op.operands[1], op.operands[0])
    ptr, desc = element_address(fe, op, op.operands[1], op.operands[2:], "vector.store")
    fe.builder.store(fe.lookup(op.operands[0]), ptr, align=access_alignment(fe, op, desc))


def lower_maskedload(fe: FunctionEmitter, op: Operation) -> None:
    base, *rest = op.operands
    indices, mask, passthru = rest[:-2], rest[-2], rest[-1]
    check_elements(fe, op, base, op.results[0])
    ptr, desc = element_address(fe, op, base, indices, "vector.maskedload")
    fe.bind(op.results[0], masked_load(fe, ptr, fe.lookup(mask), fe.lookup(passthru),
                                       alignment(desc)))


def lower_maskedstore(fe: FunctionEmitter, op: Operation) -> None:
    base, *rest = op.operands
    indices, mask, value = rest[:-2], rest[-2], rest[-1]
    check_elements(fe, op, base, value)
    ptr, desc = element_address(fe, op, base, indices, "vector.maskedstore")
    masked_store(fe, fe.lookup(value), ptr, fe.lookup(mask), alignment(desc))


def transfer_parts(op: Operation) -> tuple[SSAValue, list[SSAValue], SSAValue | None]:
    """(memref, indices, mask) of a transfer op, read through its named operand groups."""
    source = op.source  # type: ignore[attr-defined]
    mask = op.mask  # type: ignore[attr-defined]
    return source, list(op.indices), mask  # type: ignore[attr-defined]


def check_minor_identity(fe: FunctionEmitter, op: Operation, rank: int) -> None:
    """Only the minor identity permutation map (the vector runs along the innermost memref
    dimension) is supported."""
    found = attr(op, "permutation_map")
    amap = getattr(found, "data", None)
    results = list(getattr(amap, "results", []))
    dims = [getattr(r, "position", None) for r in results]
    if getattr(amap, "num_dims", rank) != rank or dims != [rank - 1]:
        raise fe.unsupported(op, f"permutation map {found}: only the minor identity map "
                                 "(1-D vectors along the innermost dimension) is supported")


def transfer_mask(fe: FunctionEmitter, op: Operation, desc: M.MemRefDescriptor,
                  index: ir.Value, count: int, mask: SSAValue | None) -> ir.Value | None:
    """The lanes a transfer may touch: `(dim - index) > lane` unless `in_bounds = [true]`, and-ed
    with the op's own mask; None when every lane is accessed."""
    found = attr(op, "in_bounds")  # ArrayAttr of i1 IntegerAttrs (BoolAttr)
    flags = [bool(f.value.data) for f in getattr(found, "data", ())]
    in_bounds = bool(flags) and all(flags)
    b = fe.builder
    lanes: ir.Value | None = None
    if not in_bounds:
        room = b.sub(desc.sizes[-1], index)
        lanes = b.icmp_signed(">", splat(b, room, ir.VectorType(T.I64, count)),
                              lane_indices(count))
    if mask is not None:
        user = fe.lookup(mask)
        lanes = user if lanes is None else b.and_(lanes, user)
    return lanes


def lower_transfer_read(fe: FunctionEmitter, op: Operation) -> None:
    source, indices, mask = transfer_parts(op)
    vty = check_elements(fe, op, source, op.results[0])
    check_minor_identity(fe, op, source.type.get_num_dims())  # type: ignore[attr-defined]
    ptr, desc = element_address(fe, op, source, indices, "vector.transfer_read")
    lanes = transfer_mask(fe, op, desc, fe.lookup(indices[-1]), vty.count, mask)
    align = alignment(desc)
    if lanes is None:
        fe.bind(op.results[0], fe.builder.load(ptr, typ=vty, align=align))
        return
    padding = splat(fe.builder, fe.lookup(op.padding), vty)  # type: ignore[attr-defined]
    fe.bind(op.results[0], masked_load(fe, ptr, lanes, padding, align))


def lower_transfer_write(fe: FunctionEmitter, op: Operation) -> None:
    source, indices, mask = transfer_parts(op)
    if op.results:
        raise fe.unsupported(op, "transfer_write to a tensor")
    vector = op.operands[0]
    vty = check_elements(fe, op, source, vector)
    check_minor_identity(fe, op, source.type.get_num_dims())  # type: ignore[attr-defined]
    ptr, desc = element_address(fe, op, source, indices, "vector.transfer_write")
    lanes = transfer_mask(fe, op, desc, fe.lookup(indices[-1]), vty.count, mask)
    align = alignment(desc)
    if lanes is None:
        fe.builder.store(fe.lookup(vector), ptr, align=align)
        return
    masked_store(fe, fe.lookup(vector), ptr, lanes, align)


# --- print -----------------------------------------------------------------------------------
PUNCTUATION = {"newline": "\n", "no_punctuation": "", "comma": ", ", "open": "( ",
               "close": " )"}
"""What each `#vector.punctuation` prints (the runner utilities' printNewline, printComma...)."""


def lower_print(fe: FunctionEmitter, op: Operation) -> None:
    """`vector.print` on targets without their own handler: scalars and the `str`/punctuation
    forms through the target's `print_value` hook, vectors expanded (`expand_print`). The host
    (RunnerCalls), NVPTX (one vprintf for a vector) and the CPU device (one libc printf) register
    their own handlers, built from `printf_format` and `expand_print`."""
    vector = bool(op.operands) and isinstance(op.operands[0].type, VectorType)
    if vector:
        expand_print(fe, op)
    elif op.operands:
        value = op.operands[0]
        fe.target.print_value(fe, op, fe.lookup(value), value.type)
    else:
        fe.target.print_value(fe, op, None, None)


def expand_print(fe: FunctionEmitter, op: Operation) -> None:
    """Emit open, each lane (no punctuation), commas between lanes, close and the op's
    punctuation as separate scalar `vector.print` ops, through `fe.emit_op` (so the target's
    own vector.print handler prints each piece)."""
    check_one_d(fe, op)
    from nova.ir.dialects.vector import PrintOp, Punctuation  # lazy: only vector programs need it

    value = op.operands[0]
    vector = fe.lookup(value)
    count = vector_llvm(fe, value).count
    elem = value.type.element_type  # type: ignore[attr-defined]
    lane_value = Block(arg_types=[elem]).args[0]  # a stand-in SSA value for one lane
    punctuation = enum_text(attr(op, "punctuation")) or "newline"

    def emit(source: SSAValue | None, punct: str) -> None:
        piece = PrintOp(source, Punctuation(punct))
        set_location(piece, location_of(op))
        fe.emit_op(piece)
        piece.drop_all_references()

    emit(None, "open")
    for lane in range(count):
        fe.bind(lane_value, fe.builder.extract_element(vector, i32(lane)))
        emit(lane_value, "no_punctuation")
        if lane + 1 < count:
            emit(None, "comma")
    emit(None, "close")
    if punctuation != "no_punctuation":
        emit(None, punctuation)


def printf_lane(fe: FunctionEmitter, op: Operation, value: ir.Value,
                ty: Attribute) -> tuple[str, ir.Value]:
    """The printf conversion and (C-promoted) argument of one scalar of type `ty`, as the
    runner utilities print it: %lld for signless/signed integers (i1 zero-extended, so true is
    1), %llu for unsigned integers and index, %g for floats (as double)."""
    b = fe.builder
    if isinstance(ty, IndexType):
        return "%llu", value
    if isinstance(ty, IntegerType) and ty.width.data <= 64:
        width = ty.width.data
        unsigned = ty.signedness.data == Signedness.UNSIGNED or width == 1
        if width < 64:
            value = b.zext(value, T.I64) if unsigned else b.sext(value, T.I64)
        return ("%llu" if unsigned and width > 1 else "%lld"), value
    if T.is_float(ty):
        return "%g", value if value.type == T.F64 else b.fpext(value, T.F64)
    raise fe.unsupported(op, f"vector.print of {ty}")


def printf_format(fe: FunctionEmitter, op: Operation) -> tuple[str, list[ir.Value]]:
    """The printf format and arguments of a whole `vector.print` (text, scalar or vector, then
    the punctuation): one call prints it, so lines of different GPU threads never interleave."""
    check_one_d(fe, op)
    text = attr(op, "stringLiteral")
    if text is not None:
        return str(getattr(text, "data", text)).replace("%", "%%"), []
    punct = PUNCTUATION.get(enum_text(attr(op, "punctuation")) or "newline")
    if punct is None:
        raise fe.unsupported(op, f"punctuation {attr(op, 'punctuation')}")
    if not op.operands:
        return punct, []
    value = op.operands[0]
    lowered = fe.lookup(value)
    if not isinstance(value.type, VectorType):
        spec, arg = printf_lane(fe, op, lowered, value.type)
        return spec + punct, [arg]
    elem = value.type.element_type
    specs: list[str] = []
    args: list[ir.Value] = []
    for lane in range(vector_llvm(fe, value).count):
        spec, arg = printf_lane(fe, op, fe.builder.extract_element(lowered, i32(lane)), elem)
        specs.append(spec)
        args.append(arg)
    return "( " + ", ".join(specs) + " )" + punct, args


N_D_OPS = frozenset({"vector.broadcast", "vector.extract", "vector.insert",
                     "vector.from_elements", "vector.shape_cast", "vector.fma"})
"""The vector ops lowered for n-D (flat, types.register_vector_type) vectors too."""


def check_one_d(fe: FunctionEmitter, op: Operation) -> None:
    """Raise a located UnsupportedError when `op` has an n-D vector operand or result."""
    for value in (*op.operands, *op.results):
        ty = value.type
        if isinstance(ty, VectorType) and ty.get_num_dims() > 1:
            raise fe.unsupported(op, f"n-D vector {ty}: only 1-D vectors are supported by "
                                     f"{op.name} (n-D ones by {', '.join(sorted(N_D_OPS))})")


def one_d_only(handler: Handler) -> Handler:
    """`handler`, after check_one_d."""
    def checked(fe: FunctionEmitter, op: Operation) -> None:
        check_one_d(fe, op)
        handler(fe, op)
    return checked


HANDLERS: dict[str, Handler] = {
    "vector.print": lower_print,
    "vector.broadcast": lower_broadcast,
    "vector.extract": lower_extract,
    "vector.insert": lower_insert,
    "vector.from_elements": lower_from_elements,
    "vector.step": lower_step,
    "vector.constant_mask": lower_constant_mask,
    "vector.create_mask": lower_create_mask,
    "vector.shuffle": lower_shuffle,
    "vector.bitcast": lower_bitcast,
    "vector.shape_cast": lower_shape_cast,
    "vector.fma": lower_fma,
    "vector.reduction": lower_reduction,
    "vector.load": lower_load,
    "vector.store": lower_store,
    "vector.maskedload": lower_maskedload,
    "vector.maskedstore": lower_maskedstore,
    "vector.transfer_read": lower_transfer_read,
    "vector.transfer_write": lower_transfer_write,
}
HANDLERS = {name: h if name in N_D_OPS else one_d_only(h) for name, h in HANDLERS.items()}

