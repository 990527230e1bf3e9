"""Hand-written MLIR programs that call one library plan (`func.call @__nova_library_<i>`), for
the library-call tests (test_library_calls, test_library_conv_calls): the program, its loading
on the cpu device with a plans manifest entry, and the entry's view of an operand."""

from __future__ import annotations

import json

import numpy as np

import nova
from nova.abi import LIBRARY_PLANS_KEY
from nova.compiler.driver import compile_to_bundle, make_options

TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def program(counts: list[int], dtype: str, callee: str = "__nova_library_0") -> str:
    """`forward` taking one flat memref of `dtype` per count and passing them all to `callee`."""
    types = [f"memref<{c}x{TYPES[dtype]}>" for c in counts]
    args = ", ".join(f"%m{i}: {t}" for i, t in enumerate(types))
    refs = ", ".join(f"%m{i}" for i in range(len(types)))
    return f"""
module {{
  func.func private @{callee}({', '.join(types)})
  func.func @forward({args}) {{
    func.call @{callee}({refs}) : ({', '.join(types)}) -> ()
    return
  }}
}}
"""


def load(mlir: str, plans: list[dict[str, object]] | str, name: str = "lib.mlir") -> object:
    """`mlir` (source file `name`) compiled with `plans` (JSON text as is) and loaded on cpu."""
    text = plans if isinstance(plans, str) else json.dumps(plans)
    bundle = compile_to_bundle(mlir, name, make_options(
        cpu_image=True, manifest_extra=((LIBRARY_PLANS_KEY, text),)))
    return nova.load(bundle, device="cpu")


def entry_arg(values: np.ndarray, dtype: str) -> np.ndarray:
    """What the entry takes: bf16 bits viewed as ml_dtypes.bfloat16 (same memory)."""
    if dtype != "bfloat16":
        return values
    import ml_dtypes

    return values.view(ml_dtypes.bfloat16)
