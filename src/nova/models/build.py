"""Build one specialisation of a model: the `.nova` bundle, its device-ready weights and the
model signature, from the model cache (nova.models.model_cache) or by lowering the graph and
compiling the MLIR. No device is involved: `CompiledModel` resolves the settings for its device
and loads what this returns; bench/compile_time.py times it for a device it need not have.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from nova.abi import LIBRARY_PLANS_KEY
from nova.models import model_cache
from nova.models.graph import Graph, TensorType
from nova.models.pipeline import Lowered, lower

SIGNATURE_KEY = "nova.models.signature"
"""Manifest `extra` key holding the model signature (JSON: name, dtype, bindings, inputs with
symbolic dims, outputs, weight order)."""


@dataclass
class Settings:
    """Everything besides the graph, bindings and dtype that decides a specialisation: the
    policies as resolved for the device (passes/library.py, library_conv.py, attention.py),
    the conv policy that was asked for (`auto` may fall back at load), and the driver's
    CompileOptions fields (ptx, cubin, cpu_image, ...)."""

    tensor_cores: bool
    gemm: str
    library: str
    conv: str
    conv_library: str
    attention: str
    asked_conv: str
    options: dict[str, Any]

    def key(self) -> dict[str, Any]:
        """The settings as the model cache keys them: the driver's options as given plus the
        defaults that come from the configuration (NOVA_ARCH, NOVA_CHECK_BOUNDS); the other
        defaults are in the compiler's sources, which the key covers. Without importing the
        driver: a cache hit does not need it."""
        from nova import config

        cfg = config.get()
        options = {"arch": cfg.arch, "check_bounds": cfg.check_bounds, **self.options}
        return {**{k: v for k, v in asdict(self).items() if k != "options"},
                "options": options}


@dataclass
class Built:
    """A built specialisation: the cache entry's parts, the lowering when it ran (None for a
    cache hit), whether it came from the cache, and the wall time (s) of each step: `key`,
    `lookup`, `lower`, the driver's stages (its `cache`: the bundle cache), `store`."""

    entry: model_cache.Entry
    lowered: Lowered | None
    cache_hit: bool
    timings: dict[str, float] = field(default_factory=dict)


def lower_with(graph: Graph, bindings: dict[str, int], dtype: str, s: Settings,
               conv: str | None = None) -> Lowered:
    """`pipeline.lower` with the settings (`conv` overrides the resolved conv policy)."""
    return lower(graph, dict(bindings), dtype, s.tensor_cores, s.gemm, s.library,
                 s.conv if conv is None else conv, s.conv_library, s.attention)


def build(graph: Graph, bindings: dict[str, int], dtype: str, settings: Settings,
          input_types: list[TensorType]) -> Built:
    """The specialisation from the model cache, else lowered, compiled and stored there.
    `input_types`: the graph inputs' types as the model takes them (float inputs in `dtype`),
    for the signature."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    key = None
    if model_cache.enabled():
        key = model_cache.model_key(graph, bindings, dtype, settings.key())
        timings["key"] = time.perf_counter() - start
        entry = model_cache.get(key)
        timings["lookup"] = time.perf_counter() - start - timings["key"]
        if entry is not None:
            return Built(entry, None, True, timings)
    start = time.perf_counter()
    _prestart_workers(graph)
    lowered = lower_with(graph, bindings, dtype, settings)
    timings["lower"] = time.perf_counter() - start
    entry = compile_lowered(graph, bindings, dtype, lowered, settings.options, input_types,
                            timings)
    if key is not None:
        start = time.perf_counter()
        model_cache.put_soon(key, entry)  # written in the background (see put_soon)
        timings["store"] = time.perf_counter() - start
    return Built(entry, lowered, False, timings)


BYTES_PER_NODE = 4096
"""A rough size of the MLIR text a graph node becomes (the encoder layer: 125-235 KB for ~20
nodes), to decide before lowering whether its device modules will compile in parallel."""


def _prestart_workers(graph: Graph) -> None:
    """Start the driver's compile workers (nova.compiler.parallel) before lowering, so that
    their start overlaps the lowering instead of following it."""
    from nova.compiler.parallel import prestart

    prestart(len(graph.nodes) * BYTES_PER_NODE)


def compile_lowered(graph: Graph, bindings: dict[str, int], dtype: str, lowered: Lowered,
                    options: dict[str, Any], input_types: list[TensorType],
                    timings: dict[str, float] | None = None) -> model_cache.Entry:
    """The `.nova` bundle of `lowered` (model signature and library plans in its manifest),
    with its weights and signature; the driver's stage times are added to `timings`."""
    from nova.compiler.driver import compile_source, make_options

    sig = signature(graph, bindings, dtype, lowered, input_types)
    extra = [(SIGNATURE_KEY, json.dumps(sig, sort_keys=True))]
    if lowered.program.library_plans:
        extra.append((LIBRARY_PLANS_KEY, json.dumps(
            [p.to_json() for p in lowered.program.library_plans], sort_keys=True)))
    result = compile_source(lowered.program.mlir, f"{graph.name}.mlir",
                            make_options(**options, manifest_extra=tuple(extra)),
                            split=lowered.program.split)
    if timings is not None:
        timings.update(result.timings)
    bundle = result.bundle
    weights = {w: lowered.graph.weights[w] for w in lowered.program.weights}
    return model_cache.Entry(bundle, weights, sig)


def signature(graph: Graph, bindings: dict[str, int], dtype: str, lowered: Lowered,
              input_types: list[TensorType]) -> dict[str, Any]:
    """What the manifest records about the model (see docs/models.md, "Manifest")."""
    g = lowered.graph
    return {
        "name": graph.name, "dtype": dtype, "bindings": dict(bindings),
        "inputs": [type_json(n, t) for n, t in zip(graph.inputs, input_types, strict=True)],
        "outputs": [type_json(n, g.type_of(o)) for n, o in zip(graph.outputs, g.outputs,
                                                                strict=True)],
        "weights": list(lowered.program.weights),
        "gemm": [c.to_json() for c in lowered.program.gemm],
        "conv": [c.to_json() for c in lowered.program.conv],
        "attention": [c.to_json() for c in lowered.program.attention],
    }


def type_json(name: str, t: TensorType) -> dict[str, Any]:
    return {"name": name, "dtype": t.dtype, "shape": list(t.shape)}
