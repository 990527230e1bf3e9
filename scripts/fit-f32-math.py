"""Refit the single-precision polynomial coefficients of src/nova/backends/nvptx/math32.py.

Lawson's algorithm (iteratively reweighted least squares, converging to the weighted minimax
fit) on Chebyshev nodes, in float64 NumPy; each fit minimises the relative error of the function
it serves and prints the coefficients rounded to f32 as hex literals, in the order math32 lists
them (constant term first). The erf coefficients are N. Juffa's and are not refitted here.

    python scripts/fit-f32-math.py
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Array = np.ndarray


def lawson(xs: Array, target: Array, degree: int, weight: Array,
           iters: int = 300) -> tuple[Array, float]:
    """Coefficients c (c[0] + c[1] x + ...) minimising max |weight (p(x) - target)|."""
    basis = np.stack([xs ** k for k in range(degree + 1)], 1)
    u = np.full(xs.size, 1.0 / xs.size)
    for _ in range(iters):
        w = np.sqrt(u) * weight
        c, *_ = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)
        err = np.abs(basis @ c - target) * weight
        u = u * err
        u /= u.sum()
    return c, float(err.max())


def nodes(lo: float, hi: float, n: int = 4000) -> Array:
    t = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    xs = np.sort((lo + hi) / 2 + (hi - lo) / 2 * t)
    return xs[xs != 0]


def f32_hex(c: Array) -> str:
    """Coefficients rounded to f32, as hex literals with the 6 hex digits f32 needs."""
    out = []
    for v in c:
        mantissa, exponent = float(np.float32(v)).hex().split("p")
        out.append(f'"{mantissa[:mantissa.index(".") + 7].ljust(mantissa.index(".") + 7, "0")}'
                   f'p{exponent}"')
    return ", ".join(out)


def odd(fn: Callable[[Array], Array], lo: float, hi: float, degree: int) -> tuple[Array, float]:
    """fn(t) = t + t^3 p(t^2): fit p on s = t^2."""
    t = nodes(lo, hi)
    return lawson(t * t, (fn(t) - t) / t ** 3, degree, t ** 3 / np.abs(fn(t)))


def erfc_target(q: Array) -> Array:
    """(1 + 2a) e^(a^2) erfc(a) - 1 at a = 2 (1 + q) / (1 - q)."""
    a = 2 * (1 + q) / (1 - q)
    erfc = np.frompyfunc(math.erfc, 1, 1)(a).astype(np.float64)
    return (1 + 2 * a) * np.exp(a * a) * erfc - 1


def main() -> None:
    ln2 = math.log(2)
    fits: dict[str, tuple[Array, float]] = {}
    r = nodes(-ln2 / 2, ln2 / 2)
    fits["EXP_Q"] = lawson(r, (np.expm1(r) - r) / r ** 2, 4, r ** 2 / np.exp(r))
    r = nodes(-0.5, 0.5)
    fits["EXP2_G"] = lawson(r, np.expm1(r * ln2) / r, 6, np.abs(r) / np.exp2(r))
    r = nodes(-ln2 / 2, ln2 / 2)
    fits["EXPM1_Q"] = lawson(r, (np.expm1(r) - r) / r ** 2, 5, r ** 2 / np.abs(np.expm1(r)))
    for name, lo, hi in (("LOG_Q", -1 / 3, 1 / 3), ("LOG1P_Q", -0.25, 0.5)):
        m = nodes(lo, hi)
        fits[name] = lawson(m, (np.log1p(m) - m) / m ** 2, 9, m ** 2 / np.abs(np.log1p(m)))
    fits["TANH_P"] = odd(np.tanh, 1e-4, 0.6, 4)
    fits["SINH_P"] = odd(np.sinh, 1e-4, 1.0, 3)
    fits["SIN_P"] = odd(np.sin, 1e-4, math.pi / 4, 3)
    t = nodes(1e-4, math.pi / 4)
    s = t * t
    fits["COS_Q"] = lawson(s, (np.cos(t) - 1 + s / 2) / s ** 2, 3, s ** 2 / np.cos(t))
    fits["ATAN_P"] = odd(np.arctan, 1e-4, 1.0, 8)
    fits["ASIN_P"] = odd(np.arcsin, 1e-4, 0.5, 5)
    u = nodes(1e-4, 0.2)
    fits["ATANH_P"] = lawson(u * u, (2 * np.arctanh(u) - 2 * u) / u ** 3, 4,
                             u ** 3 / (2 * np.arctanh(u)))
    q = nodes(-1.0, (10.0546875 - 2) / (10.0546875 + 2), 3000)
    g = erfc_target(q)
    fits["ERFC_P"] = lawson(q, g, 9, 1 / (1 + g))
    for name, (c, err) in fits.items():
        print(f"{name} (max weighted error {err:.2e}):\n    {f32_hex(c)}")


if __name__ == "__main__":
    main()
