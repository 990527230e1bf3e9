"""Vector kernel arguments in the manifest: parameter sizes and alignments computed from LLVM's
data layouts (x86-64, where the host's stack slot and the CPU device's parameter block live, and
NVPTX, whose `.param .align A .b8 p[S]` the CUDA driver copies, must agree), the optional
`align` field of older manifests, and which vector types are rejected."""

from __future__ import annotations

import json
import operator

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir
from test_vector_corpus import CORPUS, F32, check_lines, seq_reduce, vec
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FunctionType,
    IntegerType,
    VectorType,
)

from nova.backends.kernel_abi import KernelArgumentError, kernel_params, param_size_align, type_spec
from nova.backends.nvptx.target import DATA_LAYOUT as NVPTX_LAYOUT
from nova.backends.x86 import target_machine
from nova.bundle.format import (
    DeviceModule,
    Kernel,
    KernelParam,
    Manifest,
    TypeSpec,
)

ELEMENTS = [ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.HalfType(),
            ir.FloatType(), ir.DoubleType()]


@pytest.mark.parametrize("lanes", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("elem", ELEMENTS, ids=str)
def test_sizes_agree_with_both_data_layouts(elem: ir.Type, lanes: int) -> None:
    vec = ir.VectorType(elem, lanes)
    host = llvm.create_target_data(str(target_machine().target_data))
    nvptx = llvm.create_target_data(NVPTX_LAYOUT)
    size, align = param_size_align(vec)
    assert (size, align) == (vec.get_abi_size(host), vec.get_abi_alignment(host))
    assert (size, align) == (vec.get_abi_size(nvptx), vec.get_abi_alignment(nvptx))


def test_known_vector_layouts() -> None:
    i32, f64, i8 = IntegerType(32), Float64Type(), IntegerType(8)
    ftype = FunctionType.from_lists([VectorType(i32, [3]), VectorType(f64, [8]),
                                     VectorType(i8, [3]), VectorType(Float32Type(), [2])], [])
    params = kernel_params(ftype, lambda _t: 1)
    assert [(p.llvm_type, p.size, p.alignment) for p in params] == [
        ("<3 x i32>", 16, 16), ("<8 x double>", 64, 64), ("<3 x i8>", 4, 4),
        ("<2 x float>", 8, 8)]
    assert type_spec(VectorType(i32, [3])) == TypeSpec("vector", "i32", "vector<3xi32>", (3,))


@pytest.mark.parametrize(("ty", "reason"), [
    (VectorType(IntegerType(1), [4]), "bit-packed"),
    (VectorType(Float32Type(), [2, 2]), "only 1-D vectors"),
    (VectorType(IntegerType(128), [2]), "integers up to 64 bits"),
])
def test_rejected_vectors(ty: VectorType, reason: str) -> None:
    with pytest.raises(KernelArgumentError, match=reason):
        type_spec(ty)


def _manifest(params: tuple[KernelParam, ...]) -> Manifest:
    kernel = Kernel("k", (TypeSpec("vector", "i32", "vector<3xi32>", (3,)),), params)
    return Manifest("sm_90", (), (DeviceModule("m", (kernel,), ()),))


def test_align_round_trips_and_is_optional() -> None:
    manifest = _manifest((KernelParam("<3 x i32>", 16, 0, 16), KernelParam("i32", 4, 0, 4)))
    assert Manifest.from_json(manifest.to_json()) == manifest
    raw = json.loads(manifest.to_json())
    for param in raw["modules"][0]["kernels"][0]["params"]:
        del param["align"]  # as written before the field existed
    old = Manifest.from_dict(raw).modules[0].kernels[0].params
    assert [(p.align, p.alignment) for p in old] == [(0, 16), (0, 4)]
    assert KernelParam("x", 24, 0).alignment == 8


def test_align_must_be_a_power_of_two() -> None:
    raw = json.loads(_manifest((KernelParam("<3 x i32>", 16, 0, 16),)).to_json())
    raw["modules"][0]["kernels"][0]["params"][0]["align"] = 12
    with pytest.raises(ValueError, match=r"params\[0\]\.align: 12 is not a power of two"):
        Manifest.from_dict(raw)


def expected_kernel_arg_corpus() -> list[str]:
    """tests/corpus/vector-kernel-arg.mlir's output, from its inputs (x = 2.5, i = 100)."""
    v3 = np.array([7, -2, 30000], np.int32)
    v2 = np.array([1.5, -0.25], F32)
    v8 = np.array([1, -1, 2, -2, 3, -3, 127, -128], np.int8)
    v4 = np.array([0.5, 1e100, -3.0, 7.0])
    x, i = F32(2.5), np.int32(100)
    r4 = np.full(4, x, F32) + np.array([0.0, 0.125, 0.25, 0.375], F32)
    r3 = np.full(3, i.astype(np.int8)) + np.arange(3, dtype=np.int8)
    r2 = np.float64(x) * np.array([1.0, -1.0])
    s = seq_reduce(v2, F32(0.0), operator.add)
    out = [r4[t] + s + F32(v3[t % 3]) for t in range(4)]
    return [vec(v) for v in (v3, v2, v8, v4, r4, r3, r2, out)]


def test_corpus_check_lines_are_the_numpy_results() -> None:
    assert check_lines(CORPUS / "vector-kernel-arg.mlir") == expected_kernel_arg_corpus()
