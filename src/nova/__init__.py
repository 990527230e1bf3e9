"""Nova: compile MLIR GPU programs into one .nova file and run them on a CUDA GPU or the CPU device.

The public API is re-exported here lazily, so `import nova` stays cheap and the runtime never pulls
in the compiler unless `nova.compile` is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "NovaError": "nova.errors",
    "compile": "nova.driver",
    "load": "nova.runtime.executor",
    "NovaModule": "nova.runtime.executor",
    "Device": "nova.runtime.device",
    "get_device": "nova.runtime.device",
    "devices": "nova.runtime.device",
    "Buffer": "nova.runtime.memory",
    "to_device": "nova.runtime.memory",
    "Stream": "nova.runtime.stream",
    "Event": "nova.runtime.stream",
    "from_dlpack": "nova.runtime.memory",
    "HostBuffer": "nova.runtime.memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nova' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = sorted(_LAZY)
