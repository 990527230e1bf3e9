"""Python kernels: `@nova.kernel` compiles Python functions into GPU kernels through Nova's
pipeline (Python AST -> gpu.module -> PTX/cubin or the CPU device's x86-64 object).

docs/python-kernels.md describes the language subset, the type rules and the launch API.

The intrinsics (`nova.lang.intrinsics`), `mma` and the kernel errors (`KernelTypeError`,
`KernelSyntaxError`: nova.lang.kernel_errors) are imported on first use (module `__getattr__`): a
cached kernel's first call never runs a kernel body on the host nor translates one, so it does
not pay for them.
"""

from __future__ import annotations

import importlib

from nova.lang.api import DeviceFunction, KernelFunction, func, kernel
from nova.lang.types import (
    ArrayType,
    ScalarType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from nova.lang import mma, wgmma
    from nova.lang.intrinsics import *  # noqa: F403
    from nova.lang.intrinsics import INTRINSIC_NAMES, WARP_SIZE, KernelCallError
    from nova.lang.kernel_errors import KernelSyntaxError, KernelTypeError

_INTRINSIC_NAMES = (
    "thread_id", "block_id", "block_dim", "grid_dim", "global_id", "lane_id", "syncthreads",
    "syncwarp", "shared_array", "dynamic_shared_array", "local_array", "async_copy",
    "async_commit", "async_wait", "atomic_add", "atomic_sub", "atomic_min", "atomic_max",
    "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange", "atomic_cas", "shuffle_idx",
    "shuffle_up", "shuffle_down", "shuffle_xor", "ballot", "match_any", "warp_any", "warp_all",
    "warp_reduce_add", "warp_reduce_mul", "warp_reduce_min", "warp_reduce_max",
    "warp_reduce_and", "warp_reduce_or", "warp_reduce_xor", "popc", "clz", "ctz",
)
"""`nova.lang.intrinsics.INTRINSIC_NAMES`, spelled out so that `__all__` needs no import
(tests/kernel/test_kernel_lazy_exports.py keeps the two equal)."""
_FROM_INTRINSICS = frozenset((*_INTRINSIC_NAMES, "INTRINSIC_NAMES", "WARP_SIZE",
                              "KernelCallError", "intrinsic_name"))

__all__ = [
    "INTRINSIC_NAMES", "WARP_SIZE", "ArrayType", "DeviceFunction", "KernelCallError",
    "KernelFunction", "KernelSyntaxError", "KernelTypeError", "ScalarType", "bfloat16", "bool_",
    "float16", "float32", "float64", "func", "int8", "int16", "int32", "int64", "kernel", "mma",
    "save_bundle", "wgmma", "uint8", "uint16", "uint32", "uint64", *_INTRINSIC_NAMES,
]


def save_bundle(path: Any, kernels_with_signatures: Any, **options: Any) -> Any:
    """See nova.lang.aot.save_bundle (imported on use: it needs the compiler)."""
    from nova.lang.aot import save_bundle as save

    return save(path, kernels_with_signatures, **options)


def __getattr__(name: str) -> Any:
    """The intrinsics, `mma`, `wgmma` and the kernel errors, imported on first use (see the
    module docstring)."""
    if name in ("mma", "wgmma"):
        return importlib.import_module(f"nova.lang.{name}")
    if name in _FROM_INTRINSICS or name in ("KernelSyntaxError", "KernelTypeError"):
        module = "nova.lang.intrinsics" if name in _FROM_INTRINSICS else "nova.lang.source"
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups find it directly
        return value
    raise AttributeError(f"module 'nova.lang' has no attribute {name!r}")
