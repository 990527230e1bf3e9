"""A basic `nvvm` dialect: the NVVM ops that upstream MLIR kernels use directly.

`convert-gpu-to-nvvm` output and hand-written kernels read PTX special registers, synchronise
and exchange values with NVVM ops rather than `gpu.*` ones. Nova parses and prints the common
ones with MLIR 22's exact custom syntax (as `mlir-opt` prints it, double spaces included) and
lowers them inside kernels on both device targets (`nova.backends.cpu.nvvm`):

- `nvvm.read.ptx.sreg.{tid,ntid,ctaid,nctaid}.{x,y,z}`, `.laneid`, `.warpsize`, `.clock`
  (i32) and `.clock64`, `.globaltimer` (i64): `%r = nvvm.read.ptx.sreg.tid.x : i32`;
- `nvvm.barrier0`;
- `nvvm.shfl.sync  bfly %mask, %value, %offset, %c : f32 -> f32` (kinds bfly/up/down/idx, with
  PTX's packed clamp/segment operand `c`);
- `nvvm.vote.sync  ballot %mask, %pred -> i32` (and `any`/`all`/`uni` -> i1);
- `nvvm.bar.warp.sync %mask : i32` (`__syncwarp`);
- `nvvm.match.sync  any %mask, %val : i32 -> i32` (or i64 values; `__match_any_sync`).

Not supported (rejected where written): the `range <...>` annotation of register reads and
`return_value_and_is_valid` shuffles and `match.sync all` (their `!llvm.struct` results need
the llvm dialect).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects.builtin import IntegerType, f32, i1, i32
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from nova.ir.gpu.base import NoOperandOp, print_attr_dict
from nova.ir.gpu.binary_ops import NVVMTargetAttr


class ShflKind(StrEnum):
    """MLIR's `NVVM::ShflKind`: the PTX `shfl.sync` modes."""

    BFLY = "bfly"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


class VoteSyncKind(StrEnum):
    """MLIR's `NVVM::VoteSyncKind`: the PTX `vote.sync` modes."""

    ANY = "any"
    ALL = "all"
    BALLOT = "ballot"
    UNI = "uni"


class MatchSyncKind(StrEnum):
    """MLIR's `NVVM::MatchSyncKind`: the PTX `match.sync` modes (Nova lowers `any`)."""

    ANY = "any"
    ALL = "all"


@irdl_attr_definition
class MatchSyncKindAttr(EnumAttribute[MatchSyncKind], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<match_sync_kind any>`."""

    name = "nvvm.match_sync_kind"


@irdl_attr_definition
class ShflKindAttr(EnumAttribute[ShflKind], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<shfl_kind bfly>`."""

    name = "nvvm.shfl_kind"


@irdl_attr_definition
class VoteSyncKindAttr(EnumAttribute[VoteSyncKind], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<vote_sync_kind ballot>`."""

    name = "nvvm.vote_sync_kind"


# ---- special registers -----------------------------------------------------------------------


class SpecialRegisterOp(IRDLOperation):
    """`%r = nvvm.read.ptx.sreg.<register> : i32`: read one PTX special register.

    `REGISTER` is the PTX name after `%` (e.g. `tid.x`); `WIDTH` its bit width (32 or 64)."""

    REGISTER: ClassVar[str]
    WIDTH: ClassVar[int]
    res = result_def(IntegerType)
    traits = traits_def(Pure())

    def __init__(self) -> None:
        super().__init__(result_types=[IntegerType(self.WIDTH)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        if parser.parse_optional_keyword("range") is not None:
            parser.raise_error(f"'{cls.name}' with a `range` annotation is not supported by Nova")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ty = parser.parse_type()
        if ty != IntegerType(cls.WIDTH):
            # upstream accepts any integer type; Nova reads the register at its PTX width
            parser.raise_error(f"'{cls.name}' with result type {ty} is not supported by Nova "
                               f"(the register is read as i{cls.WIDTH})", pos, parser.pos)
        op = cls()
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.res.type)


def _sreg_op(register: str, width: int = 32) -> type[SpecialRegisterOp]:
    """The op class reading `%<register>` (a distinct IRDL op per register, as in MLIR)."""
    cls = type(f"Sreg_{register.replace('.', '_')}", (SpecialRegisterOp,), {
        "name": f"nvvm.read.ptx.sreg.{register}", "REGISTER": register, "WIDTH": width,
        "__doc__": f"`nvvm.read.ptx.sreg.{register} : i{width}`.",
    "__annotations__": {"REGISTER": "ClassVar[str]", "WIDTH": "ClassVar[int]"},
    })
    return irdl_op_definition(cls)


SREG_REGISTERS: tuple[tuple[str, int], ...] = (
    *((f"{reg}.{dim}", 32) for reg in ("tid", "ntid", "ctaid", "nctaid") for dim in "xyz"),
    ("laneid", 32), ("warpsize", 32), ("clock", 32), ("clock64", 64), ("globaltimer", 64),
)
"""(PTX register, bit width) of every special register Nova reads."""

SREG_OPS: tuple[type[SpecialRegisterOp], ...] = tuple(_sreg_op(r, w) for r, w in SREG_REGISTERS)


@irdl_op_definition
class Barrier0Op(NoOperandOp):
    """`nvvm.barrier0`: `bar.sync 0`, every thread of the block waits (as `gpu.barrier`)."""

    name = "nvvm.barrier0"


# ---- warp exchange and votes -----------------------------------------------------------------


def _resolve(parser: Parser, names: Sequence[UnresolvedOperand],
             types: Sequence[Attribute]) -> list[SSAValue]:
    return list(parser.resolve_operands(names, types, parser.pos))


def _print_kind_op(printer: Printer, op: ShflSyncOp | MatchSyncOp) -> None:
    """`  <kind> %operands {attrs} : <val type> -> <result type>` (nvvm.shfl.sync, match.sync)."""
    printer.print_string(f"  {op.kind.data.value} ")
    printer.print_list(op.operands, printer.print_operand)
    print_attr_dict(printer, op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.val.type)
    printer.print_string(" -> ")
    printer.print_attribute(op.res.type)


@irdl_op_definition
class ShflSyncOp(IRDLOperation):
    """`nvvm.shfl.sync  bfly %mask, %value, %offset, %c : f32 -> f32`: PTX `shfl.sync`.

    `c` packs PTX's segment mask (bits 8-12) and clamp (bits 0-4); lanes of `mask` take part.
    Without `return_value_and_is_valid` (unsupported) the op yields only the value."""

    name = "nvvm.shfl.sync"
    thread_mask = operand_def(i32)
    val = operand_def()
    offset = operand_def(i32)
    mask_and_clamp = operand_def(i32)
    kind = prop_def(ShflKindAttr)
    res = result_def()
    traits = traits_def(Pure())

    def __init__(self, kind: str | ShflKind, thread_mask: SSAValue, val: SSAValue,
                 offset: SSAValue, mask_and_clamp: SSAValue,
                 result_type: Attribute | None = None) -> None:
        super().__init__(operands=[thread_mask, val, offset, mask_and_clamp],
                         result_types=[val.type if result_type is None else result_type],
                         properties={"kind": ShflKindAttr(ShflKind(kind))})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = parser.parse_str_enum(ShflKind)
        names = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                  parser.parse_unresolved_operand)
        if len(names) != 4:
            parser.raise_error(f"'nvvm.shfl.sync' expects 4 operands, got {len(names)}")
        attrs = parser.parse_optional_attr_dict()
        if "return_value_and_is_valid" in attrs:
            parser.raise_error("'nvvm.shfl.sync' with return_value_and_is_valid is not "
                               "supported by Nova (use gpu.shuffle for the valid flag)")
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        mask, value, offset, c = _resolve(parser, names, [i32, value_type, i32, i32])
        op = cls(kind, mask, value, offset, c, result_type)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_kind_op(printer, self)

    def verify_(self) -> None:
        if self.res.type != self.val.type:
            raise VerifyException(f"'nvvm.shfl.sync' op expected return type to be of type "
                                  f"'{self.val.type}' but got '{self.res.type}' instead")
        if self.val.type not in (i32, f32):
            raise VerifyException("'nvvm.shfl.sync' op value must be i32 or f32, but got "
                                  f"{self.val.type}")


@irdl_op_definition
class VoteSyncOp(IRDLOperation):
    """`nvvm.vote.sync  ballot %mask, %pred -> i32` (`any`/`all`/`uni` -> i1): PTX `vote.sync`
    over the lanes of `mask`."""

    name = "nvvm.vote.sync"
    thread_mask = operand_def(i32)
    pred = operand_def(i1)
    kind = prop_def(VoteSyncKindAttr)
    res = result_def()
    traits = traits_def(Pure())

    def __init__(self, kind: str | VoteSyncKind, thread_mask: SSAValue, pred: SSAValue,
                 result_type: Attribute | None = None) -> None:
        k = VoteSyncKind(kind)
        if result_type is None:
            result_type = i32 if k == VoteSyncKind.BALLOT else i1
        super().__init__(operands=[thread_mask, pred], result_types=[result_type],
                         properties={"kind": VoteSyncKindAttr(k)})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = parser.parse_str_enum(VoteSyncKind)
        mask = parser.parse_operand(i32)
        parser.parse_punctuation(",")
        pred = parser.parse_operand(i1)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation("->")
        op = cls(kind, mask, pred, parser.parse_type())
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f"  {self.kind.data.value} ")
        printer.print_list(self.operands, printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        if self.kind.data == VoteSyncKind.BALLOT and self.res.type != i32:
            raise VerifyException("'nvvm.vote.sync' op vote.sync 'ballot' returns an i32")
        if self.kind.data != VoteSyncKind.BALLOT and self.res.type != i1:
            raise VerifyException("'nvvm.vote.sync' op vote.sync 'any', 'all' and 'uni' "
                                  "returns an i1")


@irdl_op_definition
class BarWarpSyncOp(IRDLOperation):
    """`nvvm.bar.warp.sync %mask : i32`: PTX `bar.warp.sync` (CUDA's `__syncwarp(mask)`): the
    lanes of `mask` wait for each other, and their shared/global memory accesses before it are
    visible to each other after it. Needed wherever lanes of one warp exchange data through
    memory: since Volta a warp's lanes may run apart between warp-collective instructions."""

    name = "nvvm.bar.warp.sync"
    thread_mask = operand_def(i32)

    def __init__(self, thread_mask: SSAValue) -> None:
        super().__init__(operands=[thread_mask])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        mask = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        op = cls(parser.resolve_operand(mask, ty))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.thread_mask)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.thread_mask.type)


@irdl_op_definition
class MatchSyncOp(IRDLOperation):
    """`nvvm.match.sync  any %mask, %val : i32 -> i32` (or `: i64 -> i32`): PTX
    `match.any.sync` (CUDA's `__match_any_sync`): the lanes of `mask` whose `val` equals the
    caller's. Only the `any` kind (`all` returns an `!llvm.struct`, which needs the llvm
    dialect)."""

    name = "nvvm.match.sync"
    thread_mask = operand_def(i32)
    val = operand_def()
    kind = prop_def(MatchSyncKindAttr)
    res = result_def(i32)
    traits = traits_def(Pure())

    def __init__(self, thread_mask: SSAValue, val: SSAValue) -> None:
        super().__init__(operands=[thread_mask, val], result_types=[i32],
                         properties={"kind": MatchSyncKindAttr(MatchSyncKind.ANY)})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        kind = parser.parse_str_enum(MatchSyncKind)
        if kind != MatchSyncKind.ANY:
            parser.raise_error("'nvvm.match.sync' all is not supported (only any)", pos,
                               parser.pos)
        mask = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        parser.parse_punctuation("->")
        parser.parse_type()
        op = cls(parser.resolve_operand(mask, i32), parser.resolve_operand(val, ty))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_kind_op(printer, self)

    def verify_(self) -> None:
        ty = self.val.type
        if not isinstance(ty, IntegerType) or ty.width.data not in (32, 64):
            raise VerifyException("'nvvm.match.sync' compares i32 or i64 values")
        if self.kind.data != MatchSyncKind.ANY:
            raise VerifyException("'nvvm.match.sync' all is not supported (only any)")


NVVM = Dialect("nvvm", [*SREG_OPS, Barrier0Op, BarWarpSyncOp, MatchSyncOp, ShflSyncOp,
                        VoteSyncOp],
               [MatchSyncKindAttr, ShflKindAttr, VoteSyncKindAttr, NVVMTargetAttr])
"""The `nvvm` ops Nova supports (see the module docstring)."""

__all__ = ["NVVM", "SREG_OPS", "SREG_REGISTERS", "BarWarpSyncOp", "Barrier0Op", "MatchSyncKind",
           "MatchSyncKindAttr", "MatchSyncOp", "ShflKind",
           "ShflKindAttr", "ShflSyncOp", "SpecialRegisterOp", "VoteSyncKind", "VoteSyncKindAttr",
           "VoteSyncOp"]
