"""The expected output of the vector corpus programs (tests/corpus/vector-*.mlir), computed
with NumPy from each program's inputs and semantics, must be exactly their CHECK lines.

The programs themselves run through lit (on the CPU device in CI, on CUDA on a GPU machine);
this test pins their CHECK lines to an independent computation, so they are never copied from
Nova's own output. Printing follows MLIR's runner utilities: `%g` for floats, `( a, b )` for
vectors, i1 as 0/1, unsigned index.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
F32 = np.float32


def fmt(value: object) -> str:
    """One scalar as the runner utilities print it (C's %g for floats, decimal integers)."""
    if isinstance(value, np.floating | float):
        return f"{float(value):g}"
    return str(int(value))  # type: ignore[call-overload]


def vec(values: Iterable[object]) -> str:
    """A vector as vector.print prints it."""
    return "( " + ", ".join(fmt(v) for v in values) + " )"


def seq_reduce(values: np.ndarray, start: object, fn: object) -> object:
    """A left-to-right reduction in the array's own dtype (vector.reduction's order)."""
    total = start
    for v in values:
        total = fn(total, v)  # type: ignore[operator]
    return total


def c_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's truncating integer division (arith.divsi)."""
    return np.array([int(a / b) if a * b >= 0 else -(abs(int(a)) // abs(int(b)))
                     for a, b in zip(x, y, strict=True)], dtype=x.dtype)


def expected_host() -> list[str]:
    """tests/corpus/vector-host.mlir."""
    a = np.array([1.5, -2.0, 3.25, 4.0], dtype=F32)
    b = np.array([7, -20, 33, 40], dtype=np.int32)
    d = np.array([3, 6, -4, 7], dtype=np.int32)
    twos = np.full(4, 2.0, dtype=F32)
    out = [vec(a + twos), vec(a * a), vec(a / twos), vec(-a)]
    quot = c_div(b, d)
    out += [vec(b + d), vec(b * d), vec(quot), vec(b - d * quot), vec(b // d),
            vec(np.maximum(b, d)), vec(d << 2)]
    lt = b < d
    out += [vec(lt), vec(np.where(lt, b, d)), vec(np.where(a >= twos, a, twos))]
    b64 = b.astype(np.int64)
    out += [vec(b.astype(F32)), vec(a.astype(np.int32)), vec(b64 * b64),
            vec((b * d).astype(np.int8)), vec(a.astype(np.float64) / 3.0)]
    out += [vec(np.sqrt(a * a)), vec(np.abs(a)), vec(np.floor(a)), vec(np.abs(b))]
    out += [fmt(a[2]), fmt(b[1])]
    ins = a.copy()
    ins[0] = 2.0
    ins[1] = a[2]
    out += [vec(ins), vec([a[2], F32(2.0), a[2]])]
    out += [vec(np.concatenate([a, twos])[[3, 4, 0, 5, 2]]), vec(twos.view(np.int32))]
    fma = (a.astype(np.float64) * 2.0 + a.astype(np.float64)).astype(F32)
    out += [vec(fma), vec(range(4)), vec([1, 1, 1, 0]), vec([1, 1, 0, 0])]
    out += [fmt(seq_reduce(a, F32(0.0), operator.add)),
            fmt(seq_reduce(a, F32(100.0), operator.add)),
            fmt(seq_reduce(a, F32(1.0), operator.mul)), fmt(a.min()), fmt(a.max())]
    with np.errstate(over="ignore"):
        out += [fmt(b.sum(dtype=np.int32)), fmt(b.sum(dtype=np.int32) + 1000),
                fmt(np.prod(d, dtype=np.int32)), fmt(b.min()),
                fmt(b.view(np.uint32).max().astype(np.uint32).view(np.int32)),
                fmt(functools.reduce(operator.and_, b)), fmt(functools.reduce(operator.or_, b)),
                fmt(functools.reduce(operator.xor, b))]
    k = np.array([0.0, 1.0, -1.0, 3.25], dtype=F32)
    ex, th = np.exp(k.astype(np.float64)).astype(F32), np.tanh(k.astype(np.float64)).astype(F32)
    out.append(vec([*ex, *th, *np.where(k > th, k, -k)]))
    return out


def expected_kernel() -> list[str]:
    """tests/corpus/vector-kernel.mlir: x[i] = i / 2, y[i] = 32 - i, 8 threads of 4 lanes."""
    i = np.arange(32)
    x = i.astype(F32) * F32(0.5)
    y = F32(32.0) - i.astype(F32)
    sq = x * x + y
    fma = (x.astype(np.float64) * y + x).astype(F32)  # rounded once
    sums = [seq_reduce(sq[t * 4:t * 4 + 4], F32(0.0), operator.add) for t in range(8)]
    maxs = [sq[t * 4:t * 4 + 4].max() for t in range(8)]
    return ([vec(sq[t * 4:t * 4 + 4]) for t in range(8)]
            + [vec(fma[t * 4:t * 4 + 4]) for t in range(8)] + [vec(sums), vec(maxs)])


def expected_edge() -> list[str]:
    """tests/corpus/vector-transfer-edge.mlir: data[i] = i + 1 for 10 elements, 3 threads."""
    n = 10
    data = np.arange(n, dtype=F32) + F32(1.0)
    lane = np.arange(12)
    inside = lane < n
    padded = np.where(inside, np.concatenate([data, np.zeros(2, F32)]), F32(-1.0))
    written = np.where(inside, padded * F32(10.0), F32(-5.0))
    masked = np.where(inside, padded, F32(7.0))
    host = np.where(inside, padded, F32(0.0))
    return [", ".join([vec(padded[k:k + 4]), " " + vec(written[k:k + 4]),
                       " " + vec(masked[k:k + 4]), " " + vec(written[k:k + 4]),
                       " " + vec(host[k:k + 4])])
            for k in range(0, 12, 4)]


def expected_print_kernel() -> list[str]:
    """tests/corpus/vector-print-kernel.mlir: 3 threads, each printing 4 lines."""
    out: list[str] = []
    for t in range(3):  # the bare index is anchored: "1" alone would match inside "( 0, 1, 2 )"
        out += [vec(np.arange(3, dtype=np.int32) + np.int32(t * 10)),
                vec([F32(t) * F32(0.25), F32(t) * F32(0.5)]),
                "{{^}}" + fmt(t + 1) + "{{$}}", "thread done"]
    return out


EXPECTED = {
    "vector-host.mlir": expected_host,
    "vector-kernel.mlir": expected_kernel,
    "vector-transfer-edge.mlir": expected_edge,
    "vector-print-kernel.mlir": expected_print_kernel,
}


def check_lines(path: Path) -> list[str]:
    """The patterns of a file's `// CHECK:` / `// CHECK-NEXT:` / `// CHECK-DAG:` lines, in
    order."""
    return [m.group(1) for m in re.finditer(r"^// CHECK(?:-NEXT|-DAG)?: (.*)$",
                                            path.read_text(), re.MULTILINE)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_lines_are_the_numpy_results(name: str) -> None:
    assert check_lines(CORPUS / name) == EXPECTED[name]()


def test_formatting_matches_the_runner_utilities() -> None:
    assert vec(np.array([1.0, -0.5, 1e10], dtype=F32)) == "( 1, -0.5, 1e+10 )"
    assert vec(np.array([True, False])) == "( 1, 0 )"
    assert fmt(np.float64(2.0) / 3.0) == "0.666667"
