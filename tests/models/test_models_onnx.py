"""ONNX import: PyTorch-exported zoo models (dynamic batch) and hand-built graphs against
onnxruntime, and every import error path (unsupported op, opset, attribute, dtype, domain;
corrupt, truncated or missing files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova.models import ModelError, UnsupportedOpError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _export(name: str, path: Path) -> tuple[Path, tuple[int, ...]]:
    torch = pytest.importorskip("torch")
    from models_torch_zoo import build

    model, shape = build(name)
    torch.onnx.export(model, (torch.zeros(shape),), str(path), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return path, shape


@pytest.mark.parametrize("name", ["mlp", "conv_block", "encoder_layer", "resnet_stack"])
def test_torch_exported_zoo_matches_onnxruntime(name: str, device: str, tmp_path: Path) -> None:
    path, shape = _export(name, tmp_path / f"{name}.onnx")
    model = nm.compile(path, device=device)
    session = _session(path)
    rng = np.random.default_rng(1)
    for batch in (shape[0], 1):
        x = rng.standard_normal((batch, *shape[1:])).astype(np.float32)
        assert rel_err(model(x), session.run(None, {"x": x})[0]) <= TOLERANCE["float32"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_exported_encoder_in_half_precision(dtype: str, device: str,
                                                  tmp_path: Path) -> None:
    path, shape = _export("encoder_layer", tmp_path / "enc.onnx")
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    want = _session(path).run(None, {"x": x})[0]
    from nova.models.graph import numpy_dtype

    got = nm.compile(path, device=device, dtype=dtype)(x.astype(numpy_dtype(dtype)))
    assert rel_err(got, want) <= TOLERANCE[dtype]


def _model(nodes: list, inputs: list, outputs: list, inits: dict[str, np.ndarray] | None = None,
           opset: int = 18) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name: str, shape: list, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.mark.parametrize("opset", [13, 18, 21])
def test_opset_forms_of_reduce_split_squeeze(opset: int) -> None:
    """Axes as attributes (opset 13 ReduceMean) or inputs (18+), Split sizes as input."""
    rng = np.random.default_rng(0)
    inits = {"sizes": np.array([2, 3], np.int64), "ax": np.array([1], np.int64)}
    reduce = (helper.make_node("ReduceMean", ["a"], ["m"], axes=[1]) if opset < 18 else
              helper.make_node("ReduceMean", ["a", "ax"], ["m"]))
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1),
        reduce,
        helper.make_node("Squeeze", ["m", "ax"], ["ms"]),
        helper.make_node("ReduceSum", ["b", "ax"], ["s"], keepdims=0),
        helper.make_node("Add", ["ms", "s"], ["y"]),
    ]
    model = _model(nodes, [_vi("x", ["n", 5, 4])], [_vi("y", ["n", 4])], inits, opset)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert rel_err(nm.compile(model, device="cpu")(x), want) <= 1e-5


def test_import_keeps_symbolic_dims_and_names() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                   [_vi("x", ["batch", 3, None])], [_vi("y", ["batch", 3, None])])
    g = nm.load_onnx(model)
    assert g.inputs == ["x"] and g.outputs == ["y"]
    assert g.types["x"].shape == ("batch", 3, "x_dim2")
    assert g.nodes[0].name == "act"


# ---- errors, all raised before anything is compiled or run -------------------------------------

def _relu_model(**kw: object) -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])],
                  **kw)  # type: ignore[arg-type]


def test_unsupported_op_names_node_and_op() -> None:
    model = _model([helper.make_node("Hardmax", ["x"], ["y"], name="head")], [_vi("x", [2, 3])],
                   [_vi("y", [2, 3])])
    with pytest.raises(UnsupportedOpError, match=r"node 'head' \(Hardmax\): op type 'Hardmax' "
                                                 "is not supported"):
        nm.load_onnx(model)


@pytest.mark.parametrize("opset", [12, 22])
def test_unsupported_opset(opset: int) -> None:
    with pytest.raises(UnsupportedOpError, match=f"opset {opset} is not supported"):
        nm.load_onnx(_relu_model(opset=opset))


@pytest.mark.parametrize(("node", "attr"), [
    (helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", name="c1"), "auto_pad"),
    (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=1, name="c1"),
     "ceil_mode"),
    (helper.make_node("Conv", ["x", "w"], ["y"], foo=3, name="c1"), "foo"),
    (helper.make_node("Gelu", ["x"], ["y"], approximate="sigmoid", name="c1"), "approximate"),
])
def test_unsupported_attribute_names_node_and_attribute(node: onnx.NodeProto, attr: str) -> None:
    model = _model([node], [_vi("x", [1, 1, 4, 4])], [_vi("y", [1, 1, 4, 4])],
                   {"w": np.zeros((1, 1, 3, 3), np.float32)}, opset=20)
    with pytest.raises(UnsupportedOpError, match=rf"node 'c1' \({node.op_type}\): attribute "
                                                 f"'{attr}'"):
        nm.load_onnx(model)


def test_unsupported_dtype_names_the_input() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2], TensorProto.STRING)],
                   [_vi("y", [2])])
    with pytest.raises(UnsupportedOpError, match="input 'x': ONNX element type 8"):
        nm.load_onnx(model)


def test_other_domain_is_unsupported() -> None:
    node = helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft", name="fg")
    model = _model([node], [_vi("x", [2])], [_vi("y", [2])])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(UnsupportedOpError, match=r"node 'fg' \(FusedGemm\): domain"):
        nm.load_onnx(model)


def test_corrupt_truncated_and_missing_files(tmp_path: Path) -> None:
    good = tmp_path / "good.onnx"
    onnx.save(_relu_model(), str(good))
    data = good.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\x00garbage" * 10)
    with pytest.raises(ModelError, match=r"bad\.onnx: not a valid ONNX file"):
        nm.load_onnx(bad)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=r"cut\.onnx: not a valid ONNX file"):
        nm.load_onnx(cut)
    with pytest.raises(ModelError, match=r"missing\.onnx: cannot read"):
        nm.load_onnx(tmp_path / "missing.onnx")
    assert nm.load_onnx(good).nodes[0].op == "Relu"


def test_opset14_export_layer_norm_is_fused(tmp_path: Path) -> None:
    """Older exporters decompose LayerNorm (ReduceMean, Sub, Pow, ...): it is fused back, and the
    opset-14 encoder runs as the same 7 kernels as the opset-17 one (attention fused)."""
    torch = pytest.importorskip("torch")
    from models_torch_zoo import build

    from nova.models.pipeline import lower

    model, shape = build("encoder_layer")
    path = tmp_path / "enc14.onnx"
    torch.onnx.export(model, (torch.zeros(shape),), str(path), dynamo=False, opset_version=14,
                      input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    graph = nm.load_onnx(path)
    assert sum(n.op == "ReduceMean" for n in graph.nodes) == 4
    lowered = lower(graph, {"batch": shape[0]})
    assert len(lowered.plan.kernels) == 7
    assert [c.backend for c in lowered.program.attention] == ["fused-simt"]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    want = _session(path).run(None, {"x": x})[0]
    assert rel_err(nm.compile(path, device="cpu")(x), want) <= 1e-5
