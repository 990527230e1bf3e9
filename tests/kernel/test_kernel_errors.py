"""Invalid kernels give located errors (file:line:col, the source line and a caret) that say
what is supported; launches with bad arguments raise ArgumentError."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import nova
from nova.errors import ArgumentError, NovaError
from nova.lang import KernelCallError, KernelSyntaxError, KernelTypeError

F32 = nova.float32[:]


@nova.kernel
def uses_with(out):
    with open("x"):
        pass


@nova.kernel
def assigns_string(out):
    out[0] = "hello"


@nova.kernel
def wrong_rank(out):
    out[0, 1] = 1.0


@nova.kernel
def dynamic_shared_shape(out):
    n = len(out)
    buf = nova.shared_array(n, nova.float32)
    buf[0] = 1.0


@nova.kernel
def literal_too_big(out):
    out[0] = nova.uint8(3) + 300


@nova.kernel
def iterates_list(out):
    for i in [1, 2]:
        out[i] = 0.0


@nova.kernel
def undefined(out):
    out[0] = not_defined_anywhere  # noqa: F821


@nova.kernel
def opens(out):
    open(out[0])  # noqa: SIM115 - never runs: the kernel is rejected


@nova.kernel
def returns_value(out):
    return 1


@nova.kernel
def float_shift(out):
    out[0] = out[1] << 2


@nova.kernel
def slices(out):
    out[0:2] = 1.0


@nova.func
def recursive(n):
    return recursive(n - 1) if n > 0 else 0


@nova.kernel
def calls_recursive(out):
    out[0] = recursive(3)


@nova.kernel
def bad_dim(out):
    out[0] = nova.thread_id(3)


@nova.kernel
def reassigns_array(out):
    a = out
    if out[0] > 0:
        a = out
    a[0] = 1.0


CASES = [
    (uses_with, KernelSyntaxError, "'With' statements are not supported", 'with open("x"):'),
    (assigns_string, KernelTypeError, "expected a number, got 'hello'", 'out[0] = "hello"'),
    (wrong_rank, KernelTypeError, "a 1-d array needs 1 indices, got 2", "out[0, 1] = 1.0"),
    (dynamic_shared_shape, KernelTypeError, "compile-time integers",
     "buf = nova.shared_array(n, nova.float32)"),
    (literal_too_big, KernelTypeError, "the literal 300 does not fit uint8",
     "out[0] = nova.uint8(3) + 300"),
    (iterates_list, KernelSyntaxError, "for loops iterate over range(stop)",
     "for i in [1, 2]:"),
    (undefined, KernelTypeError, "name 'not_defined_anywhere' is not defined",
     "out[0] = not_defined_anywhere"),
    (opens, KernelSyntaxError, "is not supported in kernels (supported: nova intrinsics",
     "open(out[0])"),
    (returns_value, KernelTypeError, "a kernel cannot return a value", "return 1"),
    (float_shift, KernelTypeError, "operator << needs integer operands",
     "out[0] = out[1] << 2"),
    (slices, KernelSyntaxError, "slices of arrays are not supported", "out[0:2] = 1.0"),
    (calls_recursive, KernelSyntaxError, "recursive call of device function recursive()",
     "return recursive(n - 1) if n > 0 else 0"),
    (bad_dim, KernelTypeError, "the dimension must be a constant 0, 1 or 2",
     "out[0] = nova.thread_id(3)"),
    (reassigns_array, KernelTypeError, "holds an array or tuple and is assigned more than once",
     "a = out"),
]


@pytest.mark.parametrize(("kern", "cls", "message", "line"), CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_located_errors(kern, cls, message, line):
    with pytest.raises(cls) as info:
        kern.mlir(F32)
    err = info.value
    text = str(err)
    assert message in text
    loc = err.location
    assert loc is not None and loc.filename == __file__
    with open(__file__) as fh:
        source_line = fh.read().splitlines()[loc.line - 1]
    assert line in source_line
    head, excerpt, caret = text.split("\n")[:3]
    assert head.startswith(f"{__file__}:{loc.line}:{loc.column}: error: ")
    assert excerpt == source_line
    assert caret == " " * (loc.column - 1) + "^"


def test_error_line_numbers_are_absolute():
    with pytest.raises(KernelSyntaxError) as info:
        uses_with.mlir(F32)
    first = inspect.getsourcelines(uses_with.py_func)[1]
    assert info.value.location.line == first + 2


def test_intrinsics_outside_kernels_raise():
    with pytest.raises(KernelCallError, match=r"can only be called inside a @nova\.kernel"):
        nova.thread_id(0)


def test_kernel_needs_a_launch_configuration():
    with pytest.raises(ArgumentError, match=r"\[grid, block\]"):
        wrong_rank(np.zeros(1, np.float32))
    with pytest.raises(ArgumentError):
        wrong_rank[1](np.zeros(1, np.float32))


@nova.kernel
def fill(out, v):
    i = nova.global_id(0)
    if i < len(out):
        out[i] = v


def test_bad_launch_arguments(cpu_device):
    with pytest.raises(ArgumentError, match="must be arrays"):
        fill.launch("text", 1.0, grid=1, block=1, device=cpu_device)
    with pytest.raises(ArgumentError, match="cannot be kernel arguments"):
        fill.launch(np.zeros(2, np.complex64), 1.0, grid=1, block=1, device=cpu_device)
    with pytest.raises(NovaError, match="takes 2 arguments, 3 given"):
        fill.launch(np.zeros(2, np.float32), 1.0, 3, grid=1, block=1, device=cpu_device)
    with pytest.raises(ArgumentError, match="does not fit"):
        fill.launch(np.zeros(2, np.int64), 2**64, grid=1, block=1, device=cpu_device)


def test_non_contiguous_numpy_arrays_are_copied_back(cpu_device):
    base = np.zeros((4, 4), np.float32)
    view = base[:, 1]
    fill.launch(view, 2.0, grid=1, block=8, device=cpu_device)
    assert base[:, 1].tolist() == [2.0] * 4 and base[:, 0].tolist() == [0.0] * 4


@nova.kernel
def f64_erf(out, x):
    i = nova.global_id(0)
    out[i] = math.erf(x[i])


def test_backend_errors_point_at_the_python_line():
    """A construct the NVPTX target cannot lower (erf on float64) is reported at the Python
    expression that produced the op, not at generated MLIR."""
    with pytest.raises(NovaError, match=r"'math\.erf' on f64 is not supported") as info:
        f64_erf.ptx(nova.float64[:], nova.float64[:])
    lines = str(info.value).split("\n")
    assert lines[0].startswith(f"{__file__}:")
    assert lines[1].strip() == "out[i] = math.erf(x[i])"
    assert lines[2] == " " * (info.value.location.column - 1) + "^"
