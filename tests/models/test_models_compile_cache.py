"""Compile-time contracts of nova.models (issue 10): compiling a model twice gives byte-identical
`.nova` files, also in fresh processes with different hash seeds; the model cache returns exactly
what a compilation returns and keys on everything that changes it; identical kernels are emitted
once. The timing goals themselves are measured by bench/compile_time.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nova.models as nm
from nova import config
from nova.models import examples, model_cache
from nova.models.build import Settings, build
from nova.models.graph import TensorType

ROOT = Path(__file__).resolve().parents[2]

# Compiles the small encoder (both images: PTX, and cubin where ptxas exists, and the cpu
# object) with every cache off and writes the bundle and the weights.
CHILD = """\
import sys
import numpy as np
from nova.models import examples
from nova.models.build import Settings, build
from nova.models.graph import TensorType
graph = examples.encoder_layer().graph
settings = Settings(True, "nova", "cublaslt", "nova", "cudnn", "auto", "nova",
                    {"ptx": True, "cubin": True, "cpu_image": True})
inputs = [TensorType("float16", graph.types[n].shape) for n in graph.inputs]
built = build(graph, {"batch": 2, "seq": 5}, "float16", settings, inputs)
open(sys.argv[1] + ".nova", "wb").write(built.entry.bundle)
np.save(sys.argv[1] + ".npy", np.concatenate([w.reshape(-1) for w in built.entry.weights.values()]))
"""


def _settings(**options: object) -> Settings:
    return Settings(False, "nova", "numpy", "nova", "numpy", "auto", "nova",
                    {"ptx": False, "cubin": False, "cpu_image": True, **options})


def _inputs(graph: nm.Graph, dtype: str = "float32") -> list[TensorType]:
    return [TensorType(dtype, graph.types[n].shape) for n in graph.inputs]


def test_fresh_processes_with_different_hash_seeds_give_identical_bundles(
        tmp_path: Path) -> None:
    outs = []
    for seed, jobs in (("1", "1"), ("12345", "3")):  # serial, and 3 compile workers
        out = tmp_path / f"run{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "NOVA_CACHE": "0",
               "PYTHONPATH": str(ROOT / "src"), "NOVA_COMPILE_JOBS": jobs}
        done = subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        outs.append(out)
    first, second = (Path(f"{o}.nova").read_bytes() for o in outs)
    assert first == second
    assert np.array_equal(np.load(f"{outs[0]}.npy"), np.load(f"{outs[1]}.npy"))


@pytest.fixture
def cache_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    with config.scoped(cache_dir=tmp_path / "cache", cache_enabled=True):
        yield tmp_path / "cache"


def test_model_cache_returns_what_a_compilation_returns(cache_dir: Path) -> None:
    ex = examples.encoder_layer()
    bindings = {"batch": 2, "seq": 5}
    cold = build(ex.graph, bindings, "float32", _settings(), _inputs(ex.graph))
    hit = build(ex.graph, bindings, "float32", _settings(), _inputs(ex.graph))
    assert not cold.cache_hit and hit.cache_hit and hit.lowered is None
    assert "parse" in cold.timings and set(hit.timings) == {"key", "lookup"}
    assert hit.entry.bundle == cold.entry.bundle
    assert list(hit.entry.weights) == list(cold.entry.weights)
    for name, value in cold.entry.weights.items():
        assert hit.entry.weights[name].dtype == value.dtype
        assert np.array_equal(hit.entry.weights[name], value)
    assert json.dumps(hit.entry.signature, sort_keys=True) == json.dumps(cold.entry.signature,
                                                                         sort_keys=True)


def test_compiled_model_from_the_cache_runs_and_saves_the_same_file(cache_dir: Path,
                                                                   tmp_path: Path) -> None:
    ex = examples.encoder_layer()
    x = np.random.default_rng(1).standard_normal((2, 5, 32)).astype(np.float32)
    first = nm.compile(ex.graph, device="cpu")
    want = first(x)
    second = nm.compile(ex.graph, device="cpu")  # a new CompiledModel: from the model cache
    got = second(x)
    assert np.array_equal(got, want)
    spec = second.specialise({"batch": 2, "seq": 5})
    assert spec._lowered is None  # the hit skipped lowering ...
    assert spec.mlir == first.specialise({"batch": 2, "seq": 5}).mlir  # ... until asked
    first.save(tmp_path / "a.nova")
    second.save(tmp_path / "b.nova")
    assert (tmp_path / "a.nova").read_bytes() == (tmp_path / "b.nova").read_bytes()
    assert np.array_equal(nm.load(tmp_path / "b.nova", device="cpu")(x), want)


def test_model_key_covers_weights_attributes_bindings_and_settings() -> None:
    ex = examples.encoder_layer()
    g = ex.graph
    bindings = {"batch": 2, "seq": 5}
    base = model_cache.model_key(g, bindings, "float32", _settings().key())
    assert base == model_cache.model_key(g, dict(bindings), "float32", _settings().key())
    changed_weight = g.copy()
    name = next(iter(changed_weight.weights))
    w = np.array(changed_weight.weights[name], copy=True)
    w.reshape(-1)[0] += 1
    changed_weight.weights[name] = w
    changed_attr = g.copy()
    node = next(n for n in changed_attr.nodes if n.attrs)
    key = next(iter(node.attrs))
    node.attrs = {**node.attrs, key: repr(node.attrs[key]) + "x"}
    others = [
        model_cache.model_key(changed_weight, bindings, "float32", _settings().key()),
        model_cache.model_key(changed_attr, bindings, "float32", _settings().key()),
        model_cache.model_key(g, {"batch": 3, "seq": 5}, "float32", _settings().key()),
        model_cache.model_key(g, bindings, "float16", _settings().key()),
        model_cache.model_key(g, bindings, "float32", _settings(opt_level=2).key()),
    ]
    assert len({base, *others}) == 1 + len(others)


STORE_CHILD = """\
import sys
from nova.models import examples
from nova.models.build import Settings, build
from nova.models.graph import TensorType
graph = examples.mlp().graph
settings = Settings(False, "nova", "numpy", "nova", "numpy", "auto", "nova",
                    {"ptx": False, "cubin": False, "cpu_image": True})
inputs = [TensorType("float32", graph.types[n].shape) for n in graph.inputs]
print(build(graph, {"batch": 1}, "float32", settings, inputs).cache_hit)
"""


def test_a_process_that_exits_right_after_compiling_stores_its_entry(cache_dir: Path) -> None:
    """The model cache is written in a background thread; the interpreter waits for it."""
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache_dir), "NOVA_CACHE": "1",
           "PYTHONPATH": str(ROOT / "src")}
    for expected in ("False", "True"):
        done = subprocess.run([sys.executable, "-c", STORE_CHILD], env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [expected]


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_parallel_compile_gives_the_serial_bytes(jobs: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The device modules compiled by 2 or 3 worker processes (nova.compiler.parallel): the
    same bundle as a serial compile, for the GPU images and for the cpu device's object."""
    from nova.compiler import parallel

    ex = examples.encoder_layer()
    bindings = {"batch": 2, "seq": 5}
    gpu = Settings(True, "nova", "cublaslt", "nova", "cudnn", "auto", "nova",
                   {"ptx": True, "cubin": True, "cpu_image": False})
    try:
        with config.scoped(cache_enabled=False):
            for settings, dtype in ((gpu, "float16"), (_settings(), "float32")):
                bundles = []
                for setting in ("1", jobs):
                    monkeypatch.setenv("NOVA_COMPILE_JOBS", setting)
                    built = build(ex.graph, bindings, dtype, settings, _inputs(ex.graph, dtype))
                    assert ("modules" in built.timings) == (setting != "1")
                    bundles.append(built.entry.bundle)
                assert bundles[0] == bundles[1]
    finally:
        parallel.shutdown()


def test_weight_key_is_exact_for_chunked_and_threaded_hashing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A weight of several hash chunks: any changed byte (first, middle, last chunk) changes
    the key, an equal copy does not, and hashing in threads gives the serial key."""
    g = examples.mlp().graph
    name = next(iter(g.weights))
    big = np.random.default_rng(0).standard_normal((3 * model_cache.CHUNK_BYTES // 4 + 5,)) \
        .astype(np.float32)
    g.weights[name] = big
    settings = _settings().key()

    def key(weights: np.ndarray) -> str:
        h = g.copy()
        h.weights[name] = weights
        return model_cache.model_key(h, {"batch": 1}, "float32", settings)

    base = key(big)
    assert key(big.copy()) == base
    changed = set()
    for index in (0, big.size // 2, big.size - 1):
        w = big.copy()
        w.view(np.uint8)[index * 4 + 1] ^= 1  # one bit of one byte
        changed.add(key(w))
    assert len(changed) == 3 and base not in changed
    assert key(big[:-1]) != base
    monkeypatch.setattr(model_cache, "_PARALLEL_BYTES", 0)
    monkeypatch.setattr(model_cache, "_cpus", lambda: 4)
    assert key(big) == base  # 4 threads
    monkeypatch.setattr(model_cache, "_cpus", lambda: 1)
    assert key(big) == base  # serial


def test_damaged_entries_are_misses(cache_dir: Path) -> None:
    ex = examples.mlp()
    args = (ex.graph, {"batch": 1}, "float32", _settings(), _inputs(ex.graph))
    build(*args)
    model_cache.flush()  # the store runs in the background
    (weights,) = cache_dir.glob("models/*/*.weights")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert not build(*args).cache_hit  # a damaged entry: compiled again (and stored again)
    assert build(*args).cache_hit
    model_cache.flush()  # the store runs in the background
    (bundle,) = cache_dir.glob("models/*/*.nova")
    bundle.write_bytes(bundle.read_bytes()[:-3])
    assert not build(*args).cache_hit


@pytest.mark.parametrize("damage", ["middle", "crc", "header", "truncated", "empty"])
def test_damaged_weight_chunks_are_misses(damage: str, cache_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights file is checked chunk by chunk (small chunks here, checked in threads)."""
    monkeypatch.setattr(model_cache, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(model_cache, "_PARALLEL_BYTES", 0)
    monkeypatch.setattr(model_cache, "_cpus", lambda: 3)
    ex = examples.mlp()
    args = (ex.graph, {"batch": 1}, "float32", _settings(), _inputs(ex.graph))
    build(*args)
    assert build(*args).cache_hit
    model_cache.flush()  # the store runs in the background
    (weights,) = cache_dir.glob("models/*/*.weights")
    data = bytearray(weights.read_bytes())
    count = int.from_bytes(data[12:16], "little")
    assert count > 4
    if damage == "middle":
        data[16 + 4 * count + (count // 2) * 4096 + 7] ^= 0x10
    elif damage == "crc":
        data[16 + 4 * (count // 2)] ^= 1
    elif damage == "header":
        data[12] ^= 1  # the chunk count
    elif damage == "truncated":
        data = data[:-4096]
    else:
        data = bytearray()
    weights.write_bytes(bytes(data))
    assert not build(*args).cache_hit
    assert build(*args).cache_hit


def test_no_model_cache_when_caching_is_off(cache_dir: Path) -> None:
    ex = examples.mlp()
    with config.scoped(cache_enabled=False):
        build(ex.graph, {"batch": 1}, "float32", _settings(), _inputs(ex.graph))
    model_cache.flush()  # the store runs in the background
    assert not list(cache_dir.glob("models/*/*"))


def test_identical_kernels_are_emitted_once() -> None:
    """The encoder's two LayerNorms (same shapes, different weights) share one gpu.func."""
    from nova.models.pipeline import lower

    program = lower(examples.encoder_layer().graph, {"batch": 2, "seq": 5}, "float32").program
    launched = [line.split("::@")[1].split()[0] for line in program.mlir.splitlines()
                if "gpu.launch_func" in line]
    defined = [line.split("@")[1].split("(")[0] for line in program.mlir.splitlines()
               if "gpu.func @" in line]
    assert len(launched) == len(program.kernels) == 7
    assert sorted(set(launched)) == sorted(defined)
    assert len(defined) == 6 and launched[0] == launched[4] == "k0_layernormalization"


def test_the_cache_keeps_the_newest_entries(cache_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_cache, "MAX_ENTRIES", 2)
    ex = examples.mlp()
    for batch in (1, 2, 3):
        build(ex.graph, {"batch": batch}, "float32", _settings(), _inputs(ex.graph))
    model_cache.flush()  # the store runs in the background
    assert len(list(cache_dir.glob("models/*/*.weights"))) == 2
    assert len(list(cache_dir.glob("models/*/*.nova"))) == 2
    assert build(ex.graph, {"batch": 3}, "float32", _settings(), _inputs(ex.graph)).cache_hit
