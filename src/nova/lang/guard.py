"""Launch guards: per-signature Python functions that check launch arguments and return their
parameter slot values, generated once per signature.

A cached launch must not redo per argument what the first launch of a signature did (infer the
type, dispatch on the kind of value, compute the facts of `launch.refine`) — that work was most of
a launch's host time. `make_guard(sig, exact)` writes one straight-line function for `sig`:

    guard(args, device, stream) -> packed parameter slots (bytes) | None

For each array parameter it accepts a Nova `Buffer` (checked: on `device`, the dtype, the rank;
`.ptr` raises on a freed buffer; a Buffer that passed once carries the guards' record
`_accepted`, read in one attribute by later launches until freeing, retyping or a new shape drops
it: `_array`) or an object with `__cuda_array_interface__` (`cuda_array`); for
each scalar its Python/NumPy type (exact) or any value the slot's `struct` code takes (not exact:
a prepared launch converts). It then checks the compiled-in facts on the actual pointers: with
`exact` (cached launches: the signature a full launch would infer) the 16-byte alignment and the
overlap of every array must equal the signature's; without (prepared launches) the facts the
kernel was compiled with must hold (a launch may know more than the kernel assumes). It returns
the slots as one bytes object in the launcher's slot layout (nova.lang.launch.slot_format): a
Buffer's words are its cached `memref_words` (nothing packed per launch), other arrays' and each
run of scalars are packed by a `struct` of their formats (an ArgumentError when a value does not
fit its type), joined when there are several; or None on any mismatch: the caller then takes
the general path, which picks or compiles the right signature or raises the usual located
error. NumPy arrays always take the general path (staging).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from nova import config
from nova.lang import types as T
from nova.lang.launch import param_format
from nova.runtime.checked import SCALAR_CODES, ArrayParam, CheckedSpec, ScalarParam
from nova.runtime.device import Device, DeviceKind
from nova.runtime.launcher import Launcher
from nova.runtime.memory import Buffer

Guard = Callable[[tuple[Any, ...], Device, Any], "bytes | None"]

_TYPESTR_DTYPES: dict[str, np.dtype] = {}
_PACK_ERRORS = (struct.error, OverflowError)
"""What a `struct` pack raises for a value its code cannot hold: struct.error (integers), or
OverflowError (a finite float beyond float32's or float16's range)."""


def cuda_array(value: Any, dtype: np.dtype, ndim: int, device: Device,
               stream: Any) -> tuple[int, tuple[int, ...]] | None:
    """(data pointer, shape) of a C-contiguous `__cuda_array_interface__` array of `dtype` and
    rank `ndim` for a launch on cuda `device` (its producer stream waited for when launching on
    the default stream, as the general path does), else None."""
    if device.kind is not DeviceKind.CUDA:
        return None
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is None:
        return None
    typestr = cai["typestr"]
    dt = _TYPESTR_DTYPES.get(typestr)
    if dt is None:
        dt = _TYPESTR_DTYPES[typestr] = np.dtype(typestr)
    shape = cai["shape"]
    if dt != dtype or len(shape) != ndim:
        return None
    strides = cai.get("strides")
    if strides is not None:
        expect, acc = [], dt.itemsize
        for d in reversed(shape):
            expect.append(acc)
            acc *= d
        if tuple(strides) != tuple(reversed(expect)) and all(shape):
            return None  # the general path says it must be C-contiguous
    producer = cai.get("stream")
    if producer is not None and stream is None:
        device.wait_for_foreign_stream(int(producer))  # type: ignore[attr-defined]
    return int(cai["data"][0]), tuple(int(d) for d in shape)


def _bfloat16_bits(value: Any) -> int:
    return int(np.asarray(value, T.bfloat16.np_dtype).view(np.uint16))


def _scalar_types(ty: T.ScalarType) -> frozenset[type]:
    """The Python types `launch.arg_type` maps to `ty` (exact guards accept only these)."""
    out: set[type] = {ty.np_dtype.type}
    out |= {py for py, st in ((bool, T.bool_), (int, T.int64), (float, T.float64)) if st == ty}
    return frozenset(out)


def _strides(k: int, ndim: int) -> list[str]:
    """Expressions of the C-contiguous element strides of array `k` (shape `s{k}`)."""
    out = []
    for d in range(ndim):
        tail = [f"s{k}[{e}]" for e in range(d + 1, ndim)]
        out.append(" * ".join(tail) if tail else "1")
    return out


class _Writer:
    """Accumulates the guard's source and the constants it refers to."""

    def __init__(self, launcher: Launcher, miss: str) -> None:
        self.miss = miss  # the statement that ends a mismatch
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"Buffer": Buffer, "cuda_array": cuda_array,
                                    "bf16": _bfloat16_bits, "_NUMBERS": (int, float, np.generic),
                                    "pack_error": launcher.pack_error,
                                    "struct_error": _PACK_ERRORS}

    def __call__(self, line: str) -> None:
        self.lines.append("    " + line)

    def const(self, name: str, value: Any) -> str:
        self.env[name] = value
        return name


_ACCEPT_KEYS: dict[tuple[Device, np.dtype, int], tuple[Device, np.dtype, int]] = {}


def _accept_key(device: Device, dtype: np.dtype, ndim: int) -> tuple[Device, np.dtype, int]:
    """One object per (device, dtype, rank): what a guard's Buffer checks require, compared by
    identity against a Buffer's `_accepted` record."""
    key = (device, dtype, ndim)
    return _ACCEPT_KEYS.setdefault(key, key)


def _array(w: _Writer, k: int, ty: T.ArrayType, buffer_only: bool, device: Device) -> str:
    """Check array argument `k`; its slots are then the bytes `w{k}` (a Buffer's cached
    `memref_words`, or packed here for a `__cuda_array_interface__` array).

    A Buffer that passed these checks once carries the record `_accepted` = (requirements,
    shape, pointer, words) (Buffer.free drops it; views, whose base may be freed, get none):
    a later launch of any guard with the same requirements (device, dtype, rank) reads it in
    one attribute instead of re-checking the device, dtype, rank, freed state and words."""
    d = w.const(f"D{k}", ty.dtype.np_dtype)
    key = w.const(f"K{k}", _accept_key(device, ty.dtype.np_dtype, ty.ndim))
    w(f"if type(a{k}) is Buffer:")
    w(f"    c{k} = a{k}._accepted")
    w(f"    if c{k} is None or c{k}[0] is not {key} or c{k}[1] is not a{k}.shape:")
    # the dtype attribute first: Buffer.dtype is a property (its value when _dtype is None)
    w(f"        if a{k}.device is not dev or (a{k}._dtype is not {d} and a{k}.dtype != {d}):")
    w(f"            {w.miss}")
    w(f"        s{k} = a{k}.shape")
    w(f"        if len(s{k}) != {ty.ndim}:")
    w(f"            {w.miss}")
    # Buffer.ptr's checks (freed, or a view of a freed base) only when they can fail
    w(f"        p{k} = a{k}._ptr if a{k}._base is None and not a{k}._freed else a{k}.ptr")
    w(f"        c{k} = a{k}._words")  # Buffer.memref_words, inlined while its cache holds
    w(f"        c{k} = ({key}, s{k}, p{k}, c{k}[1] if c{k} is not None and c{k}[0] is s{k} "
      f"else a{k}.memref_words())")
    w(f"        if a{k}._base is None:")
    w(f"            a{k}._accepted = c{k}")
    w(f"    _, s{k}, p{k}, w{k} = c{k}")
    w("else:")
    if buffer_only:
        w(f"    {w.miss}")
        return f"w{k}"
    w(f"    r{k} = cuda_array(a{k}, {d}, {ty.ndim}, dev, stream)")
    w(f"    if r{k} is None:")
    w(f"        {w.miss}")
    w(f"    p{k}, s{k} = r{k}")
    words = w.const(f"W{k}", struct.Struct("<" + param_format(ty)).pack)
    sizes = [f"s{k}[{e}]" for e in range(ty.ndim)]
    w(f"    w{k} = {words}({', '.join([f'p{k}', f'p{k}', '0', *sizes, *_strides(k, ty.ndim)])})")
    return f"w{k}"


def _scalar(w: _Writer, k: int, ty: T.ScalarType, exact: bool) -> str:
    if exact:
        allowed = w.const(f"S{k}", _scalar_types(ty))
        w(f"if type(a{k}) not in {allowed}:")
    else:  # converted to the parameter's type by its struct code (range-checked there)
        w(f"if not isinstance(a{k}, _NUMBERS):")
    w(f"    {w.miss}")
    return f"bf16(a{k})" if ty is T.bfloat16 else f"a{k}"


def _facts(w: _Writer, arrays: list[tuple[int, T.ArrayType]], exact: bool) -> None:
    """Alignment and overlap checks (see the module docstring)."""
    for k, ty in arrays:
        if exact:
            w(f"if ((p{k} & 15) == 0) is not {ty.align == 16}:")
            w(f"    {w.miss}")
        elif ty.align == 16:
            w(f"if p{k} & 15:")
            w(f"    {w.miss}")
    if len(arrays) < 2 or not (exact or any(ty.noalias for _, ty in arrays)):
        return
    for k, ty in arrays:
        size = " * ".join([f"s{k}[{e}]" for e in range(ty.ndim)] + [str(ty.dtype.itemsize)])
        w(f"n{k} = {size}")
        w(f"e{k} = p{k} + n{k}")
    overlaps: dict[int, list[str]] = {k: [] for k, _ in arrays}
    for (i, _), (j, _) in itertools.combinations(arrays, 2):
        w(f"o{i}_{j} = n{i} and n{j} and p{i} < e{j} and p{j} < e{i}")
        overlaps[i].append(f"o{i}_{j}")
        overlaps[j].append(f"o{i}_{j}")
    # every overlap of a noalias array is a miss: one test of them all
    forbidden = sorted({o for k, ty in arrays if ty.noalias for o in overlaps[k]})
    if forbidden:
        w(f"if {' or '.join(forbidden)}:")
        w(f"    {w.miss}")
    for k, ty in arrays:
        if exact and not ty.noalias:
            w(f"if not ({' or '.join(overlaps[k])}):")
            w(f"    {w.miss}")


def _body(w: _Writer, sig: tuple[T.NovaType, ...], exact: bool, device: Device,
          first_buffer: bool = False) -> str:
    """Write the checks of `sig`'s arguments `args` (with `first_buffer`, the first must be
    a Nova Buffer); returns the expression of the slots' bytes."""
    names = [f"a{k}" for k in range(len(sig))]
    if names:  # a count mismatch raises ValueError: no len() call per launch
        w("try:")
        w(f"    {', '.join(names)}, = args")
        w("except ValueError:")
        w(f"    {w.miss}")
    else:
        w("if args:")
        w(f"    {w.miss}")
    parts: list[str] = []  # the slots' bytes in order: arrays' words, runs of packed scalars
    run: list[tuple[str, T.ScalarType]] = []
    arrays: list[tuple[int, T.ArrayType]] = []

    def end_run() -> None:
        if run:
            packer = w.const(f"P{len(parts)}", struct.Struct(
                "<" + "".join(param_format(ty) for _, ty in run)).pack)
            parts.append(f"{packer}({', '.join(value for value, _ in run)})")
            run.clear()

    for k, ty in enumerate(sig):
        if isinstance(ty, T.ArrayType):
            end_run()
            parts.append(_array(w, k, ty, first_buffer and k == 0, device))
            arrays.append((k, ty))
        else:
            assert isinstance(ty, T.ScalarType)
            run.append((_scalar(w, k, ty, exact), ty))
    end_run()
    _facts(w, arrays, exact)
    if len(parts) <= 1:
        return parts[0] if parts else "b''"
    return f"b''.join(({', '.join(parts)}))"


def guard_source(sig: tuple[T.NovaType, ...], exact: bool,
                 launcher: Launcher) -> tuple[str, dict[str, Any]]:
    """The source of the guard of `sig` and its globals (see the module docstring)."""
    w = _Writer(launcher, "return None")
    # the Buffers' `_accepted` records name the launcher's device (the plan's: the one a caller
    # passes as `dev`); any other is a miss, which the general path handles
    w.env["_DEV"] = launcher.device
    w("if dev is not _DEV:")
    w(f"    {w.miss}")
    packed = _body(w, sig, exact, launcher.device)
    w("try:")
    w(f"    return {packed}")
    w("except struct_error as exc:")
    w("    raise pack_error(exc) from None")
    return "\n".join(["def guard(args, dev, stream):", *w.lines, ""]), w.env


def _compile(source: str, env: dict[str, Any], name: str, what: str) -> Any:
    code = compile(source, f"<nova launch {what}>", "exec")
    exec(code, env)  # our own generated source, built from a signature
    fn = env[name]
    fn.__doc__ = source  # the generated code, for debugging
    return fn


def make_guard(sig: tuple[T.NovaType, ...], exact: bool, launcher: Launcher) -> Guard:
    """The guard of `sig` for `launcher`'s slots (see the module docstring)."""
    source, env = guard_source(sig, exact, launcher)
    guard: Guard = _compile(source, env, "guard", "guard " + ("exact" if exact else "prepared"))
    return guard


def _launch_call(w: _Writer, sig: tuple[T.NovaType, ...], exact: bool,
                 launch: tuple[list[str], dict[str, Any]], what: str,
                 first_buffer: bool = False) -> Callable[..., None]:
    """`__call__(self, *args)`: `w`'s lines so far, the guard of `sig`, then the launch
    (`launch`: the launcher's inline statements on `slots` and their globals,
    Launcher.inline_launch) — one Python frame per launch."""
    statements, launch_env = launch
    w.env.update(launch_env)
    packed = _body(w, sig, exact, w.env["dev"], first_buffer)
    if packed.isidentifier():
        w(f"slots = {packed}")  # one array's words: nothing packed here, nothing to fail
    else:
        w("try:")
        w(f"    slots = {packed}")
        w("except struct_error as exc:")
        w("    raise pack_error(exc) from None")
    for line in statements:
        w(line)
    source = "\n".join(["def __call__(self, *args):", *w.lines, ""])
    call: Callable[..., None] = _compile(source, w.env, "__call__", what)
    return call


def make_prepared_call(sig: tuple[T.NovaType, ...], launcher: Launcher, device: Device,
                       stream: Any, launch: tuple[list[str], dict[str, Any]],
                       fallback: Callable[[tuple[Any, ...]], None]) -> Callable[..., None]:
    """`__call__(self, *args)` of a prepared launch: the not-exact guard of `sig` on `device`
    and `stream` with the launch in the same function, and `fallback(args)` for arguments it
    does not take (nova.lang.prepared)."""
    w = _Writer(launcher, "return fallback(args)")
    w.env.update(dev=device, stream=stream, fallback=fallback)
    return _launch_call(w, sig, False, launch, "prepared call")


def checked_spec(sig: tuple[T.NovaType, ...], device: Device, fallback: Callable[..., None],
                 exact: bool = False, check_bounds: bool | None = None) -> CheckedSpec | None:
    """The guard of `sig` on `device` as a runtime `CheckedSpec`, for a device's native call
    (Launcher.checked_call) with `fallback` (the Python call) for anything it does not take:
    a prepared launch's (not exact) or, with `exact`, a cached launch's (its scalars' exact
    types, alignment as the signature says, and `check_bounds`, if not None, as the active
    configuration's bounds checking; see make_cached_call). None when a parameter's type has no
    native check (bool, float16, bfloat16) or, exact, when two arrays may overlap."""
    params: list[ArrayParam | ScalarParam] = []
    arrays: list[tuple[int, T.ArrayType]] = []
    for k, ty in enumerate(sig):
        if isinstance(ty, T.ArrayType):
            dtype = ty.dtype.np_dtype
            params.append(ArrayParam(_accept_key(device, dtype, ty.ndim), ty.ndim,
                                     dtype.itemsize, ty.align == 16))
            arrays.append((k, ty))
            continue
        assert isinstance(ty, T.ScalarType)
        code = param_format(ty)[0]
        if ty is T.bfloat16 or code not in SCALAR_CODES:
            return None
        # exact: int and float only where they infer to the parameter's type (_scalar_types)
        params.append(ScalarParam(code, ty.np_dtype.type,
                                  not exact or ty is T.int64 or ty is T.float64))
    if exact and len(arrays) > 1 and not all(ty.noalias for _, ty in arrays):
        return None  # the exact guard requires such arrays to overlap: left to Python
    # as _facts: every overlap of a noalias array is a miss
    overlaps = tuple((i, j) for (i, ti), (j, tj) in itertools.combinations(arrays, 2)
                     if ti.noalias or tj.noalias)
    setting = None if check_bounds is None else (config, "_current", "check_bounds",
                                                  check_bounds)
    return CheckedSpec(tuple(params), overlaps, Buffer, fallback, exact, setting)


def make_cached_call(sig: tuple[T.NovaType, ...], launcher: Launcher, device: Device,
                     check_bounds: bool | None, launch: tuple[list[str], dict[str, Any]],
                     slow: Callable[..., None]) -> Callable[..., None]:
    """`__call__(self, *args)` of `kern[grid, block]` specialised to one signature (nova.lang.
    api): the exact guard of `sig` on `device` (the device a launch picks when its first
    argument is a Buffer there, which this guard requires), the active configuration's bounds
    checking equal to `check_bounds` (None: the kernel fixes it, nothing to check), then the
    launch on the default stream; `slow(self, *args)` for anything else (the general
    launch)."""
    w = _Writer(launcher, "return slow(self, *args)")
    w.env.update(dev=device, stream=None, slow=slow, _config=config, _CHECKED=check_bounds)
    if check_bounds is not None:
        w("_cfg = _config._current")
        w("if _cfg is None or _cfg.check_bounds is not _CHECKED:")
        w(f"    {w.miss}")
    return _launch_call(w, sig, True, launch, "cached call", first_buffer=True)
