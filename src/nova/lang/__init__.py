"""Python kernels: `@nova.kernel` compiles Python functions into GPU kernels through Nova's
pipeline (Python AST -> gpu.module -> PTX/cubin or the CPU device's x86-64 object).

docs/python-kernels.md describes the language subset, the type rules and the launch API.
"""

from __future__ import annotations

from typing import Any

from nova.lang import mma
from nova.lang.api import DeviceFunction, KernelFunction, func, kernel
from nova.lang.intrinsics import *  # noqa: F403
from nova.lang.intrinsics import INTRINSIC_NAMES, WARP_SIZE, KernelCallError
from nova.lang.source import KernelSyntaxError, KernelTypeError
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

__all__ = [
    "INTRINSIC_NAMES", "WARP_SIZE", "ArrayType", "DeviceFunction", "KernelCallError",
    "KernelFunction", "KernelSyntaxError", "KernelTypeError", "ScalarType", "bfloat16", "bool_",
    "float16", "float32", "float64", "func", "int8", "int16", "int32", "int64", "kernel", "mma",
    "save_bundle", "uint8", "uint16", "uint32", "uint64", *INTRINSIC_NAMES,
]


def save_bundle(path: Any, kernels_with_signatures: Any, **options: Any) -> Any:
    """See nova.lang.aot.save_bundle (imported on use: it needs the compiler)."""
    from nova.lang.aot import save_bundle as save

    return save(path, kernels_with_signatures, **options)
