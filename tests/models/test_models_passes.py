"""Each graph pass on a small graph, with the resulting graph or fusion plan checked exactly
(golden) and the numbers kept equal to the unrewritten graph's."""

from __future__ import annotations

import numpy as np
from models_testutil import rel_err

import nova.models as nm
from nova.models.passes.fusion import plan_fusion
from nova.models.passes.propagate import bind_symbols, eliminate_dead_code, propagate
from nova.models.passes.rewrite import canonicalize, convert_floats, fold_batchnorm, fold_transposes
from nova.models.pipeline import optimize
from nova.models.reference import run_reference

RNG = np.random.default_rng(5)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _ops(graph: nm.GraphIR) -> list[str]:
    return [n.op for n in graph.nodes]


def test_propagate_infers_shapes_and_binds_symbols() -> None:
    g = nm.Graph()
    x = g.input("x", ("batch", 3, 8, 8))
    y = g.conv2d(x, r(4, 3, 3, 3), None, stride=2, padding=1)
    z = g.flatten(g.max_pool2d(y, 2), 1)
    g.output(g.softmax(g.linear(z, r(5, 16))))
    b = propagate(bind_symbols(g, {"batch": 6}))
    assert str(b.types[y]) == "float32[6, 4, 4, 4]"
    assert str(b.types[z]) == "float32[6, 16]"
    assert str(b.types[g.outputs[0]]) == "float32[6, 5]"
    assert str(g.types["x"]) == "float32[batch, 3, 8, 8]"  # the original is untouched


def test_constant_folding_collapses_shape_chains() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters emit for dynamic batch:
    after binding, only the Reshape remains, with a constant target shape."""
    g = nm.Graph()
    x = g.input("x", ("batch", 4, 5))
    shape = g.node("Shape", [x])
    n = g.node("Gather", [shape, np.asarray(0, np.int64)], {"axis": 0})
    target = g.node("Concat", [g.unsqueeze(n, [0]), np.asarray([-1], np.int64)], {"axis": 0})
    doubled = g.mul(g.weight(np.full((20,), 2.0, np.float32)), 3.0)  # constant math folds too
    g.output(g.mul(g.node("Reshape", [x, target]), doubled))
    b = eliminate_dead_code(propagate(bind_symbols(g, {"batch": 3})))
    assert _ops(b) == ["Reshape", "Mul"]
    reshape = b.nodes[0]
    np.testing.assert_array_equal(b.weights[reshape.inputs[1]], [3, -1])
    np.testing.assert_array_equal(b.weights[b.nodes[1].inputs[1]], np.full(20, 6.0))


def test_batchnorm_folds_into_conv() -> None:
    g = nm.Graph()
    x = g.input("x", (2, 3, 6, 6))
    y = g.conv2d(x, r(4, 3, 3, 3), r(4), padding=1)
    g.output(g.relu(g.batch_norm(y, r(4), r(4), r(4), np.abs(r(4)) + 0.5)))
    b = fold_batchnorm(propagate(bind_symbols(g, {})))
    assert _ops(b) == ["Conv", "Relu"]
    xv = r(2, 3, 6, 6)
    assert rel_err(run_reference(b, xv), run_reference(g, xv)) < 1e-6


def test_batchnorm_folds_into_matmul_columns() -> None:
    g = nm.Graph()
    x = g.input("x", (5, 7))
    y = g.matmul(x, r(4, 7), trans_b=True)
    g.output(g.batch_norm(y, r(4), r(4), r(4), np.abs(r(4)) + 0.5))
    b = fold_batchnorm(propagate(bind_symbols(g, {})))
    assert _ops(b) == ["MatMul", "Add"]
    xv = r(5, 7)
    assert rel_err(run_reference(b, xv), run_reference(g, xv)) < 1e-6


def test_canonicalize_rewrites_composites() -> None:
    g = nm.Graph()
    x = g.input("x", (2, 4, 3, 3))
    p = g.flatten(g.global_avg_pool(g.batch_norm(g.relu(x), r(4), r(4), r(4), r(4) ** 2 + 1)))
    y = g.gemm(p, r(6, 4), r(6), beta=0.5, trans_b=True)
    a, b_ = g.split(g.reshape(y, [2, 2, 3]), [1, 2], axis=2)
    g.output(g.attention(a, a, b_))
    b = canonicalize(propagate(bind_symbols(g, {})))
    assert _ops(b) == ["Relu", "Mul", "Add", "ReduceMean", "Flatten", "MatMul", "Add",
                       "Reshape", "Slice", "Slice", "MatMul", "Softmax", "MatMul"]
    xv = r(2, 4, 3, 3)
    assert rel_err(run_reference(propagate(b), xv), run_reference(g, xv)) < 1e-6


def test_transposes_fold_into_matmul() -> None:
    g = nm.Graph()
    a = g.input("a", (2, 5, 3))
    b = g.input("b", (2, 4, 3))
    g.output(g.matmul(a, g.transpose(b, [0, 2, 1])))
    out = fold_transposes(propagate(bind_symbols(g, {})))
    assert _ops(out) == ["Transpose", "MatMul"]  # the transpose is dead, removed by DCE
    assert out.nodes[1].inputs == ["a", "b"] and out.nodes[1].attrs["trans_b"] == 1
    assert _ops(eliminate_dead_code(out)) == ["MatMul"]


def test_convert_floats() -> None:
    g = nm.Graph()
    x = g.input("x", (2, 3))
    i = g.input("i", (3,), "int64")
    g.output(g.add(g.mul(x, r(3)), g.cast(i, "float32")))
    b = convert_floats(propagate(bind_symbols(g, {})), "float16")
    assert b.types["x"].dtype == "float16" and b.types["i"].dtype == "int64"
    assert all(w.dtype == np.float16 for w in b.weights.values())
    assert propagate(b).types[b.outputs[0]].dtype == "float16"


def test_fusion_plan_golden() -> None:
    """Epilogues, inlined elementwise chains with broadcasts, index maps, and view aliasing."""
    g = nm.Graph()
    x = g.input("x", (4, 8))
    h = g.gelu(g.add(g.matmul(x, r(8, 16)), r(16)))          # GEMM + bias + GELU: one kernel
    t = g.reshape(h, [4, 4, 4])                              # view: aliases h's buffer
    s = g.softmax(t)                                         # row kernel
    u = g.mul(g.sigmoid(s), g.transpose(t, [0, 2, 1]))       # one pointwise kernel
    m = g.reduce_mean(u, [2])                                # row kernel, epilogue: + 1
    g.output(g.add(m, 1.0), g.reshape(s, [4, 16]))           # a view as an output: copy
    plan = plan_fusion(optimize(g, {}))
    assert plan.describe() == "\n".join([
        "matmul[MatMul] + Add+Gelu -> gelu_5",
        "row[Softmax] -> softmax_8",
        "pointwise + Sigmoid+Transpose+Mul -> mul_11",
        "row[ReduceMean] + Add -> add_14",
        "pointwise + Reshape -> reshape_16",
        "view reshape_6 = gelu_5",
    ])
    xv = r(4, 8)
    for got, want in zip(nm.compile(g, device="cpu")(xv), run_reference(g, xv), strict=True):
        assert rel_err(got, want) <= 1e-5


def test_epilogue_not_fused_when_anchor_output_is_broadcast() -> None:
    g = nm.Graph()
    x = g.input("x", (4, 1))
    y = g.matmul(x, r(1, 1))                                 # [4, 1]
    g.output(g.add(y, r(3, 4, 4)))                           # broadcast of the GEMM output
    plan = plan_fusion(optimize(g, {}))
    assert [k.describe().split(" ->")[0] for k in plan.kernels] == ["matmul[MatMul]",
                                                                     "pointwise + Add"]


def test_compiling_twice_gives_byte_identical_bundles() -> None:
    """Generated MLIR and the .nova built from it are deterministic (bundle cache off)."""
    from nova import config
    from nova.compiler.driver import compile_to_bundle, make_options
    from nova.models import examples
    from nova.models.pipeline import lower

    graph = examples.encoder_layer().graph
    texts = [lower(graph, {"batch": 2, "seq": 5}, "float32").program.mlir for _ in range(2)]
    assert texts[0] == texts[1]
    with config.scoped(cache_enabled=False):
        bundles = [compile_to_bundle(texts[0], "enc.mlir", make_options(ptx=False))
                   for _ in range(2)]
    assert bundles[0] == bundles[1]


def test_matmul_prologue_takes_index_maps_only() -> None:
    """Head split/merge index maps feeding a MatMul become its operand loads (no copy kernel);
    a heavier producer (Exp) and a tensor read elsewhere too stay materialised."""
    g = nm.Graph()
    x = g.input("x", (2, 8, 12))
    q = g.transpose(g.reshape(g.slice(x, [0], [8], [2]), [2, 8, 2, 4]), [0, 2, 1, 3])
    k = g.transpose(g.reshape(g.exp(g.slice(x, [4], [12], [2])), [2, 8, 2, 4]), [0, 2, 3, 1])
    s = g.matmul(q, k)                                         # [2, 2, 8, 8]
    merged = g.reshape(g.transpose(s, [0, 2, 1, 3]), [16, 16])
    g.output(g.matmul(merged, r(16, 4)), g.add(merged, 1.0))
    plan = plan_fusion(optimize(g, {}))
    assert [k_.describe().split(" ->")[0] for k_ in plan.kernels] == [
        "pointwise + Slice+Exp",
        "matmul[MatMul](Slice+Reshape+Transpose+Reshape+Transpose)",
        "pointwise + Transpose",          # its Reshape (read twice) aliases the buffer
        "matmul[MatMul]",
        "pointwise + Add",
    ]
    xv = r(2, 8, 12)
    for got, want in zip(nm.compile(g, device="cpu")(xv), run_reference(g, xv), strict=True):
        assert rel_err(got, want) <= 1e-5


def _decomposed_ln(g: nm.Graph, x: str, square: str, affine: bool) -> tuple[str, str]:
    mean = g.reduce_mean(x, [-1])
    d = g.sub(x, mean)
    sq = g.pow(d, 2.0) if square == "pow" else g.mul(d, d)
    y = g.div(d, g.sqrt(g.add(g.reduce_mean(sq, [-1]), 1e-5)))
    if affine:
        y = g.add(g.mul(y, r(6)), r(6))
    return y, d


def test_decomposed_layer_norm_is_fused() -> None:
    g = nm.Graph()
    x = g.input("x", (4, 6))
    y1, _ = _decomposed_ln(g, x, "pow", affine=True)
    y2, _ = _decomposed_ln(g, g.relu(x), "mul", affine=False)
    g.output(y1, y2)
    opt = optimize(g, {})
    assert _ops(opt) == ["LayerNormalization", "Relu", "LayerNormalization"]
    assert opt.nodes[0].attrs["axis"] == -1
    assert abs(opt.nodes[0].attrs["epsilon"] - 1e-5) < 1e-12  # the float32 constant
    xv = r(4, 6)
    for got, want in zip(nm.compile(g, device="cpu")(xv), run_reference(g, xv), strict=True):
        assert rel_err(got, want) <= 1e-5


def test_decomposed_layer_norm_with_shared_intermediate_is_kept() -> None:
    g = nm.Graph()
    x = g.input("x", (4, 6))
    y, d = _decomposed_ln(g, x, "pow", affine=False)
    g.output(y, g.relu(d))                     # D is read outside the pattern
    assert "LayerNormalization" not in _ops(optimize(g, {}))
