"""Kernel calls of the asynchronous global -> shared copies -> upstream's `nvgpu` ops.

- `nova.async_copy(dst, d, src, s, count, src_count=None, bypass_l1=None)` ->
  `nvgpu.device_async_copy %src[s], %dst[d], count (, src_count)? {bypassL1}?`: start copying
  `count` elements (4, 8 or 16 bytes, a compile-time constant) from the global array `src` at
  index `s` to the shared array `dst` at index `d` (an index per dimension: an int for 1-D
  arrays, a tuple otherwise). With `src_count` (run time) only that many elements are read and
  the rest of the `count` are zero-filled. `bypass_l1` (default: on for 16-byte copies, off
  otherwise) caches the data in L2 only (PTX `.cg`; 16-byte copies only).
- `nova.async_commit()` -> `nvgpu.device_async_create_group`: group the copies this thread
  started since its last commit.
- `nova.async_wait(n=0)` -> `nvgpu.device_async_wait {numGroups = n}`: wait until at most the
  `n` most recent groups of this thread are still in flight (n a compile-time constant). The
  copies are then visible to this thread; `nova.syncthreads()` after it makes them visible to
  the whole block.

The ops take group tokens, but the tokens carry nothing (PTX counts a thread's groups, and a
commit groups every copy not yet grouped), and tokens of copies made under a condition or in a
loop would not dominate a later commit or wait. So every commit and wait names one token, made
once at the end of the kernel's entry block: an empty group committed before any copy, complete
at once, which no wait ever has to wait for. (It is never followed by an op with results, so
the token-less `create_group` stays re-parsable: a `%x = ...` on the next line would be read
as one of its tokens, by Nova's parser and upstream's alike.)

Checked at compile time, with a located KernelTypeError: the arrays' kinds (dst shared, src a
global array argument) and dtypes (equal), the number of indices, the count (a constant making
4, 8 or 16 bytes), bypass_l1 (a constant bool; 16-byte copies only), n (a constant >= 0) and,
for constant indices into arrays of static shape, bounds and the alignment of the copy (both
addresses must be multiples of its size, as cp.async requires; run-time indices are the
caller's to keep aligned).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from nova.ir.dialects.nvgpu import (
    COPY_BYTES,
    DeviceAsyncCopyOp,
    DeviceAsyncCreateGroupOp,
    DeviceAsyncWaitOp,
)
from nova.lang import types as T
from nova.lang.fragments import _index_items, constant_offset
from nova.lang.values import Const, Val, Value

if TYPE_CHECKING:
    from nova.lang.translate import Translator, Tup


def _array(tr: Translator, name: str, what: str, value: Value | Tup, shared: bool,
           node: ast.AST) -> Val:
    """The dst (shared) or src (global) array argument."""
    ok = isinstance(value, Val) and isinstance(value.type, T.ArrayType) and (
        value.type.space == T.SHARED_MEMORY_SPACE if shared else
        (value.type.space == 0 and value.type.shape is None))
    if not ok:
        need = ("a shared array (nova.shared_array or nova.dynamic_shared_array)" if shared
                else "a global array (a kernel's array argument)")
        raise tr.type_error(node, f"nova.{name}(): {what} must be {need}, got "
                            f"{tr.describe(value)}")
    assert isinstance(value, Val)
    return value


def _count(tr: Translator, name: str, value: Value | Tup, dtype: T.ScalarType,
           node: ast.AST) -> int:
    allowed = [b // dtype.itemsize for b in COPY_BYTES if b % dtype.itemsize == 0]
    if not (isinstance(value, Const) and type(value.value) is int and
            value.value * dtype.itemsize in COPY_BYTES):
        raise tr.type_error(node, f"nova.{name}(): count must be a compile-time number of "
                            f"{dtype} elements making 4, 8 or 16 bytes "
                            f"({', '.join(map(str, allowed))}), got {tr.describe(value)}")
    return int(value.value)


def _bypass(tr: Translator, name: str, value: Value | Tup, nbytes: int, node: ast.AST) -> bool:
    if isinstance(value, Const) and value.value is None:
        return nbytes == 16
    if not (isinstance(value, Const) and isinstance(value.value, bool)):
        raise tr.type_error(node, f"nova.{name}(): bypass_l1 must be a constant True or False, "
                            f"got {tr.describe(value)}")
    if value.value and nbytes != 16:
        raise tr.type_error(node, f"nova.{name}(): bypass_l1=True needs a 16-byte copy (PTX "
                            f"cp.async.cg), this one copies {nbytes} bytes")
    return value.value


def _check_static(tr: Translator, name: str, what: str, array: Val, items: list[Value],
                  count: int, node: ast.AST) -> None:
    """Bounds and alignment of a copy at constant indices into a statically shaped array."""
    found = constant_offset(tr, name, array, items, node, what)
    if found is None:
        return
    offset, size = found
    if offset + count > size:
        raise tr.type_error(node, f"nova.{name}(): the {count} elements at {what} element "
                            f"{offset} end past the array's {size}")
    at = array.type
    assert isinstance(at, T.ArrayType)
    nbytes = count * at.dtype.itemsize
    if offset * at.dtype.itemsize % nbytes:
        raise tr.type_error(node, f"nova.{name}(): the {what} address (byte "
                            f"{offset * at.dtype.itemsize} of the array) is not a multiple of "
                            f"the copy's {nbytes} bytes (cp.async needs aligned addresses)")


def _indices(tr: Translator, name: str, what: str, array: Val, index: Value | Tup, count: int,
             node: ast.AST) -> list[Any]:
    items = _index_items(tr, name, array, index, node)
    _check_static(tr, name, what, array, items, count, node)
    return [tr.em.index(tr.scalar(i, node)) for i in items]


def async_copy(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    dst = _array(tr, name, "dst", v["dst"], True, node)
    src = _array(tr, name, "src", v["src"], False, node)
    assert isinstance(dst.type, T.ArrayType) and isinstance(src.type, T.ArrayType)
    if dst.type.dtype != src.type.dtype:
        raise tr.type_error(node, f"nova.{name}(): dst and src must have the same dtype, got "
                            f"{dst.type.dtype} and {src.type.dtype}")
    count = _count(tr, name, v["count"], dst.type.dtype, node)
    bypass = _bypass(tr, name, v["bypass_l1"], count * dst.type.dtype.itemsize, node)
    d = _indices(tr, name, "dst", dst, v["d"], count, node)
    s = _indices(tr, name, "src", src, v["s"], count, node)
    src_count = None
    if not (isinstance(v["src_count"], Const) and v["src_count"].value is None):
        n = tr.scalar(v["src_count"], node)
        if not isinstance(n.type, T.ScalarType) or not n.type.is_int or n.type.is_bool:
            raise tr.type_error(node, f"nova.{name}(): src_count must be an integer, got "
                                f"{tr.describe(v['src_count'])}")
        src_count = tr.em.index(n)
    tr.em.op(DeviceAsyncCopyOp(dst.ssa, d, src.ssa, s, count, src_count, bypass))
    return Const(None)


def async_commit(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    tr.em.op(DeviceAsyncCreateGroupOp([_entry_token(tr)]))
    return Const(None)


def _entry_token(tr: Translator) -> Any:
    """The token every commit and wait names: an empty group committed once, as the last op
    of the entry block (the translator adds it there when it closes the block; see the module
    docstring)."""
    token = tr.async_entry_token
    if token is None:
        token = tr.async_entry_token = DeviceAsyncCreateGroupOp().results[0]
    return token


def async_wait(tr: Translator, name: str, v: dict, node: ast.AST) -> Value:
    n = v["n"]
    if not (isinstance(n, Const) and type(n.value) is int and 0 <= n.value < 1 << 31):
        raise tr.type_error(node, f"nova.{name}(): n must be a compile-time integer >= 0 (the "
                            f"groups that may stay in flight), got {tr.describe(n)}")
    tr.em.op(DeviceAsyncWaitOp(_entry_token(tr), n.value))
    return Const(None)


def register(params: dict[str, tuple[tuple[str, Any], ...]], table: dict[str, Any],
             required: object) -> None:
    """Add the asynchronous-copy calls to the intrinsic tables of nova.lang.calls."""
    req = required
    params["async_copy"] = (("dst", req), ("d", req), ("src", req), ("s", req), ("count", req),
                            ("src_count", None), ("bypass_l1", None))
    params["async_commit"] = ()
    params["async_wait"] = (("n", 0),)
    table.update({"async_copy": async_copy, "async_commit": async_commit,
                  "async_wait": async_wait})
