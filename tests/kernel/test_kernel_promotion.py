"""Mixed-type integer arithmetic against an independent model of the documented rules
(docs/python-kernels.md): C's usual conversions without integer promotion, two's-complement
wrap-around, floor division/modulo for signed types; shifts compute in the left operand's type
(the amount converted to it, out-of-range amounts giving NumPy's results)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import nova

OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"]


def _kernel(symbol: str):
    source = (f"def binop(out, a, b):\n"
              f"    i = nova.global_id(0)\n"
              f"    if i < len(out):\n"
              f"        out[i] = a[i] {symbol} b[i]\n")
    path = f"<promotion {symbol}>"
    import linecache

    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    namespace: dict = {"nova": nova}
    exec(compile(source, path, "exec"), namespace)
    return nova.kernel(namespace["binop"])


KERNELS = {op: _kernel(op) for op in OPS}

PAIRS = [("int8", "uint8", "uint8"), ("int16", "uint8", "int16"), ("int32", "uint32", "uint32"),
         ("int64", "uint16", "int64"), ("uint64", "int64", "uint64"), ("int8", "int32", "int32"),
         ("uint8", "uint16", "uint16")]


def _wrap(value: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _model(op: str, a: int, b: int, t: np.dtype) -> int:
    bits = t.itemsize * 8
    if op in ("<<", ">>"):
        if not 0 <= b < bits:  # the amount, read as unsigned, is out of range
            return -1 if (op == ">>" and a < 0) else 0
        return _wrap(a << b if op == "<<" else a >> b, t)
    fn = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
          "%": operator.mod, "&": operator.and_, "|": operator.or_, "^": operator.xor}[op]
    return _wrap(fn(a, b), t)


@pytest.mark.parametrize(("ta", "tb", "expected"), PAIRS, ids=lambda v: str(v))
@pytest.mark.parametrize("op", OPS)
def test_mixed_integer_operations(cpu_device, op, ta, tb, expected):
    rng = np.random.default_rng(abs(hash((op, ta, tb))) % 2**32)
    da, db, dt = np.dtype(ta), np.dtype(tb), np.dtype(expected)
    a = rng.integers(np.iinfo(da).min, np.iinfo(da).max, 64, dtype=da, endpoint=True)
    b = rng.integers(np.iinfo(db).min, np.iinfo(db).max, 64, dtype=db, endpoint=True)
    if op in ("<<", ">>"):
        b = (b.astype(np.int64) % (dt.itemsize * 8 + 4)).astype(db)  # some out of range
    b[b == 0] = 1
    out = np.zeros(64, dt)
    KERNELS[op].launch(out, a, b, grid=1, block=64, device=cpu_device)
    shift = op in ("<<", ">>")
    work = da if shift else dt  # the type the operation computes in
    for x, y, got in zip(a.tolist(), b.tolist(), out.tolist(), strict=True):
        xa = _wrap(x, work)
        yb = _wrap(y, work) & ((1 << work.itemsize * 8) - 1) if shift else _wrap(y, work)
        if op in ("//", "%") and work.kind == "i" and yb == -1 and \
                xa == np.iinfo(work).min:
            continue  # INT_MIN // -1 overflows (undefined, as in C)
        assert got == _wrap(_model(op, xa, yb, work), dt), (op, x, y)
    text = KERNELS[op].mlir(getattr(nova, expected)[:], getattr(nova, ta)[:],
                            getattr(nova, tb)[:])
    signed = work.kind == "i"
    width = f"i{work.itemsize * 8}"
    chosen = {"//": ("arith.floordivsi", "arith.divui"), "%": ("arith.remsi", "arith.remui"),
              ">>": ("arith.shrsi", "arith.shrui")}.get(op)
    if chosen is not None:  # the op follows the common type's signedness
        assert f"{chosen[0 if signed else 1]} " in text and f" : {width}" in text
