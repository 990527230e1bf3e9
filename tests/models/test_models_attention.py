"""The fused attention kernel (passes/attention.py, codegen/attention.py): which patterns become
one kernel, and its results against NumPy and against the unfused path, for fp32/fp16/bf16, the
tensor-core and CUDA-core variants, ragged sequence lengths, head dims, masks, scales and batch
shapes. `device` runs each on the cpu device and (marked gpu) on cuda."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova import config
from nova.bundle.reader import read_bundle
from nova.models import examples
from nova.models.codegen.context import KernelContext
from nova.models.codegen.strided import reshape_strides, strided_view
from nova.models.graph import numpy_dtype
from nova.models.ops.nn import fused_attention_eval
from nova.models.pipeline import lower
from nova.models.reference import run_reference

RNG = np.random.default_rng(7)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _sdpa(batch: tuple[int, ...], sq: int, sk: int, d: int, dv: int, mask: bool,
          scale: float | None) -> tuple[nm.Graph, list[np.ndarray]]:
    g = nm.Graph("sdpa")
    q = g.input("q", (*batch, sq, d))
    k = g.input("k", (*batch, sk, d))
    v = g.input("v", (*batch, sk, dv))
    g.output(g.attention(q, k, v, mask=r(sq, sk) if mask else None, scale=scale))
    return g, [r(*batch, sq, d), r(*batch, sk, d), r(*batch, sk, dv)]


def _run(g: nm.Graph, inputs: list[np.ndarray], device: str, dtype: str,
         **options: object) -> tuple[np.ndarray, nm.CompiledModel]:
    """Compile and run; the fused kernel unless the test asks for another mode (the default
    `auto` policy leaves CUDA-core attention unfused where GEMMs go to a library)."""
    options.setdefault("attention", "fused")
    model = nm.compile(g, device=device, dtype=dtype, **options)
    got = model(*(x.astype(numpy_dtype(dtype)) for x in inputs))
    assert isinstance(got, np.ndarray)
    return got, model


def _choices(model: nm.CompiledModel) -> list[dict[str, object]]:
    (spec,) = model._cache.values()
    sig = json.loads(dict(read_bundle(spec.bundle).manifest.extra)["nova.models.signature"])
    return list(sig["attention"])


CASES = [  # batch, sq, sk, d, dv, mask, scale
    ((2, 3), 17, 19, 16, 16, True, None),      # ragged: neither length a tile multiple
    ((1, 2), 64, 64, 64, 64, False, None),     # whole tiles, the benchmark head dim
    ((3,), 70, 33, 32, 48, True, 0.3),         # dv != d, explicit scale, 3-D tensors
    ((1, 1), 5, 100, 128, 16, False, None),    # the largest head dim, few queries
    ((), 13, 40, 16, 32, False, None),          # 2-D: no batch dims
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fused_matches_reference(case: tuple, dtype: str, device: str) -> None:
    g, inputs = _sdpa(*case)
    got, model = _run(g, inputs, device, dtype)
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE[dtype]
    (choice,) = _choices(model)
    assert str(choice["backend"]).startswith("fused")
    (spec,) = model._cache.values()
    assert spec.mlir.count("gpu.launch_func") == 1


@pytest.mark.parametrize("case", CASES[1:3], ids=lambda c: "x".join(map(str, c[:5])))
@pytest.mark.parametrize("mode", ["fused", "fused-wmma"])
def test_tensor_core_variant_on_cpu_device(case: tuple, mode: str) -> None:
    """The tensor-core variants on the cpu device, which emulates mma.sync/ldmatrix (cuda's fp16
    default, `fused-mma`) and WMMA exactly; fused and unfused agree to fp16 rounding."""
    g, inputs = _sdpa(*case)
    # the WMMA emulation holds a whole 16x16 tile per lane: 8 fragments of head dim 64 need
    # more than the default 64 KiB fiber stack
    with config.scoped(cpu_stack_kib=256):
        got, model = _run(g, inputs, "cpu", "float16", tensor_cores=True, attention=mode)
    backend = "fused-wmma" if mode == "fused-wmma" else "fused-mma"
    assert [c["backend"] for c in _choices(model)] == [backend]
    want = run_reference(g, *inputs)
    assert rel_err(got, want) <= TOLERANCE["float16"]
    unfused, _ = _run(g, inputs, "cpu", "float16", tensor_cores=True, attention="unfused")
    assert rel_err(got, unfused.astype(np.float64)) <= TOLERANCE["float16"]


RAGGED = ((3,), 70, 133, 32, 48, True, 0.3)  # ragged lengths, mask, dv != d


@pytest.mark.parametrize(("case", "mode"), [
    (RAGGED, "fused-mma-64x64"), (RAGGED, "fused-mma-128x64"), (RAGGED, "fused-mma-64x32"),
    (RAGGED, "fused-mma-128x32"),
    (((1, 1), 21, 40, 16, 16, False, None), "fused-mma-64x64"),  # d 16: ldmatrix.x2
    (((1,), 9, 70, 128, 128, True, None), "fused-mma-128x64"),  # BN 32 to fit shared memory
], ids=lambda c: "x".join(map(str, c[:5])) if isinstance(c, tuple) else c)
def test_mma_variant_tiles(case: tuple, mode: str, device: str) -> None:
    """Every tile the `fused-mma-BMxBN` modes offer, on ragged lengths with masks, head dims
    16 (K fragments by ldmatrix.x2) and 128 (tiles that fall back to BN 32):
    the cpu device runs the mma.sync kernel with PTX's lane layouts, cuda on tensor cores."""
    g, inputs = _sdpa(*case)
    got, model = _run(g, inputs, device, "float16", tensor_cores=True, attention=mode)
    (choice,) = _choices(model)
    bm, bn = mode.removeprefix("fused-mma-").split("x")
    assert choice["backend"] == "fused-mma" and f"BM={bm} BN={bn}" in str(choice["reason"])
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float16"]
    (spec,) = model._cache.values()
    assert "nvgpu.mma.sync" in spec.mlir and "gpu.subgroup_mma" not in spec.mlir


def test_mma_variant_tile_plan() -> None:
    """Double-buffered BN 64 tiles where they fit the 48 KiB of static shared memory, else BN
    32 (which every allowed BM and head dim fits); the Q tile shares the buffer's first rows."""
    from nova.models.codegen.attention import Problem
    from nova.models.codegen.attention_mma import plan_tiles

    def problem(d: int, dv: int) -> Problem:
        return Problem((1,), 64, 64, d, dv, 1.0, "q", "k", "v", None, True, False, "o", None)

    tiles = plan_tiles(problem(64, 64), 128, 64)
    assert (tiles.bn, tiles.width, tiles.rows, tiles.bytes) == (64, 72, 256, 256 * 72 * 2)
    tiles = plan_tiles(problem(128, 128), 64, 64)
    assert (tiles.bn, tiles.rows) == (32, 128) and tiles.bytes <= 48 * 1024
    tiles = plan_tiles(problem(16, 128), 128, 32)
    assert (tiles.bn, tiles.rows) == (32, 128)
    for bm in (64, 128):
        assert plan_tiles(problem(128, 128), bm, 64).bytes <= 48 * 1024


def test_tensor_core_variant_transposed_operands_on_cpu_device() -> None:
    """K stored [.., d, sk] and V [.., dv, sk] (trans_k 0, trans_v 1): the WMMA variant loads
    them element by element (no vector loads along the head dim) and still matches; Q, stored
    row-major, uses 16-byte vector loads (the only ones)."""
    g = nm.Graph("transposed")
    q = g.input("q", (2, 3, 21, 32))
    kt = g.input("kt", (2, 3, 32, 19))
    vt = g.input("vt", (2, 3, 16, 19))
    s = g.mul(g.matmul(q, kt), 0.2)
    g.output(g.matmul(g.softmax(s), g.transpose(vt, [0, 1, 3, 2])))
    inputs = [r(2, 3, 21, 32), r(2, 3, 32, 19), r(2, 3, 16, 19)]
    got, model = _run(g, inputs, "cpu", "float16", tensor_cores=True)
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float16"]
    (spec,) = model._cache.values()
    (node,) = [n for n in spec.lowered.graph.nodes if n.op == "FusedAttention"]
    assert (node.attrs["trans_k"], node.attrs["trans_v"]) == (0, 1)
    loads = [line for line in spec.mlir.splitlines() if "vector.load" in line]
    assert loads and all("vector.load %a0[" in line for line in loads)  # a0: q


def test_bfloat16_runs_on_cuda_cores(device: str) -> None:
    g, inputs = _sdpa((2, 2), 40, 45, 32, 32, True, None)
    got, model = _run(g, inputs, device, "bfloat16")
    assert [c["backend"] for c in _choices(model)] == ["fused-simt"]
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["bfloat16"]


def test_fused_and_unfused_agree_in_fp32(device: str) -> None:
    g, inputs = _sdpa((2, 3), 33, 47, 24, 40, True, None)
    fused, model = _run(g, inputs, device, "float32")
    unfused, other = _run(g, inputs, device, "float32", attention="unfused")
    assert rel_err(fused, unfused) <= TOLERANCE["float32"]
    assert [c["backend"] for c in _choices(model)] == ["fused-simt"]
    assert [c["backend"] for c in _choices(other)] == ["unfused"]
    assert _choices(other)[0]["reason"] == "attention='unfused'"
    (spec,) = other._cache.values()
    # QK^T, softmax and PV as kernels, or with the GEMMs as library calls (cuda: cuBLASLt; the
    # mask add then is a kernel of its own, as a library call fuses no mask)
    assert "fusedattention" not in spec.mlir and "softmax" in spec.mlir
    assert spec.mlir.count("gpu.launch_func") + spec.mlir.count("func.call @__nova_library_") \
        >= 3


def _onnx_style(g: nm.Graph, scale_op: str, mask_first: bool, mask: np.ndarray | None) -> None:
    """The exported form: MatMul(Q, Transpose(K)) / Div|Mul by a scalar / Add mask / Softmax /
    MatMul(., V) / Transpose back to [batch, seq, heads, dv]."""
    q = g.input("q", (2, 4, 21, 16))
    k = g.input("k", (2, 4, 21, 16))
    v = g.input("v", (2, 4, 21, 8))
    s = g.matmul(q, g.transpose(k, [0, 1, 3, 2]))
    s = g.div(s, 4.0) if scale_op == "div" else g.mul(s, 0.25)
    if mask is not None:
        s = g.add(mask, s) if mask_first else g.add(s, mask)
    g.output(g.transpose(g.matmul(g.softmax(s, axis=-1), v), [0, 2, 1, 3]))


@pytest.mark.parametrize(("scale_op", "mask_first", "with_mask"), [
    ("div", False, True), ("mul", True, True), ("div", False, False)])
def test_exported_pattern_is_one_kernel(scale_op: str, mask_first: bool, with_mask: bool,
                                        device: str) -> None:
    g = nm.Graph("onnx_style")
    mask = np.where(r(1, 1, 1, 21) > 1.0, -np.inf, 0.0).astype(np.float32)  # padding mask
    _onnx_style(g, scale_op, mask_first, mask if with_mask else None)
    inputs = [r(2, 4, 21, 16), r(2, 4, 21, 16), r(2, 4, 21, 8)]
    got, model = _run(g, inputs, device, "float32")
    assert got.shape == (2, 21, 4, 8)
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float32"]
    (spec,) = model._cache.values()
    assert spec.mlir.count("gpu.launch_func") == 1  # the Transpose is the kernel's store layout
    (node,) = [n for n in spec.lowered.graph.nodes if n.op == "FusedAttention"]
    assert node.attrs["scale"] == 0.25 and node.attrs["out_perm"] == [0, 2, 1, 3]


def test_encoder_head_split_and_merge_cost_no_kernel() -> None:
    """With library GEMMs (cuda's default) the encoder's attention is one kernel reading the
    QKV GEMM output through the head split, writing the merged layout the out-projection reads
    (a view: no copy kernel). Unfused it is 3 library GEMMs' worth of work plus 5 kernels."""
    graph = examples.encoder_layer(64, 2, 128).graph  # head dim 32
    fused = lower(graph, {"batch": 2, "seq": 8}, "float16", gemm="library")
    kinds = [g.kind if g.library is None else "library" for g in fused.plan.kernels]
    assert kinds == ["row", "library", "attention", "library", "row", "library", "pointwise",
                     "library"]
    (att,) = [g for g in fused.plan.kernels if g.kind == "attention"]
    assert {n.op for n in att.prologue} == {"Slice", "Reshape", "Transpose"}
    (spec,) = [k for k in fused.program.kernels if "fusedattention" in k.name]
    # q, k, v rows straight from the QKV output (a0; k and v: the first tile, then the next one
    # fetched in the loop), 2 16-byte vectors per thread and tile of 64 rows x 32 halves
    loads = [line for line in spec.text.splitlines() if "vector.load" in line]
    assert len(loads) == 2 * 5 and all("vector.load %a0[" in line for line in loads)
    assert [c.backend for c in fused.program.attention] == ["fused-mma"]
    unfused = lower(graph, {"batch": 2, "seq": 8}, "float16", gemm="library",
                    attention="unfused")
    assert len(unfused.plan.kernels) == 14


def test_encoder_layer_fused_matches(device: str) -> None:
    """The encoder with a head dim the tensor-core variant takes (the zoo's has 8), on cuda; the
    zoo tests already run the encoder's fused CUDA-core attention on the cpu device."""
    if device == "cpu":
        pytest.skip("covered on the cpu device by the zoo tests (fused-simt)")
    example = examples.encoder_layer(32, 2, 32)  # head dim 16: tensor cores on cuda
    x = RNG.standard_normal((2, 37, 32)).astype(np.float32)  # 37: a ragged sequence
    got, model = _run(example.graph, [x], device, "float16")
    assert rel_err(got, example.forward(x)) <= TOLERANCE["float16"]
    (choice,) = _choices(model)
    assert str(choice["backend"]).startswith("fused")


@pytest.mark.parametrize("mode", ["fused-mma", "fused-mma-128x64", "fused-wmma"])
def test_encoder_head_dim_64_tensor_core_variants_on_cuda(mode: str, device: str) -> None:
    """The bench encoder's head dim (64: K fragments by ldmatrix.x4) with a ragged sequence, each
    tensor-core variant on cuda (the cpu device runs them in the tests above)."""
    if device == "cpu":
        pytest.skip("cuda only: the cpu device's default is the simt variant here")
    example = examples.encoder_layer(128, 2, 256)  # head dim 64
    x = RNG.standard_normal((2, 200, 128)).astype(np.float32)
    got, model = _run(example.graph, [x], device, "float16", attention=mode)
    assert rel_err(got, example.forward(x)) <= TOLERANCE["float16"]
    (choice,) = _choices(model)
    assert choice["backend"] == ("fused-wmma" if mode == "fused-wmma" else "fused-mma")


@pytest.mark.parametrize(("d", "tensor_cores", "reason"), [
    (136, False, "head dim 136 > 128"), (24, True, "not multiples of 16")])
def test_unsupported_head_dims_fall_back_with_reason(d: int, tensor_cores: bool,
                                                     reason: str) -> None:
    g, inputs = _sdpa((1, 2), 9, 11, d, d, True, None)
    got, model = _run(g, inputs, "cpu", "float16", tensor_cores=tensor_cores)
    (choice,) = _choices(model)
    assert choice["backend"] == "unfused" and reason in str(choice["reason"])
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float16"]


def test_head_dim_not_multiple_of_16_fuses_on_cuda_cores() -> None:
    g, inputs = _sdpa((1, 2), 9, 11, 24, 20, False, None)
    got, model = _run(g, inputs, "cpu", "float16", tensor_cores=False)
    assert [c["backend"] for c in _choices(model)] == ["fused-simt"]
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float16"]


def test_patterns_that_are_not_attention_stay_unfused() -> None:
    """Softmax over another axis, scores also a graph output, a non-scalar Mul: not fused."""
    g = nm.Graph("near_misses")
    q = g.input("q", (2, 6, 8))
    k = g.input("k", (2, 6, 8))
    s = g.matmul(q, k, trans_b=True)
    g.output(g.matmul(g.softmax(s, axis=1), q))
    s2 = g.matmul(k, q, trans_b=True)
    g.output(s2, g.matmul(g.softmax(s2), q))
    s3 = g.mul(g.matmul(q, q, trans_b=True), r(6, 6))
    g.output(g.matmul(g.softmax(s3), k))
    lowered = lower(g, {})
    assert lowered.program.attention == []
    assert not any(n.op == "FusedAttention" for n in lowered.graph.nodes)


def test_all_masked_tile_and_large_logits_stay_finite() -> None:
    """A -inf mask over whole key tiles (the running max starts finite, so such a tile rescales
    by 1, not NaN) and logits around 1e4 (the online softmax subtracts the running max)."""
    g = nm.Graph("masked")
    q = g.input("q", (1, 2, 40, 16))
    k = g.input("k", (1, 2, 70, 16))
    v = g.input("v", (1, 2, 70, 16))
    mask = np.zeros((40, 70), np.float32)
    mask[:, :35] = -np.inf
    g.output(g.attention(q, k, v, mask=mask, scale=300.0))
    inputs = [r(1, 2, 40, 16), r(1, 2, 70, 16), r(1, 2, 70, 16)]
    got, _ = _run(g, inputs, "cpu", "float32")
    assert np.isfinite(got).all()
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float32"]


def test_fused_reference_evaluation() -> None:
    """The FusedAttention op's NumPy evaluation (constant folding, reference interpreter)."""
    q, k, v = r(2, 5, 4), r(2, 7, 4), r(2, 3, 7)
    node = nm.Node("FusedAttention", ["q", "k", "v"], ["o"],
                   {"scale": 0.5, "batch": [2], "trans_k": 1, "trans_v": 1, "out_perm": [1, 0, 2]},
                   "att")
    (got,) = fused_attention_eval(node, [q, k, v])
    s = q.astype(np.float64) @ k.transpose(0, 2, 1) * 0.5
    e = np.exp(s - s.max(-1, keepdims=True))
    want = (e / e.sum(-1, keepdims=True)) @ v.transpose(0, 2, 1)
    np.testing.assert_allclose(got, want.transpose(1, 0, 2), rtol=1e-5)
    assert math.isclose(float(got.sum()), float(want.sum()), rel_tol=1e-5)


def test_bad_attention_option_is_an_error() -> None:
    g, _ = _sdpa((1,), 4, 4, 16, 16, False, None)
    with pytest.raises(nm.ModelError, match="attention='flash' is not an attention mode"):
        nm.compile(g, device="cpu", attention="flash")
    for bad in ("fused-mma-96x64", "fused-mma-64x16", "fused-mma-64", "fused-mma-x"):
        with pytest.raises(nm.ModelError, match=f"attention='{bad}' is not an attention mode .*"
                                                "fused-mma-BMxBN with BM in 64/128"):
            nm.compile(g, device="cpu", attention=bad)


@pytest.mark.parametrize(("old", "new", "want"), [
    ((8, 512, 768), (8, 512, 12, 64), [393216, 768, 64, 1]),   # split the last dim
    ((2, 3, 4), (6, 4), [4, 1]),                               # merge leading dims
    ((1, 6), (6, 1), [1, 0]),                                  # unit dims are free
])
def test_reshape_strides_of_contiguous_views(old: tuple[int, ...], new: tuple[int, ...],
                                             want: list[int]) -> None:
    strides = [int(np.prod(old[i + 1:])) for i in range(len(old))]
    assert reshape_strides(old, strides, new) == want


def test_reshape_strides_refuses_non_contiguous_merges() -> None:
    """[2, 3] transposed to [3, 2] (strides 1, 3) cannot be merged into 6 elements."""
    assert reshape_strides((3, 2), [1, 3], (6,)) is None


def test_head_split_is_a_strided_view() -> None:
    """The encoder's Slice -> Reshape -> Transpose head split of a [2, 8, 3*64] QKV output:
    K (the second slice) as offset 64, strides [8*192, 32, 192, 1] over [2, 2, 8, 32]."""
    graph = examples.encoder_layer(64, 2, 128).graph
    fused = lower(graph, {"batch": 2, "seq": 8}, "float16", gemm="library")
    (att,) = [g for g in fused.plan.kernels if g.kind == "attention"]
    ctx = KernelContext(fused.graph, fused.plan, "probe")
    members = {o: n for n in att.prologue for o in n.outputs}
    assert att.anchor is not None
    _q, k, _v = att.anchor.inputs[:3]
    base, offset, strides = strided_view(ctx, members, k) or ("", -1, [])
    assert fused.graph.type_of(base).shape == (2, 8, 192)
    assert (offset, strides) == (64, [8 * 192, 32, 192, 1])


def test_torch_sdpa_is_fused() -> None:
    """torch.compile(backend="nova") of F.scaled_dot_product_attention with a float mask (an
    Attention node, fused like the builder's) matches eager PyTorch."""
    torch = pytest.importorskip("torch")
    import nova.models.torch_backend  # noqa: F401  (registers backend "nova")

    def sdpa(q: object, k: object, v: object, mask: object) -> object:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    torch._dynamo.reset()
    q, k, v = (torch.randn(2, 4, 23, 32) for _ in range(3))
    mask = torch.randn(23, 23)
    with torch.no_grad():
        got = torch.compile(sdpa, backend="nova", dynamic=False)(q, k, v, mask)
        want = sdpa(q, k, v, mask)
    assert rel_err(got.numpy(), want.numpy()) <= TOLERANCE["float32"]


def test_fused_attention_is_not_an_input_op() -> None:
    g = nm.Graph("internal")
    q = g.input("q", (2, 4, 8))
    g.output(g.node("FusedAttention", [q, q, q], {"scale": 1.0, "batch": [2]}))
    with pytest.raises(nm.UnsupportedOpError, match=r"internal to nova\.models"):
        nm.compile(g, device="cpu")


@pytest.mark.parametrize(("dtype", "gemm", "expected"), [
    ("float32", "nova", "fused-simt"), ("float32", "library", "unfused"),
    ("float32", "auto", "unfused"), ("float16", "library", "fused-mma")])
def test_auto_policy_fuses_where_the_fused_kernel_wins(dtype: str, gemm: str,
                                                       expected: str) -> None:
    """`attention="auto"`: tensor cores always fuse; CUDA cores fuse only when the unfused
    GEMMs would be generated kernels too (measured: library GEMMs + row softmax win there)."""
    from nova.models.pipeline import lower

    g, _ = _sdpa((2, 2), 40, 45, 32, 32, True, None)
    lowered = lower(g, {}, dtype, tensor_cores=True, gemm=gemm)
    (choice,) = lowered.program.attention
    assert choice.backend == expected
    if expected == "unfused":
        assert choice.reason.startswith("auto:")


def test_auto_is_the_default_and_fuses_on_the_cpu_device() -> None:
    g, inputs = _sdpa((2, 2), 40, 45, 32, 32, True, None)
    model = nm.compile(g, device="cpu", dtype="float32")
    got = model(*inputs)
    assert rel_err(got, run_reference(g, *inputs)) <= TOLERANCE["float32"]
    assert [c["backend"] for c in _choices(model)] == ["fused-simt"]
