"""Choosing a cuBLASLt algorithm per GEMM plan by measurement, at load.

`cublasLtMatmulAlgoGetHeuristic` ranks algorithms by a model of the card; its first choice is
what PyTorch uses, and for some shapes (a narrow N, strided batches) another of its candidates
is measurably faster. `tune_plan` asks the heuristic for up to `CANDIDATES` algorithms for a plan
made by `cublaslt.create_plan`, runs each on scratch operands of the plan's exact shapes
(`WARMUP` runs, then `RUNS` timed by the host around a stream synchronisation: GEMMs of
models take 10 us to a few ms, far above the launch cost), and writes the fastest into the
plan. It runs once per plan and device (plans are shared between programs), so a program pays
it at `nova.load`: about a millisecond per candidate for the encoder layer's GEMMs.

`NOVA_GEMM_TUNING=0` keeps the heuristic's first choice (also what a plan gets when only one
candidate fits the workspace). The measurements stay on the plan's runtime for inspection
(`CublasLtRuntime.tuning`): each candidate's time and the index of the one chosen.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from typing import Any

from nova.abi import LibraryPlan

CANDIDATES = 8
WARMUP = 2
RUNS = 5
ENV_TUNING = "NOVA_GEMM_TUNING"


@dataclass(frozen=True)
class Tuning:
    """The measured candidates of one plan: seconds per run of each (None: it failed to run),
    and the index of the algorithm written into the plan (0: the heuristic's first choice)."""

    seconds: tuple[float | None, ...]
    chosen: int


def tuning_enabled() -> bool:
    return os.environ.get(ENV_TUNING, "1") not in ("0", "false", "no", "off")


def _matrix_bytes(layout: Any, element: int) -> int:
    """Bytes of a (possibly strided-batched) column-major matrix layout."""
    return element * (layout.ld * layout.cols + layout.stride * (layout.batch - 1))


def candidates(api: Any, handle: int, native: Any, setup: Any,
               workspace_size: int) -> list[Any]:
    """Up to CANDIDATES heuristic results for the plan's descriptor and layouts."""
    from nova.runtime.cuda import cublaslt as lt

    pref = ctypes.c_void_p()
    api("cublasLtMatmulPreferenceCreate", ctypes.byref(pref))
    try:
        set_pref = "cublasLtMatmulPreferenceSetAttribute"
        lt._set(api, set_pref, pref.value or 0, lt.PREF_MAX_WORKSPACE_BYTES,
                ctypes.c_uint64(workspace_size))
        for attr in lt.PREF_MIN_ALIGNMENT:
            lt._set(api, set_pref, pref.value or 0, attr, ctypes.c_uint32(setup.alignment))
        results = (lt.HeuristicResult * CANDIDATES)()
        count = ctypes.c_int(0)
        api("cublasLtMatmulAlgoGetHeuristic", ctypes.c_void_p(handle),
            ctypes.c_void_p(native.desc), ctypes.c_void_p(native.layout_a),
            ctypes.c_void_p(native.layout_b), ctypes.c_void_p(native.layout_c),
            ctypes.c_void_p(native.layout_d), pref, ctypes.c_int(CANDIDATES), results,
            ctypes.byref(count))
    finally:
        api("cublasLtMatmulPreferenceDestroy", pref)
    return [results[i] for i in range(count.value) if results[i].state == 0]


def tune_plan(api: Any, device: Any, plan: LibraryPlan, native: Any) -> Tuning:
    """Measure the heuristic's candidates for `plan` (its NativePlan `native`, made by
    `cublaslt.create_plan`) on `device` and write the fastest algorithm into `native.algo`."""
    from nova.runtime.cuda import cublaslt as lt

    setup = lt.gemm_setup(plan)
    found = candidates(api, native.handle, native, setup, native.workspace_size)
    if len(found) < 2:
        return Tuning(seconds=(), chosen=0)
    element = lt.ELEMENT_BYTES[plan.dtype]
    sizes = {"a": _matrix_bytes(setup.a, element), "b": _matrix_bytes(setup.b, element),
             "d": _matrix_bytes(setup.c, element)}
    if plan.bias:
        sizes["bias"] = element * setup.c.rows
    buffers = {name: device.allocate(nbytes) for name, nbytes in sizes.items()}
    try:
        for buf in buffers.values():
            device.memset(buf, 0)
        if plan.bias:
            cell = ctypes.c_void_p(buffers["bias"].ptr)
            lt._set(api, "cublasLtMatmulDescSetAttribute", native.desc, lt.DESC_BIAS_POINTER,
                    cell)
        d = ctypes.c_void_p(buffers["d"].ptr)
        stream = ctypes.c_void_p(native.default_stream)
        alpha, beta = ctypes.c_float(native.alpha), ctypes.c_float(native.beta)

        def run(algo: Any) -> None:
            api("cublasLtMatmul", ctypes.c_void_p(native.handle), ctypes.c_void_p(native.desc),
                ctypes.byref(alpha), ctypes.c_void_p(buffers["a"].ptr),
                ctypes.c_void_p(native.layout_a), ctypes.c_void_p(buffers["b"].ptr),
                ctypes.c_void_p(native.layout_b), ctypes.byref(beta), d,
                ctypes.c_void_p(native.layout_c), d, ctypes.c_void_p(native.layout_d),
                ctypes.byref(algo), ctypes.c_void_p(native.workspace),
                ctypes.c_size_t(native.workspace_size), stream)

        device.synchronize()
        seconds: list[float | None] = []
        for result in found:
            algo = (ctypes.c_uint64 * 8)(*result.algo)
            try:
                for _ in range(WARMUP):
                    run(algo)
                device.synchronize()
                start = time.perf_counter()
                for _ in range(RUNS):
                    run(algo)
                device.synchronize()
                seconds.append((time.perf_counter() - start) / RUNS)
            except lt.LibraryCallError:
                seconds.append(None)  # a candidate the library then refuses: never chosen
    finally:
        for buf in buffers.values():
            buf.free()
    timed = [(s, i) for i, s in enumerate(seconds) if s is not None]
    if not timed:
        return Tuning(seconds=tuple(seconds), chosen=0)
    chosen = min(timed)[1]
    native.algo[:] = list(found[chosen].algo)
    return Tuning(seconds=tuple(seconds), chosen=chosen)
