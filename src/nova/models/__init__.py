"""nova.models: compile a neural-network graph (Python builder, ONNX file, torch.compile) into one
.nova program and run it with `compiled_model.forward(inputs)`.

    import nova.models
    m = nova.models.compile("model.onnx", device="cpu")       # or a nova.models.Graph
    y = m(x)                                                  # NumPy in, NumPy out

See docs/models.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nova.models.builder import Graph
from nova.models.compiled import CompiledModel, load
from nova.models.errors import InputError, ModelError, UnsupportedOpError
from nova.models.graph import Graph as GraphIR
from nova.models.graph import Node, TensorType


def load_onnx(model: Any) -> GraphIR:
    """Import an ONNX model (a path or an onnx.ModelProto) as a graph (needs the onnx package)."""
    from nova.models.onnx_import import load_onnx as _load

    return _load(model)


def compile(model: Any, device: Any = None, dtype: str = "float32",
            **options: Any) -> CompiledModel:
    """Compile a graph, an ONNX path or an onnx.ModelProto for `device` ('cpu', 'cuda', a Device
    or None for the default) computing in `dtype` (float32, float16 or bfloat16; 16-bit floats
    accumulate in float32). `options` are nova CompileOptions fields (e.g. arch='sm_90'; the
    bundle holds the images `device` needs: pass cpu_image=True / ptx=True for both) and
    `tensor_cores` (default: on for cuda; fp16 GEMMs and convolutions then use WMMA)."""
    if isinstance(model, str | Path) or type(model).__name__ == "ModelProto":
        model = load_onnx(model)
    if not isinstance(model, GraphIR):
        raise ModelError(f"cannot compile a {type(model).__name__}: pass a nova.models.Graph, "
                         "an ONNX file path or an onnx.ModelProto")
    return CompiledModel(model, device=device, dtype=dtype, **options)


__all__ = ["CompiledModel", "Graph", "GraphIR", "InputError", "ModelError", "Node",
           "TensorType", "UnsupportedOpError", "compile", "load", "load_onnx"]
