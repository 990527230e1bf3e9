"""Runner utilities print mlir-runner's exact text (expected text captured from mlir-runner 22)."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from nova.abi import ABI_BY_NAME
from nova.runtime import runner_utils as ru


def _data(text: str) -> str:
    """The text with the (process-specific) base pointer replaced by a fixed token."""
    return re.sub(r"base@ = (0x[0-9a-f]+|0)", "base@ = PTR", text)


def test_rank2_floats_match_mlir_runner() -> None:
    a = np.array([[1.5, -0.0, 1e10], [np.nan, np.inf, 123456789.0]], dtype=np.float32)
    assert _data(ru.format_array(a)) == (
        "Unranked Memref base@ = PTR rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data = \n"
        "[[1.5,   -0,   1e+10], \n"
        " [nan,   inf,   1.23457e+08]]\n")


def test_base_pointer_is_the_aligned_pointer() -> None:
    a = np.zeros(3, dtype=np.float32)
    assert f"base@ = {a.ctypes.data:#x} rank = 1" in ru.format_array(a)


def test_rank0() -> None:
    a = np.array(0.0001, dtype=np.float32)
    assert _data(ru.format_array(a)) == (
        "Unranked Memref base@ = PTR rank = 0 offset = 0 sizes = [] strides = [] data = \n"
        "[0.0001]\n")


def test_rank1_spacing_and_negative_ints() -> None:
    a = np.array([0, -2, 30], dtype=np.int32)
    assert ru.format_array(a).splitlines()[1] == "[0,  -2,  30]"


def test_rank1_single_and_i8_as_numbers() -> None:
    assert ru.format_array(np.array([-5], dtype=np.int8)).splitlines()[1] == "[-5]"
    assert ru.format_array(np.array([65, 66], dtype=np.int8)).splitlines()[1] == "[65,  66]"


def test_rank3_layout() -> None:
    a = np.arange(8, dtype=np.int64).reshape(2, 2, 2)
    lines = ru.format_array(a).splitlines()[1:]
    assert lines == [
        "[[[0,    1], ",
        "  [2,    3]], ",
        " [[4,    5], ",
        "  [6,    7]]]",
    ]


def test_one_by_one() -> None:
    a = np.array([[-np.inf]], dtype=np.float32)
    assert ru.format_array(a).splitlines()[1] == "[[-inf]]"


def test_empty_memrefs_read_nothing() -> None:
    assert ru.format_array(np.zeros((0,), np.float32)).splitlines()[1] == "[]"
    assert ru.format_array(np.zeros((2, 0, 3), np.float32)).splitlines()[1:] == ["[[], ", " []]"]


def test_strided_view_and_offset() -> None:
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    desc = (ctypes.c_int64 * 7)(base.ctypes.data, base.ctypes.data, 1, 3, 2, 4, 2)
    text = ru.format_memref(np.dtype(np.float64), 2, ctypes.addressof(desc))
    assert "offset = 1 sizes = [3, 2] strides = [4, 2] data = \n" in text
    assert text.splitlines()[1:] == ["[[1,   3], ", " [5,   7], ", " [9,   11]]"]


@pytest.mark.parametrize(("value", "text"), [
    (0.5, "0.5"), (1e10, "1e+10"), (100000.0, "100000"), (1e-5, "1e-05"),
    (123456789.0, "1.23457e+08"), (float("inf"), "inf"), (float("-inf"), "-inf"),
    (float("nan"), "nan"), (-float("nan"), "-nan"), (-0.0, "-0"), (0.0, "0"), (-1.5, "-1.5"),
])
def test_format_float(value: float, text: str) -> None:
    assert ru.format_float(value) == text


def test_abi_callbacks_write_to_fd1(capfd: pytest.CaptureFixture[str]) -> None:
    symbols = ru.runner_util_symbols()
    call = {n: ABI_BY_NAME[n].ctypes_prototype()(addr) for n, addr in symbols.items()}
    call["nova_rt_print_open"]()
    call["nova_rt_print_i64"](-7)
    call["nova_rt_print_comma"]()
    call["nova_rt_print_u64"](-1)
    call["nova_rt_print_comma"]()
    call["nova_rt_print_f32"](0.1)
    call["nova_rt_print_comma"]()
    call["nova_rt_print_f64"](2.5)
    call["nova_rt_print_close"]()
    call["nova_rt_print_newline"]()
    call["nova_rt_print_string"](b"hi\n")
    a = np.array([1.0, 2.0], dtype=np.float32)
    desc = (ctypes.c_int64 * 5)(a.ctypes.data, a.ctypes.data, 0, 2, 1)
    call["nova_rt_print_memref_f32"](1, ctypes.addressof(desc))
    ru.flush_stdout()
    out = capfd.readouterr().out
    assert out.startswith("( -7, 18446744073709551615, 0.1, 2.5 )\nhi\nUnranked Memref base@ = ")
    assert out.endswith("data = \n[1,  2]\n")
