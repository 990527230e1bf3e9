"""`make_context()`: the one place that assembles every dialect Nova parses.

Dialects are registered lazily (xDSL loads one on first use), so building a context is cheap.
Nova's own `gpu` dialect replaces xDSL's; `func`, `memref`, `scf`, `arith`, `math`, `vector` are
xDSL's with the overrides and additions of `nova.ir.dialects.memref` /
`nova.ir.dialects.scf_arith_func` / `nova.ir.dialects.math` / `nova.ir.dialects.vector`; `index` is
Nova's; `affine` is xDSL's with MLIR's syntax (`nova.ir.dialects.affine`), lowered by the
`lower-affine` pass before anything else sees it; `nvvm` is Nova's basic subset
(`nova.ir.dialects.nvvm`: special registers, barrier0, shfl.sync, vote.sync; and Hopper's wgmma,
`nova.ir.dialects.nvvm_wgmma`), lowered in kernels only; `llvm` is the struct subset the wgmma
accumulators need (`nova.ir.dialects.llvm`); `nvgpu` is Nova's asynchronous-copy subset
(`nova.ir.dialects.nvgpu`: cp.async copies, groups and waits), lowered in kernels only; `async`
is Nova's host-side subset (`nova.ir.dialects.async_`: execute/yield/await and groups), removed
by the `async-to-sync` pass before outlining.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin
    return Builtin


def _func() -> Dialect:
    from nova.ir.dialects.scf_arith_func import FUNC
    return FUNC


def _arith() -> Dialect:
    from nova.ir.dialects.scf_arith_func import ARITH
    return ARITH


def _math() -> Dialect:
    from nova.ir.dialects.math import MATH
    return MATH


def _memref() -> Dialect:
    from nova.ir.dialects.memref import MEMREF
    return MEMREF


def _scf() -> Dialect:
    from nova.ir.dialects.scf_arith_func import SCF
    return SCF


def _cf() -> Dialect:
    from xdsl.dialects.cf import Cf
    return Cf


def _index() -> Dialect:
    from nova.ir.dialects.index import INDEX
    return INDEX


def _vector() -> Dialect:
    from nova.ir.dialects.vector import VECTOR
    return VECTOR


def _affine() -> Dialect:
    from nova.ir.dialects.affine import AFFINE
    return AFFINE


def _nvvm() -> Dialect:
    from nova.ir.dialects.nvvm import NVVM
    from nova.ir.dialects.nvvm_wgmma import WGMMA_ATTRS, WGMMA_OPS
    return Dialect("nvvm", [*NVVM.operations, *WGMMA_OPS], [*NVVM.attributes, *WGMMA_ATTRS])


def _llvm() -> Dialect:
    from nova.ir.dialects.llvm import LLVM
    return LLVM


def _nvgpu() -> Dialect:
    from nova.ir.dialects.nvgpu import NVGPU
    from nova.ir.dialects.nvgpu_mma import NVGPU_MMA_OPS
    return Dialect("nvgpu", [*NVGPU.operations, *NVGPU_MMA_OPS], [*NVGPU.attributes])


def _async() -> Dialect:
    from nova.ir.dialects.async_ import ASYNC
    return ASYNC


def _gpu() -> Dialect:
    from nova.ir.gpu import GPU
    return GPU


DIALECT_FACTORIES: dict[str, Callable[[], Dialect]] = {
    "builtin": _builtin, "func": _func, "arith": _arith, "math": _math, "memref": _memref,
    "scf": _scf, "cf": _cf, "index": _index, "vector": _vector, "gpu": _gpu,
    "affine": _affine, "nvvm": _nvvm, "nvgpu": _nvgpu, "async": _async, "llvm": _llvm,
}
"""Dialect name -> factory, for every dialect Nova parses."""

SUPPORTED_DIALECTS: tuple[str, ...] = tuple(DIALECT_FACTORIES)


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh xDSL context with every dialect Nova parses (loaded on first use).
    `allow_unregistered` (mlir-opt's --allow-unregistered-dialect): ops of unknown dialects
    parse in generic form, verify and print; compiling one is a located error."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in DIALECT_FACTORIES.items():
        ctx.register_dialect(name, factory)
    ctx.load_registered_dialect("builtin")
    return ctx
