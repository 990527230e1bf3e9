"""Pointwise code: the expression evaluator shared by every kernel (fused elementwise chains,
broadcasts, index maps, anchor epilogues) and the pure pointwise kernel (one thread per output
element).

`Evaluator.value(tensor, idx)` returns an SSA value of `tensor` at multi-index `idx`: a buffer
load for materialised tensors, a constant for one-element weights, the anchor's value inside an
epilogue, or the inlined computation of the producing node (memoised per index, scoped to the
region being emitted so values always dominate their uses).

**Vector chunks.** A kernel may evaluate `lanes` consecutive elements of the innermost dimension
side by side (the pointwise kernel, the register row kernels): their innermost indices come from
`lane_index(base, i)` (base a multiple of `lanes`), a fact the index maps keep (Transpose and
broadcasts pass indices through, Reshape and Slice re-derive it when the innermost runs stay
multiples of `lanes`). A buffer read whose innermost index is such a lane becomes one vector
load per chunk (16 bytes of fp16: `ld.global.v4.b32`) and a lane extract, instead of `lanes`
scalar loads each behind its own div/rem index math.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from nova.models.codegen.context import GeneratedKernel, KernelContext, vector_lanes
from nova.models.codegen.text import COMPUTE, Index, broadcast_index, storage_type
from nova.models.errors import UnsupportedOpError
from nova.models.graph import Node
from nova.models.ops.elementwise import cast_target
from nova.models.ops.shape import slice_params, transpose_perm, trilu_k
from nova.models.passes.fusion import KernelGroup

BLOCK = 256
"""Threads per block of pointwise kernels."""


class Evaluator:
    """Inline evaluation of a kernel group's pointwise nodes (see the module doc)."""

    def __init__(self, ctx: KernelContext, group: KernelGroup, lanes: int = 1) -> None:
        self.ctx = ctx
        self.body = ctx.body
        self.members = {out: node for node in [*group.prologue, *group.nodes]
                        for out in node.outputs}
        self.anchor: tuple[str, tuple[Index, ...], str] | None = None
        self.hint: tuple[tuple[Index, ...], Index, tuple[int, ...]] | None = None
        self.chunk: tuple[tuple[Index, ...], Index, tuple[int, ...]] | None = None
        self.lanes = lanes
        """Elements of a vector chunk (see the module doc); 1: scalar code."""
        self._lane_of: dict[str, tuple[Index, int]] = {}
        self._scopes: list[dict[tuple[str, tuple[Index, ...]], str]] = [{}]
        self._index_scopes: list[dict[tuple[object, ...], list[Index]]] = [{}]

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Values computed inside belong to a nested region: forget them afterwards."""
        self._scopes.append({})
        self._index_scopes.append({})
        try:
            yield
        finally:
            self._scopes.pop()
            self._index_scopes.pop()

    def lane_index(self, base: Index, i: int) -> Index:
        """`base + i` as lane i of the vector chunk starting at `base` (a multiple of
        `lanes`, which the caller guarantees)."""
        value = self.body.add(base, i)
        if isinstance(value, str) and self.lanes > 1:
            self._lane_of[value] = (base, i)
        return value

    def lane_of(self, index: Index) -> tuple[Index, int] | None:
        """(chunk base, lane) when `index` came from lane_index."""
        return self._lane_of.get(index) if isinstance(index, str) else None

    def set_chunk(self, idx: list[Index], linear: Index, shape: tuple[int, ...]) -> None:
        """Vector reads of buffers of `shape` whose chunk starts at `idx` use `linear`."""
        self.chunk = (tuple(idx), linear, shape)

    def memo_index(self, key: tuple[object, ...], compute: Callable[[], list[Index]]) \
            -> list[Index]:
        """Index math shared by the lanes of a chunk, computed once per region."""
        for scope in reversed(self._index_scopes):
            if key in scope:
                return scope[key]
        result = compute()
        self._index_scopes[-1][key] = result
        return result

    def set_anchor(self, tensor: str, idx: list[Index], value: str) -> None:
        """Inside an epilogue: `tensor` at `idx` is the anchor's computed `value`."""
        self.anchor = (tensor, tuple(idx), value)

    def set_hint(self, idx: list[Index], linear: Index, shape: tuple[int, ...]) -> None:
        """Buffers of `shape` read at `idx` use `linear` instead of recomputing it."""
        self.hint = (tuple(idx), linear, shape)

    def value(self, tensor: str, idx: list[Index]) -> str:
        key = (tensor, tuple(idx))
        for scope in reversed(self._scopes):
            if key in scope:
                return scope[key]
        result = self._compute(tensor, idx)
        self._scopes[-1][key] = result
        return result

    def _compute(self, tensor: str, idx: list[Index]) -> str:
        if self.anchor is not None and self.anchor[0] == tensor:
            if self.anchor[1] != tuple(idx):
                raise AssertionError(f"epilogue reads {tensor} at another index")
            return self.anchor[2]
        scalar = self.ctx.scalar_weight(tensor)
        if scalar is not None:
            return self.body.const(scalar, self.ctx.ctype(tensor))
        node = self.members.get(tensor)
        if node is None:
            shape = self.ctx.shape(tensor)
            lane = self._vector_read(tensor, idx, shape)
            if lane is not None:
                return lane
            if self.hint is not None and self.hint[0] == tuple(idx) and self.hint[2] == shape:
                linear = self.hint[1]
            else:
                linear = self.body.linear(idx, shape)
            return self.ctx.load(tensor, linear)
        emit = EMITTERS.get(node.op)
        if emit is None:
            raise UnsupportedOpError(f"{node.describe()}: no pointwise code generator")
        return emit(self, node, idx)

    def _vector_read(self, tensor: str, idx: list[Index], shape: tuple[int, ...]) -> str | None:
        """Lane i of one vector load, when idx's innermost index is lane i of a chunk (the
        chunk base is a multiple of `lanes`, and so is the innermost extent: in bounds)."""
        where = self.lane_of(idx[-1]) if idx and self.lanes > 1 else None
        if where is None or shape[-1] % self.lanes or \
                storage_type(self.ctx.type_of(tensor).dtype) == "i1":
            return None
        base, i = where
        start = (*idx[:-1], base)
        key = ("\0vector:" + tensor, start)
        vector = None
        for scope in reversed(self._scopes):
            vector = scope.get(key)
            if vector is not None:
                break
        if vector is None:
            if self.chunk is not None and self.chunk[0] == start and self.chunk[2] == shape:
                linear = self.chunk[1]
            else:
                linear = self.body.linear(list(start), shape)
            vector = self.ctx.load_vector(tensor, linear, self.lanes)
            self._scopes[-1][key] = vector
        return self.ctx.extract(tensor, vector, i, self.lanes)

    # helpers for emitters
    def operand(self, node: Node, i: int, idx: list[Index]) -> str:
        """Input i of elementwise `node` at the broadcast of output index `idx`."""
        out_shape = self.ctx.shape(node.outputs[0])
        name = node.inputs[i]
        return self.value(name, broadcast_index(idx, out_shape, self.ctx.shape(name)))

    def f(self, value: float) -> str:
        return self.body.const(value, "f32")


Emitter = Callable[[Evaluator, Node, list[Index]], str]


def _float_only(ev: Evaluator, node: Node) -> str:
    ty = ev.ctx.ctype(node.outputs[0])
    if ty not in ("f32", "f64"):
        raise UnsupportedOpError(f"{node.describe()}: only float inputs are implemented "
                                 f"(got {ev.ctx.type_of(node.inputs[0]).dtype})")
    return ty


def _sigmoid(ev: Evaluator, x: str, ty: str) -> str:
    b = ev.body
    neg = b.op(f"arith.negf {x} : {ty}")
    e = b.op(f"math.exp {neg} : {ty}")
    den = b.op(f"arith.addf {b.const(1.0, ty)}, {e} : {ty}")
    return b.op(f"arith.divf {b.const(1.0, ty)}, {den} : {ty}")


def _unary(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    x = ev.operand(node, 0, idx)
    b = ev.body
    ty = ev.ctx.ctype(node.outputs[0])
    op = node.op
    if ty == "i64":
        if op == "Relu":
            return b.op(f"arith.maxsi {x}, {b.const(0, ty)} : {ty}")
        if op == "Neg":
            return b.op(f"arith.subi {b.const(0, ty)}, {x} : {ty}")
        if op == "Abs":
            return b.op(f"math.absi {x} : {ty}")
        if op == "Identity":
            return x
    if op == "Identity":
        return x
    ty = _float_only(ev, node)
    simple = {"Tanh": "math.tanh", "Exp": "math.exp", "Log": "math.log", "Sqrt": "math.sqrt",
              "Erf": "math.erf", "Abs": "math.absf", "Neg": "arith.negf"}
    if op in simple:
        return b.op(f"{simple[op]} {x} : {ty}")
    if op == "Relu":
        return b.op(f"arith.maximumf {x}, {b.const(0.0, ty)} : {ty}")
    if op == "Sigmoid":
        return _sigmoid(ev, x, ty)
    if op == "Silu":
        return b.op(f"arith.mulf {x}, {_sigmoid(ev, x, ty)} : {ty}")
    if op == "Reciprocal":
        return b.op(f"arith.divf {b.const(1.0, ty)}, {x} : {ty}")
    if op == "LeakyRelu":
        scaled = b.op(f"arith.mulf {x}, {b.const(float(node.attrs['alpha']), ty)} : {ty}")
        pos = b.op(f"arith.cmpf oge, {x}, {b.const(0.0, ty)} : {ty}")
        return b.op(f"arith.select {pos}, {x}, {scaled} : {ty}")
    if op == "Gelu":
        half = b.op(f"arith.mulf {x}, {b.const(0.5, ty)} : {ty}")
        if node.attrs.get("approximate", "none") == "tanh":
            x2 = b.op(f"arith.mulf {x}, {x} : {ty}")
            x3 = b.op(f"arith.mulf {x2}, {x} : {ty}")
            inner = b.op(f"math.fma {x3}, {b.const(0.044715, ty)}, {x} : {ty}")
            scaled = b.op(f"arith.mulf {inner}, {b.const(math.sqrt(2.0 / math.pi), ty)} : {ty}")
            t = b.op(f"math.tanh {scaled} : {ty}")
        else:
            scaled = b.op(f"arith.mulf {x}, {b.const(1.0 / math.sqrt(2.0), ty)} : {ty}")
            t = b.op(f"math.erf {scaled} : {ty}")
        one_plus = b.op(f"arith.addf {t}, {b.const(1.0, ty)} : {ty}")
        return b.op(f"arith.mulf {half}, {one_plus} : {ty}")
    raise UnsupportedOpError(f"{node.describe()}: no pointwise code generator")


def _clip(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    x = ev.operand(node, 0, idx)
    b = ev.body
    ty = ev.ctx.ctype(node.outputs[0])
    is_float = ty in ("f32", "f64")
    for i, fn in ((1, "maximumf" if is_float else "maxsi"), (2, "minimumf" if is_float else
                                                              "minsi")):
        if len(node.inputs) > i and node.inputs[i]:
            bound = ev.operand(node, i, idx)
            x = b.op(f"arith.{fn} {x}, {bound} : {ty}")
    return x


_FLOAT_BINARY = {"Add": "arith.addf", "Sub": "arith.subf", "Mul": "arith.mulf",
                 "Div": "arith.divf", "Max": "arith.maximumf", "Min": "arith.minimumf"}
_INT_BINARY = {"Add": "arith.addi", "Sub": "arith.subi", "Mul": "arith.muli",
               "Div": "arith.divsi", "Max": "arith.maxsi", "Min": "arith.minsi"}


def _binary(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    b = ev.body
    ty = ev.ctx.ctype(node.outputs[0])
    a = ev.operand(node, 0, idx)
    if node.op == "Pow":
        _float_only(ev, node)
        exponent = ev.ctx.scalar_weight(node.inputs[1])
        if exponent == 2.0:
            return b.op(f"arith.mulf {a}, {a} : {ty}")
        if exponent == 1.0:
            return a
        if exponent == 0.5:
            return b.op(f"math.sqrt {a} : {ty}")
        if exponent == 3.0:
            sq = b.op(f"arith.mulf {a}, {a} : {ty}")
            return b.op(f"arith.mulf {sq}, {a} : {ty}")
        e = ev.operand(node, 1, idx)
        e_ty = ev.ctx.ctype(node.inputs[1])
        if e_ty != ty:
            e = b.op(f"arith.sitofp {e} : {e_ty} to {ty}") if e_ty == "i64" else e
        return b.op(f"math.powf {a}, {e} : {ty}")
    c = ev.operand(node, 1, idx)
    table = _FLOAT_BINARY if ty in ("f32", "f64") else _INT_BINARY
    if ty == "i1":
        raise UnsupportedOpError(f"{node.describe()}: bool arithmetic is not implemented")
    return b.op(f"{table[node.op]} {a}, {c} : {ty}")


def _compare(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    ty = ev.ctx.ctype(node.inputs[0])
    a, c = ev.operand(node, 0, idx), ev.operand(node, 1, idx)
    if ty in ("f32", "f64"):
        pred = {"Equal": "oeq", "Less": "olt", "Greater": "ogt", "LessOrEqual": "ole",
                "GreaterOrEqual": "oge"}[node.op]
        return ev.body.op(f"arith.cmpf {pred}, {a}, {c} : {ty}")
    pred = {"Equal": "eq", "Less": "slt", "Greater": "sgt", "LessOrEqual": "sle",
            "GreaterOrEqual": "sge"}[node.op]
    if ty == "i1" and pred != "eq":  # bool orders false < true: unsigned
        pred = "u" + pred[1:]
    return ev.body.op(f"arith.cmpi {pred}, {a}, {c} : {ty}")


def _logical(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    b = ev.body
    a = ev.operand(node, 0, idx)
    if node.op == "Not":
        return b.op(f"arith.xori {a}, {b.const(True, 'i1')} : i1")
    c = ev.operand(node, 1, idx)
    fn = {"And": "arith.andi", "Or": "arith.ori", "Xor": "arith.xori"}[node.op]
    return b.op(f"{fn} {a}, {c} : i1")


def _trilu(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    """x where the column minus the row is <= k (lower) or >= k (upper), else 0."""
    b = ev.body
    x = ev.operand(node, 0, idx)
    ty = ev.ctx.ctype(node.outputs[0])
    k = trilu_k(node, [ev.ctx.graph.weights.get(n) if n else None for n in node.inputs])
    row, col = idx[-2], idx[-1]
    diag = b.op(f"arith.subi {b.ix(col)}, {b.ix(row)} : index")
    pred = "sge" if node.attrs["upper"] else "sle"
    keep = b.op(f"arith.cmpi {pred}, {diag}, {b.const(k, 'index')} : index")
    zero = b.const(False if ty == "i1" else 0 if ty.startswith("i") else 0.0, ty)
    return b.op(f"arith.select {keep}, {x}, {zero} : {ty}")


def _where(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    cond, a, c = (ev.operand(node, i, idx) for i in range(3))
    ty = ev.ctx.ctype(node.outputs[0])
    return ev.body.op(f"arith.select {cond}, {a}, {c} : {ty}")


def _cast(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    x = ev.operand(node, 0, idx)
    src, dst = ev.ctx.type_of(node.inputs[0]).dtype, cast_target(node)
    return cast_value(ev, x, src, dst)


def cast_value(ev: Evaluator, x: str, src: str, dst: str) -> str:
    """Convert compute-typed `x` of dtype `src` to the compute type of dtype `dst`, rounding
    through `dst`'s storage type when that is narrower."""
    b = ev.body
    s, d = COMPUTE[src], COMPUTE[dst]
    if s != d:
        if s in ("f32", "f64") and d in ("f32", "f64"):
            x = b.op(f"arith.{'extf' if d == 'f64' else 'truncf'} {x} : {s} to {d}")
        elif s in ("f32", "f64") and d == "i64":
            x = b.op(f"arith.fptosi {x} : {s} to i64")
        elif s in ("f32", "f64") and d == "i1":
            x = b.op(f"arith.cmpf une, {x}, {b.const(0.0, s)} : {s}")
        elif s == "i64" and d in ("f32", "f64"):
            x = b.op(f"arith.sitofp {x} : i64 to {d}")
        elif s == "i64" and d == "i1":
            x = b.op(f"arith.cmpi ne, {x}, {b.const(0, 'i64')} : i64")
        elif s == "i1" and d in ("f32", "f64"):
            x = b.op(f"arith.uitofp {x} : i1 to {d}")
        elif s == "i1" and d == "i64":
            x = b.op(f"arith.extui {x} : i1 to i64")
    st = storage_type(dst)
    if st != d and d == "f32":
        narrow = b.op(f"arith.truncf {x} : f32 to {st}")
        x = b.op(f"arith.extf {narrow} : {st} to f32")
    elif st != d and d == "i64":
        narrow = b.op(f"arith.trunci {x} : i64 to {st}")
        ext = "extui" if dst == "uint8" else "extsi"
        x = b.op(f"arith.{ext} {narrow} : {st} to i64")
    return x


def _transpose(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    perm = transpose_perm(node, len(idx))
    src: list[Index] = [0] * len(idx)
    for d, p in enumerate(perm):
        src[p] = idx[d]
    return ev.value(node.inputs[0], src)


def _slice(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    values = [ev.ctx.graph.weights.get(n) if n else None for n in node.inputs]
    start, step, _ = slice_params(node, ev.ctx.shape(node.inputs[0]), values)
    b = ev.body
    src: list[Index] = []
    for i, s, st in zip(idx, start, step, strict=True):
        lane = ev.lane_of(i)
        if lane is not None and st == 1 and s % ev.lanes == 0:
            src.append(ev.lane_index(b.add(s, lane[0]), lane[1]))
        elif st >= 0:
            src.append(b.add(s, b.mul(i, st)))
        else:  # start - i * |step|
            off = b.mul(i, -st)
            src.append(s - off if isinstance(off, int) else b.op(
                f"arith.subi {b.ix(s)}, {off} : index"))
    return ev.value(node.inputs[0], src)


def _expand(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    return ev.operand(node, 0, idx)


def _view(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    b = ev.body
    out_shape, in_shape = ev.ctx.shape(node.outputs[0]), ev.ctx.shape(node.inputs[0])
    lane = ev.lane_of(idx[-1]) if idx else None
    if lane is not None and in_shape and out_shape[-1] % ev.lanes == 0 and \
            in_shape[-1] % ev.lanes == 0:
        # the chunk's elements are consecutive in both shapes' innermost runs
        base, i = lane
        head = [*idx[:-1], base]
        src = ev.memo_index(("view", node.outputs[0], *head), lambda: b.delinearize(
            b.linear(head, out_shape), in_shape))
        return ev.value(node.inputs[0], [*src[:-1], ev.lane_index(src[-1], i)])
    linear = b.linear(idx, out_shape)
    return ev.value(node.inputs[0], b.delinearize(linear, in_shape))


def _gather(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    data, indices = node.inputs
    axis = int(node.attrs["axis"]) % len(ev.ctx.shape(data))
    r = len(ev.ctx.shape(indices))
    b = ev.body
    raw = ev.value(indices, idx[axis:axis + r])
    if ev.ctx.ctype(indices) != "i64":
        raw = b.op(f"arith.extsi {raw} : {ev.ctx.ctype(indices)} to i64")
    size = ev.ctx.shape(data)[axis]
    neg = b.op(f"arith.cmpi slt, {raw}, {b.const(0, 'i64')} : i64")
    wrapped = b.op(f"arith.addi {raw}, {b.const(size, 'i64')} : i64")
    fixed = b.op(f"arith.select {neg}, {wrapped}, {raw} : i64")
    lo = b.op(f"arith.maxsi {fixed}, {b.const(0, 'i64')} : i64")
    clamped = b.op(f"arith.minsi {lo}, {b.const(size - 1, 'i64')} : i64")
    where = b.op(f"arith.index_cast {clamped} : i64 to index")
    return ev.value(data, [*idx[:axis], where, *idx[axis + r:]])


def _concat(ev: Evaluator, node: Node, idx: list[Index]) -> str:
    shapes = [ev.ctx.shape(n) for n in node.inputs]
    axis = int(node.attrs["axis"]) % len(shapes[0])
    ty = ev.ctx.ctype(node.outputs[0])
    return _concat_from(ev, node, idx, axis, 0, 0, shapes, ty)


def _concat_from(ev: Evaluator, node: Node, idx: list[Index], axis: int, k: int, offset: int,
                 shapes: list[tuple[int, ...]], ty: str) -> str:
    b = ev.body
    local = list(idx)
    a = idx[axis]
    local[axis] = a - offset if isinstance(a, int) else (
        a if offset == 0 else b.op(f"arith.subi {a}, {b.ix(offset)} : index"))
    if k == len(node.inputs) - 1:
        return ev.value(node.inputs[k], local)
    end = offset + shapes[k][axis]
    inside = b.lt(a, end)
    result = b.fresh("cat")
    b.line(f"{result} = scf.if {inside} -> ({ty}) {{")
    with b.nested(), ev.scope():
        v = ev.value(node.inputs[k], local)
        b.line(f"scf.yield {v} : {ty}")
    b.line("} else {")
    with b.nested(), ev.scope():
        v = _concat_from(ev, node, idx, axis, k + 1, end, shapes, ty)
        b.line(f"scf.yield {v} : {ty}")
    b.line("}")
    return result


EMITTERS: dict[str, Emitter] = {
    **{op: _unary for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg",
                             "Abs", "Reciprocal", "Silu", "Identity", "Gelu", "LeakyRelu")},
    **{op: _binary for op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min")},
    **{op: _compare for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")},
    **{op: _logical for op in ("Not", "And", "Or", "Xor")}, "Trilu": _trilu,
    "Clip": _clip, "Where": _where, "Cast": _cast, "Transpose": _transpose, "Slice": _slice,
    "Expand": _expand, "Gather": _gather, "Concat": _concat,
    **{op: _view for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze")},
}


def thread_index(ctx: KernelContext, block: int) -> str:
    """The global linear thread id (block_id.x * block + thread_id.x)."""
    b = ctx.body
    bid = b.op("gpu.block_id x")
    tid = b.op("gpu.thread_id x")
    base = b.mul(bid, block)
    return str(b.add(base, tid))


def pointwise_kernel(ctx: KernelContext, group: KernelGroup) -> GeneratedKernel:
    """One thread per vector chunk of `group.root` (16 bytes of its innermost dimension when
    that divides, else one element): evaluate the fused expression per element and store the
    chunk at once. The index math (div/rem by the dims) runs once per chunk."""
    b = ctx.body
    shape = ctx.shape(group.root)
    n = max(1, math.prod(shape))
    lanes = vector_lanes([ctx.type_of(group.root).dtype], shape[-1]) if shape else 1
    chunks = n // lanes
    gid = thread_index(ctx, BLOCK)
    inside = b.lt(gid, chunks)
    b.line(f"scf.if {inside} {{")
    with b.nested():
        ev = Evaluator(ctx, group, lanes)
        first = b.mul(gid, lanes)
        start = b.delinearize(first, shape)
        ev.set_chunk(start, first, shape)
        values = []
        for i in range(lanes):
            idx = [*start[:-1], ev.lane_index(start[-1], i)] if lanes > 1 else start
            ev.set_hint(idx, b.add(first, i), shape)
            values.append(ev.value(group.root, idx))
        ctx.store_lanes(group.root, first, values)
    b.line("}")
    return ctx.finish(((chunks + BLOCK - 1) // BLOCK, 1, 1), (BLOCK, 1, 1))


def store_epilogue(ctx: KernelContext, ev: Evaluator, group: KernelGroup, anchor_out: str,
                   idx: list[Index], linear: Index, value: str) -> None:
    """Store the anchor's compute-typed `value` at `idx` (row-major `linear`) of `anchor_out`
    through the group's epilogue: the stored tensor is `group.root`, of the same shape."""
    ctx.store(group.root, linear, epilogue_value(ctx, ev, group, anchor_out, idx, linear, value))


def epilogue_value(ctx: KernelContext, ev: Evaluator, group: KernelGroup, anchor_out: str,
                   idx: list[Index], linear: Index, value: str, fresh_scope: bool = True) -> str:
    """The group's root at `idx` (compute type) when the anchor's output there is `value`.
    `fresh_scope=False` lets the lanes of one vector chunk (distinct indices, one region) share
    their reads (one vector load of a residual per chunk)."""
    shape = ctx.shape(anchor_out)
    idx = [0 if d == 1 else i for i, d in zip(idx, shape, strict=True)]  # as broadcasts index
    ev.set_anchor(anchor_out, idx, value)
    ev.set_hint(idx, linear, shape)
    if not fresh_scope:
        return ev.value(group.root, idx)
    with ev.scope():
        return ev.value(group.root, idx)
