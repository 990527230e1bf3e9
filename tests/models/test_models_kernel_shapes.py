"""Kernel shapes chosen by size and layout, against the NumPy reference: register-resident row
kernels (a warp per row up to 1024 elements, a block per row up to 16384, the strided fallback
beyond or for non-trailing axes) and vector chunks of pointwise/copy kernels (16-byte accesses
where the innermost dimension allows, scalar code where it does not)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from models_testutil import TOLERANCE, rel_err

import nova.models as nm
from nova.models.graph import numpy_dtype
from nova.models.reference import run_reference

RNG = np.random.default_rng(11)
DTYPES = ["float32", "float16", "bfloat16"]
ROWS = 13  # not a multiple of the 8 rows a warp-per-row block holds
LENGTHS = [1, 37, 768, 1000, 1030, 2049, 20000]
"""Row lengths: below a warp, odd, vector multiples (1000: a guarded last chunk), past the warp
limit (a block per row: 2-element vectors, odd scalar chunks), and past the register limit (the
strided fallback)."""


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _run(g: nm.Graph, inputs: list[np.ndarray], dtype: str, device: str) \
        -> tuple[list[np.ndarray], list[np.ndarray], str]:
    model = nm.compile(g, device=device, dtype=dtype)
    got = model(*(x.astype(numpy_dtype(dtype)) if x.dtype == np.float32 else x
                  for x in inputs))
    want = run_reference(g, *inputs)
    got_t = list(got) if isinstance(got, tuple) else [got]
    want_t = list(want) if isinstance(want, tuple) else [want]
    (spec,) = model._cache.values()
    return got_t, want_t, spec.mlir


def _check(got: list[np.ndarray], want: list[np.ndarray], dtype: str, names: list[str]) -> None:
    for name, a, b in zip(names, got, want, strict=True):
        if np.issubdtype(b.dtype, np.floating):
            assert rel_err(a, b) <= TOLERANCE[dtype], name
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def _kernels(mlir: str) -> dict[str, str]:
    """gpu.func name -> its text."""
    parts = re.split(r"(?=^\s*gpu\.func @)", mlir, flags=re.M)
    found = {}
    for part in parts:
        m = re.match(r"\s*gpu\.func @(\w+)", part)
        if m:
            found[m.group(1)] = part.split("gpu.return")[0]
    return found


def _reading(mlir: str, numel: int, op: str) -> list[str]:
    """Texts of the kernels named after `op` whose first parameter has `numel` elements."""
    return [text for name, text in _kernels(mlir).items()
            if op in name and re.search(rf"%a0: memref<{numel}x", text)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_kernels_by_length(dtype: str, device: str) -> None:
    g = nm.Graph("rows")
    inputs, names = [], []
    outs = []
    for i, n in enumerate(LENGTHS):
        x = g.input(f"x{n}", (ROWS, n))
        inputs.append(_r(ROWS, n))
        if i % 3 == 0:
            reduction = g.reduce_sum(x, [1], keepdims=False)
        elif i % 3 == 1:
            reduction = g.reduce_max(x, [1])
        else:
            reduction = g.relu(g.reduce_mean(x, [-1]))
        outs += [g.softmax(x, -1),
                 g.add(g.layer_norm(x, _r(n), _r(n)), x),       # residual read in the epilogue
                 reduction]
        names += [f"{op}[{n}]" for op in ("softmax", "layernorm+x", "reduction")]
    g.output(*outs)
    got, want, mlir = _run(g, inputs, dtype, device)
    _check(got, want, dtype, names)
    storage = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[dtype]
    lanes = 4 if dtype == "float32" else 8
    for n in LENGTHS:
        (soft,) = _reading(mlir, ROWS * n, "softmax")
        if n <= 1024:
            assert "gpu.subgroup_reduce maximumf" in soft and "gpu.all_reduce" not in soft, n
        else:
            assert "gpu.all_reduce maximumf" in soft and "gpu.subgroup_reduce" not in soft, n
        vectors = f"vector<{lanes}x{storage}>" in soft
        assert vectors == (n % lanes == 0 and n <= 16384), n
        resident = "scf.for" not in soft
        assert resident == (n <= 16384), n


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_kernels_over_several_trailing_axes(dtype: str, device: str) -> None:
    """LayerNorm over two axes (scale broadcast over one, over both), a reduction over two
    trailing axes, and Softmax / a reduction on a middle axis (the strided fallback)."""
    g = nm.Graph("rows2")
    x = g.input("x", (5, 6, 40))
    y = g.input("y", (3, 5, 3, 10))
    g.output(g.layer_norm(x, _r(6, 40), _r(40), axis=-2),
             g.layer_norm(y, _r(10), None, axis=-2),
             g.reduce_mean(y, [2, 3], keepdims=False),
             g.softmax(x, 1), g.reduce_max(y, [1]))
    got, want, mlir = _run(g, [_r(5, 6, 40), _r(3, 5, 3, 10)], dtype, device)
    _check(got, want, dtype, ["ln2", "ln2-odd", "mean23", "softmax1", "max1"])
    (ln,) = _reading(mlir, 5 * 6 * 40, "layernorm")
    assert "gpu.subgroup_reduce" in ln and "vector.load" in ln
    (soft,) = _reading(mlir, 5 * 6 * 40, "softmax")
    assert "scf.for" in soft  # axis 1 is not trailing


@pytest.mark.parametrize("dtype", DTYPES)
def test_head_split_and_merge_copies(dtype: str, device: str) -> None:
    """Attention's head split (Slice -> Reshape -> Transpose) and merge (Transpose ->
    Reshape) as copy kernels: innermost runs of 16 elements, read and written in vectors."""
    b, s, h, d = 2, 6, 4, 16
    g = nm.Graph("heads")
    qkv = g.input("qkv", (b, s, 3 * h * d))
    heads = []
    for i in range(3):
        part = g.slice(qkv, [i * h * d], [(i + 1) * h * d], [2])
        heads.append(g.transpose(g.reshape(part, [b, s, h, d]), [0, 2, 1, 3]))
    merged = g.reshape(g.transpose(g.mul(heads[2], 2.0), [0, 2, 1, 3]), [b, s, h * d])
    g.output(heads[0], heads[1], merged)
    got, want, mlir = _run(g, [_r(b, s, 3 * h * d)], dtype, device)
    _check(got, want, dtype, ["q", "k", "merged"])
    lanes = 4 if dtype == "float32" else 8
    for text in _kernels(mlir).values():
        assert "vector.load" in text and "vector.store" in text
        assert text.count("memref.load") == 0
        assert f"alignment = {lanes * np.dtype(numpy_dtype(dtype)).itemsize} : i64" in text


@pytest.mark.parametrize("dtype", DTYPES)
def test_pointwise_chunks_where_layouts_do_not_allow_vectors(dtype: str, device: str) -> None:
    """Reads that cannot be vector loads inside a vectorised kernel (a slice starting off a
    vector boundary, concat pieces of odd widths, a transpose moving the innermost axis, a
    reshape whose innermost runs differ, bool and int tensors) and shapes that allow no
    vectors at all (an odd innermost dimension)."""
    g = nm.Graph("chunks")
    x = g.input("x", (4, 8, 24))
    o = g.input("o", (3, 7, 13))
    m = g.input("m", (4, 8, 16), "bool")
    off = g.slice(x, [3], [19], [2])                                        # start 3: scalar
    cat = g.concat([g.slice(x, [0], [5], [2]), g.slice(x, [5], [16], [2])], axis=2)
    moved = g.transpose(g.slice(x, [0], [16], [2]), [0, 2, 1])             # (4, 16, 8)
    flat = g.reshape(g.slice(x, [0], [20], [2]), [4, 160])                 # runs 20 vs 160
    sel = g.node("Where", [m, off, cat])
    ints = g.cast(g.mul(off, 10.0), "int64")
    less = g.node("Less", [off, cat])
    g.output(g.add(off, cat), moved, g.add(flat, 1.0), sel, ints, less,
             g.gelu(g.add(o, _r(13))))
    mask = RNG.random((4, 8, 16)) < 0.5
    exact = np.round(_r(4, 8, 24) * 8) / 8  # exact in bf16 too: the int and bool outputs match
    got, want, _ = _run(g, [exact, _r(3, 7, 13), mask], dtype, device)
    _check(got, want, dtype, ["off+cat", "moved", "flat", "where", "ints", "less", "gelu"])


def test_pointwise_vector_width_follows_the_root(device: str) -> None:
    """fp16 roots take 8 lanes (a GELU of the d=3072 FF width: one 16-byte load and store per
    thread), int64 roots 2; an odd innermost dimension takes none."""
    g = nm.Graph("widths")
    x = g.input("x", (4, 3072))
    o = g.input("o", (4, 3071))
    g.output(g.gelu(x), g.cast(g.mul(x, 4.0), "int64"), g.gelu(o))
    inputs = [np.round(_r(4, 3072) * 8) / 8, _r(4, 3071)]  # exact in fp16: ints match
    got, want, mlir = _run(g, inputs, "float16", device)
    _check(got, want, "float16", ["gelu", "i64", "gelu-odd"])
    gelu, ints, odd = _kernels(mlir).values()
    assert gelu.count("vector.load") == 1 and "vector.store" in gelu and "vector<8xf16>" in gelu
    assert "vector.store" in ints and "vector<2xi64>" in ints
    assert "vector." not in odd and odd.count("memref.load") == 1


def test_ptx_of_rows_and_copies_uses_16_byte_accesses() -> None:
    """The PTX (no GPU needed) of the fp16 encoder's memory-bound kernels: LayerNorm and
    Softmax rows and the head split/merge copies load and store 16 bytes per access
    (`{alignment = 16}` makes it so where div/rem index math hides the alignment from LLVM),
    and the row kernels reduce with warp shuffles, without shared memory or barriers."""
    from nova.compiler.driver import CompileOptions, compile_until
    from nova.models import pipeline

    g = nm.Graph("enc_parts")
    x = g.input("x", (2, 64, 192))
    qkv = g.input("qkv", (2, 64, 576))
    att = g.input("att", (2, 3, 64, 64))
    heads = g.transpose(g.reshape(g.slice(qkv, [192], [384], [2]), [2, 64, 3, 64]),
                        [0, 2, 1, 3])
    merged = g.reshape(g.transpose(heads, [0, 2, 1, 3]), [2, 64, 192])
    g.output(g.layer_norm(x, _r(192), _r(192)), g.softmax(att, -1), heads, g.add(merged, 1.0))
    program = pipeline.lower(g, {}, "float16").program
    ptx = compile_until(program.mlir, "enc_parts.mlir", CompileOptions(cubin=False), "ptx")
    assert isinstance(ptx, str)
    entries = re.split(r"\.visible \.entry ", ptx)[1:]
    assert len(entries) == 4  # LN, split, softmax, merge+add
    for entry in entries:
        name = entry.split("(")[0]
        assert "ld.global.nc.v4.b32" in entry and "st.global.v4.b32" in entry, name
        assert not re.search(r"(ld|st)\.global(\.nc)?\.b16", entry), name
        if "layernorm" in name or "softmax" in name:
            assert "shfl.sync" in entry and "bar.sync" not in entry, name
