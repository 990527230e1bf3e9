"""Device-side ops of Nova's `gpu` dialect: barrier, shuffle, reductions, printf, terminators
(the index queries live in `gpu_index_ops` and are re-exported here).

Each op parses and prints MLIR's custom assembly (as `mlir-opt` of LLVM 22 prints it, including
its double spaces, e.g. `gpu.thread_id  x`), and its properties carry MLIR's generic-form names
(`dimension`, `upper_bound`, `mode`, `op`, `uniform`, `cluster_size`, `cluster_stride`, `format`).
"""

from __future__ import annotations

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
                f"of Integer or Float values of ranks 1, but got {t}")
        if self.shuffleResult.type != t:
            raise VerifyException("'gpu.shuffle' op result type must match the value type")


def _parse_reduction_op(parser: Parser) -> AllReduceOperation | None:
    return parser.parse_optional_str_enum(AllReduceOperation)


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
        has_body = bool(self.body.blocks)
        if has_body == (self.op is not None):
            raise VerifyException(
                "'gpu.all_reduce' op expected either an op attribute or a non-empty body")
        if self.op is not None:
            verify_reduction_type(self.op.data, self.value.type, "gpu.all_reduce")
            return
        block = self.body.blocks[0]
        t = self.value.type
        if block.arg_types != (t, t):
            raise VerifyException(
                "'gpu.all_reduce' op expected two region arguments of the operand type")
        for blk in self.body.blocks:
            last = blk.last_op
            if isinstance(last, YieldOp):
                if tuple(v.type for v in last.values) != (t,):
                    raise VerifyException(
                        "'gpu.all_reduce' op expected gpu.yield op in region to yield one "
                        "value of the operand type")
            elif last is None or not last.successors:
                raise VerifyException("'gpu.all_reduce' op expected gpu.yield op in region")


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
        verify_reduction_type(self.op.data, t.element_type if isinstance(t, VectorType) else t,
                              "gpu.subgroup_reduce")
        for name, attr in (("cluster_size", self.cluster_size),
                           ("cluster_stride", self.cluster_stride)):
            if attr is None:
                continue
            n = attr.value.data
            if n <= 0 or n & (n - 1):
                raise VerifyException(f"'gpu.subgroup_reduce' op {name} must be a power of "
                                      "two")


# ---- printf ----------------------------------------------------------------------------------


@irdl_op_definition
class PrintfOp(IRDLOperation):
    """`gpu.printf "fmt", %a, %b : i32, f32`: device-side printf."""

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


KERNEL_OPS: tuple[type[IRDLOperation], ...] = (
    ThreadIdOp, BlockIdOp, BlockDimOp, GridDimOp, GlobalIdOp, ClusterIdOp, ClusterDimOp,
    ClusterDimBlocksOp, ClusterBlockIdOp, LaneIdOp, SubgroupIdOp, SubgroupSizeOp,
    NumSubgroupsOp, BarrierOp, TerminatorOp, ReturnOp, YieldOp, ShuffleOp, AllReduceOp,
    SubgroupReduceOp, DynamicSharedMemoryOp, PrintfOp,
)
