"""Device-side ops of Nova's `gpu` dialect: barrier, shuffle, reductions, printf, terminators
(the index queries live in `gpu_index_ops` and are re-exported here).

Each op parses and prints MLIR's custom assembly (as `mlir-opt` of LLVM 22 prints it, including
its double spaces, e.g. `gpu.thread_id  x`), and its properties carry MLIR's generic-form names
(`dimension`, `upper_bound`, `mode`, `op`, `uniform`, `cluster_size`, `cluster_stride`, `format`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    VectorType,
    i1,
    i32,
)
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AllReduceOperation,
    AllReduceOperationAttr,
    NoOperandOp,
    ShuffleMode,
    ShuffleModeAttr,
    UnprefixedVerifyError,
    print_attr_dict,
    verify_reduction_type,
)
from nova.ir.gpu.index_ops import (
    BlockDimOp,
    BlockIdOp,
    ClusterBlockIdOp,
    ClusterDimBlocksOp,
    ClusterDimOp,
    ClusterIdOp,
    DynamicSharedMemoryOp,
    GlobalIdOp,
    GridDimOp,
    LaneIdOp,
    NumSubgroupsOp,
    SubgroupIdOp,
    SubgroupSizeOp,
    ThreadIdOp,
)

# ---- synchronisation and terminators ---------------------------------------------------------


@irdl_op_definition
class BarrierOp(NoOperandOp):
    """`gpu.barrier`: all threads of the block wait here (and see each other's writes)."""

    name = "gpu.barrier"


@irdl_op_definition
class TerminatorOp(NoOperandOp):
    """`gpu.terminator`: ends a `gpu.launch` body."""

    name = "gpu.terminator"
    traits = traits_def(IsTerminator())

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None or parent.name != "gpu.launch":
            raise VerifyException("'gpu.terminator' op expects parent op 'gpu.launch'")


class _ValuesTerminator(IRDLOperation):
    """`gpu.return`/`gpu.yield`: `attr-dict ($values^ : types)?`."""

    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[list(values)])

    assembly_format = "attr-dict ($values^ `:` type($values))?"


@irdl_op_definition
class ReturnOp(_ValuesTerminator):
    name = "gpu.return"

    def verify_(self) -> None:
        from nova.ir.gpu.module_ops import FuncOp

        func = self.parent_op()
        while func is not None and not isinstance(func, FuncOp):
            func = func.parent_op()
        if func is None:
            raise VerifyException("'gpu.return' op expects parent op 'gpu.func'")
        expected = tuple(func.function_type.outputs.data)
        got = tuple(v.type for v in self.values)
        if expected != got:
            raise VerifyException(
                f"'gpu.return' op returns ({', '.join(map(str, got))}) but the enclosing "
                f"gpu.func returns ({', '.join(map(str, expected))})")


@irdl_op_definition
class YieldOp(_ValuesTerminator):
    name = "gpu.yield"


# ---- warp and block collectives --------------------------------------------------------------


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """`gpu.shuffle  xor %v, %offset, %width : f32` -> (shuffleResult, valid: i1)."""

    name = "gpu.shuffle"
    value = operand_def()
    offset = operand_def(i32)
    width = operand_def(i32)
    mode = prop_def(ShuffleModeAttr)
    shuffleResult = result_def()
    valid = result_def(i1)
    traits = traits_def(Pure())

    def __init__(self, mode: str | ShuffleMode, value: SSAValue, offset: SSAValue,
                 width: SSAValue) -> None:
        super().__init__(operands=[value, offset, width], result_types=[value.type, i1],
                         properties={"mode": ShuffleModeAttr(ShuffleMode(mode))})

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        mode = parser.parse_str_enum(ShuffleMode)
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_operand(i32)
        parser.parse_punctuation(",")
        width = parser.parse_operand(i32)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(mode, parser.resolve_operand(value, parser.parse_type()), offset, width)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f"  {self.mode.data.value} ")
        printer.print_list([self.value, self.offset, self.width], printer.print_operand)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    def verify_(self) -> None:
        t = self.value.type
        elem = t.element_type if isinstance(t, VectorType) else t
        ok = isinstance(elem, AnyFloat | IntegerType) and (
            not isinstance(t, VectorType) or len(t.get_shape()) == 1)
        if not ok:
            raise VerifyException(
                "'gpu.shuffle' op operand #0 must be Integer or Float or fixed-length vector "
                f"of Integer or Float values of ranks 1, but got '{t}'")
        if self.shuffleResult.type != t:
            raise VerifyException("'gpu.shuffle' op failed to verify that all of {value, "
                                  "shuffleResult} have same type")


def _parse_reduction_op(parser: Parser) -> AllReduceOperation | None:
    """An optional reduction kind; another bare word is upstream's `invalid op kind`."""
    word = parser.parse_optional_identifier()
    if word is None:
        return None
    if word not in {k.value for k in AllReduceOperation}:
        parser.raise_error("custom op 'gpu.all_reduce' invalid op kind", parser.pos,
                           parser.pos + 1)
    return AllReduceOperation(word)


@irdl_op_definition
class AllReduceOp(IRDLOperation):
    """`gpu.all_reduce  add %v uniform {} : (f32) -> f32`, or with a custom reduction region."""

    name = "gpu.all_reduce"
    value = operand_def()
    op = opt_prop_def(AllReduceOperationAttr)
    uniform = opt_prop_def(UnitAttr)
    result = result_def()
    body = region_def()

    def __init__(self, value: SSAValue, op: str | AllReduceOperation | None = None,
                 body: Region | None = None, uniform: bool = False) -> None:
        props: dict[str, Attribute | None] = {}
        if op is not None:
            props["op"] = AllReduceOperationAttr(AllReduceOperation(op))
        if uniform:
            props["uniform"] = UnitAttr()
        super().__init__(operands=[value], result_types=[value.type], properties=props,
                         regions=[body if body is not None else Region()])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = _parse_reduction_op(parser)
        value = parser.parse_unresolved_operand()
        uniform = parser.parse_optional_keyword("uniform") is not None
        body = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        pos = parser.pos
        (operand,) = parser.resolve_operands([value], ftype.inputs.data, pos)
        op = cls(operand, kind, body, uniform)
        if list(ftype.outputs.data) != [operand.type]:
            parser.raise_error("gpu.all_reduce result type must equal its operand type")
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string("  ")
        if self.op is not None:
            printer.print_string(f"{self.op.data.value} ")
        printer.print_operand(self.value)
        if self.uniform is not None:
            printer.print_string(" uniform")
        printer.print_string(" ")
        printer.print_region(self.body)
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        printer.print_attribute(self.value.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if self.result.type != self.value.type:
            raise VerifyException("'gpu.all_reduce' op result type must match operand type")

    def verify_regions_(self) -> None:
        """Upstream's verifyRegions (after the body's ops), with its messages."""
        has_body = bool(self.body.blocks)
        if has_body == (self.op is not None):
            raise UnprefixedVerifyError("expected either an op attribute or a non-empty body")
        if self.op is not None:
            verify_reduction_type(self.op.data, self.value.type, "gpu.all_reduce")
            return
        block = self.body.blocks[0]
        t = self.value.type
        if len(block.args) != 2:
            raise UnprefixedVerifyError("expected two region arguments")
        if block.arg_types != (t, t):
            raise UnprefixedVerifyError("incorrect region argument type")
        yields = 0
        for blk in self.body.blocks:
            last = blk.last_op
            if isinstance(last, YieldOp):
                if len(last.values) != 1:
                    raise UnprefixedVerifyError("expected one gpu.yield operand")
                if last.values[0].type != t:
                    raise UnprefixedVerifyError("incorrect gpu.yield type")
                yields += 1
        if not yields:
            raise UnprefixedVerifyError("expected gpu.yield op in region")


@irdl_op_definition
class SubgroupReduceOp(IRDLOperation):
    """`gpu.subgroup_reduce  add %v (uniform)? (cluster(size = N (, stride = S)?))? : (T) -> T`."""

    name = "gpu.subgroup_reduce"
    value = operand_def()
    op = prop_def(AllReduceOperationAttr)
    uniform = opt_prop_def(UnitAttr)
    cluster_size = opt_prop_def(IntegerAttr)
    cluster_stride = prop_def(IntegerAttr)
    result = result_def()

    def __init__(self, value: SSAValue, op: str | AllReduceOperation, uniform: bool = False,
                 cluster_size: int | None = None, cluster_stride: int = 1) -> None:
        props: dict[str, Attribute | None] = {
            "op": AllReduceOperationAttr(AllReduceOperation(op)),
            "cluster_stride": IntegerAttr(cluster_stride, i32),
        }
        if uniform:
            props["uniform"] = UnitAttr()
        if cluster_size is not None:
            props["cluster_size"] = IntegerAttr(cluster_size, i32)
        super().__init__(operands=[value], result_types=[value.type], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        kind = parser.parse_str_enum(AllReduceOperation)
        value = parser.parse_unresolved_operand()
        uniform = parser.parse_optional_keyword("uniform") is not None
        size, stride = None, 1
        if parser.parse_optional_keyword("cluster") is not None:
            parser.parse_punctuation("(")
            parser.parse_keyword("size")
            parser.parse_punctuation("=")
            size = parser.parse_integer()
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("stride")
                parser.parse_punctuation("=")
                stride = parser.parse_integer()
            parser.parse_punctuation(")")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        pos = parser.pos
        (operand,) = parser.resolve_operands([value], ftype.inputs.data, pos)
        op = cls(operand, kind, uniform, size, stride)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f"  {self.op.data.value} ")
        printer.print_operand(self.value)
        if self.uniform is not None:
            printer.print_string(" uniform")
        if self.cluster_size is not None:
            printer.print_string(f" cluster(size = {self.cluster_size.value.data}")
            if self.cluster_stride.value.data != 1:
                printer.print_string(f", stride = {self.cluster_stride.value.data}")
            printer.print_string(")")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        printer.print_attribute(self.value.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if self.result.type != self.value.type:
            raise VerifyException("'gpu.subgroup_reduce' op result type must match operand "
                                  "type")
        t = self.value.type
        elem = t.element_type if isinstance(t, VectorType) else t
        if not isinstance(elem, AnyFloat | IntegerType | IndexType) or (
                isinstance(t, VectorType) and len(t.get_shape()) != 1):
            raise VerifyException(
                "'gpu.subgroup_reduce' op operand #0 must be Integer or Float or fixed-length "
                f"vector of Integer or Float values of ranks 1, but got '{t}'")
        verify_reduction_type(self.op.data, elem, "gpu.subgroup_reduce", t)
        for name, attr in (("cluster_size", self.cluster_size),
                           ("cluster_stride", self.cluster_stride)):
            if attr is None:
                continue
            n = attr.value.data
            if n <= 0 or n & (n - 1):
                raise VerifyException(f"'gpu.subgroup_reduce' op {name} must be a power of "
                                      "two")


# ---- printf ----------------------------------------------------------------------------------


_CONVERSION = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?"
    r"(?P<length>hh|h|ll|l|j|z|t|L|q)?(?P<conv>.?)", re.DOTALL)
_INT_CONVERSIONS = frozenset("diouxXc")
_FLOAT_CONVERSIONS = frozenset("fFeEgGaA")
_SUPPORTED = ("d i o u x X c for integers (with h/hh or none up to 32 bits, l/ll/j/z/t for "
              "64 bits and index), f F e E g G a A for floats, %%")


def printf_conversions(fmt: str) -> list[tuple[str, str, str]]:
    """The (text, length modifier, conversion) of each argument-consuming conversion in a
    printf format; raises VerifyException for a conversion gpu.printf cannot pass (strings,
    pointers, %n, `*` widths, unknown letters, a trailing `%`)."""
    found: list[tuple[str, str, str]] = []
    index = fmt.find("%")
    while index != -1:
        match = _CONVERSION.match(fmt, index)
        assert match is not None  # every part of the pattern is optional
        text, conv = match.group(0), match.group("conv")
        if text == "%%":
            index = fmt.find("%", match.end())
            continue
        if not conv:
            raise VerifyException("'gpu.printf' op format ends in an incomplete conversion "
                                  f"'{text}'")
        if "*" in (match.group("width") or "") + (match.group("precision") or ""):
            raise VerifyException(f"'gpu.printf' op conversion '{text}': '*' widths and "
                                  "precisions are not supported")
        if conv not in _INT_CONVERSIONS and conv not in _FLOAT_CONVERSIONS:
            raise VerifyException(f"'gpu.printf' op conversion '{text}' is not supported "
                                  f"(gpu.printf arguments are numbers; supported: {_SUPPORTED})")
        found.append((text, match.group("length") or "", conv))
        index = fmt.find("%", match.end())
    return found


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _check_printf_argument(number: int, conversion: tuple[str, str, str], ty: Attribute) -> None:
    """Raise unless the `number`th (1-based) conversion can print an argument of type `ty`."""
    text, length, conv = conversion
    where = f"'gpu.printf' op conversion '{text}' does not match argument #{number} of type {ty}"
    if isinstance(ty, AnyFloat):
        if conv not in _FLOAT_CONVERSIONS or length not in ("", "l"):
            raise VerifyException(f"{where} (floats are passed as double: use %f, %e, %g or "
                                  "%a)")
        return
    bits = 64 if isinstance(ty, IndexType) else ty.width.data if isinstance(ty, IntegerType) \
        else 0
    if conv not in _INT_CONVERSIONS:
        raise VerifyException(f"{where} (integers print with %d, %i, %u, %o, %x, %X or %c)")
    if bits <= 32:
        if length not in ("", "h", "hh"):
            raise VerifyException(f"{where} (an integer of up to 32 bits is passed as int: no "
                                  "length modifier, or h/hh)")
    elif bits == 64:
        if length not in ("l", "ll", "j", "z", "t", "q") or conv == "c":
            raise VerifyException(f"{where} (a 64-bit integer or index needs a 64-bit "
                                  "conversion: %ld, %lld, %lu, %lx, ...)")
    else:
        raise VerifyException(f"'gpu.printf' op argument #{number} of type {ty} cannot be "
                              "printed (integers of up to 32 bits or of 64 bits)")


@irdl_op_definition
class PrintfOp(IRDLOperation):
    """`gpu.printf "fmt", %a, %b : i32, f32`: device-side printf.

    The verifier checks the format against the arguments (upstream does not): one conversion
    per argument, of its kind and size after C's vararg promotion (as the NVPTX vprintf and the
    CPU device's printf receive them), and no conversion that would read a string or pointer
    (`%s`, `%p`, `%n`) or an extra argument (`*`)."""

    name = "gpu.printf"
    format = prop_def(StringAttr)
    args = var_operand_def()

    def __init__(self, format: str, args: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[list(args)], properties={"format": StringAttr(format)})

    assembly_format = "$format attr-dict (`,` $args^ `:` type($args))?"

    def verify_(self) -> None:
        for arg in self.args:
            if not isinstance(arg.type, IntegerType | IndexType | AnyFloat):
                raise VerifyException(
                    f"'gpu.printf' op operand must be an integer, index or float, got "
                    f"{arg.type}")
        conversions = printf_conversions(self.format.data)
        if len(conversions) != len(self.args):
            raise VerifyException(
                f"'gpu.printf' op format has {_count(len(conversions), 'conversion')} but "
                f"{_count(len(self.args), 'argument')} (each argument needs exactly one)")
        for number, (conversion, arg) in enumerate(zip(conversions, self.args, strict=True)):
            _check_printf_argument(number + 1, conversion, arg.type)


KERNEL_OPS: tuple[type[IRDLOperation], ...] = (
    ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp, GlobalIdOp, ClusterIdOp, ClusterDimOp,
    ClusterDimBlocksOp, ClusterBlockIdOp, LaneIdOp, SubgroupIdOp, SubgroupSizeOp,
    NumSubgroupsOp, BarrierOp, TerminatorOp, ReturnOp, YieldOp, ShuffleOp, AllReduceOp,
    SubgroupReduceOp, DynamicSharedMemoryOp, PrintfOp,
)
