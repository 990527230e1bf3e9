"""Checked launch builtins: a prepared launch's whole call (argument checks, packing, launch) in
native code, falling back to its Python call for anything it does not take.

A prepared launch's generated Python call (nova.lang.guard) costs ~0.25 us above the launch
builtin (nova.runtime.cuda.py_launch): the instance call, a frame, unpacking, the guard's tests,
`struct` packing of the scalars. `PY_CHECKED` (defined in the launch module beside `PY_LAUNCH`)
does the same work for the common case in one builtin call. A `CheckedSpec` (nova.runtime.
checked) describes one prepared signature in runtime terms; `CudaLauncher.checked_call` binds
the builtin to it (`LaunchBuiltins.make_checked`, a `record` of words and the `objects` tuple). Called with the
launch's arguments, the builtin

- takes exactly `len(spec.params)` positional arguments;
- per `ArrayParam`: the argument must be exactly a `nova.runtime.memory.Buffer` whose
  launch-guard record `_accepted` (a 4-tuple; nova.lang.guard) names the parameter's
  requirements object (`key`) and the buffer's current `shape` object, by identity; its memref
  words (bytes of 3 + 2 * ndim words) are copied into the slots, and with `align16` the aligned
  pointer must be a multiple of 16;
- per `ScalarParam` (struct codes b h i q B H I Q f d): an exact `int` (integer codes; range
  checked, uint64 natively only below 2**63), an exact `float` (float codes; 'f' fails when a
  finite value rounds to infinity, as `struct` does), or exactly the parameter's NumPy scalar
  type (its value's bytes copied);
- per `overlaps` pair (i, j): arrays i and j of nonzero size must not overlap;
- then `driver.context_lost` (and, with `check_closed`, `stream._closed`) must be `False`;

and launches as `PY_LAUNCH` does (GIL released around `nova_cuda_launch_packed`: cuLaunchKernel
blocks while the launch queue is full, and a host function the queue waits on may need the GIL),
calls `failed(status)` (which raises) on a failed launch, sets `stream.last_kernel = name` and
returns None. Any other argument, record or state calls `fallback(*args)` instead and returns its
result: the Python path re-checks everything in its own order and raises its usual errors (a
freed buffer, a value out of range, a closed stream, a lost context...), so the native path never
decides an error itself. It holds the GIL throughout except around the launch, and packs into
its own stack, so concurrent calls need no lock.

Object layout it relies on (CPython, checked by `available()` on this interpreter before use):
an object's type pointer at offset 8 and a NumPy scalar's value at offset 16.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable
from typing import Any

from nova.runtime.checked import ArrayParam, CheckedSpec, ScalarParam

PY_CHECKED = "nova_py_checked"
CHECKED_API_GLOBAL = "nova_py_checked_api"
CHECKED_API = ("PyBytes_AsStringAndSize", "PyEval_SaveThread", "PyEval_RestoreThread",
               "PyLong_FromLong", "PyObject_GetAttr", "PyObject_SetAttr", "Py_IncRef",
               "Py_DecRef", "PyLong_AsLongLongAndOverflow", "PyFloat_AsDouble", "PyErr_Clear",
               "PyTuple_GetItem", "PyTuple_Size", "PyObject_Vectorcall")
"""The C-API functions `PY_CHECKED` calls, in the order of its table; the table's last three
entries are the addresses of None, False and the types tuple, int and float."""
_CONSTANTS = ("none", "false", "tuple", "int", "float")
HEAD_WORDS = 13
"""Record words before the parameters: the 10 of py_launch.RECORD, the argument count, the
overlap pair count, the flags (bit 0: check `stream._closed`)."""
PARAM_WORDS = 6
"""Words per parameter: kind, first slot, then per kind (array: ndim, itemsize, align16;
integer: lo, hi, mask, itemsize; float: -, -, -, itemsize)."""
KIND_ARRAY, KIND_INT, KIND_F32, KIND_F64 = 1, 2, 3, 4
OBJECTS = ("record", "fallback", "failed", "driver", "stream", "name", "buffer_type",
           "s_accepted", "s_shape", "s_context_lost", "s_closed", "s_last_kernel")
"""The builtin's `self` tuple: these, then one object per parameter (an array's requirements
key, a scalar's NumPy type)."""
MAX_SLOTS = 256
"""Signatures with more parameter slots keep the Python call (the slots live on the stack)."""
_INT_RANGES = {"b": (-(1 << 7), (1 << 7) - 1, 1), "h": (-(1 << 15), (1 << 15) - 1, 2),
               "i": (-(1 << 31), (1 << 31) - 1, 4), "q": (-(1 << 63), (1 << 63) - 1, 8),
               "B": (0, (1 << 8) - 1, 1), "H": (0, (1 << 16) - 1, 2), "I": (0, (1 << 32) - 1, 4),
               "Q": (0, (1 << 63) - 1, 8)}
_WORD = struct.Struct("<q")


def _param_words(param: ArrayParam | ScalarParam, slot: int) -> tuple[list[int], int]:
    """The parameter's record words and its slot count."""
    if isinstance(param, ArrayParam):
        return [KIND_ARRAY, slot, param.ndim, param.itemsize, int(param.align16), 0], \
            3 + 2 * param.ndim
    if param.code in "fd":
        size = 4 if param.code == "f" else 8
        return [KIND_F32 if size == 4 else KIND_F64, slot, 0, 0, 0, size], 1
    lo, hi, size = _INT_RANGES[param.code]
    mask = (1 << (8 * size)) - 1
    return [KIND_INT, slot, lo, hi, mask - (1 << 64) if mask >= 1 << 63 else mask, size], 1


def record(head: bytes, spec: CheckedSpec, check_closed: bool) -> bytes:
    """The builtin's record: `head` (py_launch.RECORD's words), then the words described in
    the module constants."""
    words = [len(spec.params), len(spec.overlaps), int(check_closed)]
    slot = 0
    for param in spec.params:
        found, count = _param_words(param, slot)
        words += found
        slot += count
    for i, j in spec.overlaps:
        words += [i, j]
    return head + b"".join(_WORD.pack(w) for w in words)


def _layout_ok() -> bool:
    """Whether this interpreter lays objects out as `PY_CHECKED` reads them."""
    import numpy as np

    if sys.implementation.name != "cpython" or not hasattr(ctypes, "pythonapi"):
        return False
    probes = [1.5, np.float32(1.5), np.float64(-2.25), np.int8(-3), np.uint16(40000),
              np.int32(-7), np.uint64(1 << 63), np.int64(-(1 << 40))]
    for value in probes:
        if ctypes.c_void_p.from_address(id(value) + 8).value != id(type(value)):
            return False
        if isinstance(value, np.generic):
            raw = value.tobytes()
            if ctypes.string_at(id(value) + 16, len(raw)) != raw:
                return False
    return all(hasattr(ctypes.pythonapi, name) for name in CHECKED_API)


_AVAILABLE: list[bool] = []


def available() -> bool:
    """Whether checked builtins can be made here (see the module docstring); checked once."""
    if not _AVAILABLE:
        _AVAILABLE.append(_layout_ok())
    return _AVAILABLE[0]


def fill_api(table_address: int) -> None:
    """Fill the module's C-API table (functions, then None, False, tuple, int, float)."""
    table = (ctypes.c_void_p * (len(CHECKED_API) + len(_CONSTANTS))).from_address(table_address)
    for i, name in enumerate(CHECKED_API):
        table[i] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    for i, value in enumerate((None, False, tuple, int, float)):
        table[len(CHECKED_API) + i] = id(value)


def objects(rec: bytes, spec: CheckedSpec, failed: Callable[[int], Any], driver: object,
            stream: object, name: str) -> tuple[Any, ...]:
    """The builtin's `self` tuple (see OBJECTS)."""
    per_param = [p.key if isinstance(p, ArrayParam) else p.numpy_type for p in spec.params]
    strings = [sys.intern(s) for s in ("_accepted", "shape", "context_lost", "_closed",
                                       "last_kernel")]
    return (rec, spec.fallback, failed, driver, stream, name, spec.buffer_type, *strings,
            *per_param)



class _Ir:
    """Writes `PY_CHECKED` (see the module docstring): SSA names from a counter, C-API calls
    through the module's table."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.index = {name: i for i, name in enumerate((*CHECKED_API, *_CONSTANTS))}
        self.count = 0

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def fresh(self) -> str:
        self.count += 1
        return f"%t{self.count}"

    def api(self, name: str) -> str:
        at, value = self.fresh(), self.fresh()
        self(f"  {at} = getelementptr ptr, ptr @{CHECKED_API_GLOBAL}, i64 {self.index[name]}")
        self(f"  {value} = load ptr, ptr {at}")
        return value

    def call(self, result: str, name: str, args: str) -> str:
        fn, out = self.api(name), self.fresh()
        self(f"  {out} = call {result} {fn}({args})")
        return out

    def call_void(self, name: str, args: str) -> None:
        fn = self.api(name)
        self(f"  call void {fn}({args})")

    def item(self, tup: str, index: str) -> str:
        """Borrowed `tup[index]` (PyTuple_GetItem)."""
        return self.call("ptr", "PyTuple_GetItem", f"ptr {tup}, i64 {index}")

    def word(self, base: str, index: str) -> str:
        at, value = self.fresh(), self.fresh()
        self(f"  {at} = getelementptr i64, ptr {base}, i64 {index}")
        self(f"  {value} = load i64, ptr {at}, align 1")
        return value

    def type_of(self, obj: str) -> str:
        at, value = self.fresh(), self.fresh()
        self(f"  {at} = getelementptr i8, ptr {obj}, i64 8")
        self(f"  {value} = load ptr, ptr {at}")
        return value

    def require(self, cond: str, then: str, miss: str = "fallback") -> None:
        """Go on in block `then` when `cond` holds, else to `miss`."""
        self(f"  br i1 {cond}, label %{then}, label %{miss}")
        self(f"{then}:")


def _entry(b: _Ir) -> None:
    b("entry:")
    b("  %data.at = alloca ptr, align 8")
    b("  %data.size = alloca i64, align 8")
    b("  %overflow = alloca i32, align 4")
    rec = b.item("%self", "0")
    b.call("i32", "PyBytes_AsStringAndSize", f"ptr {rec}, ptr %data.at, ptr %data.size")
    b("  %rec = load ptr, ptr %data.at")
    want = b.word("%rec", "10")
    b(f"  %count.ok = icmp eq i64 %nargs, {want}")
    count = b.word("%rec", "1")
    b(f"  %slots = alloca i64, i64 {count}, align 16")
    for name in _CONSTANTS:
        b(f"  %k.{name}.at = getelementptr ptr, ptr @{CHECKED_API_GLOBAL}, "
          f"i64 {b.index[name]}")
        b(f"  %k.{name} = load ptr, ptr %k.{name}.at")
    buffer_type = b.item("%self", "6")
    b(f"  %buffer.type = getelementptr i8, ptr {buffer_type}, i64 0")
    b("  br i1 %count.ok, label %loop, label %fallback")


def _param(b: _Ir) -> None:
    b("loop:")
    b("  %i = phi i64 [0, %entry], [%i.next, %next]")
    b("  %more = icmp ult i64 %i, %nargs")
    b("  br i1 %more, label %param, label %params.done")
    b("param:")
    b(f"  %desc.word = mul i64 %i, {PARAM_WORDS}")
    b(f"  %desc.at = add i64 %desc.word, {HEAD_WORDS}")
    b("  %desc = getelementptr i64, ptr %rec, i64 %desc.at")
    for n, name in enumerate(("kind", "slot", "a", "b", "c", "d")):
        b(f"  %{name}.at = getelementptr i64, ptr %desc, i64 {n}")
        b(f"  %{name} = load i64, ptr %{name}.at, align 1")
    b("  %slot.ptr = getelementptr i64, ptr %slots, i64 %slot")
    b("  %arg.at = getelementptr ptr, ptr %args, i64 %i")
    b("  %arg = load ptr, ptr %arg.at")
    arg_type = b.type_of("%arg")
    b(f"  %arg.type = getelementptr i8, ptr {arg_type}, i64 0")
    b(f"  %obj.index = add i64 %i, {len(OBJECTS)}")
    obj = b.item("%self", "%obj.index")
    b(f"  %obj = getelementptr i8, ptr {obj}, i64 0")
    b(f"  switch i64 %kind, label %fallback [i64 {KIND_ARRAY}, label %array "
      f"i64 {KIND_INT}, label %int i64 {KIND_F32}, label %f32 i64 {KIND_F64}, label %f64]")
    _array(b)
    _int(b)
    _float(b, "f32")
    _float(b, "f64")
    _raw(b)
    b("next:")
    b("  %i.next = add i64 %i, 1")
    b("  br label %loop")


def _array(b: _Ir) -> None:
    """A Buffer whose `_accepted` record matches: its words copied, the alignment checked."""
    b("array:")
    b("  %is.buffer = icmp eq ptr %arg.type, %buffer.type")
    b.require("%is.buffer", "array.get")
    name = b.item("%self", "7")
    acc = b.call("ptr", "PyObject_GetAttr", f"ptr %arg, ptr {name}")
    b(f"  %acc = getelementptr i8, ptr {acc}, i64 0")
    b("  %acc.null = icmp eq ptr %acc, null")
    b("  br i1 %acc.null, label %clear, label %array.tuple")
    b("array.tuple:")
    acc_type = b.type_of("%acc")
    b(f"  %acc.is.tuple = icmp eq ptr {acc_type}, %k.tuple")
    b.require("%acc.is.tuple", "array.size", "array.miss")
    size = b.call("i64", "PyTuple_Size", "ptr %acc")
    b(f"  %acc.four = icmp eq i64 {size}, 4")
    b.require("%acc.four", "array.key", "array.miss")
    key = b.item("%acc", "0")
    b(f"  %key.ok = icmp eq ptr {key}, %obj")
    b.require("%key.ok", "array.shape", "array.miss")
    name = b.item("%self", "8")
    shape = b.call("ptr", "PyObject_GetAttr", f"ptr %arg, ptr {name}")
    b(f"  %shape = getelementptr i8, ptr {shape}, i64 0")
    b("  %shape.null = icmp eq ptr %shape, null")
    b("  br i1 %shape.null, label %array.clear, label %array.same")
    b("array.same:")
    known = b.item("%acc", "1")
    b(f"  %shape.ok = icmp eq ptr {known}, %shape")
    b.call_void("Py_DecRef", "ptr %shape")
    b.require("%shape.ok", "array.words", "array.miss")
    words = b.item("%acc", "3")
    got = b.call("i32", "PyBytes_AsStringAndSize", f"ptr {words}, ptr %data.at, ptr %data.size")
    b(f"  %words.bad = icmp ne i32 {got}, 0")
    b("  br i1 %words.bad, label %array.clear, label %array.count")
    b("array.count:")
    b("  %words.size = load i64, ptr %data.size")
    b("  %words.dims = shl i64 %a, 4")
    b("  %words.want = add i64 %words.dims, 24")
    b("  %words.fit = icmp eq i64 %words.size, %words.want")
    b.require("%words.fit", "array.copy", "array.miss")
    b("  %words = load ptr, ptr %data.at")
    b("  %words.n = lshr i64 %words.size, 3")
    b("  br label %copy")
    b("copy:")
    b("  %k = phi i64 [0, %array.copy], [%k.next, %copy.one]")
    b("  %copy.more = icmp ult i64 %k, %words.n")
    b("  br i1 %copy.more, label %copy.one, label %copied")
    b("copy.one:")
    b("  %from = getelementptr i64, ptr %words, i64 %k")
    b("  %value = load i64, ptr %from, align 1")
    b("  %to = getelementptr i64, ptr %slot.ptr, i64 %k")
    b("  store i64 %value, ptr %to, align 8")
    b("  %k.next = add i64 %k, 1")
    b("  br label %copy")
    b("copied:")
    b.call_void("Py_DecRef", "ptr %acc")
    b("  %aligned.at = getelementptr i64, ptr %slot.ptr, i64 1")
    b("  %aligned = load i64, ptr %aligned.at, align 8")
    b("  %low = and i64 %aligned, 15")
    b("  %misaligned = icmp ne i64 %low, 0")
    b("  %wants.align = icmp ne i64 %c, 0")
    b("  %align.miss = and i1 %misaligned, %wants.align")
    b("  br i1 %align.miss, label %fallback, label %next")
    b("array.clear:")
    b.call_void("PyErr_Clear", "")
    b("  br label %array.miss")
    b("array.miss:")
    b.call_void("Py_DecRef", "ptr %acc")
    b("  br label %fallback")
    b("clear:")
    b.call_void("PyErr_Clear", "")
    b("  br label %fallback")


def _int(b: _Ir) -> None:
    """An exact int in [lo, hi] (masked to the slot's bytes), or the parameter's NumPy type."""
    b("int:")
    b("  %is.int = icmp eq ptr %arg.type, %k.int")
    b("  br i1 %is.int, label %int.py, label %raw.check")
    b("int.py:")
    value = b.call("i64", "PyLong_AsLongLongAndOverflow", "ptr %arg, ptr %overflow")
    b(f"  %iv = add i64 {value}, 0")
    b("  %ovf = load i32, ptr %overflow")
    b("  %ovf.no = icmp eq i32 %ovf, 0")
    b("  %lo.ok = icmp sge i64 %iv, %a")
    b("  %hi.ok = icmp sle i64 %iv, %b")
    b("  %range.ok = and i1 %lo.ok, %hi.ok")
    b("  %int.ok = and i1 %range.ok, %ovf.no")
    b.require("%int.ok", "int.store")
    b("  %masked = and i64 %iv, %c")
    b("  store i64 %masked, ptr %slot.ptr, align 8")
    b("  br label %next")


def _float(b: _Ir, kind: str) -> None:
    """An exact float (for f32: refused when a finite value rounds to infinity, as struct's
    'f' does), or the parameter's NumPy type."""
    b(f"{kind}:")
    b(f"  %{kind}.is.float = icmp eq ptr %arg.type, %k.float")
    b(f"  br i1 %{kind}.is.float, label %{kind}.py, label %raw.check")
    b(f"{kind}.py:")
    x = b.call("double", "PyFloat_AsDouble", "ptr %arg")
    if kind == "f64":
        b(f"  %f64.bits = bitcast double {x} to i64")
        b("  store i64 %f64.bits, ptr %slot.ptr, align 8")
        b("  br label %next")
        return
    b(f"  %y = fptrunc double {x} to float")
    b("  %y.abs = call float @llvm.fabs.f32(float %y)")
    b(f"  %x.abs = call double @llvm.fabs.f64(double {x})")
    b("  %y.inf = fcmp oeq float %y.abs, 0x7FF0000000000000")
    b("  %x.fin = fcmp one double %x.abs, 0x7FF0000000000000")
    b("  %too.big = and i1 %y.inf, %x.fin")
    b("  br i1 %too.big, label %fallback, label %f32.store")
    b("f32.store:")
    b("  %y.bits = bitcast float %y to i32")
    b("  %y.wide = zext i32 %y.bits to i64")
    b("  store i64 %y.wide, ptr %slot.ptr, align 8")
    b("  br label %next")


def _raw(b: _Ir) -> None:
    """Exactly the parameter's NumPy scalar type: its value's `d` bytes (at offset 16) zero
    extended into the slot."""
    b("raw.check:")
    b("  %is.np = icmp eq ptr %arg.type, %obj")
    b.require("%is.np", "raw")
    b("  %raw.at = getelementptr i8, ptr %arg, i64 16")
    b("  switch i64 %d, label %fallback [i64 1, label %raw.1 i64 2, label %raw.2 "
      "i64 4, label %raw.4 i64 8, label %raw.8]")
    for bits in (8, 16, 32, 64):
        b(f"raw.{bits // 8}:")
        b(f"  %raw.v{bits} = load i{bits}, ptr %raw.at, align 1")
        if bits < 64:
            b(f"  %raw.z{bits} = zext i{bits} %raw.v{bits} to i64")
            b(f"  store i64 %raw.z{bits}, ptr %slot.ptr, align 8")
        else:
            b("  store i64 %raw.v64, ptr %slot.ptr, align 8")
        b("  br label %next")


def _array_extent(b: _Ir, index: str, tag: str) -> tuple[str, str]:
    """(aligned pointer, byte size) of array parameter `index` from its copied words."""
    b(f"  %{tag}.desc.word = mul i64 {index}, {PARAM_WORDS}")
    b(f"  %{tag}.desc.at = add i64 %{tag}.desc.word, {HEAD_WORDS}")
    b(f"  %{tag}.desc = getelementptr i64, ptr %rec, i64 %{tag}.desc.at")
    slot = b.word(f"%{tag}.desc", "1")
    ndim = b.word(f"%{tag}.desc", "2")
    itemsize = b.word(f"%{tag}.desc", "3")
    b(f"  %{tag}.words = getelementptr i64, ptr %slots, i64 {slot}")
    ptr = b.word(f"%{tag}.words", "1")
    b(f"  %{tag}.sizes = getelementptr i64, ptr %{tag}.words, i64 3")
    b(f"  br label %{tag}.dims")
    b(f"{tag}.dims:")
    entry = f"{tag}.dims.entry"
    b(f"  br label %{entry}")
    b(f"{entry}:")
    b(f"  %{tag}.e = phi i64 [0, %{tag}.dims], [%{tag}.e.next, %{tag}.dim]")
    b(f"  %{tag}.n = phi i64 [{itemsize}, %{tag}.dims], [%{tag}.n.next, %{tag}.dim]")
    b(f"  %{tag}.dim.more = icmp ult i64 %{tag}.e, {ndim}")
    b(f"  br i1 %{tag}.dim.more, label %{tag}.dim, label %{tag}.extent")
    b(f"{tag}.dim:")
    size = b.word(f"%{tag}.sizes", f"%{tag}.e")
    b(f"  %{tag}.n.next = mul i64 %{tag}.n, {size}")
    b(f"  %{tag}.e.next = add i64 %{tag}.e, 1")
    b(f"  br label %{entry}")
    b(f"{tag}.extent:")
    return ptr, f"%{tag}.n"


def _overlaps(b: _Ir) -> None:
    """Each (i, j) pair of the record: nonzero-size arrays i and j must not overlap."""
    b("params.done:")
    pairs = b.word("%rec", "11")
    b(f"  %pairs = add i64 {pairs}, 0")
    b(f"  %pairs.word = mul i64 %nargs, {PARAM_WORDS}")
    b(f"  %pairs.at = add i64 %pairs.word, {HEAD_WORDS}")
    b("  %pair.list = getelementptr i64, ptr %rec, i64 %pairs.at")
    b("  br label %pair.loop")
    b("pair.loop:")
    b("  %p = phi i64 [0, %params.done], [%p.next, %pair.next]")
    b("  %pair.more = icmp ult i64 %p, %pairs")
    b("  br i1 %pair.more, label %pair, label %live")
    b("pair:")
    b("  %pair.word = shl i64 %p, 1")
    first = b.word("%pair.list", "%pair.word")
    b("  %pair.word.2 = add i64 %pair.word, 1")
    second = b.word("%pair.list", "%pair.word.2")
    pi, ni = _array_extent(b, first, "pi")
    pj, nj = _array_extent(b, second, "pj")
    b(f"  %ei = add i64 {pi}, {ni}")
    b(f"  %ej = add i64 {pj}, {nj}")
    b(f"  %ni.some = icmp ne i64 {ni}, 0")
    b(f"  %nj.some = icmp ne i64 {nj}, 0")
    b(f"  %i.before = icmp ult i64 {pi}, %ej")
    b(f"  %j.before = icmp ult i64 {pj}, %ei")
    b("  %o1 = and i1 %ni.some, %nj.some")
    b("  %o2 = and i1 %i.before, %j.before")
    b("  %overlap = and i1 %o1, %o2")
    b("  br i1 %overlap, label %fallback, label %pair.next")
    b("pair.next:")
    b("  %p.next = add i64 %p, 1")
    b("  br label %pair.loop")


def _is_false(b: _Ir, owner: str, name_index: str, then: str) -> None:
    """Go on in block `then` when `owner.<name>` is False."""
    obj = b.item("%self", owner)
    name = b.item("%self", name_index)
    value = b.call("ptr", "PyObject_GetAttr", f"ptr {obj}, ptr {name}")
    b(f"  %{then}.null = icmp eq ptr {value}, null")
    b(f"  br i1 %{then}.null, label %clear, label %{then}.test")
    b(f"{then}.test:")
    b(f"  %{then}.false = icmp eq ptr {value}, %k.false")
    b.call_void("Py_DecRef", f"ptr {value}")
    b.require(f"%{then}.false", then)


def _launch(b: _Ir, launch_packed: str) -> None:
    """The liveness checks, the launch, its status, `last_kernel`."""
    b("live:")
    index = {name: str(i) for i, name in enumerate(OBJECTS)}
    _is_false(b, index["driver"], index["s_context_lost"], "alive")
    flags = b.word("%rec", "12")
    b(f"  %check.closed = icmp ne i64 {flags}, 0")
    b("  br i1 %check.closed, label %closed.check, label %go")
    b("closed.check:")
    _is_false(b, index["stream"], index["s_closed"], "open")
    b("  br label %go")
    b("go:")
    header = b.fresh()
    b(f"  {header} = getelementptr i64, ptr %rec, i64 2")
    handle = b.word("%rec", "9")
    stream = b.fresh()
    b(f"  {stream} = inttoptr i64 {handle} to ptr")
    thread = b.call("ptr", "PyEval_SaveThread", "")
    b(f"  %status = call i32 @{launch_packed}(ptr %rec, ptr {header}, ptr {stream}, "
      "ptr %slots)")
    b.call_void("PyEval_RestoreThread", f"ptr {thread}")
    b("  %launched = icmp eq i32 %status, 0")
    b.require("%launched", "done", "failed")
    stream_obj = b.item("%self", index["stream"])
    name = b.item("%self", index["s_last_kernel"])
    kernel = b.item("%self", index["name"])
    set_ = b.call("i32", "PyObject_SetAttr", f"ptr {stream_obj}, ptr {name}, ptr {kernel}")
    b(f"  %set.failed = icmp ne i32 {set_}, 0")
    b("  br i1 %set.failed, label %error, label %return.none")
    b("return.none:")
    b.call_void("Py_IncRef", "ptr %k.none")
    b("  ret ptr %k.none")
    b("failed:")
    b("  %status.64 = sext i32 %status to i64")
    code = b.call("ptr", "PyLong_FromLong", "i64 %status.64")
    b(f"  %code = getelementptr i8, ptr {code}, i64 0")
    b("  %code.null = icmp eq ptr %code, null")
    b("  br i1 %code.null, label %error, label %report")
    b("report:")
    b("  %code.arg = alloca ptr, align 8")
    b("  store ptr %code, ptr %code.arg")
    failed = b.item("%self", index["failed"])
    raised = b.call("ptr", "PyObject_Vectorcall", f"ptr {failed}, ptr %code.arg, i64 1, ptr null")
    b.call_void("Py_DecRef", "ptr %code")
    b(f"  ret ptr {raised}")
    b("error:")
    b("  ret ptr null")


def _fallback(b: _Ir) -> None:
    b("fallback:")
    fallback = b.item("%self", "1")
    result = b.call("ptr", "PyObject_Vectorcall", f"ptr {fallback}, ptr %args, i64 %nargs, "
                    "ptr null")
    b(f"  ret ptr {result}")


def py_checked_ir(launch_packed: str) -> str:
    """LLVM IR of `PY_CHECKED(self, args, nargs)` over `launch_packed` (defined beside it)
    and its C-API table (see the module docstring)."""
    b = _Ir()
    n = len(CHECKED_API) + len(_CONSTANTS)
    b(f"@{CHECKED_API_GLOBAL} = global [{n} x ptr] zeroinitializer")
    b("declare float @llvm.fabs.f32(float)")
    b("declare double @llvm.fabs.f64(double)")
    b(f"define ptr @{PY_CHECKED}(ptr %self, ptr %args, i64 %nargs) #0 {{")
    _entry(b)
    _param(b)
    _overlaps(b)
    _launch(b, launch_packed)
    _fallback(b)
    b("}")
    b('attributes #0 = { "no-builtins" }')
    return "\n".join(b.lines) + "\n"
