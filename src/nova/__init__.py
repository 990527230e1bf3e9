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
    "Pipeline": "nova.runtime.pipeline",
    "PipelineError": "nova.runtime.pipeline",
    "CapturedEntry": "nova.runtime.graph",
    # Python kernels (nova.frontend.kernel; docs/python-kernels.md)
    "kernel": "nova.frontend.kernel",
    "func": "nova.frontend.kernel",
    "thread_id": "nova.frontend.kernel",
    "block_id": "nova.frontend.kernel",
    "block_dim": "nova.frontend.kernel",
    "grid_dim": "nova.frontend.kernel",
    "global_id": "nova.frontend.kernel",
    "lane_id": "nova.frontend.kernel",
    "syncthreads": "nova.frontend.kernel",
    "syncwarp": "nova.frontend.kernel",
    "shared_array": "nova.frontend.kernel",
    "dynamic_shared_array": "nova.frontend.kernel",
    "local_array": "nova.frontend.kernel",
    "atomic_add": "nova.frontend.kernel",
    "atomic_sub": "nova.frontend.kernel",
    "atomic_min": "nova.frontend.kernel",
    "atomic_max": "nova.frontend.kernel",
    "atomic_and": "nova.frontend.kernel",
    "atomic_or": "nova.frontend.kernel",
    "atomic_xor": "nova.frontend.kernel",
    "atomic_exchange": "nova.frontend.kernel",
    "atomic_cas": "nova.frontend.kernel",
    "shuffle_idx": "nova.frontend.kernel",
    "shuffle_up": "nova.frontend.kernel",
    "shuffle_down": "nova.frontend.kernel",
    "shuffle_xor": "nova.frontend.kernel",
    "ballot": "nova.frontend.kernel",
    "match_any": "nova.frontend.kernel",
    "warp_any": "nova.frontend.kernel",
    "warp_all": "nova.frontend.kernel",
    "warp_reduce_add": "nova.frontend.kernel",
    "warp_reduce_mul": "nova.frontend.kernel",
    "warp_reduce_min": "nova.frontend.kernel",
    "warp_reduce_max": "nova.frontend.kernel",
    "warp_reduce_and": "nova.frontend.kernel",
    "warp_reduce_or": "nova.frontend.kernel",
    "warp_reduce_xor": "nova.frontend.kernel",
    "popc": "nova.frontend.kernel",
    "clz": "nova.frontend.kernel",
    "ctz": "nova.frontend.kernel",
    "int8": "nova.frontend.kernel",
    "int16": "nova.frontend.kernel",
    "int32": "nova.frontend.kernel",
    "int64": "nova.frontend.kernel",
    "uint8": "nova.frontend.kernel",
    "uint16": "nova.frontend.kernel",
    "uint32": "nova.frontend.kernel",
    "uint64": "nova.frontend.kernel",
    "float16": "nova.frontend.kernel",
    "bfloat16": "nova.frontend.kernel",
    "float32": "nova.frontend.kernel",
    "float64": "nova.frontend.kernel",
    "bool_": "nova.frontend.kernel",
    "WARP_SIZE": "nova.frontend.kernel",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nova' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = sorted(_LAZY)
