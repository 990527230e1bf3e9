"""Hopper warpgroup MMA (wgmma) in MLIR's `nvvm` dialect: the ops upstream's
`--convert-nvgpu-to-nvvm` produces for `nvgpu.warpgroup.mma`, with MLIR 22's exact syntax.

- `nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}`:
  PTX `fence.proxy.async.shared::cta`, making this thread's generic-proxy shared memory writes
  (st.shared, cp.async) visible to the async proxy wgmma reads its operands through (before the
  barrier that publishes them);
- `nvvm.wgmma.fence.aligned`: PTX `wgmma.fence.sync.aligned`, ordering register and shared
  memory accesses before the warpgroup MMAs that follow;
- `nvvm.wgmma.commit.group.sync.aligned`: PTX `wgmma.commit_group.sync.aligned`, closing the
  group of the mma_async ops issued since the last commit;
- `nvvm.wgmma.wait.group.sync.aligned 1`: PTX `wgmma.wait_group.sync.aligned 1`, waiting
  until at most that many groups are pending;
- `%d = nvvm.wgmma.mma_async %descA, %descB, %c, <m = 64, n = N, k = 16>, D[<f32>, <one>],
  A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, ...)> ->
  !llvm.struct<(f32, ...)>`: PTX `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16`, D = A x B
  + C (scale-d `one`) or A x B (`zero`) for the warpgroup's (4 warps, 128 threads) 64 x N
  accumulator, A (64 x 16) and B (16 x N) read from shared memory through 64-bit matrix
  descriptors. Layout `row` of A / `col` of B is K-major (PTX transpose bit 0), `col` of A /
  `row` of B MN-major (bit 1); scale `neg` negates an input. The accumulator is N / 2 f32 per
  thread: for column group i (n8 block), lane l of warp w holds elements 4i and 4i + 1 at row
  16 w + l / 4, columns 8 i + 2 (l % 4) + {0, 1}, and 4i + 2, 4i + 3 at row 16 w + l / 4 + 8.

The matrix descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13 start address >> 4
(shared memory address), 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte
offset >> 4, 49-51 base offset, 62-63 swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
`nova.backends.cpu.wgmma` documents how the CPU device reads it.

Upstream's verifier is mirrored (shape, types, element counts, satfinite, transposes) with its
messages; what the backends lower is narrower and is checked by `mma_async_lowering_error`: f16
or bf16 A and B with an f32 accumulator.
"""

from __future__ import annotations

from typing import ClassVar, Self

from xdsl.dialects.builtin import IntegerAttr, IntegerType, i64
from xdsl.dialects.llvm import LLVMStructType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from nova.errors import VerifyError
from nova.ir.gpu.base import NoOperandOp, print_attr_dict
from nova.ir.locations import nearest_location

WARPGROUP_SIZE = 128
"""Threads of a warpgroup: 4 consecutive warps, the first one's warp index a multiple of 4."""


class MMALayout(StrEnum):
    ROW = "row"
    COL = "col"


class WGMMAScaleIn(StrEnum):
    ONE = "one"
    NEG = "neg"


class WGMMAScaleOut(StrEnum):
    ZERO = "zero"
    ONE = "one"


class WGMMAType(StrEnum):
    F16 = "f16"
    BF16 = "bf16"
    TF32 = "tf32"
    E4M3 = "e4m3"
    E5M2 = "e5m2"
    S8 = "s8"
    U8 = "u8"
    S32 = "s32"
    F32 = "f32"


class ProxyKind(StrEnum):
    ALIAS = "alias"
    ASYNC = "async"
    ASYNC_GLOBAL = "async.global"
    ASYNC_SHARED = "async.shared"
    TENSORMAP = "tensormap_generic"


class SharedSpace(StrEnum):
    CTA = "cta"
    CLUSTER = "cluster"


class MMAIntOverflow(StrEnum):
    WRAPPED = "wrapped"
    SATFINITE = "satfinite"


class _AngleSyntax:
    """The syntax of an enum attribute printed `#nvvm.<name><value>` (`#nvvm.mma_layout<row>`),
    as upstream's assembly formats `<$value>`; inside the mma_async syntax only `<value>`."""

    data: StrEnum
    enum_type: ClassVar[type[StrEnum]]

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> StrEnum:
        parser.parse_punctuation("<")
        value = parser.parse_str_enum(cls.enum_type)
        parser.parse_punctuation(">")
        return value

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")


@irdl_attr_definition
class MMALayoutAttr(_AngleSyntax, EnumAttribute[MMALayout]):  # type: ignore[misc]
    name = "nvvm.mma_layout"


@irdl_attr_definition
class WGMMAScaleInAttr(_AngleSyntax, EnumAttribute[WGMMAScaleIn]):  # type: ignore[misc]
    name = "nvvm.wgmma_scale_in"


@irdl_attr_definition
class WGMMAScaleOutAttr(_AngleSyntax, EnumAttribute[WGMMAScaleOut]):  # type: ignore[misc]
    name = "nvvm.wgmma_scale_out"


@irdl_attr_definition
class WGMMATypeAttr(_AngleSyntax, EnumAttribute[WGMMAType]):  # type: ignore[misc]
    name = "nvvm.wgmma_type"


@irdl_attr_definition
class MMAIntOverflowAttr(_AngleSyntax, EnumAttribute[MMAIntOverflow]):  # type: ignore[misc]
    name = "nvvm.mma_int_overflow"


@irdl_attr_definition
class ProxyKindAttr(_AngleSyntax, EnumAttribute[ProxyKind]):  # type: ignore[misc]
    name = "nvvm.proxy_kind"


@irdl_attr_definition
class SharedSpaceAttr(_AngleSyntax, EnumAttribute[SharedSpace]):  # type: ignore[misc]
    name = "nvvm.shared_space"


@irdl_attr_definition
class MMAShapeAttr(ParametrizedAttribute):
    """`#nvvm.shape<m = 64, n = 128, k = 16>`."""

    name = "nvvm.shape"
    m: IntegerAttr = param_def(IntegerAttr)  # type: ignore[arg-type]
    n: IntegerAttr = param_def(IntegerAttr)  # type: ignore[arg-type]
    k: IntegerAttr = param_def(IntegerAttr)  # type: ignore[arg-type]

    def __init__(self, m: int, n: int, k: int) -> None:
        super().__init__(*(IntegerAttr(v, IntegerType(32)) for v in (m, n, k)))

    @property
    def mnk(self) -> tuple[int, int, int]:
        return (self.m.value.data, self.n.value.data, self.k.value.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        values: list[Attribute] = []
        for index, key in enumerate("mnk"):
            if index:
                parser.parse_punctuation(",")
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            values.append(IntegerAttr(parser.parse_integer(allow_boolean=False),
                                      IntegerType(32)))
        parser.parse_punctuation(">")
        return values

    def print_parameters(self, printer: Printer) -> None:
        m, n, k = self.mnk
        printer.print_string(f"<m = {m}, n = {n}, k = {k}>")


@irdl_op_definition
class WgmmaFenceAlignedOp(NoOperandOp):
    """`nvvm.wgmma.fence.aligned`: PTX `wgmma.fence.sync.aligned`."""

    name = "nvvm.wgmma.fence.aligned"


@irdl_op_definition
class WgmmaCommitGroupOp(NoOperandOp):
    """`nvvm.wgmma.commit.group.sync.aligned`: PTX `wgmma.commit_group.sync.aligned`."""

    name = "nvvm.wgmma.commit.group.sync.aligned"


@irdl_op_definition
class WgmmaWaitGroupOp(IRDLOperation):
    """`nvvm.wgmma.wait.group.sync.aligned N`: PTX `wgmma.wait_group.sync.aligned N`."""

    name = "nvvm.wgmma.wait.group.sync.aligned"
    group = prop_def(IntegerAttr)

    def __init__(self, group: int) -> None:
        super().__init__(properties={"group": IntegerAttr(group, i64)})

    @property
    def pending(self) -> int:
        return int(self.group.value.data)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        op = cls(parser.parse_integer(allow_boolean=False, allow_negative=False))
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pending}")
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        if self.group.type != i64:
            raise VerifyException(f"'{self.name}' op attribute 'group' failed to satisfy "
                                  "constraint: 64-bit signless integer attribute")


@irdl_op_definition
class FenceProxyOp(IRDLOperation):
    """`nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space =
    #nvvm.shared_space<cta>}`: PTX `fence.proxy.<kind>`, ordering this thread's memory accesses
    through the generic proxy (ld/st, cp.async) with those of another proxy: `async` kinds are
    the one wgmma reads its shared memory operands through."""

    name = "nvvm.fence.proxy"
    kind = prop_def(ProxyKindAttr)
    space = opt_prop_def(SharedSpaceAttr)

    def __init__(self, kind: str = "async.shared", space: str | None = "cta") -> None:
        props: dict[str, Attribute] = {"kind": ProxyKindAttr(ProxyKind(kind))}
        if space is not None:
            props["space"] = SharedSpaceAttr(SharedSpace(space))
        super().__init__(properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = dict(parser.parse_optional_attr_dict())
        props: dict[str, Attribute] = {key: attrs.pop(key) for key in ("kind", "space")
                                       if key in attrs}
        return cls.create(properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        props: dict[str, Attribute] = {"kind": self.kind}
        if self.space is not None:
            props["space"] = self.space
        print_attr_dict(printer, {**props, **self.attributes})

    @property
    def proxy(self) -> ProxyKind:
        return ProxyKind(self.kind.data)

    def verify_(self) -> None:
        if self.proxy == ProxyKind.ASYNC_SHARED and self.space is None:
            raise VerifyException(f"'{self.name}' op async_shared fence requires space "
                                  "attribute")
        if self.proxy != ProxyKind.ASYNC_SHARED and self.space is not None:
            raise VerifyException(f"'{self.name}' op only async_shared fence can have space "
                                  "attribute")


def fence_proxy_lowering_error(op: FenceProxyOp) -> str | None:
    """Why the backends cannot lower this fence (None when they can): the async kinds only, the
    shared one at cta scope."""
    if op.proxy not in (ProxyKind.ASYNC, ProxyKind.ASYNC_GLOBAL, ProxyKind.ASYNC_SHARED):
        return f"proxy kind {op.proxy.value} is not supported (only async, async.global, " \
            "async.shared)"
    if op.space is not None and SharedSpace(op.space.data) != SharedSpace.CTA:
        return "space cluster is not supported (only cta)"
    return None


_INPUT_K = {WGMMAType.F16: 16, WGMMAType.BF16: 16, WGMMAType.TF32: 8, WGMMAType.E4M3: 32,
            WGMMAType.E5M2: 32, WGMMAType.S8: 32, WGMMAType.U8: 32}
"""The k of m64nNkK per input type (PTX's wgmma shapes)."""

_VALID = {
    WGMMAType.F16: {WGMMAType.F16, WGMMAType.F32}, WGMMAType.BF16: {WGMMAType.F32},
    WGMMAType.TF32: {WGMMAType.F32}, WGMMAType.E4M3: {WGMMAType.F16, WGMMAType.F32},
    WGMMAType.E5M2: {WGMMAType.F16, WGMMAType.F32}, WGMMAType.S8: {WGMMAType.S32},
    WGMMAType.U8: {WGMMAType.S32},
}
"""Input type -> accumulator types PTX accepts."""

_FP8 = (WGMMAType.E4M3, WGMMAType.E5M2)


def _valid_n(type_a: WGMMAType) -> tuple[int, ...]:
    if type_a in (WGMMAType.S8, WGMMAType.U8):
        return (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
    return tuple(range(8, 257, 8))


def _enum(parser: Parser, cls: type[_AngleSyntax]) -> Attribute:
    return cls(cls.parse_parameter(parser))  # type: ignore[call-arg, return-value]


@irdl_op_definition
class WgmmaMmaAsyncOp(IRDLOperation):
    """`%d = nvvm.wgmma.mma_async %descA, %descB, %c, <m = 64, n = N, k = K>, D[<td>, <sd>
    (, <overflow>)], A[<ta>, <sa>, <layout>], B[<tb>, <sb>, <layout>] : C -> D`."""

    name = "nvvm.wgmma.mma_async"
    inouts = operand_def(LLVMStructType)
    descriptorA = operand_def(i64)
    descriptorB = operand_def(i64)
    shape = prop_def(MMAShapeAttr)
    typeA = prop_def(WGMMATypeAttr)
    typeB = prop_def(WGMMATypeAttr)
    typeD = prop_def(WGMMATypeAttr)
    scaleD = prop_def(WGMMAScaleOutAttr)
    scaleA = prop_def(WGMMAScaleInAttr)
    scaleB = prop_def(WGMMAScaleInAttr)
    layoutA = prop_def(MMALayoutAttr)
    layoutB = prop_def(MMALayoutAttr)
    satfinite = opt_prop_def(MMAIntOverflowAttr)
    res = result_def(LLVMStructType)

    def __init__(self, desc_a: SSAValue, desc_b: SSAValue, acc: SSAValue, n: int,
                 type_ab: str = "f16", scale_d: str = "one",
                 layout_a: str = "row", layout_b: str = "col",
                 scale_a: str = "one", scale_b: str = "one") -> None:
        props: dict[str, Attribute] = {
            "shape": MMAShapeAttr(64, n, _INPUT_K[WGMMAType(type_ab)]),
            "typeA": WGMMATypeAttr(WGMMAType(type_ab)),
            "typeB": WGMMATypeAttr(WGMMAType(type_ab)),
            "typeD": WGMMATypeAttr(WGMMAType.F32),
            "scaleD": WGMMAScaleOutAttr(WGMMAScaleOut(scale_d)),
            "scaleA": WGMMAScaleInAttr(WGMMAScaleIn(scale_a)),
            "scaleB": WGMMAScaleInAttr(WGMMAScaleIn(scale_b)),
            "layoutA": MMALayoutAttr(MMALayout(layout_a)),
            "layoutB": MMALayoutAttr(MMALayout(layout_b)),
        }
        super().__init__(operands=[acc, desc_a, desc_b], result_types=[acc.type],
                         properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        names = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            names.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(",")
        shape = MMAShapeAttr.new(MMAShapeAttr.parse_parameters(parser))
        props: dict[str, Attribute] = {"shape": shape}
        parser.parse_punctuation(",")
        parser.parse_keyword("D")
        parser.parse_punctuation("[")
        props["typeD"] = _enum(parser, WGMMATypeAttr)
        parser.parse_punctuation(",")
        props["scaleD"] = _enum(parser, WGMMAScaleOutAttr)
        if parser.parse_optional_punctuation(",") is not None:
            props["satfinite"] = _enum(parser, MMAIntOverflowAttr)
        parser.parse_punctuation("]")
        for which in "AB":
            parser.parse_punctuation(",")
            parser.parse_keyword(which)
            parser.parse_punctuation("[")
            props[f"type{which}"] = _enum(parser, WGMMATypeAttr)
            parser.parse_punctuation(",")
            props[f"scale{which}"] = _enum(parser, WGMMAScaleInAttr)
            parser.parse_punctuation(",")
            props[f"layout{which}"] = _enum(parser, MMALayoutAttr)
            parser.parse_punctuation("]")
        attrs = dict(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation("->")
        out_type = parser.parse_type()
        desc_a, desc_b, acc = (parser.resolve_operand(name, ty)
                               for name, ty in zip(names, (i64, i64, in_type), strict=True))
        return cls.create(operands=[acc, desc_a, desc_b], result_types=[out_type],
                          properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.descriptorA, self.descriptorB, self.inouts],
                           printer.print_operand)
        printer.print_string(", ")
        self.shape.print_parameters(printer)
        printer.print_string(", D[")
        self.typeD.print_parameter(printer)
        printer.print_string(", ")
        self.scaleD.print_parameter(printer)
        if self.satfinite is not None:
            printer.print_string(", ")
            self.satfinite.print_parameter(printer)
        for which, ty, scale, layout in (("A", self.typeA, self.scaleA, self.layoutA),
                                         ("B", self.typeB, self.scaleB, self.layoutB)):
            printer.print_string(f"], {which}[")
            ty.print_parameter(printer)
            printer.print_string(", ")
            scale.print_parameter(printer)
            printer.print_string(", ")
            layout.print_parameter(printer)
        printer.print_string("]")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.inouts.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    @property
    def n(self) -> int:
        return self.shape.mnk[1]

    @property
    def types(self) -> tuple[WGMMAType, WGMMAType, WGMMAType]:
        """(A, B, D) element types."""
        return (WGMMAType(self.typeA.data), WGMMAType(self.typeB.data),
                WGMMAType(self.typeD.data))

    def verify_(self) -> None:
        """Upstream's WgmmaMmaAsyncOp::verify, message for message."""
        if self.inouts.type != self.res.type:
            raise VerifyException(f"'{self.name}' op failed to verify that input struct and "
                                  "result struct must be the same type")
        struct = self.res.type
        assert isinstance(struct, LLVMStructType)
        elems = list(struct.types.data)
        type_a, type_b, type_d = self.types
        for elem in elems:
            if elem != elems[0]:
                raise VerifyException(f"'{self.name}' op all elements in struct must be same "
                                      f"type but there is '{elem}'")
        if type_d not in (WGMMAType.F32, WGMMAType.F16, WGMMAType.S32):
            raise VerifyException(f"'{self.name}' op does not support the given output type "
                                  f"{type_d.value}")
        if type_a != type_b and not (type_a in _FP8 and type_b in _FP8):
            raise VerifyException(f"'{self.name}' op {type_d.value} += {type_a.value} * "
                                  f"{type_b.value}, it is not supported.")
        if type_d not in _VALID[type_a]:
            raise VerifyException(f"'{self.name}' op {type_d.value} += {type_a.value} * "
                                  f"{type_b.value}, it is not supported.")
        self._verify_shape(type_a, type_d, len(elems))
        if self.satfinite is not None and type_d != WGMMAType.S32 and \
                MMAIntOverflow(self.satfinite.data) == MMAIntOverflow.SATFINITE:
            # upstream's message has two spaces after "op"; a VerifyError keeps them (the
            # verifier folds the whitespace of other exceptions)
            raise VerifyError(f"'{self.name}' op  `satfinite` can be only used with s32 "
                              f"accumulator, however the current accumulator is "
                              f"{type_d.value}", nearest_location(self))
        transposed = (MMALayout(self.layoutA.data) != MMALayout.ROW
                      or MMALayout(self.layoutB.data) != MMALayout.COL)
        if transposed and type_a not in (WGMMAType.F16, WGMMAType.BF16):
            raise VerifyException(
                f"'{self.name}' op given layouts layout_a = {self.layoutA.data.value} and "
                f"layout_b = {self.layoutB.data.value} for input types {type_a.value} and "
                f"{type_b.value} requires transpose. However, this is only supported for: "
                "f16 and bf16")

    def _verify_shape(self, type_a: WGMMAType, type_d: WGMMAType, count: int) -> None:
        m, n, k = self.shape.mnk
        if m != 64:
            raise VerifyException(f"'{self.name}' op shape 'm' must be 64")
        if k != _INPUT_K[type_a]:
            raise VerifyException(f"'{self.name}' op shape 'k' must be {_INPUT_K[type_a]} for "
                                  f"input type {type_a.value}")
        if n not in _valid_n(type_a):
            raise VerifyException(f"'{self.name}' op has input type {type_a.value} n is set to "
                                  f"{n}, it is not supported.")
        expected = n // 4 if type_d == WGMMAType.F16 else n // 2
        if count != expected:
            raise VerifyException(f"'{self.name}' op results {expected}, however output struct "
                                  f"has {count} elements")


def mma_async_lowering_error(op: WgmmaMmaAsyncOp) -> str | None:
    """Why the backends cannot lower this mma_async (None when they can): f16 or bf16 inputs
    and an f32 accumulator only."""
    type_a, _, type_d = op.types
    if type_a not in (WGMMAType.F16, WGMMAType.BF16) or type_d != WGMMAType.F32:
        return (f"{type_d.value} += {type_a.value} * {type_a.value} is not supported (only f32 "
                "+= f16 * f16 or bf16 * bf16)")
    return None


WGMMA_OPS: tuple[type[IRDLOperation], ...] = (WgmmaFenceAlignedOp, WgmmaCommitGroupOp,
                                               WgmmaWaitGroupOp, WgmmaMmaAsyncOp, FenceProxyOp)
"""The ops of this module, for the `nvvm` dialect's op list."""

WGMMA_ATTRS: tuple[type[Attribute], ...] = (MMALayoutAttr, WGMMAScaleInAttr, WGMMAScaleOutAttr,
                                             WGMMATypeAttr, MMAIntOverflowAttr, MMAShapeAttr,
                                             ProxyKindAttr, SharedSpaceAttr)

__all__ = ["WARPGROUP_SIZE", "WGMMA_ATTRS", "WGMMA_OPS", "FenceProxyOp", "MMALayout",
           "ProxyKind", "WGMMAScaleIn", "WGMMAScaleOut", "WGMMAType", "WgmmaCommitGroupOp",
           "WgmmaFenceAlignedOp", "WgmmaMmaAsyncOp", "WgmmaWaitGroupOp",
           "fence_proxy_lowering_error", "mma_async_lowering_error"]
