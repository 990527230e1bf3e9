"""ONNX importer: an ONNX model (file or onnx.ModelProto, opset 13-21) -> nova.models graph.

It only translates: initializers become weights, graph inputs that are not initializers become
inputs (a dim_param becomes a symbolic dim, an unnamed dynamic dim gets the symbol
'<input>_dim<i>'), Constant nodes are kept (propagate folds them), attributes become Python
values. Every node is then validated against the op table, so an unsupported op, opset, dtype or
attribute is reported, naming the node, before anything is compiled. Needs the `onnx` package
(an optional dependency).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nova.models.errors import ModelError, UnsupportedOpError
from nova.models.graph import Dim, Graph, Node, TensorType
from nova.models.ops import check_node
from nova.models.ops.elementwise import ONNX_DTYPES

OPSETS = range(13, 22)
"""Default-domain opset versions this importer implements (13 to 21)."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ModelError("importing ONNX models needs the 'onnx' package (pip install onnx)") \
            from exc
    return onnx


def read_model(model: Any) -> Any:
    """An onnx.ModelProto from a path or a ModelProto; a corrupt or unreadable file is a
    ModelError naming it."""
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return model
    path = Path(model)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the ONNX file: {exc.strerror or exc}") from exc
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError (and RuntimeWarning on odd input)
        raise ModelError(f"{path}: not a valid ONNX file (protobuf decoding failed: {exc})") \
            from exc
    if not proto.HasField("graph") or not proto.opset_import:
        raise ModelError(f"{path}: not a valid ONNX file (no graph or no opset_import)")
    if any(t.HasField("data_location") and t.data_location == 1
           for t in proto.graph.initializer):
        try:
            from onnx.external_data_helper import load_external_data_for_model

            load_external_data_for_model(proto, str(path.parent))
        except Exception as exc:
            raise ModelError(f"{path}: cannot load external weight data: {exc}") from exc
    return proto


def load_onnx(model: Any) -> Graph:
    """Import `model` (see the module doc)."""
    onnx = _onnx()
    proto = read_model(model)
    _check_opsets(proto)
    from onnx import numpy_helper

    g = proto.graph
    graph = Graph(name=g.name or "onnx_model")
    for init in g.initializer:
        try:
            graph.weights[init.name] = np.array(numpy_helper.to_array(init), order="C")
        except Exception as exc:
            raise ModelError(f"initializer '{init.name}': cannot read it ({exc})") from exc
        _dtype_of(init.data_type, f"initializer '{init.name}'")
    for value in g.input:
        if value.name in graph.weights:
            continue
        graph.inputs.append(value.name)
        graph.types[value.name] = _value_type(value)
    graph.outputs = [v.name for v in g.output]
    for i, n in enumerate(g.node):
        node = Node(n.op_type, list(n.input), list(n.output),
                    {a.name: _attr(onnx, a) for a in n.attribute},
                    n.name or f"{n.op_type}_{i}")
        if n.domain not in ("", "ai.onnx"):
            raise UnsupportedOpError(f"{node.describe()}: domain '{n.domain}' is not supported "
                                     "(only the default ONNX domain)")
        while node.outputs and not node.outputs[-1]:
            node.outputs.pop()
        while node.inputs and not node.inputs[-1]:
            node.inputs.pop()
        check_node(node)
        graph.nodes.append(node)
    graph.validate_structure()
    return graph


def _check_opsets(proto: Any) -> None:
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version not in OPSETS:
            raise UnsupportedOpError(f"ONNX opset {opset.version} is not supported (supported: "
                                     f"{OPSETS.start} to {OPSETS.stop - 1}); re-export the model "
                                     "with one of those")


def _dtype_of(elem_type: int, what: str) -> str:
    name = ONNX_DTYPES.get(int(elem_type))
    if name is None:
        raise UnsupportedOpError(f"{what}: ONNX element type {elem_type} is not supported "
                                 f"(supported: {', '.join(sorted(set(ONNX_DTYPES.values())))})")
    return name


def _value_type(value: Any) -> TensorType:
    what = f"input '{value.name}'"
    if not value.type.HasField("tensor_type"):
        raise UnsupportedOpError(f"{what}: only tensor inputs are supported")
    tt = value.type.tensor_type
    dtype = _dtype_of(tt.elem_type, what)
    if not tt.HasField("shape"):
        raise UnsupportedOpError(f"{what}: has no shape (rank unknown)")
    dims: list[Dim] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(f"{value.name}_dim{i}")
    return TensorType(dtype, tuple(dims))


def _attr(onnx: Any, attr: Any) -> Any:
    from onnx import numpy_helper

    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    if isinstance(value, onnx.GraphProto):
        return value  # If/Loop bodies: rejected by the op table (op type unsupported)
    return value
