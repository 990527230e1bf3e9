"""Checked launch builtins: a prepared (or specialised cached) launch's whole call — argument
checks, packing, launch — in native code, falling back to its Python call for anything else.

A prepared launch's generated Python call (nova.lang.guard) costs ~0.2 us above the launch
builtin (nova.runtime.cuda.py_launch): the instance call, a frame, unpacking, the guard's tests,
`struct` packing of the scalars. `PY_CHECKED` (defined in the launch module beside `PY_LAUNCH`)
does the same work for the common case in one builtin call. A `CheckedSpec` (nova.runtime.
checked) describes one signature in runtime terms; `CudaLauncher.checked_call` binds the builtin
to it (`LaunchBuiltins.make_checked` with the `objects` tuple, whose first item is the `record`
of words). Called with the launch's arguments, the builtin

- takes exactly `len(spec.params)` positional arguments;
- per `ArrayParam`: the argument must be exactly a `nova.runtime.memory.Buffer` whose
  launch-guard record `_accepted` (a 4-tuple; nova.lang.guard) names the parameter's
  requirements object (`key`) and the buffer's current `shape` object, by identity; its memref
  words (bytes of 3 + 2 * ndim words) are copied into the slots; the aligned pointer must be a
  multiple of 16 with `align16`, and (`spec.exact_align`) must not be without it;
- per `ScalarParam` (struct codes b h i q B H I Q f d): exactly the parameter's NumPy scalar type
  (its value's bytes copied) or, with `python`, an exact `int` (integer codes; range checked,
  uint64 natively only below 2**63) or `float` (float codes; 'f' fails when a finite value
  rounds to infinity, as `struct` does);
- per `overlaps` pair (i, j): arrays i and j of nonzero size must not overlap;
- `spec.setting` (obj, a, b, value), if any: `getattr(getattr(obj, a), b) is value` (a cached
  launch's bounds-checking setting);
- the driver's context-lost word (`CudaDriver.lost_word`, set by `mark_lost`) must be 0 and,
  on a stream other than the device's default, `stream._closed` must be False;

and launches as `PY_LAUNCH` does (GIL released around `nova_cuda_launch_packed`, ~30-60 ns:
cuLaunchKernel blocks while the launch queue is full, and a host function queued before it
(nova.runtime.cuda.callbacks' ctypes trampoline) takes the GIL before the queue can drain),
calls `failed(status)` (which raises) on a failed launch, sets `stream.last_kernel = name` and
returns None. Any other argument, record or state calls `fallback(*args)` instead and returns its
result: the Python path re-checks everything in its own order and raises its usual errors (a
freed buffer, a value out of range, a closed stream, a lost context...), so the native path never
decides an error itself. It holds the GIL throughout except around the launch, and packs into
its own stack, so concurrent calls need no lock.

Object layout it relies on (CPython's, checked by `available()` on this interpreter first): an
object's type pointer at offset 8, a tuple's size at 16 and items from 24, a bytes object's size
at 16 and data from 32, a float's or NumPy scalar's value at 16.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any

from nova.runtime.checked import ArrayParam, CheckedSpec, ScalarParam

PY_CHECKED = "nova_py_checked"
CHECKED_API_GLOBAL = "nova_py_checked_api"
CHECKED_API = ("PyEval_SaveThread", "PyEval_RestoreThread", "PyLong_FromLong",
               "PyObject_GetAttr", "PyObject_SetAttr", "Py_IncRef", "Py_DecRef",
               "PyLong_AsLongLongAndOverflow", "PyErr_Clear", "PyObject_Vectorcall")
"""The C-API functions `PY_CHECKED` calls, in the order of its table; then the table holds the
addresses of None, False and the types tuple, int and float."""
_CONSTANTS = ("none", "false", "tuple", "int", "float")
HEAD_WORDS = 14
"""Record words before the parameters: the 10 of py_launch.RECORD, the argument count, the
overlap pair count, the flags (FLAG_*), the address of the driver's context-lost word."""
FLAG_CLOSED, FLAG_EXACT_ALIGN, FLAG_SETTING = 1, 2, 4
PARAM_WORDS = 7
"""Words per parameter: kind, first slot, then per kind (array: ndim, itemsize, align16;
integer: lo, hi, mask, itemsize; float: -, -, -, itemsize), then whether the exact Python
int/float type is taken."""
KIND_ARRAY, KIND_INT, KIND_F32, KIND_F64 = 1, 2, 3, 4
OBJECTS = ("record", "fallback", "failed", "stream", "name", "buffer_type", "s_accepted",
           "s_shape", "s_closed", "s_last_kernel", "setting_object", "setting_a", "setting_b",
           "setting_value", "driver")
"""The builtin's `self` tuple: these, then one object per parameter (an array's requirements
key, a scalar's NumPy type)."""
OBJ = {name: i for i, name in enumerate(OBJECTS)}
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
        return [KIND_ARRAY, slot, param.ndim, param.itemsize, int(param.align16), 0, 0], \
            3 + 2 * param.ndim
    python = int(param.python)
    if param.code in "fd":
        size = 4 if param.code == "f" else 8
        return [KIND_F32 if size == 4 else KIND_F64, slot, 0, 0, 0, size, python], 1
    lo, hi, size = _INT_RANGES[param.code]
    mask = (1 << (8 * size)) - 1
    return [KIND_INT, slot, lo, hi, mask - (1 << 64) if mask >= 1 << 63 else mask, size,
            python], 1


def record(head: bytes, spec: CheckedSpec, check_closed: bool, lost_word: int) -> bytes:
    """The builtin's record: `head` (py_launch.RECORD's words), then the words described in
    the module constants."""
    flags = ((FLAG_CLOSED if check_closed else 0) | (FLAG_EXACT_ALIGN if spec.exact_align else 0)
             | (FLAG_SETTING if spec.setting is not None else 0))
    words = [len(spec.params), len(spec.overlaps), flags, lost_word]
    slot = 0
    for param in spec.params:
        found, count = _param_words(param, slot)
        words += found
        slot += count
    for i, j in spec.overlaps:
        words += [i, j]
    return head + b"".join(_WORD.pack(w) for w in words)


def objects(rec: bytes, spec: CheckedSpec, failed: Any, driver: object, stream: object,
            name: str) -> tuple[Any, ...]:
    """The builtin's `self` tuple (see OBJECTS)."""
    setting = spec.setting if spec.setting is not None else (None, "", "", None)
    obj, a, b, value = setting
    per_param = [p.key if isinstance(p, ArrayParam) else p.numpy_type for p in spec.params]
    strings = [sys.intern(s) for s in ("_accepted", "shape", "_closed", "last_kernel")]
    return (rec, spec.fallback, failed, stream, name, spec.buffer_type, *strings, obj,
            sys.intern(a), sys.intern(b), value, driver, *per_param)


def _layout_ok() -> bool:
    """Whether this interpreter lays objects out as `PY_CHECKED` reads them."""
    import numpy as np

    if sys.implementation.name != "cpython" or not hasattr(ctypes, "pythonapi"):
        return False
    word = ctypes.c_void_p.from_address
    probes = [1.5, np.float32(1.5), np.float64(-2.25), np.int8(-3), np.uint16(40000),
              np.int32(-7), np.uint64(1 << 63), np.int64(-(1 << 40)), (1, "a", None),
              b"0123456789abcdef"]
    for value in probes:
        if word(id(value) + 8).value != id(type(value)):
            return False
        if isinstance(value, (np.generic, float)):
            raw = np.asarray(value).tobytes()
            if ctypes.string_at(id(value) + 16, len(raw)) != raw:
                return False
        elif isinstance(value, tuple):
            if ctypes.c_ssize_t.from_address(id(value) + 16).value != len(value) or any(
                    word(id(value) + 24 + 8 * i).value != id(v) for i, v in enumerate(value)):
                return False
        elif isinstance(value, bytes) and (
                ctypes.c_ssize_t.from_address(id(value) + 16).value != len(value)
                or ctypes.string_at(id(value) + 32, len(value)) != value):
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

    def call(self, result: str, name: str, args: str) -> str:
        at, fn, out = self.fresh(), self.fresh(), self.fresh()
        self(f"  {at} = getelementptr ptr, ptr @{CHECKED_API_GLOBAL}, i64 {self.index[name]}")
        self(f"  {fn} = load ptr, ptr {at}")
        self(f"  {out} = call {result} {fn}({args})")
        return out

    def call_void(self, name: str, args: str) -> None:
        at, fn = self.fresh(), self.fresh()
        self(f"  {at} = getelementptr ptr, ptr @{CHECKED_API_GLOBAL}, i64 {self.index[name]}")
        self(f"  {fn} = load ptr, ptr {at}")
        self(f"  call void {fn}({args})")

    def new_ref(self, name: str, args: str, tag: str, then: str, null: str = "clear",
                drop: str | None = None) -> str:
        """`%tag`, the new reference C-API function `name` returns; on in block `then`, to block
        `null` when it is NULL (an exception set). `drop`, a reference of the caller's, is
        released once the call returned, either way."""
        value = self.call("ptr", name, args)
        self(f"  %{tag} = getelementptr i8, ptr {value}, i64 0")
        if drop is not None:
            self.call_void("Py_DecRef", f"ptr {drop}")
        self(f"  %{tag}.null = icmp eq ptr %{tag}, null")
        self(f"  br i1 %{tag}.null, label %{null}, label %{then}")
        self(f"{then}:")
        return f"%{tag}"

    def get_attr(self, obj: str, name: str, tag: str, then: str, null: str = "clear",
                drop: str | None = None) -> str:
        """`%tag` = `obj.<name>` (`name` a str object), as `new_ref`."""
        return self.new_ref("PyObject_GetAttr", f"ptr {obj}, ptr {name}", tag, then, null, drop)

    def at(self, obj: str, offset: int, index: str = "0", kind: str = "ptr") -> str:
        """The `kind` value at byte `offset` + 8 * `index` of `obj`."""
        base, item, value = self.fresh(), self.fresh(), self.fresh()
        self(f"  {base} = getelementptr i8, ptr {obj}, i64 {offset}")
        self(f"  {item} = getelementptr i64, ptr {base}, i64 {index}")
        self(f"  {value} = load {kind}, ptr {item}, align 8")
        return value

    def item(self, tup: str, index: str | int) -> str:
        """Borrowed `tup[index]` of a tuple (index in range)."""
        return self.at(tup, 24, str(index))

    def obj(self, name: str) -> str:
        return self.item("%self", OBJ[name])

    def word(self, base: str, index: str | int) -> str:
        return self.at(base, 0, str(index), "i64")

    def require(self, cond: str, then: str, miss: str = "fallback") -> None:
        """Go on in block `then` when `cond` holds, else to `miss`."""
        self(f"  br i1 {cond}, label %{then}, label %{miss}")
        self(f"{then}:")


def _entry(b: _Ir) -> None:
    b("entry:")
    b("  %overflow = alloca i32, align 4")
    b("  %code.arg = alloca ptr, align 8")
    rec = b.obj("record")
    b(f"  %rec = getelementptr i8, ptr {rec}, i64 32")
    want = b.word("%rec", 10)
    b(f"  %count.ok = icmp eq i64 %nargs, {want}")
    count = b.word("%rec", 1)
    b(f"  %slots = alloca i64, i64 {count}, align 16")
    for name in _CONSTANTS:
        b(f"  %k.{name}.at = getelementptr ptr, ptr @{CHECKED_API_GLOBAL}, i64 {b.index[name]}")
        b(f"  %k.{name} = load ptr, ptr %k.{name}.at")
    buffer_type = b.obj("buffer_type")
    b(f"  %buffer.type = getelementptr i8, ptr {buffer_type}, i64 0")
    flags = b.word("%rec", 12)
    b(f"  %flags = or i64 {flags}, 0")
    b(f"  %exact.bit = and i64 %flags, {FLAG_EXACT_ALIGN}")
    b("  %exact.align = icmp ne i64 %exact.bit, 0")
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
    for n, name in enumerate(("kind", "slot", "a", "b", "c", "d", "py")):
        b(f"  %{name}.at = getelementptr i64, ptr %desc, i64 {n}")
        b(f"  %{name} = load i64, ptr %{name}.at, align 8")
    b("  %py.ok = icmp ne i64 %py, 0")
    b("  %slot.ptr = getelementptr i64, ptr %slots, i64 %slot")
    b("  %arg.at = getelementptr ptr, ptr %args, i64 %i")
    b("  %arg = load ptr, ptr %arg.at")
    arg_type = b.at("%arg", 8)
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
    b.get_attr("%arg", b.obj("s_accepted"), "acc", "array.tuple")
    acc_type = b.at("%acc", 8)
    b(f"  %acc.is.tuple = icmp eq ptr {acc_type}, %k.tuple")
    b.require("%acc.is.tuple", "array.size", "array.miss")
    size = b.at("%acc", 16, kind="i64")
    b(f"  %acc.four = icmp eq i64 {size}, 4")
    b.require("%acc.four", "array.key", "array.miss")
    key = b.item("%acc", 0)
    b(f"  %key.ok = icmp eq ptr {key}, %obj")
    b.require("%key.ok", "array.shape", "array.miss")
    known = b.item("%acc", 1)
    _getattr_is(b, "%arg", b.obj("s_shape"), known, "shape", "array.words", "array.miss",
                "array.clear")
    words = b.item("%acc", 3)
    b(f"  %words.obj = getelementptr i8, ptr {words}, i64 0")
    words_type = b.at("%words.obj", 8)
    b(f"  %words.type = getelementptr i8, ptr {words_type}, i64 0")
    # the record is a bytes object: its type is the one the words must have
    rec_type = b.at(b.obj("record"), 8)
    b(f"  %words.is.bytes = icmp eq ptr %words.type, {rec_type}")
    b.require("%words.is.bytes", "array.count", "array.miss")
    words_size = b.at("%words.obj", 16, kind="i64")
    b(f"  %words.size = add i64 {words_size}, 0")
    b("  %words.dims = shl i64 %a, 4")
    b("  %words.want = add i64 %words.dims, 24")
    b("  %words.fit = icmp eq i64 %words.size, %words.want")
    b.require("%words.fit", "array.copy", "array.miss")
    b("  %words = getelementptr i8, ptr %words.obj, i64 32")
    b("  %words.n = lshr i64 %words.size, 3")
    b("  br label %copy")
    b("copy:")
    b("  %k = phi i64 [0, %array.copy], [%k.next, %copy.one]")
    b("  %copy.more = icmp ult i64 %k, %words.n")
    b("  br i1 %copy.more, label %copy.one, label %copied")
    b("copy.one:")
    b("  %from = getelementptr i64, ptr %words, i64 %k")
    b("  %value = load i64, ptr %from, align 8")
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
    # exact: an aligned pointer where the signature says unaligned is a miss too
    b("  %align.differs = icmp eq i1 %misaligned, %wants.align")
    b("  %exact.miss = and i1 %align.differs, %exact.align")
    b("  %any.miss = or i1 %align.miss, %exact.miss")
    b("  br i1 %any.miss, label %fallback, label %next")
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
    b("  %int.taken = and i1 %is.int, %py.ok")
    b("  br i1 %int.taken, label %int.py, label %raw.check")
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
    b(f"  %{kind}.taken = and i1 %{kind}.is.float, %py.ok")
    b(f"  br i1 %{kind}.taken, label %{kind}.py, label %raw.check")
    b(f"{kind}.py:")
    x = b.at("%arg", 16, kind="double")
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
    slot = b.word(f"%{tag}.desc", 1)
    ndim = b.word(f"%{tag}.desc", 2)
    itemsize = b.word(f"%{tag}.desc", 3)
    b(f"  %{tag}.words = getelementptr i64, ptr %slots, i64 {slot}")
    ptr = b.word(f"%{tag}.words", 1)
    b(f"  %{tag}.sizes = getelementptr i64, ptr %{tag}.words, i64 3")
    b(f"  br label %{tag}.dims")
    b(f"{tag}.dims:")
    b(f"  br label %{tag}.dims.loop")
    b(f"{tag}.dims.loop:")
    b(f"  %{tag}.e = phi i64 [0, %{tag}.dims], [%{tag}.e.next, %{tag}.dim]")
    b(f"  %{tag}.n = phi i64 [{itemsize}, %{tag}.dims], [%{tag}.n.next, %{tag}.dim]")
    b(f"  %{tag}.dim.more = icmp ult i64 %{tag}.e, {ndim}")
    b(f"  br i1 %{tag}.dim.more, label %{tag}.dim, label %{tag}.extent")
    b(f"{tag}.dim:")
    size = b.word(f"%{tag}.sizes", f"%{tag}.e")
    b(f"  %{tag}.n.next = mul i64 %{tag}.n, {size}")
    b(f"  %{tag}.e.next = add i64 %{tag}.e, 1")
    b(f"  br label %{tag}.dims.loop")
    b(f"{tag}.extent:")
    return ptr, f"%{tag}.n"


def _overlaps(b: _Ir) -> None:
    """Each (i, j) pair of the record: nonzero-size arrays i and j must not overlap."""
    b("params.done:")
    pairs = b.word("%rec", 11)
    b(f"  %pairs = add i64 {pairs}, 0")
    b(f"  %pairs.word = mul i64 %nargs, {PARAM_WORDS}")
    b(f"  %pairs.at = add i64 %pairs.word, {HEAD_WORDS}")
    b("  %pair.list = getelementptr i64, ptr %rec, i64 %pairs.at")
    b("  br label %pair.loop")
    b("pair.loop:")
    b("  %p = phi i64 [0, %params.done], [%p.next, %pair.next]")
    b("  %pair.more = icmp ult i64 %p, %pairs")
    b("  br i1 %pair.more, label %pair, label %setting")
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


def _getattr_is(b: _Ir, obj: str, name: str, want: str, tag: str, then: str,
                miss: str = "fallback", null: str = "clear", drop: str | None = None) -> None:
    """Go on in block `then` when `obj.<name>` is `want`, else to `miss`; a failed lookup goes
    to `null` (see `_Ir.new_ref`, also for `drop`)."""
    value = b.get_attr(obj, name, tag, f"{tag}.test", null, drop)
    b(f"  %{tag}.same = icmp eq ptr {value}, {want}")
    b.call_void("Py_DecRef", f"ptr {value}")
    b.require(f"%{tag}.same", then, miss)


def _state(b: _Ir) -> None:
    """The setting (`spec.setting`), the context-lost word and the stream's `_closed`."""
    b("setting:")
    b(f"  %setting.bit = and i64 %flags, {FLAG_SETTING}")
    b("  %has.setting = icmp ne i64 %setting.bit, 0")
    b("  br i1 %has.setting, label %setting.check, label %live")
    b("setting.check:")
    current = b.get_attr(b.obj("setting_object"), b.obj("setting_a"), "current", "current.some")
    b(f"  %current.none = icmp eq ptr {current}, %k.none")
    b("  br i1 %current.none, label %current.miss, label %current.read")
    b("current.miss:")
    b.call_void("Py_DecRef", f"ptr {current}")
    b("  br label %fallback")
    b("current.read:")
    _getattr_is(b, current, b.obj("setting_b"), b.obj("setting_value"), "setting.value", "live",
                drop=current)
    lost_at = b.word("%rec", 13)
    b(f"  %lost.ptr = inttoptr i64 {lost_at} to ptr")
    b("  %lost = load volatile i64, ptr %lost.ptr, align 8")
    b("  %not.lost = icmp eq i64 %lost, 0")
    b.require("%not.lost", "alive")
    b(f"  %closed.bit = and i64 %flags, {FLAG_CLOSED}")
    b("  %check.closed = icmp ne i64 %closed.bit, 0")
    b("  br i1 %check.closed, label %closed.check, label %go")
    b("closed.check:")
    _getattr_is(b, b.obj("stream"), b.obj("s_closed"), "%k.false", "closed", "open")
    b("  br label %go")


def _launch(b: _Ir, launch_packed: str) -> None:
    """The launch, its status, `last_kernel`."""
    b("go:")
    b("  %header = getelementptr i64, ptr %rec, i64 2")
    handle = b.word("%rec", 9)
    b(f"  %stream = inttoptr i64 {handle} to ptr")
    thread = b.call("ptr", "PyEval_SaveThread", "")
    b(f"  %status = call i32 @{launch_packed}(ptr %rec, ptr %header, ptr %stream, "
      "ptr %slots)")
    b.call_void("PyEval_RestoreThread", f"ptr {thread}")
    b("  %launched = icmp eq i32 %status, 0")
    b.require("%launched", "done", "failed")
    stream = b.obj("stream")
    set_ = b.call("i32", "PyObject_SetAttr",
                  f"ptr {stream}, ptr {b.obj('s_last_kernel')}, ptr {b.obj('name')}")
    b(f"  %set.failed = icmp ne i32 {set_}, 0")
    b("  br i1 %set.failed, label %error, label %return.none")
    b("return.none:")
    b.call_void("Py_IncRef", "ptr %k.none")
    b("  ret ptr %k.none")
    b("failed:")
    b("  %status.64 = sext i32 %status to i64")
    b.new_ref("PyLong_FromLong", "i64 %status.64", "code", "report", "error")
    b("  store ptr %code, ptr %code.arg")
    raised = b.call("ptr", "PyObject_Vectorcall",
                    f"ptr {b.obj('failed')}, ptr %code.arg, i64 1, ptr null")
    b.call_void("Py_DecRef", "ptr %code")
    b(f"  ret ptr {raised}")
    b("error:")
    b("  ret ptr null")


def _fallback(b: _Ir) -> None:
    b("fallback:")
    result = b.call("ptr", "PyObject_Vectorcall",
                    f"ptr {b.obj('fallback')}, ptr %args, i64 %nargs, ptr null")
    b(f"  ret ptr {result}")


def py_checked_ir(launch_packed: str) -> str:
    """LLVM IR of `PY_CHECKED(self, args, nargs)` over `launch_packed` (defined beside it)
    and its C-API table (see the module docstring)."""
    b = _Ir()
    n = len(CHECKED_API) + len(_CONSTANTS)
    b(f"@{CHECKED_API_GLOBAL} = global [{n} x ptr] zeroinitializer")
    b("declare float @llvm.fabs.f32(float)")
    b("declare double @llvm.fabs.f64(double)")
    # no-builtins: the word copy must stay a loop, not become a call of libc's memcpy
    b(f"define ptr @{PY_CHECKED}(ptr %self, ptr %args, i64 %nargs) #0 {{")
    _entry(b)
    _param(b)
    _overlaps(b)
    _state(b)
    _launch(b, launch_packed)
    _fallback(b)
    b("}")
    b('attributes #0 = { "no-builtins" }')
    return "\n".join(b.lines) + "\n"
