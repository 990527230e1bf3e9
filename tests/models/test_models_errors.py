"""Bad input at compile and run time: errors name the node, op, attribute or input (and the
expected shape) and come before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import nova
import nova.models as nm
from nova.models import InputError, ModelError, UnsupportedOpError, examples


@pytest.fixture(scope="module")
def mlp() -> nm.CompiledModel:
    return nm.compile(examples.mlp().graph, device="cpu")


def test_wrong_input_shape_names_input_and_expected_shape(mlp: nm.CompiledModel) -> None:
    with pytest.raises(InputError, match=r"input 'x': expected shape \[batch, 64\], got \[3, 7\]"):
        mlp(np.zeros((3, 7), np.float32))
    with pytest.raises(InputError, match=r"input 'x': expected shape \[batch, 64\], got \[64\]"):
        mlp(np.zeros(64, np.float32))


def test_wrong_input_dtype_names_input(mlp: nm.CompiledModel) -> None:
    with pytest.raises(InputError, match=r"input 'x': expected dtype float32 with shape "
                                         r"\[batch, 64\], got float64"):
        mlp(np.zeros((2, 64)))


def test_half_model_wants_half_inputs() -> None:
    model = nm.compile(examples.mlp().graph, device="cpu", dtype="float16")
    with pytest.raises(InputError, match="expected dtype float16"):
        model(np.zeros((1, 64), np.float32))


def test_wrong_input_count_and_names(mlp: nm.CompiledModel) -> None:
    with pytest.raises(InputError, match="missing input"):
        mlp()
    with pytest.raises(InputError, match="takes 1 inputs"):
        mlp(np.zeros((1, 64), np.float32), np.zeros(1))
    with pytest.raises(InputError, match="unknown input 'y'"):
        mlp(y=np.zeros(1))
    assert mlp(x=np.zeros((2, 64), np.float32)).shape == (2, 32)


def test_inconsistent_symbol_bindings() -> None:
    g = nm.Graph()
    a = g.input("a", ("n", 3))
    b = g.input("b", ("n", 3))
    g.output(g.add(a, b))
    model = nm.compile(g, device="cpu")
    with pytest.raises(InputError, match=r"input 'b': dim 0 \('n'\) is 4, but another input "
                                         "bound 'n' = 2"):
        model(np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32))


def test_unsupported_op_in_builder_graph_fails_at_compile() -> None:
    g = nm.Graph()
    x = g.input("x", (2,))
    g.output(g.node("NonMaxSuppression", [x], name="nms"))
    with pytest.raises(UnsupportedOpError, match=r"node 'nms' \(NonMaxSuppression\)"):
        nm.compile(g, device="cpu")


def test_unsupported_attribute_value_fails_at_compile() -> None:
    g = nm.Graph()
    x = g.input("x", (1, 1, 4, 4))
    g.output(g.node("MaxPool", [x], {"kernel_shape": [2, 2], "ceil_mode": 1}, name="pool"))
    with pytest.raises(UnsupportedOpError, match=r"node 'pool' \(MaxPool\): attribute "
                                                 "'ceil_mode' = 1 is not supported"):
        nm.compile(g, device="cpu")


def test_unsupported_dtypes_name_the_tensor() -> None:
    g = nm.Graph()
    g.output(g.relu(g.input("z", (2,), "complex64")))
    with pytest.raises(UnsupportedOpError, match="input 'z': dtype 'complex64'"):
        nm.compile(g, device="cpu")
    g = nm.Graph()
    x = g.input("x", (2,))
    g.output(g.add(x, g.weight(np.zeros(2, np.complex64), "c")))
    with pytest.raises(UnsupportedOpError, match="weight 'c': dtype complex64"):
        nm.compile(g, device="cpu")


def test_shape_errors_name_the_node() -> None:
    g = nm.Graph()
    x = g.input("x", ("batch", 5))
    g.output(g.matmul(x, np.zeros((4, 3), np.float32), ))
    model = nm.compile(g, device="cpu")  # symbolic: specialised at the first call
    with pytest.raises(ModelError, match=r"\(MatMul\): inner dimensions differ"):
        model(np.zeros((2, 5), np.float32))


def test_graph_structure_errors() -> None:
    g = nm.Graph()
    g.input("x", (2,))
    g.nodes.append(nm.Node("Relu", ["nowhere"], ["y"], {}, "r"))
    g.output("y")
    with pytest.raises(ModelError, match="reads 'nowhere', which is not defined"):
        nm.compile(g, device="cpu")
    with pytest.raises(ModelError, match="cannot compile a int"):
        nm.compile(3, device="cpu")


def test_device_buffers_in_and_out() -> None:
    """Device input -> device output (no host round trip), same numbers as NumPy input."""
    example = examples.mlp()
    model = nm.compile(example.graph, device="cpu")
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    out = model(nova.to_device(x, "cpu"))
    assert isinstance(out, nova.Buffer) and tuple(out.shape) == (2, 32)
    np.testing.assert_allclose(out.numpy(), model(x), rtol=0, atol=0)


def test_capture_and_replay(device: str) -> None:
    example = examples.mlp()
    model = nm.compile(example.graph, device=device)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    cap = model.capture(x)  # records, runs nothing
    x2 = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(cap.replay(x2), example.forward(x2), rtol=1e-4, atol=1e-5)
    cap.inputs[0].copy_from_host(x)
    cap.launch()
    model.device.synchronize()
    np.testing.assert_allclose(cap.outputs[0].numpy(), model(x), rtol=1e-6, atol=1e-6)


def test_save_and_load_with_weights_section(tmp_path, device: str) -> None:  # type: ignore
    """One .nova file holds program, weights (.nova.weights section) and signature; the loaded
    model gives the same numbers and rejects other shapes."""
    from nova.bundle.reader import read_bundle_file

    example = examples.conv_block()
    model = nm.compile(example.graph, device=device)
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = model(x)
    path = tmp_path / "conv.nova"
    model.save(path)
    bundle = read_bundle_file(str(path))  # still a valid, sealed bundle
    assert ".nova.weights" in bundle.section_names
    import json

    signature = json.loads(bundle.manifest.extra["nova.models.signature"])
    assert signature["inputs"] == [{"name": "x", "dtype": "float32",
                                    "shape": ["batch", 3, "height", "width"]}]
    assert signature["bindings"] == {"batch": 2, "height": 8, "width": 8}
    assert signature["outputs"][0]["shape"] == [2, 8, 4, 4]
    loaded = nm.load(path, device=device)
    np.testing.assert_array_equal(loaded(x), want)
    assert [n for n, _ in loaded.inputs] == ["x"]
    with pytest.raises(InputError, match="compiled for batch=2, height=8, width=8; got "
                                         "batch=1, height=8, width=8"):
        loaded(x[:1])
    with pytest.raises(ModelError, match=r"no \.nova\.weights section"):
        raw = tmp_path / "plain.nova"
        raw.write_bytes(next(iter(model._cache.values())).bundle)
        nm.load(raw, device=device)


def test_weights_section_roundtrip_and_damage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nova.errors import BundleFormatError
    from nova.models.weights_section import decode, encode

    weights = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array(7, np.int64),
               "c": np.ones((5,), np.float16)}
    section = decode(encode(weights, {"k": 1}))
    assert section.model == {"k": 1}
    for name, value in weights.items():
        np.testing.assert_array_equal(section.weights[name], value)
        assert section.weights[name].dtype == value.dtype
    with pytest.raises(ModelError, match="does not start with"):
        decode(b"NOTWEIGHTS" * 4)
    payload = bytearray(encode(weights, {}))
    payload[20] ^= 0xFF
    with pytest.raises(ModelError, match="malformed"):
        decode(bytes(payload))
    model = nm.compile(examples.mlp().graph, device="cpu")
    model(np.zeros((1, 64), np.float32))
    path = tmp_path / "mlp.nova"
    model.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleFormatError):
        nm.load(path, device="cpu")


def test_nova_run_with_input_files(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from nova.cli.run import main

    example = examples.mlp()
    model = nm.compile(example.graph, device="cpu")
    x = np.random.default_rng(2).standard_normal((2, 64)).astype(np.float32)
    want = model(x)
    model.save(tmp_path / "mlp.nova")
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npz"
    assert main([str(tmp_path / "mlp.nova"), "--device", "cpu", "--input",
                 str(tmp_path / "x.npy"), "--output", str(out)]) == 0
    assert f"{model.outputs[0]}: float32[2, 32]" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(out)[model.outputs[0]], want)
    assert main([str(tmp_path / "mlp.nova"), "--device", "cpu", "--input",
                 str(tmp_path / "missing.npy")]) == 1
    assert "cannot read input" in capsys.readouterr().err


@pytest.mark.parametrize("constant", [False, True])
def test_concat_with_an_omitted_input_fails_at_compile(constant: bool) -> None:
    """Regression: an omitted ('') Concat input failed late with an unrelated message (codegen:
    "tensor '' has no known type"; constant folding: a raw NumPy ValueError)."""
    g = nm.Graph()
    x = g.input("x", (2,))
    part = np.ones(1, np.float32) if constant else x
    cat = g.node("Concat", [part, None, part], {"axis": 0}, name="cat")
    g.output(g.add(x, cat) if constant else cat)
    with pytest.raises(UnsupportedOpError, match=r"node 'cat' \(Concat\): input 1 is required"):
        nm.compile(g, device="cpu")
