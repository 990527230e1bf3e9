"""What a device needs to run a prepared launch's checks natively: `CheckedSpec`, one prepared
signature in runtime terms (`Launcher.checked_call`; the cuda device's builtin is
nova.runtime.cuda.py_checked, whose docstring says what each part requires of an argument).
nova.lang.guard makes them from a kernel signature."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCALAR_CODES = frozenset("bhiqBHIQfd")
"""The struct codes of the scalar parameters a CheckedSpec may have (bool, float16 and bfloat16
parameters keep the Python call)."""


class ArrayParam:
    """A memref parameter taking a Buffer whose `_accepted` record names `key`."""

    __slots__ = ("align16", "itemsize", "key", "ndim")

    def __init__(self, key: object, ndim: int, itemsize: int, align16: bool) -> None:
        self.key, self.ndim, self.itemsize, self.align16 = key, ndim, itemsize, align16


class ScalarParam:
    """A scalar parameter: its struct code (one of SCALAR_CODES), its NumPy scalar type, and
    whether the exact Python int (integer codes) or float (float codes) is taken too."""

    __slots__ = ("code", "numpy_type", "python")

    def __init__(self, code: str, numpy_type: type, python: bool = True) -> None:
        self.code, self.numpy_type, self.python = code, numpy_type, python


class CheckedSpec:
    """One signature's native checks: its parameters, the array pairs (i, j) that must not
    overlap, the Buffer type, and the Python call `fallback(*args)` taking whatever the native
    call does not. `exact_align`: an array's pointer must be 16-byte aligned exactly when its
    `align16` says so (a cached launch's exact guard), not only when it does. `setting`: (obj,
    a, b, value) where `getattr(getattr(obj, a), b) is value` must hold (the intermediate not
    None), or None."""

    __slots__ = ("buffer_type", "exact_align", "fallback", "overlaps", "params", "setting")

    def __init__(self, params: tuple[ArrayParam | ScalarParam, ...],
                 overlaps: tuple[tuple[int, int], ...], buffer_type: type,
                 fallback: Callable[..., Any], exact_align: bool = False,
                 setting: tuple[object, str, str, object] | None = None) -> None:
        self.params, self.overlaps = params, overlaps
        self.buffer_type, self.fallback = buffer_type, fallback
        self.exact_align, self.setting = exact_align, setting

    def slot_count(self) -> int:
        """The parameter slots of the signature (nova.abi's expansion)."""
        return sum(3 + 2 * p.ndim if isinstance(p, ArrayParam) else 1 for p in self.params)
