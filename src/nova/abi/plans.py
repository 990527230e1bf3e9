"""The library calls of the runtime ABI: the plans a program's manifest lists for cuBLASLt/cuDNN
(cuda) or NumPy (cpu) (the contract: `nova.abi`, docs/abi.md, docs/models.md "Libraries")."""

from __future__ import annotations

from typing import Any

from nova.records import Record

# --- library calls ------------------------------------------------------------------------------

LIBRARY_PLANS_KEY = "nova.library.plans"
"""Manifest `extra` key: a JSON list of plans (`LibraryPlan` or `ConvPlan` `.to_json()`, told apart
by `kind`); host code refers to plan `i` by its position."""

LIBRARY_CALL_PREFIX = "__nova_library_"
"""An MLIR program calls library plan `i` as `func.call @__nova_library_<i>(memrefs...)` of a
body-less `func.func private @__nova_library_<i>`; the host lowering turns the call into
`nova_rt_library_plan` (first use, handle cached) + `nova_rt_library_call` with the memrefs' data
pointers in order."""

LIBRARY_ACTIVATIONS = ("none", "relu", "gelu_tanh")
LIBRARY_DTYPES = ("float32", "float16", "bfloat16")


def _plan_from_json(cls: Any, data: Any, what: str) -> Any:
    """`cls(**data)` checked (`cls.check`), with a `ValueError` naming `what` is wrong: not an
    object, unknown fields, missing or malformed ones."""
    if not isinstance(data, dict):
        raise ValueError(f"a {what} must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - set(cls._fields)
    if unknown:
        raise ValueError(f"unknown {what} field(s): {', '.join(sorted(unknown))}")
    try:
        plan = cls(**data)
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None
    plan.check()
    return plan


class LibraryPlan(Record):
    """One library GEMM, in row-major terms (what NumPy and the program see):

        D[b] = act(alpha * op(A[b]) @ op(B[b]) + bias + C[b])     for b < batch

    op(A) is [m, k] (A stored [k, m] when `trans_a`), op(B) is [k, n] (B stored [n, k] when
    `trans_b`); `bias` (when present) is a length-n vector broadcast over rows; `C` (when
    `residual`) has D's shape and layout. `a_stride`/`b_stride` are the element strides between
    batches (0: the operand is shared by every batch); C and D are dense (stride m*n). Every
    operand has storage type `dtype`; products accumulate in fp32 (never TF32), `gelu_tanh` is
    the tanh approximation. `operands` names the pointers a call passes, in order (a subset of
    a, b, bias, c, d in that order)."""

    __match_args__ = ("m", "n", "k", "dtype", "batch", "a_stride", "b_stride", "trans_a",
                      "trans_b", "alpha", "bias", "residual", "activation", "kind")
    _fields = __match_args__

    m: int
    n: int
    k: int
    dtype: str
    batch: int
    a_stride: int
    b_stride: int
    trans_a: bool
    trans_b: bool
    alpha: float
    bias: bool
    residual: bool
    activation: str
    kind: str

    def __init__(self, m: int, n: int, k: int, dtype: str, batch: int = 1, a_stride: int = 0,
                 b_stride: int = 0, trans_a: bool = False, trans_b: bool = False,
                 alpha: float = 1.0, bias: bool = False, residual: bool = False,
                 activation: str = "none", kind: str = "gemm") -> None:
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "batch", batch)
        object.__setattr__(self, "a_stride", a_stride)
        object.__setattr__(self, "b_stride", b_stride)
        object.__setattr__(self, "trans_a", trans_a)
        object.__setattr__(self, "trans_b", trans_b)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "bias", bias)
        object.__setattr__(self, "residual", residual)
        object.__setattr__(self, "activation", activation)
        object.__setattr__(self, "kind", kind)

    @property
    def operands(self) -> tuple[str, ...]:
        return ("a", "b", *(("bias",) if self.bias else ()), *(("c",) if self.residual else ()),
                "d")

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    @classmethod
    def from_json(cls, data: Any) -> LibraryPlan:
        """A validated plan; a malformed entry is a `ValueError` saying what is wrong."""
        plan: LibraryPlan = _plan_from_json(cls, data, "library plan")
        return plan

    def check(self) -> None:
        if self.kind != "gemm":
            raise ValueError(f"a GEMM library plan has kind 'gemm', not '{self.kind}'")
        ints = {"m": self.m, "n": self.n, "k": self.k, "batch": self.batch}
        for name, value in ints.items():
            if type(value) is not int or value < 1:
                raise ValueError(f"library plan: {name} must be a positive integer, got {value!r}")
        for name, value in (("a_stride", self.a_stride), ("b_stride", self.b_stride)):
            if type(value) is not int or value < 0:
                raise ValueError(f"library plan: {name} must be a non-negative integer, got "
                                 f"{value!r}")
        if self.dtype not in LIBRARY_DTYPES:
            raise ValueError(f"library plan: dtype '{self.dtype}' is not supported "
                             f"({', '.join(LIBRARY_DTYPES)})")
        if self.activation not in LIBRARY_ACTIVATIONS:
            raise ValueError(f"library plan: activation '{self.activation}' is not supported "
                             f"({', '.join(LIBRARY_ACTIVATIONS)})")
        if not isinstance(self.alpha, int | float):
            raise ValueError(f"library plan: alpha must be a number, got {self.alpha!r}")


CONV_ACTIVATIONS = ("none", "relu")


class ConvPlan(Record):
    """One library 2-D convolution (cross-correlation, as ONNX Conv), NCHW tensors:

        y = act(conv(x, w) + bias + z)

    x is [n, c, h, w], the filter w [k, c / groups, r, s], y and z [n, k, p, q] with
    p = (h + 2 pad_h - dil_h (r - 1) - 1) / stride_h + 1 (q likewise), all dense row-major;
    `bias` (when present) is a length-k vector broadcast over n, p, q; `z` (when `residual`)
    is added before the activation. Padding is symmetric (the same before and after). Every
    operand has storage type `dtype`; products accumulate in fp32 (never TF32). `operands`
    names the pointers a call passes, in order (a subset of x, w, bias, z, y in that order)."""

    __match_args__ = ("n", "c", "h", "w", "k", "r", "s", "dtype", "stride_h", "stride_w",
                      "pad_h", "pad_w", "dil_h", "dil_w", "groups", "bias", "residual",
                      "activation", "kind")
    _fields = __match_args__

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    dtype: str
    stride_h: int
    stride_w: int
    pad_h: int
    pad_w: int
    dil_h: int
    dil_w: int
    groups: int
    bias: bool
    residual: bool
    activation: str
    kind: str

    def __init__(self, n: int, c: int, h: int, w: int, k: int, r: int, s: int, dtype: str,
                 stride_h: int = 1, stride_w: int = 1, pad_h: int = 0, pad_w: int = 0,
                 dil_h: int = 1, dil_w: int = 1, groups: int = 1, bias: bool = False,
                 residual: bool = False, activation: str = "none", kind: str = "conv2d") -> None:
        for name, value in (("n", n), ("c", c), ("h", h), ("w", w), ("k", k), ("r", r),
                            ("s", s), ("dtype", dtype), ("stride_h", stride_h),
                            ("stride_w", stride_w), ("pad_h", pad_h), ("pad_w", pad_w),
                            ("dil_h", dil_h), ("dil_w", dil_w), ("groups", groups),
                            ("bias", bias), ("residual", residual),
                            ("activation", activation), ("kind", kind)):
            object.__setattr__(self, name, value)

    @property
    def out_hw(self) -> tuple[int, int]:
        """(p, q): the output's height and width."""
        p = (self.h + 2 * self.pad_h - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1
        q = (self.w + 2 * self.pad_w - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1
        return p, q

    @property
    def operands(self) -> tuple[str, ...]:
        return ("x", "w", *(("bias",) if self.bias else ()), *(("z",) if self.residual else ()),
                "y")

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    @classmethod
    def from_json(cls, data: Any) -> ConvPlan:
        """A validated plan; a malformed entry is a `ValueError` saying what is wrong."""
        plan: ConvPlan = _plan_from_json(cls, data, "conv plan")
        return plan

    def check(self) -> None:
        if self.kind != "conv2d":
            raise ValueError(f"a convolution library plan has kind 'conv2d', not '{self.kind}'")
        positive = ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "dil_h", "dil_w",
                    "groups")
        for name in positive:
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"conv plan: {name} must be a positive integer, got {value!r}")
        for name in ("pad_h", "pad_w"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"conv plan: {name} must be a non-negative integer, got "
                                 f"{value!r}")
        if self.c % self.groups or self.k % self.groups:
            raise ValueError(f"conv plan: {self.groups} groups do not divide {self.c} input and "
                             f"{self.k} output channels")
        if min(self.out_hw) < 1:
            raise ValueError(f"conv plan: the {self.r}x{self.s} window does not fit the "
                             f"{self.h}x{self.w} input")
        if self.dtype not in LIBRARY_DTYPES:
            raise ValueError(f"conv plan: dtype '{self.dtype}' is not supported "
                             f"({', '.join(LIBRARY_DTYPES)})")
        if self.activation not in CONV_ACTIVATIONS:
            raise ValueError(f"conv plan: activation '{self.activation}' is not supported "
                             f"({', '.join(CONV_ACTIVATIONS)})")


AnyPlan = LibraryPlan | ConvPlan
"""A library plan of any kind (`kind`: 'gemm' or 'conv2d')."""

PLAN_KINDS: dict[str, type[LibraryPlan] | type[ConvPlan]] = {"gemm": LibraryPlan,
                                                              "conv2d": ConvPlan}


def plan_from_json(data: Any) -> AnyPlan:
    """The plan of a manifest entry, by its `kind` (absent: 'gemm'); `ValueError` when
    malformed."""
    if not isinstance(data, dict):
        raise ValueError(f"a library plan must be a JSON object, got {type(data).__name__}")
    kind = data.get("kind", "gemm")
    cls = PLAN_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"library plan kind {kind!r} is not supported "
                         f"({', '.join(PLAN_KINDS)})")
    return cls.from_json(data)


def library_plans(extra: dict[str, str]) -> list[AnyPlan]:
    """The library plans a manifest's `extra` records (none when the key is absent);
    `ValueError` for a malformed list."""
    import json

    text = extra.get(LIBRARY_PLANS_KEY)
    if text is None:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"manifest '{LIBRARY_PLANS_KEY}' is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise ValueError(f"manifest '{LIBRARY_PLANS_KEY}' must be a JSON list")
    return [plan_from_json(d) for d in data]
