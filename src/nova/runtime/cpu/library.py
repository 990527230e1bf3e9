"""Library plans on the cpu device: a `LibraryPlan` GEMM or a `ConvPlan` convolution (nova.abi)
computed with NumPy.

The cpu device binds `nova_rt_library_call` to this, so a program whose GEMMs and convolutions
were given to a library (cuBLASLt and cuDNN on cuda) runs unchanged on the cpu device, and CI
checks the library path of every model without a GPU. Convolutions gather the input windows
(a strided view of the zero-padded input, no copy) and contract them with the filter per group
(einsum). Products are computed in float32 from float32 copies of the operands
(fp16/bf16 widened exactly), in float64 for float32 plans (so the result matches an fp32
reference far below 1e-5), then the epilogue in the same precision and one rounding to the
storage type, as the fused GPU epilogue does. bf16 is stored as its 16 bits (NumPy has no bf16):
widened by shifting, narrowed with round-to-nearest-even.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from nova.abi import AnyPlan, ConvPlan, LibraryPlan

_STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def _view(address: int, count: int, dtype: str) -> np.ndarray:
    """`count` elements of storage type `dtype` at host address `address` (no copy)."""
    np_dtype = np.dtype(_STORAGE[dtype])
    raw = (ctypes.c_char * (count * np_dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype=np_dtype)  # type: ignore[call-overload]


def widen(values: np.ndarray, dtype: str, wide: type[np.floating]) -> np.ndarray:
    """Storage values as `wide` floats (exact)."""
    if dtype == "bfloat16":
        return (values.astype(np.uint32) << 16).view(np.float32).astype(wide)
    return values.astype(wide)


def narrow(values: np.ndarray, dtype: str) -> np.ndarray:
    """Floats rounded to storage type `dtype` (bf16: round to nearest even, NaN kept NaN)."""
    if dtype != "bfloat16":
        return values.astype(_STORAGE[dtype])
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values)
    return np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x * x * x)))


def run_plan(plan: AnyPlan, pointers: list[int]) -> None:
    """Run `plan` on the operands at `pointers` (host addresses, in `plan.operands` order)."""
    if isinstance(plan, ConvPlan):
        run_conv(plan, pointers)
    else:
        run_gemm(plan, pointers)


def describe(plan: AnyPlan) -> str:
    """A short name of the plan's work (for the stream's task names and errors)."""
    if isinstance(plan, ConvPlan):
        return (f"library conv {plan.n}x{plan.c}x{plan.h}x{plan.w} * "
                f"{plan.k}x{plan.c // plan.groups}x{plan.r}x{plan.s}")
    return f"library GEMM {plan.m}x{plan.n}x{plan.k}"


def _operand_map(plan: AnyPlan, pointers: list[int]) -> dict[str, int]:
    if len(pointers) != len(plan.operands):
        raise ValueError(f"library call passed {len(pointers)} operands, the plan takes "
                         f"{len(plan.operands)} ({', '.join(plan.operands)})")
    at = dict(zip(plan.operands, pointers, strict=True))
    if any(not p for p in at.values()):
        raise ValueError("library call with a null operand pointer")
    return at


def run_conv(plan: ConvPlan, pointers: list[int]) -> None:
    """y = act(conv(x, w) + bias + z), NCHW (see nova.abi.ConvPlan), written at pointer `y`."""
    at = _operand_map(plan, pointers)
    wide = np.float64 if plan.dtype == "float32" else np.float32
    n, c, h, w, k, g = plan.n, plan.c, plan.h, plan.w, plan.k, plan.groups
    p, q = plan.out_hw

    def load(name: str, shape: tuple[int, ...]) -> np.ndarray:
        count = math.prod(shape)
        return widen(_view(at[name], count, plan.dtype), plan.dtype, wide).reshape(shape)

    x = np.pad(load("x", (n, c, h, w)),
               ((0, 0), (0, 0), (plan.pad_h, plan.pad_h), (plan.pad_w, plan.pad_w)))
    sn, sc, sh, sw = x.strides
    windows = np.lib.stride_tricks.as_strided(
        x, (n, g, c // g, p, q, plan.r, plan.s),
        (sn, sc * (c // g), sc, sh * plan.stride_h, sw * plan.stride_w, sh * plan.dil_h,
         sw * plan.dil_w), writeable=False)
    filters = load("w", (g, k // g, c // g, plan.r, plan.s))
    out = np.einsum("ngcpqrs,gkcrs->ngkpq", windows, filters, optimize=True).reshape(n, k, p, q)
    if plan.bias:
        out = out + load("bias", (k,)).reshape(1, k, 1, 1)
    if plan.residual:
        out = out + load("z", (n, k, p, q))
    if plan.activation == "relu":
        out = np.maximum(out, 0)
    _view(at["y"], n * k * p * q, plan.dtype)[:] = narrow(out.reshape(-1), plan.dtype)


def run_gemm(plan: LibraryPlan, pointers: list[int]) -> None:
    """D = act(alpha * op(A) @ op(B) + bias + C) per batch, written at pointer `d`."""
    at = _operand_map(plan, pointers)
    m, n, k, batch = plan.m, plan.n, plan.k, plan.batch
    wide = np.float64 if plan.dtype == "float32" else np.float32

    def operand(name: str, stride: int, rows: int, cols: int) -> np.ndarray:
        count = (batch - 1) * stride + rows * cols
        flat = widen(_view(at[name], count, plan.dtype), plan.dtype, wide)
        if stride == 0:
            return flat.reshape(rows, cols)
        return np.lib.stride_tricks.as_strided(
            flat, (batch, rows, cols), (stride * flat.itemsize, cols * flat.itemsize,
                                        flat.itemsize))

    a = operand("a", plan.a_stride, *((k, m) if plan.trans_a else (m, k)))
    b = operand("b", plan.b_stride, *((n, k) if plan.trans_b else (k, n)))
    a = np.swapaxes(a, -1, -2) if plan.trans_a else a
    b = np.swapaxes(b, -1, -2) if plan.trans_b else b
    out = np.matmul(a, b)
    if out.ndim == 2:
        out = np.broadcast_to(out, (batch, m, n))
    out = out * wide(plan.alpha) if plan.alpha != 1.0 else out
    if plan.bias:
        out = out + widen(_view(at["bias"], n, plan.dtype), plan.dtype, wide)
    if plan.residual:
        out = out + widen(_view(at["c"], batch * m * n, plan.dtype), plan.dtype,
                          wide).reshape(batch, m, n)
    if plan.activation == "relu":
        out = np.maximum(out, 0)
    elif plan.activation == "gelu_tanh":
        out = _gelu_tanh(out)
    _view(at["d"], batch * m * n, plan.dtype)[:] = narrow(out.reshape(-1), plan.dtype)
