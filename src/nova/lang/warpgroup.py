"""Kernel calls of `nova.wgmma` (Hopper warpgroup MMA) -> upstream's `nvvm.wgmma.*` ops.

- `nova.wgmma.descriptor(array, offset=0, swizzle=128, lbo=0, sbo=0)` ->
  `memref.extract_aligned_pointer_as_index` of the shared array (its shared address) + offset
  bytes, packed with arith ops into PTX's 64-bit matrix descriptor: bits 0-13 address >> 4
  (modulo 2^18), 16-29 lbo >> 4, 32-45 sbo >> 4, 62-63 the swizzle mode (0: none, 1: 128-byte,
  2: 64-byte, 3: 32-byte);
- `nova.wgmma.zero(n)` -> `llvm.mlir.zero : !llvm.struct<(f32 x n / 2)>`;
- `nova.wgmma.mma(acc, a, b, dtype, layout_a, layout_b, accumulate)` ->
  `nvvm.wgmma.mma_async %a, %b, %acc, <m = 64, n = N, k = 16>, ...`;
- `nova.wgmma.fence()`, `commit()`, `wait(n)` -> `nvvm.wgmma.fence.aligned`,
  `nvvm.wgmma.commit.group.sync.aligned`, `nvvm.wgmma.wait.group.sync.aligned n`;
- `nova.wgmma.fence_shared()` -> `nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>,
  space = #nvvm.shared_space<cta>}`;
- `nova.wgmma.store(array, offset, acc, ld)` -> `llvm.extractvalue` + `memref.store` of each of
  the thread's N / 2 elements at its position (nova.ir.dialects.nvvm_wgmma's layout), thread t
  of the warpgroup being the block's linear thread id mod 128.

Checked at compile time with a located KernelTypeError: array kinds and dtypes, constant
arguments (swizzle, n, dtype, layouts, accumulate, wait's n), accumulator and descriptor types,
and that the warpgroup-collective calls are not under a lane-dependent condition.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from xdsl.dialects import memref
from xdsl.dialects.builtin import DenseArrayBase, IndexType, i64
from xdsl.dialects.llvm import ExtractValueOp, ZeroOp

from nova.ir import gpu
from nova.ir.dialects.memref import ExtractAlignedPointerAsIndexOp
from nova.ir.dialects.nvvm_wgmma import (
    WARPGROUP_SIZE,
    FenceProxyOp,
    WgmmaCommitGroupOp,
    WgmmaFenceAlignedOp,
    WgmmaMmaAsyncOp,
    WgmmaWaitGroupOp,
)
from nova.lang import types as T
from nova.lang.fragments import _require_whole_warp
from nova.lang.values import Const, Val, Value

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup

SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}
"""Swizzle bytes -> the descriptor's mode field (bits 62-63)."""
_INPUTS = {"float16": "f16", "bfloat16": "bf16"}


def _const(tr: Translator, name: str, what: str, value: Value | Tup, allowed: tuple[Any, ...],
           node: ast.AST) -> Any:
    if not isinstance(value, Const) or type(value.value) is float or \
            value.value not in allowed:
        shown = ", ".join(map(repr, allowed)) if len(allowed) < 8 else \
            f"{allowed[0]!r}, {allowed[1]!r}, ..., {allowed[-1]!r}"
        raise tr.type_error(node, f"nova.{name}(): {what} must be a constant, one of {shown}; "
                            f"got {tr.describe(value)}")
    return value.value


def _int64(tr: Translator, value: Value | Tup, node: ast.AST) -> Val:
    return tr.as_type(value, T.int64, node)


def _accumulator(tr: Translator, name: str, value: Value | Tup, node: ast.AST) -> Val:
    if not (isinstance(value, Val) and isinstance(value.type, T.WgmmaAccType)):
        raise tr.type_error(node, f"nova.{name}(): the accumulator must come from "
                            f"nova.wgmma.zero(n) or nova.wgmma.mma(...), got "
                            f"{tr.describe(value)}")
    return value


def _descriptor_operand(tr: Translator, name: str, what: str, value: Value | Tup,
                        node: ast.AST) -> Val:
    if not (isinstance(value, Val) and isinstance(value.type, T.ScalarType)
            and value.type in (T.int64, T.uint64)):
        raise tr.type_error(node, f"nova.{name}(): {what} must be a matrix descriptor (an "
                            f"int64 from nova.wgmma.descriptor), got {tr.describe(value)}")
    return value


def descriptor(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    array = v["array"]
    if not (isinstance(array, Val) and isinstance(array.type, T.ArrayType)
            and array.type.space == T.SHARED_MEMORY_SPACE
            and array.type.dtype in (T.float16, T.bfloat16)):
        raise tr.type_error(node, f"nova.{name}(): the operand tile must be in a float16 or "
                            "bfloat16 shared array (nova.shared_array or "
                            f"nova.dynamic_shared_array), got {tr.describe(array)}")
    mode = SWIZZLE_MODES[_const(tr, name, "swizzle", v["swizzle"], tuple(SWIZZLE_MODES), node)]
    em = tr.em
    for key in ("lbo", "sbo"):
        value = v[key]
        if isinstance(value, Const) and type(value.value) is int and \
                not (0 <= value.value < 1 << 18 and value.value % 16 == 0):
            raise tr.type_error(node, f"nova.{name}(): {key} = {value.value} is not a byte "
                                "offset the descriptor holds (a multiple of 16 below 2**18)")
    base = em.res(ExtractAlignedPointerAsIndexOp.create(operands=[array.ssa],
                                                         result_types=[IndexType()]))
    address = em.from_index(base)
    offset = _int64(tr, v["offset"], node)
    item = em.constant(array.type.dtype.itemsize, T.int64)
    address = em.binary("+", address, em.binary("*", offset, item, T.int64), T.int64)

    def field(value: Val, shift: int) -> Val:
        bits = em.binary("&", em.binary(">>", value, em.constant(4, T.int64), T.int64),
                         em.constant(0x3FFF, T.int64), T.int64)
        return em.binary("<<", bits, em.constant(shift, T.int64), T.int64) if shift else bits

    desc = field(address, 0)
    desc = em.binary("|", desc, field(_int64(tr, v["lbo"], node), 16), T.int64)
    desc = em.binary("|", desc, field(_int64(tr, v["sbo"], node), 32), T.int64)
    if mode:
        bits = mode << 62
        signed = bits - (1 << 64) if bits >= 1 << 63 else bits  # the int64 with those bits
        desc = em.binary("|", desc, em.constant(signed, T.int64), T.int64)
    return desc


def zero(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    n = _const(tr, name, "n", v["n"], tuple(range(8, 257, 8)), node)
    acc = T.WgmmaAccType(n)
    return Val(tr.em.res(ZeroOp(result_types=[acc.mlir])), acc)


def mma(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    acc = _accumulator(tr, name, v["acc"], node)
    a = _descriptor_operand(tr, name, "a", v["a"], node)
    b = _descriptor_operand(tr, name, "b", v["b"], node)
    dt = v["dtype"]
    dtype = T.resolve_dtype(dt.value) if isinstance(dt, Const) else None
    if dtype not in (T.float16, T.bfloat16):
        raise tr.type_error(node, f"nova.{name}(): dtype must be nova.float16 or "
                            f"nova.bfloat16 (the A and B tiles' type), got {tr.describe(dt)}")
    assert dtype is not None
    layout_a = _const(tr, name, "layout_a", v["layout_a"], ("row", "col"), node)
    layout_b = _const(tr, name, "layout_b", v["layout_b"], ("row", "col"), node)
    accumulate = _const(tr, name, "accumulate", v["accumulate"], (True, False), node)
    at = acc.type
    assert isinstance(at, T.WgmmaAccType)
    op = WgmmaMmaAsyncOp(a.ssa, b.ssa, acc.ssa, at.n, _INPUTS[dtype.name],
                         "one" if accumulate else "zero", layout_a, layout_b)
    return Val(tr.em.res(op), at)


def fence(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    tr.em.op(WgmmaFenceAlignedOp())
    return Const(None)


def fence_shared(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    tr.em.op(FenceProxyOp("async.shared", "cta"))
    return Const(None)


def commit(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    tr.em.op(WgmmaCommitGroupOp())
    return Const(None)


def wait(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    n = v["n"]
    if not (isinstance(n, Const) and type(n.value) is int and 0 <= n.value < 1 << 31):
        raise tr.type_error(node, f"nova.{name}(): n must be a constant integer >= 0 (the "
                            f"groups left in flight), got {tr.describe(n)}")
    tr.em.op(WgmmaWaitGroupOp(int(n.value)))
    return Const(None)


def _linear_thread(tr: Translator) -> Val:
    """The block's linear thread id (x fastest) as int64."""
    em = tr.em
    dims = [em.from_index(em.res(gpu.ThreadIdOp(d))) for d in "xyz"]
    sizes = [em.from_index(em.res(gpu.BlockDimOp(d))) for d in "xy"]
    inner = em.binary("+", dims[1], em.binary("*", sizes[1], dims[2], T.int64), T.int64)
    return em.binary("+", dims[0], em.binary("*", sizes[0], inner, T.int64), T.int64)


def store(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    _require_whole_warp(tr, name, node)
    array = v["array"]
    if not (isinstance(array, Val) and isinstance(array.type, T.ArrayType)
            and array.type.dtype is T.float32 and array.type.ndim == 1):
        raise tr.type_error(node, f"nova.{name}(): the destination must be a 1-D float32 "
                            f"array, got {tr.describe(array)}")
    acc = _accumulator(tr, name, v["acc"], node)
    at = acc.type
    assert isinstance(at, T.WgmmaAccType)
    em = tr.em
    offset, ld = _int64(tr, v["offset"], node), _int64(tr, v["ld"], node)

    def c(value: int) -> Val:
        return em.constant(value, T.int64)

    t = em.binary("%", _linear_thread(tr), c(WARPGROUP_SIZE), T.int64)
    lane = em.binary("%", t, c(32), T.int64)
    row = em.binary("+", em.binary("*", em.binary("//", t, c(32), T.int64), c(16), T.int64),
                    em.binary("//", lane, c(4), T.int64), T.int64)
    first = em.binary("+", offset, em.binary("+", em.binary("*", row, ld, T.int64),
                                             em.binary("*", em.binary("%", lane, c(4),
                                                                      T.int64), c(2), T.int64),
                                             T.int64), T.int64)
    eight_rows = em.binary("*", ld, c(8), T.int64)
    for i in range(at.n // 8):
        for half in range(2):
            for col in range(2):
                element = em.res(ExtractValueOp(
                    DenseArrayBase.from_list(i64, [4 * i + 2 * half + col]), acc.ssa,
                    T.float32.mlir))
                where = em.binary("+", first, c(8 * i + col), T.int64)
                if half:
                    where = em.binary("+", where, eight_rows, T.int64)
                em.op(memref.StoreOp.get(element, array.ssa, [em.index(where)]))
    return Const(None)


def register(params: dict[str, tuple[tuple[str, Any], ...]], table: dict[str, Any],
             required: object) -> None:
    """Add the `nova.wgmma` calls to the intrinsic tables of nova.lang.calls."""
    req = required
    params["wgmma.descriptor"] = (("array", req), ("offset", 0), ("swizzle", 128), ("lbo", 0),
                                  ("sbo", 0))
    params["wgmma.zero"] = (("n", req),)
    params["wgmma.mma"] = (("acc", req), ("a", req), ("b", req), ("dtype", T.float16),
                           ("layout_a", "row"), ("layout_b", "col"), ("accumulate", True))
    params["wgmma.fence"] = ()
    params["wgmma.fence_shared"] = ()
    params["wgmma.commit"] = ()
    params["wgmma.wait"] = (("n", 0),)
    params["wgmma.store"] = (("array", req), ("offset", req), ("acc", req), ("ld", req))
    table.update({"wgmma.descriptor": descriptor, "wgmma.zero": zero, "wgmma.mma": mma,
                  "wgmma.fence": fence, "wgmma.fence_shared": fence_shared,
                  "wgmma.commit": commit, "wgmma.wait": wait,
                  "wgmma.store": store})


__all__ = ["SWIZZLE_MODES", "register"]
