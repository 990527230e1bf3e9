"""MaxPool / AveragePool (2-D, NCHW): one thread per output pixel, the window unrolled, padding
skipped (max) or counted per ONNX's count_include_pad (average); the epilogue follows."""

from __future__ import annotations

import math

from nova.models.codegen.context import GeneratedKernel, KernelContext
from nova.models.codegen.pointwise import BLOCK, Evaluator, store_epilogue, thread_index
from nova.models.codegen.text import Index
from nova.models.graph import Node
from nova.models.ops.nn import conv_params
from nova.models.passes.fusion import KernelGroup


def pool_kernel(ctx: KernelContext, group: KernelGroup, node: Node) -> GeneratedKernel:
    b = ctx.body
    x, out = node.inputs[0], node.outputs[0]
    _, _, h, w = ctx.shape(x)
    out_shape = ctx.shape(out)
    kh, kw = (int(v) for v in node.attrs["kernel_shape"])
    (sh, sw), (pt, pl, _pb, _pr), _ = conv_params(node, (kh, kw))
    is_max = node.op == "MaxPool"
    include_pad = bool(node.attrs.get("count_include_pad", 0))
    total = math.prod(out_shape)
    gid = thread_index(ctx, BLOCK)
    b.line(f"scf.if {b.lt(gid, total)} {{")
    with b.nested():
        n, c, oy, ox = b.delinearize(gid, out_shape)
        plane = b.mul(b.add(b.mul(n, out_shape[1]), c), h * w)
        acc = b.const(float("-inf") if is_max else 0.0, "f32")
        fill = acc
        static_count = 0
        dynamic_count: list[str] = []
        for i in range(kh):
            iy = _shift(ctx, b.mul(oy, sh), i - pt)
            for j in range(kw):
                ix = _shift(ctx, b.mul(ox, sw), j - pl)
                conds = _inside(ctx, iy, h, i < pt, i - pt + (out_shape[2] - 1) * sh >= h) + \
                    _inside(ctx, ix, w, j < pl, j - pl + (out_shape[3] - 1) * sw >= w)
                linear = b.add(plane, b.add(b.mul(iy, w), ix))
                if not conds:
                    v = _load(ctx, x, linear)
                    static_count += 1
                else:
                    ok = conds[0]
                    for cnd in conds[1:]:
                        ok = b.op(f"arith.andi {ok}, {cnd} : i1")
                    v = b.fresh("win")
                    b.line(f"{v} = scf.if {ok} -> (f32) {{")
                    with b.nested():
                        b.line(f"scf.yield {_load(ctx, x, linear)} : f32")
                    b.line("} else {")
                    with b.nested():
                        b.line(f"scf.yield {fill} : f32")
                    b.line("}")
                    dynamic_count.append(b.op(f"arith.uitofp {ok} : i1 to f32"))
                op = "arith.maximumf" if is_max else "arith.addf"
                acc = b.op(f"{op} {acc}, {v} : f32")
        if not is_max:
            divisor = b.const(float(kh * kw if include_pad else static_count), "f32")
            if not include_pad:
                for cnt in dynamic_count:
                    divisor = b.op(f"arith.addf {divisor}, {cnt} : f32")
            acc = b.op(f"arith.divf {acc}, {divisor} : f32")
        ev = Evaluator(ctx, group)
        store_epilogue(ctx, ev, group, out, [n, c, oy, ox], gid, acc)
    b.line("}")
    return ctx.finish(((total + BLOCK - 1) // BLOCK, 1, 1), (BLOCK, 1, 1))


def _shift(ctx: KernelContext, value: Index, amount: int) -> Index:
    """value + amount (amount may be negative: index arithmetic wraps, compared signed)."""
    if amount >= 0 or isinstance(value, int):
        return ctx.body.add(value, amount)
    return ctx.body.op(f"arith.subi {value}, {ctx.body.ix(-amount)} : index")


def _inside(ctx: KernelContext, v: Index, size: int, may_be_low: bool, may_be_high: bool) \
        -> list[str]:
    """Bounds checks for window coordinate `v` (only the ones that can fail)."""
    b = ctx.body
    if isinstance(v, int):
        return [] if 0 <= v < size else [b.const(False, "i1")]
    conds = []
    if may_be_low:
        conds.append(b.op(f"arith.cmpi sge, {v}, {b.ix(0)} : index"))
    if may_be_high:
        conds.append(b.op(f"arith.cmpi slt, {v}, {b.ix(size)} : index"))
    return conds


def _load(ctx: KernelContext, tensor: str, linear: Index) -> str:
    value = ctx.load(tensor, linear)
    ty = ctx.ctype(tensor)
    if ty == "f32":
        return value
    return ctx.body.op(f"arith.truncf {value} : {ty} to f32")
