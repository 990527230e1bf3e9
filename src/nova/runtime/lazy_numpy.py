"""NumPy, imported when first used: `from nova.runtime.lazy_numpy import np`.

Why: NumPy's import costs more than the rest of the runtime together, and a program that takes no
array arguments (`nova-run prog.nova`, most entries of a bundle) never needs it. Modules on that
path import this proxy instead of NumPy (under TYPE_CHECKING they import NumPy itself, so type
checking sees the real module). The first attribute read imports NumPy and copies its namespace
into the proxy, so later reads are ordinary module attribute lookups, as fast as NumPy's own.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyNumPy(ModuleType):
    def __getattr__(self, name: str) -> Any:
        numpy = importlib.import_module("numpy")
        self.__dict__.update({k: v for k, v in vars(numpy).items() if k != "__getattr__"})
        try:
            return self.__dict__[name]
        except KeyError:
            return getattr(numpy, name)  # names NumPy itself serves lazily


np: Any = _LazyNumPy("numpy")
