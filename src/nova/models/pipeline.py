"""From a graph with bound input shapes to MLIR: the pass pipeline in one place.

    bind symbols -> propagate (shapes + constant folding) -> fold BatchNorm -> canonicalize
    -> fuse decomposed layer norms -> fold transposes into MatMul -> weight layouts
    -> float16/bfloat16 conversion -> propagate -> dead code -> fused attention (+ dead code)
    -> fusion plan
    -> MLIR (host @forward + gpu.module)
"""

from __future__ import annotations

from dataclasses import dataclass

from nova.models.codegen.program import Program, generate_program
from nova.models.codegen.text import STORAGE
from nova.models.errors import ModelError, UnsupportedOpError
from nova.models.graph import Graph, dtype_name
from nova.models.ops import check_node
from nova.models.passes.attention import fuse_attention
from nova.models.passes.fusion import FusionPlan, plan_fusion
from nova.models.passes.library import select_library
from nova.models.passes.library_conv import select_conv_library
from nova.models.passes.propagate import bind_symbols, eliminate_dead_code, propagate
from nova.models.passes.rewrite import (
    canonicalize,
    convert_floats,
    fold_batchnorm,
    fold_transposes,
    fuse_layer_norm,
    weight_layout,
)

FLOAT_MODES = ("float32", "float16", "bfloat16")


@dataclass
class Lowered:
    graph: Graph
    plan: FusionPlan
    program: Program


def validate(graph: Graph) -> None:
    """Every node is a supported op with supported attributes, and the graph is well formed:
    the errors that must come before anything is compiled or run."""
    graph.validate_structure()
    for node in graph.nodes:
        check_node(node)
    for name in graph.inputs:
        if name not in graph.types:
            raise ModelError(f"input '{name}' has no type")
        dtype = graph.types[name].dtype
        if dtype not in STORAGE:
            raise UnsupportedOpError(f"input '{name}': dtype '{dtype}' is not supported "
                                     f"(supported: {', '.join(STORAGE)})")
    for name, value in graph.weights.items():
        try:
            dtype_name(value.dtype)
        except ModelError:
            raise UnsupportedOpError(f"weight '{name}': dtype {value.dtype} is not supported")\
                from None


def optimize(graph: Graph, bindings: dict[str, int], dtype: str = "float32") -> Graph:
    """The specialised, canonical, typed graph codegen consumes."""
    if dtype not in FLOAT_MODES:
        raise ModelError(f"dtype '{dtype}' is not supported (use one of {FLOAT_MODES})")
    g = bind_symbols(graph, bindings)
    propagate(g)
    eliminate_dead_code(g)
    fold_batchnorm(g)
    canonicalize(g)
    fuse_layer_norm(g)
    propagate(g)
    fold_transposes(g)
    weight_layout(g)
    convert_floats(g, dtype)
    propagate(g)
    eliminate_dead_code(g)
    for name in g.outputs:
        if name in g.weights:
            raise ModelError(f"graph output '{name}' is a constant; nova.models computes only "
                             "outputs that depend on inputs")
    return g


def lower(graph: Graph, bindings: dict[str, int], dtype: str = "float32",
          tensor_cores: bool = True, gemm: str = "nova", library: str = "library",
          conv: str = "nova", conv_library: str = "library",
          attention: str = "auto") -> Lowered:
    """`gemm`: the GEMM backend policy (passes/library.py: nova, library, auto); `library`
    names the library the device binds library GEMMs to (recorded in the choices); `conv` and
    `conv_library` the same for convolutions (passes/library_conv.py); `attention`: auto, fused
    (one flash-attention kernel per recognised pattern) or unfused (passes/attention.py)."""
    g = optimize(graph, bindings, dtype)
    attention_choices = fuse_attention(g, attention, tensor_cores,
                                       library_gemms=gemm in ("auto", "library"))
    eliminate_dead_code(g)
    plan = plan_fusion(g)
    choices = select_library(g, plan, gemm, library)
    conv_choices = select_conv_library(g, plan, conv, conv_library)
    program = generate_program(g, plan, tensor_cores)
    program.gemm = choices
    program.conv = conv_choices
    program.attention = attention_choices
    return Lowered(g, plan, program)
