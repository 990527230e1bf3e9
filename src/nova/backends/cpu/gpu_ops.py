"""gpu.* op handlers of the CPU device target: ids, barriers, warp exchange, reductions, printf.

Every lowered function of a CPU device module takes the GPU thread's context (`ThreadCtx*`, see
cpu_fibers) as a hidden first parameter, kept in `fe.tctx`; ids come from it and from its block
context. Collective ops use the per-thread 8-byte exchange slots of the block context:

- `gpu.shuffle`: write own slot, warp barrier, read the source lane's slot, warp barrier (before
  the slots are reused). `valid` follows MLIR's op semantics: false for lanes at or beyond `width`,
  for a source lane outside [0, width) and for a source lane that does not exist (partial last
  warp); an invalid lane gets its own value back (as shfl.sync does).
- `gpu.subgroup_reduce`: the same exchange; each lane reduces over its cluster's lanes
  (cluster_size/cluster_stride; the whole warp by default; absent lanes of a partial warp are
  skipped).
- `gpu.all_reduce`: write own slot, block barrier, thread 0 reduces all slots in thread order and
  writes the result to slot 0, block barrier, everyone reads it, block barrier.

Only scalars of at most 8 bytes cross the slots (i1..i64, index, f16, bf16, f32, f64).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation

from nova.backends.cpu import fibers as cf
from nova.backends.cpu.fibers import (
    BLOCK_CTX,
    I32,
    I64,
    LAUNCH_CTX,
    PTR,
    THREAD_CTX,
    B,
    L,
    State,
    T,
    load_field,
)
from nova.backends.llvm import memref as M
from nova.backends.llvm.emitter import FunctionEmitter, attr, enum_text, int_attr
from nova.backends.llvm.ops_vector import printf_format
from nova.backends.llvm.target import Handler
from nova.errors import UnsupportedError

_DIMS = {"x": 0, "y": 1, "z": 2}


def tctx(fe: FunctionEmitter) -> ir.Value:
    """The current GPU thread's ThreadCtx pointer (hidden first parameter)."""
    return fe.tctx  # type: ignore[attr-defined]


def bctx(fe: FunctionEmitter) -> ir.Value:
    return load_field(fe.builder, THREAD_CTX, tctx(fe), T.BCTX)


def runtime(fe: FunctionEmitter) -> cf.FiberRuntime:
    return cf.fiber_runtime(fe.module.module)


def _dim(fe: FunctionEmitter, op: Operation) -> int:
    text = enum_text(attr(op, "dimension"))
    if text not in _DIMS:
        raise fe.error(op, f"{op.name}: unknown dimension {text!r}")
    return _DIMS[text]


def _bind_index(fe: FunctionEmitter, op: Operation, value: ir.Value) -> None:
    fe.bind(op.results[0], value)


def index_field(fe: FunctionEmitter, register: str, dim: int) -> ir.Value:
    """The i64 thread id ('tid'), block id ('ctaid'), block size ('ntid') or grid size
    ('nctaid') along `dim` (0..2), from the thread/block contexts (PTX register names, so the
    nvvm special-register reads share this with the gpu.* index ops)."""
    if register == "tid":
        return load_field(fe.builder, THREAD_CTX, tctx(fe), T.TID_X + dim)
    field = {"ctaid": B.BID_X, "ntid": B.BDIM_X, "nctaid": B.GDIM_X}[register]
    return load_field(fe.builder, BLOCK_CTX, bctx(fe), field + dim)


def _thread_id(fe: FunctionEmitter, op: Operation) -> ir.Value:
    return index_field(fe, "tid", _dim(fe, op))


def _block_id(fe: FunctionEmitter, op: Operation) -> ir.Value:
    return index_field(fe, "ctaid", _dim(fe, op))


def _block_dim(fe: FunctionEmitter, op: Operation) -> ir.Value:
    return index_field(fe, "ntid", _dim(fe, op))


def _grid_dim(fe: FunctionEmitter, op: Operation) -> ir.Value:
    return index_field(fe, "nctaid", _dim(fe, op))


def _cluster_size(fe: FunctionEmitter, op: Operation) -> ir.Value:
    """Blocks per cluster along the op's dimension (1 for launches without clusters)."""
    b = fe.builder
    launch = load_field(b, BLOCK_CTX, bctx(fe), B.LAUNCH)
    size = load_field(b, LAUNCH_CTX, launch, L.CLUSTER, _dim(fe, op))
    return b.select(b.icmp_signed("<=", size, I64(0)), I64(1), size)


def _linear(fe: FunctionEmitter) -> ir.Value:
    return load_field(fe.builder, THREAD_CTX, tctx(fe), T.LINEAR)


def _nthreads(fe: FunctionEmitter) -> ir.Value:
    return load_field(fe.builder, BLOCK_CTX, bctx(fe), B.NTHREADS)


def _index_handlers() -> dict[str, Handler]:
    def make(compute: Callable[[FunctionEmitter, Operation], ir.Value]) -> Handler:
        return lambda fe, op: _bind_index(fe, op, compute(fe, op))

    def global_id(fe: FunctionEmitter, op: Operation) -> ir.Value:
        b = fe.builder
        return b.add(b.mul(_block_id(fe, op), _block_dim(fe, op)), _thread_id(fe, op))

    return {
        "gpu.thread_id": make(_thread_id),
        "gpu.block_id": make(_block_id),
        "gpu.block_dim": make(_block_dim),
        "gpu.grid_dim": make(_grid_dim),
        "gpu.global_id": make(global_id),
        "gpu.cluster_dim_blocks": make(_cluster_size),
        "gpu.cluster_block_id": make(
            lambda fe, op: fe.builder.urem(_block_id(fe, op), _cluster_size(fe, op))),
        "gpu.cluster_id": make(
            lambda fe, op: fe.builder.udiv(_block_id(fe, op), _cluster_size(fe, op))),
        "gpu.cluster_dim": make(
            lambda fe, op: fe.builder.udiv(_grid_dim(fe, op), _cluster_size(fe, op))),
        "gpu.lane_id": make(lambda fe, op: fe.builder.and_(_linear(fe), I64(cf.WARP_SIZE - 1))),
        "gpu.subgroup_id": make(lambda fe, op: fe.builder.udiv(_linear(fe), I64(cf.WARP_SIZE))),
        "gpu.subgroup_size": make(lambda fe, op: I64(cf.WARP_SIZE)),
        "gpu.num_subgroups": make(lambda fe, op: fe.builder.udiv(
            fe.builder.add(_nthreads(fe), I64(cf.WARP_SIZE - 1)), I64(cf.WARP_SIZE))),
    }


# ---- barriers and slots ----------------------------------------------------------------------

def _wait(fe: FunctionEmitter, kind: State) -> None:
    fe.builder.call(runtime(fe).wait, [tctx(fe), I32(kind)])


def lower_barrier(fe: FunctionEmitter, op: Operation) -> None:
    _wait(fe, State.WAIT_BLOCK)


def lower_warp_barrier(fe: FunctionEmitter, op: Operation) -> None:
    """A warp barrier (`__syncwarp`): every existing lane of the calling warp arrives."""
    _wait(fe, State.WAIT_WARP)


def _check_slot_type(fe: FunctionEmitter, op: Operation, llty: ir.Type) -> None:
    size = {"half": 2, "bfloat": 2, "float": 4, "double": 8}.get(str(llty))
    if isinstance(llty, ir.IntType):
        size = (llty.width + 7) // 8
    if size is None or size > cf.SCALAR_SLOT_BYTES:
        raise UnsupportedError(f"{op.name} on type {llty} is not supported by the CPU device "
                               "(supported: integers up to 64 bits, index, f16, bf16, f32, f64)",
                               fe.location(op))


def _slot(fe: FunctionEmitter, index: ir.Value) -> ir.Value:
    b = fe.builder
    slots = load_field(b, BLOCK_CTX, bctx(fe), B.SLOTS)
    return cf.gep(b, slots, [b.mul(index, I64(cf.SLOT_BYTES))], cf.I8)


def _lane_info(fe: FunctionEmitter) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(linear id, lane, first linear id of the warp, lanes in this warp) as i64."""
    b = fe.builder
    linear = _linear(fe)
    lane = b.and_(linear, I64(cf.WARP_SIZE - 1))
    base = b.sub(linear, lane)
    remaining = b.sub(_nthreads(fe), base)
    lanes = b.select(b.icmp_unsigned("<", remaining, I64(cf.WARP_SIZE)), remaining,
                     I64(cf.WARP_SIZE))
    return linear, lane, base, lanes


def lower_shuffle(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    value, offset, width = (fe.lookup(v) for v in op.operands)
    _check_slot_type(fe, op, value.type)
    mode = enum_text(attr(op, "mode"))
    linear, lane, base, lanes = _lane_info(fe)
    b.store(value, _slot(fe, linear))
    _wait(fe, State.WAIT_WARP)
    off = b.zext(offset, I64)
    w = b.zext(width, I64)
    w = b.select(b.icmp_unsigned("<", w, I64(cf.WARP_SIZE)), w, I64(cf.WARP_SIZE))
    if mode == "xor":
        src = b.xor(lane, off)
        ok = b.icmp_unsigned("<", src, w)
    elif mode == "down":
        src = b.add(lane, off)
        ok = b.icmp_unsigned("<", src, w)
    elif mode == "up":
        src = b.sub(lane, off)
        ok = b.and_(b.icmp_signed(">=", src, I64(0)), b.icmp_signed("<", src, w))
    elif mode == "idx":
        src = off
        ok = b.icmp_unsigned("<", src, w)
    else:
        raise fe.error(op, f"gpu.shuffle: unknown mode {mode!r}")
    ok = b.and_(ok, b.icmp_unsigned("<", lane, w))
    ok = b.and_(ok, b.icmp_unsigned("<", src, lanes))
    src = b.select(ok, src, lane)
    result = b.load(_slot(fe, b.add(base, src)), typ=value.type)
    _wait(fe, State.WAIT_WARP)
    fe.bind(op.results[0], result)
    fe.bind(op.results[1], ok)


# ---- reductions ------------------------------------------------------------------------------

Combine = Callable[[ir.Value, ir.Value], ir.Value]


def _combiner(fe: FunctionEmitter, op: Operation, mlir_type: Attribute) -> Combine:
    """acc, value -> acc' for the op's reduction kind, or its custom region."""
    b = fe.builder
    kind = enum_text(attr(op, "op"))
    if kind is None:
        region = op.regions[0] if op.regions else None
        if region is None or not region.blocks:
            raise fe.error(op, f"{op.name} needs a reduction kind or a region")
        if len(region.blocks) == 1:
            block = region.blocks[0]

            def custom(acc: ir.Value, value: ir.Value) -> ir.Value:
                term = fe.emit_inline(block, [acc, value])
                return fe.lookup(term.operands[0])
        else:
            def custom(acc: ir.Value, value: ir.Value) -> ir.Value:
                # a CFG region: each gpu.yield feeds a phi in a merge block (lower_yield)
                merge = fe.function.append_basic_block("reduce.merge")
                with b.goto_block(merge):
                    phi = b.phi(acc.type)
                merges: list = fe.__dict__.setdefault("cpu_reduce_merges", [])
                merges.append((merge, phi))
                fe.emit_region_cfg(region, [acc, value])
                merges.pop()
                b.position_at_end(merge)
                return phi

        return custom
    is_int = isinstance(mlir_type, IntegerType) or str(mlir_type) == "index"
    if kind in ("min", "max"):  # MLIR's older spellings
        kind = (kind + "si") if is_int else (kind + "numf")
    me = fe.module

    def intrinsic(name: str) -> Combine:
        return lambda a, v: b.call(me.intrinsic(name, a.type, 2), [a, v])

    def pick(pred: str, signed: bool) -> Combine:
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return lambda a, v: b.select(cmp(pred, a, v), a, v)

    table: dict[str, Combine] = {
        "add": (lambda a, v: b.add(a, v)) if is_int else (lambda a, v: b.fadd(a, v)),
        "mul": (lambda a, v: b.mul(a, v)) if is_int else (lambda a, v: b.fmul(a, v)),
        "and": lambda a, v: b.and_(a, v),
        "or": lambda a, v: b.or_(a, v),
        "xor": lambda a, v: b.xor(a, v),
        "minsi": pick("<", True), "maxsi": pick(">", True),
        "minui": pick("<", False), "maxui": pick(">", False),
        "minnumf": intrinsic("llvm.minnum"), "maxnumf": intrinsic("llvm.maxnum"),
        "minimumf": intrinsic("llvm.minimum"), "maximumf": intrinsic("llvm.maximum"),
    }
    if kind not in table:
        raise fe.error(op, f"{op.name}: unknown reduction kind {kind!r}")
    return table[kind]


def lower_yield(fe: FunctionEmitter, op: Operation) -> None:
    """gpu.yield ending a block of a multi-block reduction region: feed the merge phi."""
    merges = fe.__dict__.get("cpu_reduce_merges")
    if not merges:
        raise fe.error(op, "gpu.yield outside a gpu.all_reduce/subgroup_reduce region")
    merge, phi = merges[-1]
    phi.add_incoming(fe.lookup(op.operands[0]), fe.builder.block)
    fe.builder.branch(merge)


def lower_all_reduce(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    value = fe.lookup(op.operands[0])
    _check_slot_type(fe, op, value.type)
    combine = _combiner(fe, op, op.operands[0].type)
    linear = _linear(fe)
    b.store(value, _slot(fe, linear))
    _wait(fe, State.WAIT_BLOCK)
    acc = fe.alloca(value.type)
    with b.if_then(b.icmp_unsigned("==", linear, I64(0))):
        b.store(b.load(_slot(fe, I64(0)), typ=value.type), acc)

        def step(b: ir.IRBuilder, i: ir.Value) -> None:
            item = b.load(_slot(fe, b.add(i, I64(1))), typ=value.type)
            b.store(combine(b.load(acc, typ=value.type), item), acc)

        cf.counted_loop(b, b.sub(_nthreads(fe), I64(1)), step, "allreduce")
        b.store(b.load(acc, typ=value.type), _slot(fe, I64(0)))
    _wait(fe, State.WAIT_BLOCK)
    result = b.load(_slot(fe, I64(0)), typ=value.type)
    _wait(fe, State.WAIT_BLOCK)
    fe.bind(op.results[0], result)


def lower_subgroup_reduce(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    value = fe.lookup(op.operands[0])
    _check_slot_type(fe, op, value.type)
    combine = _combiner(fe, op, op.operands[0].type)
    size = int_attr(op, "cluster_size") or cf.WARP_SIZE
    stride = int_attr(op, "cluster_stride") or 1
    if size * stride > cf.WARP_SIZE or size < 1 or stride < 1:
        raise fe.error(op, f"gpu.subgroup_reduce: cluster of {size} lanes with stride {stride} "
                           f"does not fit a {cf.WARP_SIZE}-lane warp")
    linear, lane, base, lanes = _lane_info(fe)
    b.store(value, _slot(fe, linear))
    _wait(fe, State.WAIT_WARP)
    span = size * stride
    start = b.add(b.mul(b.udiv(lane, I64(span)), I64(span)), b.urem(lane, I64(stride)))
    acc = fe.alloca(value.type)
    b.store(b.load(_slot(fe, b.add(base, start)), typ=value.type), acc)
    for j in range(1, size):
        member = b.add(start, I64(j * stride))
        with b.if_then(b.icmp_unsigned("<", member, lanes)):
            item = b.load(_slot(fe, b.add(base, member)), typ=value.type)
            b.store(combine(b.load(acc, typ=value.type), item), acc)
    result = b.load(acc, typ=value.type)
    _wait(fe, State.WAIT_WARP)
    fe.bind(op.results[0], result)


# ---- printf, dynamic shared memory -----------------------------------------------------------

def lower_printf(fe: FunctionEmitter, op: Operation) -> None:
    """gpu.printf -> libc printf with C's default argument promotions (as CUDA's vprintf sees
    them: float -> double, small integers -> i32), then fflush so output order matches."""
    b = fe.builder
    fmt = attr(op, "format")
    text = str(getattr(fmt, "data", fmt))
    args: list[ir.Value] = []
    for value, mlir_type in zip(fe.operands(op), (v.type for v in op.operands), strict=True):
        llty = value.type
        if str(llty) in ("half", "bfloat", "float"):
            value = b.fpext(value, ir.DoubleType())
        elif isinstance(llty, ir.IntType) and llty.width < 32:
            signed = not (isinstance(mlir_type, IntegerType) and llty.width == 1)
            value = b.sext(value, I32) if signed else b.zext(value, I32)
        args.append(value)
    printf_text(fe, text, args)


def printf_text(fe: FunctionEmitter, text: str, args: list[ir.Value]) -> None:
    """libc printf + fflush(NULL), so output order matches the host's."""
    module = fe.module.module
    fe.builder.call(cf.libc(module, "printf"), [cf.cstring(module, text), *args])
    fe.builder.call(cf.libc(module, "fflush"), [ir.Constant(PTR, None)])


def lower_vector_print(fe: FunctionEmitter, op: Operation) -> None:
    """`vector.print` (scalar or vector) -> one libc printf of the whole op, as gpu.printf."""
    text, args = printf_format(fe, op)
    printf_text(fe, text, list(args))


def lower_dynamic_shared_memory(fe: FunctionEmitter, op: Operation) -> None:
    """gpu.dynamic_shared_memory -> memref<?xi8, workgroup> over launch->dynamic_shared."""
    b = fe.builder
    launch = load_field(b, BLOCK_CTX, bctx(fe), B.LAUNCH)
    base = load_field(b, LAUNCH_CTX, launch, L.DYNAMIC_SHARED)
    size = load_field(b, LAUNCH_CTX, launch, L.DYNAMIC_SHARED_BYTES)
    ty = op.results[0].type
    fe.bind(op.results[0], M.identity_descriptor(b, ty, base, [size]))  # type: ignore[arg-type]


GPU_HANDLERS: dict[str, Handler] = {
    **_index_handlers(),
    "gpu.barrier": lower_barrier,
    "gpu.shuffle": lower_shuffle,
    "gpu.all_reduce": lower_all_reduce,
    "gpu.subgroup_reduce": lower_subgroup_reduce,
    "gpu.printf": lower_printf,
    "vector.print": lower_vector_print,
    "gpu.yield": lower_yield,
    "gpu.dynamic_shared_memory": lower_dynamic_shared_memory,
}

FIBER_OPS = frozenset({"gpu.barrier", "gpu.shuffle", "gpu.all_reduce", "gpu.subgroup_reduce",
                       "cf.assert"})
"""Ops that make a kernel run its threads as fibers (they need threads to wait for each other,
or to stop a block in the middle: a failing assert)."""
