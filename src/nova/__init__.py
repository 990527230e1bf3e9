"""Nova: compile MLIR GPU programs into one .nova file and run them on a CUDA GPU or the CPU device.

The public API is re-exported here lazily, so `import nova` stays cheap and the runtime never pulls
in the compiler unless `nova.compile` is used.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not imported at run time: `import nova` stays cheap
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "NovaError": "nova.errors",
    "compile": "nova.compiler.driver",
    "load": "nova.runtime.executor",
    "NovaModule": "nova.runtime.executor",
    "Device": "nova.runtime.device",
    "get_device": "nova.runtime.selection",
    "devices": "nova.runtime.selection",
    "Buffer": "nova.runtime.memory",
    "to_device": "nova.runtime.memory",
    "Stream": "nova.runtime.stream",
    "Event": "nova.runtime.stream",
    "from_dlpack": "nova.runtime.memory",
    "HostBuffer": "nova.runtime.memory",
    "Pipeline": "nova.runtime.pipeline",
    "PipelineError": "nova.runtime.pipeline",
    "CapturedEntry": "nova.runtime.graph",
    # Python kernels (nova.lang; docs/python-kernels.md)
    "kernel": "nova.lang",
    "func": "nova.lang",
    "thread_id": "nova.lang",
    "block_id": "nova.lang",
    "block_dim": "nova.lang",
    "grid_dim": "nova.lang",
    "global_id": "nova.lang",
    "lane_id": "nova.lang",
    "syncthreads": "nova.lang",
    "syncwarp": "nova.lang",
    "shared_array": "nova.lang",
    "dynamic_shared_array": "nova.lang",
    "local_array": "nova.lang",
    "async_copy": "nova.lang",
    "async_commit": "nova.lang",
    "async_wait": "nova.lang",
    "atomic_add": "nova.lang",
    "atomic_sub": "nova.lang",
    "atomic_min": "nova.lang",
    "atomic_max": "nova.lang",
    "atomic_and": "nova.lang",
    "atomic_or": "nova.lang",
    "atomic_xor": "nova.lang",
    "atomic_exchange": "nova.lang",
    "atomic_cas": "nova.lang",
    "shuffle_idx": "nova.lang",
    "shuffle_up": "nova.lang",
    "shuffle_down": "nova.lang",
    "shuffle_xor": "nova.lang",
    "ballot": "nova.lang",
    "match_any": "nova.lang",
    "warp_any": "nova.lang",
    "warp_all": "nova.lang",
    "warp_reduce_add": "nova.lang",
    "warp_reduce_mul": "nova.lang",
    "warp_reduce_min": "nova.lang",
    "warp_reduce_max": "nova.lang",
    "warp_reduce_and": "nova.lang",
    "warp_reduce_or": "nova.lang",
    "warp_reduce_xor": "nova.lang",
    "popc": "nova.lang",
    "clz": "nova.lang",
    "ctz": "nova.lang",
    "int8": "nova.lang",
    "int16": "nova.lang",
    "int32": "nova.lang",
    "int64": "nova.lang",
    "uint8": "nova.lang",
    "uint16": "nova.lang",
    "uint32": "nova.lang",
    "uint64": "nova.lang",
    "float16": "nova.lang",
    "bfloat16": "nova.lang",
    "float32": "nova.lang",
    "float64": "nova.lang",
    "bool_": "nova.lang",
    "WARP_SIZE": "nova.lang",
    "mma": "nova.lang",
    "wgmma": "nova.lang",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nova' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    # bound once: later `nova.X` reads are plain module-dict hits, not an import_module call
    # each (hot paths read `nova.Buffer`, `nova.uint32`, ... per call)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
