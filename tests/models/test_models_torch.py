"""torch.compile(model, backend="nova") on the zoo's PyTorch models, against eager PyTorch, and
the error for an FX node the backend cannot translate."""

from __future__ import annotations

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

torch = pytest.importorskip("torch")
from models_torch_zoo import ZOO, build, torch_device  # noqa: E402
from torch import nn  # noqa: E402

import nova.models.torch_backend  # noqa: E402, F401  (registers backend "nova")
from nova.models import UnsupportedOpError  # noqa: E402


@pytest.mark.parametrize("name", list(ZOO))
def test_torch_compile_matches_eager(name: str, device: str) -> None:
    torch._dynamo.reset()
    model, shape = build(name)
    model = model.to(torch_device(device))
    x = torch.randn(shape, device=device)
    compiled = torch.compile(model, backend="nova", dynamic=False)
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
    assert got.device == want.device
    assert rel_err(got.cpu().numpy(), want.cpu().numpy()) <= TOLERANCE["float32"]


def test_torch_compile_half_precision_model(device: str) -> None:
    torch._dynamo.reset()
    model, shape = build("encoder_layer")
    x = torch.randn(shape)
    with torch.no_grad():
        want = model(x).numpy()
        half = model.to(torch_device(device)).half()
        got = torch.compile(half, backend="nova", dynamic=False)(x.to(device).half())
    assert got.dtype == torch.float16
    assert rel_err(got.float().cpu().numpy(), want) <= TOLERANCE["float16"]


def test_unsupported_fx_node_names_node_and_op() -> None:
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=0) + 1

    with pytest.raises(Exception, match=r"FX node 'cumsum' \(call_function cumsum\) is not "
                                        "supported") as info:
        torch.compile(f, backend="nova", dynamic=False)(torch.ones(4))
    chain = [info.value, info.value.__cause__, getattr(info.value, "inner_exception", None)]
    assert any(isinstance(e, UnsupportedOpError) for e in chain)


def test_new_shape_recompiles() -> None:
    torch._dynamo.reset()
    model, _ = build("mlp")
    compiled = torch.compile(model, backend="nova", dynamic=False)
    with torch.no_grad():
        for batch in (2, 5):
            x = torch.randn(batch, 64)
            assert rel_err(compiled(x).numpy(), model(x).numpy()) <= 1e-5
    assert np.isfinite(compiled(torch.randn(1, 64)).detach().numpy()).all()


@pytest.mark.parametrize("name", ["mlp", "encoder_layer"])
def test_dynamic_shapes_compile_per_shape(name: str) -> None:
    """Default torch.compile: after a second batch size dynamo hands over a graph with symbolic
    sizes; the backend records concrete sizes per input shape and compiles each once."""
    torch._dynamo.reset()
    model, shape = build(name)
    compiled = torch.compile(model, backend="nova")
    with torch.no_grad():
        for batch in (2, 5, 3, 5):
            x = torch.randn((batch, *shape[1:]))
            assert rel_err(compiled(x).numpy(), model(x).numpy()) <= 1e-5


class _Odds(torch.nn.Module):
    """The FX calls real models add, each in one small graph: clamps, hard activations, rsqrt,
    log_softmax, masked_fill with a bool mask, stack, chunk, indexing with an index tensor,
    Ellipsis and None, full_like, a bool SDPA mask, and a buffer folded at compile time."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.randn(4, 6))
        self.register_buffer("keep", torch.tril(torch.ones(6, 6, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.clamp(x, min=-0.5) + x.clamp_max(0.3) + torch.clip(x, -0.2, 0.2)
        b = nn.functional.hardswish(x) * nn.functional.hardsigmoid(x) + torch.rsqrt(x * x + 1)
        c = torch.log_softmax(x, dim=-1).masked_fill(~self.keep[:4, :] | (x > 1.5), -1.0)
        c = torch.where((x <= -1) & (x != x.clamp(-3, 3)), 0.0, c)
        lo, hi = x.chunk(2, dim=-1)
        d = torch.stack([lo, hi], dim=1)[..., None, 1:]
        e = self.table[ids] + x[:, ids[0]].sum() + torch.full_like(x, 2.5)
        q = x.reshape(1, 2, 4, 3)
        f = nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=self.keep[:4, :4])
        return a + b, c, d, e, f


def test_torch_compile_real_model_calls() -> None:
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Odds().eval()
    x, ids = torch.randn(4, 6), torch.tensor([3, 0, 2, 2])
    with torch.no_grad():
        want = model(x, ids)
        got = torch.compile(model, backend="nova", dynamic=False)(x, ids)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert rel_err(g.numpy(), w.numpy()) <= 1e-5


@pytest.mark.parametrize(("body", "why"), [
    (lambda x, i: x[i, i], "advanced indexing beyond one integer index tensor"),
    (lambda x, i: x[:, i & 1], r"bitwise ops on integers \(only bool masks\)"),
    (lambda x, i: x[1:, i], "an index tensor mixed with integer or partial-slice indices"),
    (lambda x, i: nn.functional.embedding(i, x, max_norm=1.0), "max_norm"),
])
def test_torch_compile_unsupported_forms_are_named(body: object, why: str) -> None:
    torch._dynamo.reset()
    with pytest.raises(Exception, match=why) as info:
        torch.compile(body, backend="nova", dynamic=False)(torch.randn(4, 4),
                                                            torch.tensor([1, 2]))
    chain = [info.value, info.value.__cause__, getattr(info.value, "inner_exception", None)]
    assert any(isinstance(e, UnsupportedOpError) for e in chain)
