"""GEMMs as library calls (`gemm=` policy, passes/library.py; nova_rt_library_call): the zoo with
the library forced on matches its references on each device (cpu: NumPy binding; cuda: cuBLASLt,
gpu-marked), the manifest records every choice, epilogues fuse only what the library computes
exactly, and capture / save-load / an unavailable library behave."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova.abi import LIBRARY_PLANS_KEY, LibraryPlan, library_plans
from nova.bundle.reader import read_bundle
from nova.models import examples
from nova.models.errors import ModelError
from nova.models.graph import numpy_dtype

ZOO = {
    "mlp": (examples.mlp, (24, 64)),
    "encoder_layer": (examples.encoder_layer, (2, 7, 32)),
    "resnet_stack": (examples.resnet_stack, (2, 3, 12, 12)),
}


def _manifest_extra(model: nm.CompiledModel) -> dict[str, str]:
    (spec,) = model._cache.values()
    return dict(read_bundle(spec.bundle).manifest.extra)


def _backends(model: nm.CompiledModel) -> list[str]:
    signature = json.loads(_manifest_extra(model)["nova.models.signature"])
    return [c["backend"] for c in signature["gemm"]]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_with_library_gemms_matches(name: str, dtype: str, device: str) -> None:
    build, shape = ZOO[name]
    example = build()
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    model = nm.compile(example.graph, device=device, dtype=dtype, gemm="library",
                       tensor_cores=False)
    y = model(x.astype(numpy_dtype(dtype)))
    assert rel_err(y, example.forward(x)) <= TOLERANCE[dtype]
    backends = _backends(model)
    assert backends and "nova" not in backends  # every MatMul of the zoo is expressible
    # GEMM plans; convolutions may be library plans too (conv="auto" on cuda: cuDNN)
    plans = library_plans(_manifest_extra(model))
    gemm_plans = [p for p in plans if isinstance(p, LibraryPlan)]
    assert len(gemm_plans) == len(backends)
    (spec,) = model._cache.values()
    assert spec.mlir.count("func.call @__nova_library_") == len(plans)


def test_encoder_attention_gemms_read_materialised_heads() -> None:
    model = nm.compile(examples.encoder_layer().graph, device="cpu", gemm="library",
                       attention="unfused")
    model(np.zeros((2, 8, 32), np.float32))
    plans = library_plans(_manifest_extra(model))
    batched = [p for p in plans if p.batch > 1]
    assert len(batched) == 2  # QK^T and PV: batch * heads products with strided batches
    assert all(p.batch == 2 * 4 and p.a_stride and p.b_stride for p in batched)
    assert any(p.alpha != 1.0 for p in batched)  # 1/sqrt(d) in alpha
    linear = [p for p in plans if p.batch == 1]
    assert all(p.m == 16 for p in linear)  # [2, 8, 32] @ W: one GEMM of 16 rows
    assert sum(p.residual for p in linear) == 2 and all(p.bias for p in linear)


def _one_linear(act: str, rows: int = 20) -> tuple[nm.Graph, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 12)).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    g = nm.Graph("one")
    x = g.input("x", ("batch", 16))
    h = g.add(g.matmul(x, g.weight(w)), g.weight(b))
    if act == "relu":
        h = g.relu(h)
    elif act.startswith("gelu"):
        h = g.gelu(h, approximate="tanh" if act == "gelu_tanh" else "none")
    g.output(h)
    return g, w, b


@pytest.mark.parametrize(("act", "fused", "kernels"), [
    ("none", ["Add"], 0), ("relu", ["Add", "Relu"], 0), ("gelu_tanh", ["Add", "Gelu"], 0),
    ("gelu", ["Add"], 1)])
def test_epilogue_fuses_only_exact_library_forms(act: str, fused: list[str],
                                                 kernels: int) -> None:
    g, w, b = _one_linear(act)
    model = nm.compile(g, device="cpu", gemm="library")
    x = np.random.default_rng(2).standard_normal((20, 16)).astype(np.float32)
    y = model(x)
    ref = x.astype(np.float64) @ w + b
    if act == "relu":
        ref = np.maximum(ref, 0)
    elif act == "gelu_tanh":
        ref = 0.5 * ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (ref + 0.044715 * ref ** 3)))
    elif act == "gelu":
        from math import erf
        ref = 0.5 * ref * (1 + np.vectorize(erf)(ref / np.sqrt(2)))
    assert rel_err(y, ref) <= 1e-5
    (spec,) = model._cache.values()
    (choice,) = spec.lowered.program.gemm
    assert choice.epilogue == fused and choice.backend == "numpy"
    assert spec.mlir.count("gpu.launch_func") == kernels  # exact GELU: its own kernel


def test_auto_policy_keeps_generated_kernels_on_cpu_and_small_rows() -> None:
    g, _, _ = _one_linear("relu")
    model = nm.compile(g, device="cpu")  # auto: the cpu device does not prefer NumPy
    model(np.zeros((20, 16), np.float32))
    assert _backends(model) == ["nova"]
    assert LIBRARY_PLANS_KEY not in _manifest_extra(model)
    forced = nm.compile(g, device="cpu", gemm="library")
    forced(np.zeros((3, 16), np.float32))
    assert _backends(forced) == ["numpy"]  # forced: GEMV-sized products too


def test_gemv_rows_stay_nova_under_auto_when_library_is_preferred(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import nova

    device = nova.get_device("cpu")
    monkeypatch.setattr(type(device), "gemm_library", lambda self: ("numpy", None, True))
    g, _, _ = _one_linear("none")
    model = nm.compile(g, device="cpu")
    model(np.zeros((4, 16), np.float32))
    model(np.zeros((20, 16), np.float32))
    specs = sorted(model._cache.values(), key=lambda s: s.bindings["batch"])
    reasons = [[c.reason for c in s.lowered.program.gemm] for s in specs]
    assert "GEMV kernel" in reasons[0][0]
    assert [c.backend for c in specs[1].lowered.program.gemm] == ["numpy"]


def test_unavailable_library(monkeypatch: pytest.MonkeyPatch) -> None:
    import nova

    device = nova.get_device("cpu")
    monkeypatch.setattr(type(device), "gemm_library",
                        lambda self: ("cublaslt", "libcublasLt.so.13 cannot be loaded", True))
    g, _, _ = _one_linear("none")
    with pytest.raises(ModelError, match=r"gemm='library': libcublasLt\.so\.13 cannot be loaded"):
        nm.compile(g, device="cpu", gemm="library")(np.zeros((20, 16), np.float32))
    fallback = nm.compile(g, device="cpu")  # auto: generated kernels, documented fallback
    fallback(np.zeros((20, 16), np.float32))
    assert _backends(fallback) == ["nova"]


def test_invalid_policy_is_an_error() -> None:
    g, _, _ = _one_linear("none")
    with pytest.raises(ModelError, match="gemm='cudnn' is not a GEMM policy"):
        nm.compile(g, device="cpu", gemm="cudnn")


def test_capture_replays_library_calls(device: str) -> None:
    example = examples.mlp()
    model = nm.compile(example.graph, device=device, gemm="library")
    x = np.random.default_rng(5).standard_normal((24, 64)).astype(np.float32)
    captured = model.capture(x)
    assert rel_err(captured.replay(x), example.forward(x)) <= 1e-5
    x2 = x[::-1].copy()
    assert rel_err(captured.replay(x2), example.forward(x2)) <= 1e-5


def test_saved_model_keeps_its_library_plans(tmp_path: Path) -> None:
    example = examples.mlp()
    model = nm.compile(example.graph, device="cpu", gemm="library")
    x = np.random.default_rng(6).standard_normal((24, 64)).astype(np.float32)
    want = model(x)
    model.save(tmp_path / "mlp.nova")
    loaded = nm.load(tmp_path / "mlp.nova", device="cpu")
    np.testing.assert_array_equal(loaded(x), want)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_auto_policy_on_cuda(name: str, dtype: str) -> None:
    """On cuda the auto policy gives GEMMs of more than 8 rows to cuBLASLt (when it loads) and
    keeps smaller ones on Nova's kernels (the resnet stack's one GEMM is its 2-row classifier)."""
    from nova.runtime.selection import cuda_status

    if not cuda_status().usable:
        pytest.skip("no usable CUDA device")
    build, shape = ZOO[name]
    example = build()
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    model = nm.compile(example.graph, device="cuda", dtype=dtype)
    assert rel_err(model(x.astype(numpy_dtype(dtype))), example.forward(x)) <= TOLERANCE[dtype]
    signature = json.loads(_manifest_extra(model)["nova.models.signature"])
    for choice in signature["gemm"]:
        batch, m, _, _ = choice["shape"]
        if batch * m <= 8:
            assert choice["backend"] == "nova", choice
    if name == "resnet_stack":
        assert _backends(model) == ["nova"]
    else:
        assert "cublaslt" in _backends(model)
