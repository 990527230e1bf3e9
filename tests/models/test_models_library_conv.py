"""Convolutions as library calls (`conv=` policy, passes/library_conv.py; nova_rt_library_call):
the conv zoo with the library forced on matches its references on each device (cpu: NumPy
binding; cuda: cuDNN, gpu-marked), the manifest records every choice, epilogues fuse only what
the library computes (residual Add, then ReLU), and unsupported configurations, an unavailable
library, capture and save/load behave."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova
import nova.models as nm
from nova.abi import LIBRARY_PLANS_KEY, ConvPlan, library_plans
from nova.bundle.reader import read_bundle
from nova.models import examples
from nova.models.errors import ModelError
from nova.models.graph import numpy_dtype

ZOO = {
    "conv_block": (examples.conv_block, (2, 3, 12, 12)),
    "resnet_stack": (examples.resnet_stack, (2, 3, 12, 12)),
}


def _extra(model: nm.CompiledModel) -> dict[str, str]:
    (spec,) = model._cache.values()
    return dict(read_bundle(spec.bundle).manifest.extra)


def _conv_choices(model: nm.CompiledModel) -> list[dict[str, object]]:
    choices: list[dict[str, object]] = json.loads(_extra(model)["nova.models.signature"])["conv"]
    return choices


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_with_library_convs_matches(name: str, dtype: str, device: str) -> None:
    build, shape = ZOO[name]
    example = build()
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    model = nm.compile(example.graph, device=device, dtype=dtype, conv="library",
                       tensor_cores=False)
    y = model(x.astype(numpy_dtype(dtype)))
    assert rel_err(y, example.forward(x)) <= TOLERANCE[dtype]
    choices = _conv_choices(model)
    assert choices and all(c["backend"] == ("numpy" if device == "cpu" else "cudnn")
                           for c in choices)
    convs = [p for p in library_plans(_extra(model)) if isinstance(p, ConvPlan)]
    assert len(convs) == len(choices)
    assert all(p.bias for p in convs)  # BatchNorm folded into every conv's weights and bias


def test_resnet_epilogues_fuse_residual_and_relu() -> None:
    model = nm.compile(examples.resnet_stack().graph, device="cpu", conv="library")
    model(np.zeros((2, 3, 12, 12), np.float32))
    epilogues = [c["epilogue"] for c in _conv_choices(model)]
    assert epilogues == [["Relu"], ["Relu"], ["Add", "Relu"], [], ["Relu"], ["Add", "Relu"]]
    convs = [p for p in library_plans(_extra(model)) if isinstance(p, ConvPlan)]
    assert [p.stride_h for p in convs] == [1, 1, 1, 2, 2, 1]  # the strided block and projection
    assert sum(p.residual for p in convs) == 2
    (spec,) = model._cache.values()
    assert spec.mlir.count("gpu.launch_func") == 2  # only the pool and the classifier


def _conv_graph(epilogue: str, padding: object = 1, stride: int = 1, dilation: int = 1,
                groups: int = 1) -> tuple[nm.Graph, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    g = nm.Graph("one_conv")
    x = g.input("x", ("batch", 4, 9, 9))
    h = g.conv2d(x, g.weight(w), g.weight(b), stride=stride, padding=padding,  # type: ignore[arg-type]
                 dilation=dilation, groups=groups)
    if epilogue == "relu":
        h = g.relu(h)
    elif epilogue == "relu_then_add":  # the residual after the activation: not act(conv + z)
        h = g.add(g.relu(h), g.input("r", ("batch", 6, 9, 9)))
    elif epilogue == "sigmoid":
        h = g.sigmoid(h)
    g.output(h)
    return g, w, b


def _residual(batch: int) -> np.ndarray:
    return np.random.default_rng(9).standard_normal((batch, 6, 9, 9)).astype(np.float32)


def _torch_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, epilogue: str,
               **conv: object) -> np.ndarray:
    torch = pytest.importorskip("torch")
    y = torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)),
                                   torch.from_numpy(w.astype(np.float64)),
                                   torch.from_numpy(b.astype(np.float64)), **conv)
    if epilogue == "relu":
        y = torch.relu(y)
    elif epilogue == "relu_then_add":
        y = torch.relu(y) + torch.from_numpy(_residual(x.shape[0]).astype(np.float64))
    elif epilogue == "sigmoid":
        y = torch.sigmoid(y)
    return y.numpy()  # type: ignore[no-any-return]


@pytest.mark.parametrize(("epilogue", "fused", "kernels"), [
    ("none", [], 0), ("relu", ["Relu"], 0), ("relu_then_add", ["Relu"], 1),
    ("sigmoid", [], 1)])
def test_epilogue_fuses_only_what_the_library_computes(epilogue: str, fused: list[str],
                                                       kernels: int, device: str) -> None:
    g, w, b = _conv_graph(epilogue)
    model = nm.compile(g, device=device, conv="library")
    x = np.random.default_rng(2).standard_normal((2, 4, 9, 9)).astype(np.float32)
    args = (x, _residual(2)) if epilogue == "relu_then_add" else (x,)
    assert rel_err(model(*args), _torch_ref(x, w, b, epilogue, padding=1)) <= 1e-5
    (choice,) = _conv_choices(model)
    assert choice["epilogue"] == fused
    assert choice["backend"] == ("numpy" if device == "cpu" else "cudnn")
    assert choice["shape"] == [2, 4, 9, 9, 6, 3, 3]
    (spec,) = model._cache.values()
    assert spec.mlir.count("gpu.launch_func") == kernels


@pytest.mark.parametrize("conv", [{"stride": 2}, {"dilation": 2}, {"groups": 2},
                                  {"stride": 2, "groups": 2, "padding": 0}])
def test_strides_dilation_and_groups(conv: dict[str, int], device: str) -> None:
    """fp32 to 1e-5 of a float64 reference: on cuda this checks cuDNN never uses TF32."""
    g, w, b = _conv_graph("relu", **conv)  # type: ignore[arg-type]
    model = nm.compile(g, device=device, conv="library")
    x = np.random.default_rng(4).standard_normal((2, 4, 9, 9)).astype(np.float32)
    want = _torch_ref(x, w, b, "relu", padding=conv.get("padding", 1),
                      stride=conv.get("stride", 1), dilation=conv.get("dilation", 1),
                      groups=conv.get("groups", 1))
    assert rel_err(model(x), want) <= 1e-5
    (plan,) = library_plans(_extra(model))
    assert isinstance(plan, ConvPlan) and plan.groups == conv.get("groups", 1)


def _prefer_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    device = nova.get_device("cpu")
    monkeypatch.setattr(type(device), "conv_library", lambda self: ("numpy", None, True))


def test_auto_policy_keeps_generated_kernels_on_cpu() -> None:
    g, _, _ = _conv_graph("relu")
    model = nm.compile(g, device="cpu")
    model(np.zeros((1, 4, 9, 9), np.float32))
    (choice,) = _conv_choices(model)
    assert choice["backend"] == "nova" and LIBRARY_PLANS_KEY not in _extra(model)
    nova_only = nm.compile(g, device="cpu", conv="nova")
    nova_only(np.zeros((1, 4, 9, 9), np.float32))
    assert _conv_choices(nova_only)[0]["reason"] == "policy 'nova'"


def test_asymmetric_padding_falls_back_under_auto_and_is_an_error_under_library(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _prefer_numpy(monkeypatch)
    g, w, b = _conv_graph("relu", padding=[1, 0, 0, 1])
    x = np.random.default_rng(5).standard_normal((1, 4, 9, 9)).astype(np.float32)
    model = nm.compile(g, device="cpu")
    y = model(x)
    (choice,) = _conv_choices(model)
    assert choice["backend"] == "nova"
    assert "asymmetric padding [1, 0, 0, 1]" in str(choice["reason"])
    padded = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)))
    assert rel_err(y, _torch_ref(padded, w, b, "relu")) <= 1e-5
    symmetric, _, _ = _conv_graph("relu")
    auto = nm.compile(symmetric, device="cpu")
    auto(x)
    assert _conv_choices(auto)[0]["backend"] == "numpy"  # preferred: auto takes it
    with pytest.raises(ModelError, match=r"conv='library' cannot run it.*asymmetric padding"):
        nm.compile(g, device="cpu", conv="library")(x)


def test_mixed_dtypes_stay_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    _prefer_numpy(monkeypatch)
    g = nm.Graph("mixed")
    x = g.input("x", (1, 2, 5, 5))
    w = g.input("w", (2, 2, 3, 3), dtype="float16")
    g.output(g.conv2d(x, w))
    model = nm.compile(g, device="cpu")
    model(np.zeros((1, 2, 5, 5), np.float32), np.zeros((2, 2, 3, 3), np.float16))
    (choice,) = _conv_choices(model)
    assert choice["backend"] == "nova" and "dtypes float32 x float16" in str(choice["reason"])


def test_unavailable_library(monkeypatch: pytest.MonkeyPatch) -> None:
    device = nova.get_device("cpu")
    monkeypatch.setattr(type(device), "conv_library",
                        lambda self: ("cudnn", "libcudnn.so.9 cannot be loaded", True))
    g, _, _ = _conv_graph("relu")
    with pytest.raises(ModelError, match=r"conv='library': libcudnn\.so\.9 cannot be loaded"):
        nm.compile(g, device="cpu", conv="library")(np.zeros((1, 4, 9, 9), np.float32))
    fallback = nm.compile(g, device="cpu")
    fallback(np.zeros((1, 4, 9, 9), np.float32))
    assert _conv_choices(fallback)[0]["backend"] == "nova"


def test_auto_falls_back_when_the_library_rejects_a_plan_at_load(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """cuDNN runs each plan once at nova.load; a plan it rejects there makes `auto` compile the
    convolutions as generated kernels (saying why), and `library` fail with the library's error."""
    from nova.errors import DeviceError

    _prefer_numpy(monkeypatch)
    real_load = nova.load

    def rejecting_load(bundle: bytes, device: object = None) -> object:
        plans = library_plans(dict(read_bundle(bundle).manifest.extra))
        if any(isinstance(p, ConvPlan) for p in plans):
            raise DeviceError("cudnnConvolutionForward failed: CUDNN_STATUS_NOT_SUPPORTED")
        return real_load(bundle, device=device)

    monkeypatch.setattr(nova, "load", rejecting_load)
    g, w, b = _conv_graph("relu")
    x = np.random.default_rng(10).standard_normal((1, 4, 9, 9)).astype(np.float32)
    model = nm.compile(g, device="cpu")
    assert rel_err(model(x), _torch_ref(x, w, b, "relu", padding=1)) <= 1e-5
    (choice,) = _conv_choices(model)
    assert choice["backend"] == "nova"
    assert "auto: numpy rejected it at load" in str(choice["reason"])
    assert "CUDNN_STATUS_NOT_SUPPORTED" in str(choice["reason"])
    with pytest.raises(DeviceError, match="CUDNN_STATUS_NOT_SUPPORTED"):
        nm.compile(g, device="cpu", conv="library")(x)


def test_invalid_policy_is_an_error() -> None:
    g, _, _ = _conv_graph("relu")
    with pytest.raises(ModelError, match="conv='cudnn' is not a convolution policy"):
        nm.compile(g, device="cpu", conv="cudnn")


def test_capture_replays_library_convs(device: str) -> None:
    example = examples.resnet_stack()
    model = nm.compile(example.graph, device=device, conv="library")
    x = np.random.default_rng(6).standard_normal((2, 3, 12, 12)).astype(np.float32)
    captured = model.capture(x)
    assert rel_err(captured.replay(x), example.forward(x)) <= 1e-5
    x2 = x[::-1].copy()
    assert rel_err(captured.replay(x2), example.forward(x2)) <= 1e-5


def test_saved_model_keeps_its_conv_plans(tmp_path: Path) -> None:
    example = examples.conv_block()
    model = nm.compile(example.graph, device="cpu", conv="library")
    x = np.random.default_rng(7).standard_normal((2, 3, 12, 12)).astype(np.float32)
    want = model(x)
    model.save(tmp_path / "conv.nova")
    loaded = nm.load(tmp_path / "conv.nova", device="cpu")
    np.testing.assert_array_equal(loaded(x), want)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_auto_policy_on_cuda(name: str, dtype: str) -> None:
    """On cuda the auto policy gives every convolution of the zoo to cuDNN (when it loads)."""
    from nova.runtime.selection import cuda_status

    if not cuda_status().usable:
        pytest.skip("no usable CUDA device")
    build, shape = ZOO[name]
    example = build()
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    model = nm.compile(example.graph, device="cuda", dtype=dtype)
    assert rel_err(model(x.astype(numpy_dtype(dtype))), example.forward(x)) <= TOLERANCE[dtype]
    assert {c["backend"] for c in _conv_choices(model)} == {"cudnn"}
