"""The model zoo (nova.models.examples) compiled and run on each device in fp32, fp16 and bf16,
against independent NumPy forwards (fp32: rel. L2 <= 1e-5; fp16/bf16: <= 2e-2)."""

from __future__ import annotations

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova.models import examples
from nova.models.graph import numpy_dtype

ZOO = {
    "mlp": (examples.mlp, (3, 64)),
    "conv_block": (examples.conv_block, (2, 3, 10, 10)),
    "encoder_layer": (examples.encoder_layer, (2, 7, 32)),
    "resnet_stack": (examples.resnet_stack, (2, 3, 12, 12)),
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_matches_numpy(name: str, dtype: str, device: str) -> None:
    build, shape = ZOO[name]
    example = build()
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    model = nm.compile(example.graph, device=device, dtype=dtype)
    y = model(x.astype(numpy_dtype(dtype)))
    assert y.dtype == numpy_dtype(dtype)
    assert rel_err(y, example.forward(x)) <= TOLERANCE[dtype]


def test_symbolic_batch_is_specialised_once_per_size() -> None:
    example = examples.mlp()
    model = nm.compile(example.graph, device="cpu")
    rng = np.random.default_rng(0)
    for batch in (1, 5, 1):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        assert rel_err(model(x), example.forward(x)) <= 1e-5
    assert sorted(b for spec in model._cache.values() for b in spec.bindings.values()) == [1, 5]


def test_fusion_keeps_launch_count_small() -> None:
    """The encoder layer runs as 7 kernels: LN, QKV GEMM+bias, fused attention (head split of
    the QKV output in its loads, scores never stored, heads merged by its stores),
    out-proj GEMM + bias + residual, LN, FF1 GEMM+bias+GELU, FF2 GEMM+bias+residual; with
    attention="unfused" 9: QK^T (head split as the GEMM's operand index maps, scale folded into
    alpha), softmax, PV (head split of V likewise), the out-proj reading the head merge."""
    for attention, kernels in (("fused", 7), ("unfused", 9)):
        model = nm.compile(examples.encoder_layer().graph, device="cpu", attention=attention)
        model(np.zeros((2, 8, 32), np.float32))  # 16 rows: no GEMV, which takes no prologue
        (spec,) = model._cache.values()
        assert len(spec.lowered.plan.kernels) == kernels
        assert spec.mlir.count("gpu.launch_func") == kernels
