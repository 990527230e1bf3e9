"""Index queries of Nova's `gpu` dialect (`gpu.thread_id  x`, `gpu.lane_id`, ...) and
`gpu.dynamic_shared_memory`, with MLIR's custom syntax (`dimension`, `upper_bound` properties).
"""

from __future__ import annotations

from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    i8,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AddressSpace,
    AddressSpaceAttr,
    Dimension,
    DimensionAttr,
    index_attr,
    print_attr_dict,
)

# ---- index queries ---------------------------------------------------------------------------


class _DimIndexOp(IRDLOperation):
    """`gpu.<name>  x (upper_bound N)?`: an index along one dimension."""

    dimension = prop_def(DimensionAttr)
    upper_bound = opt_prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, dimension: str | Dimension, upper_bound: int | None = None) -> None:
        props: dict[str, Attribute | None] = {"dimension": DimensionAttr(Dimension(dimension))}
        if upper_bound is not None:
            props["upper_bound"] = index_attr(upper_bound)
        super().__init__(result_types=[IndexType()], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        dim = parser.parse_str_enum(Dimension)
        bound = None
        if parser.parse_optional_keyword("upper_bound") is not None:
            bound = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        op = cls(dim, bound)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f"  {self.dimension.data.value}")
        if self.upper_bound is not None:
            printer.print_string(f" upper_bound {self.upper_bound.value.data}")
        print_attr_dict(printer, self.attributes)


class _ScalarIndexOp(IRDLOperation):
    """`gpu.<name> (upper_bound N)? (: index)?`: a per-thread/per-subgroup index."""

    upper_bound = opt_prop_def(IntegerAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())
    PRINTS_TYPE: ClassVar[bool] = True

    def __init__(self, upper_bound: int | None = None) -> None:
        props = {"upper_bound": index_attr(upper_bound)} if upper_bound is not None else {}
        super().__init__(result_types=[IndexType()], properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        bound = None
        if parser.parse_optional_keyword("upper_bound") is not None:
            bound = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        if cls.PRINTS_TYPE:
            parser.parse_punctuation(":")
            parser.parse_type()
        op = cls(bound)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.upper_bound is not None:
            printer.print_string(f" upper_bound {self.upper_bound.value.data}")
        print_attr_dict(printer, self.attributes)
        if self.PRINTS_TYPE:
            printer.print_string(" : index")


@irdl_op_definition
class ThreadIdOp(_DimIndexOp):
    name = "gpu.thread_id"


@irdl_op_definition
class BlockIdOp(_DimIndexOp):
    name = "gpu.block_id"


@irdl_op_definition
class BlockDimOp(_DimIndexOp):
    name = "gpu.block_dim"


@irdl_op_definition
class GridDimOp(_DimIndexOp):
    name = "gpu.grid_dim"


@irdl_op_definition
class GlobalIdOp(_DimIndexOp):
    name = "gpu.global_id"


@irdl_op_definition
class ClusterIdOp(_DimIndexOp):
    name = "gpu.cluster_id"


@irdl_op_definition
class ClusterDimOp(_DimIndexOp):
    name = "gpu.cluster_dim"


@irdl_op_definition
class ClusterDimBlocksOp(_DimIndexOp):
    name = "gpu.cluster_dim_blocks"


@irdl_op_definition
class ClusterBlockIdOp(_DimIndexOp):
    name = "gpu.cluster_block_id"


@irdl_op_definition
class LaneIdOp(_ScalarIndexOp):
    name = "gpu.lane_id"
    PRINTS_TYPE: ClassVar[bool] = False


@irdl_op_definition
class SubgroupIdOp(_ScalarIndexOp):
    name = "gpu.subgroup_id"


@irdl_op_definition
class SubgroupSizeOp(_ScalarIndexOp):
    name = "gpu.subgroup_size"


@irdl_op_definition
class NumSubgroupsOp(_ScalarIndexOp):
    name = "gpu.num_subgroups"


# ---- dynamic shared memory -------------------------------------------------------------------


@irdl_op_definition
class DynamicSharedMemoryOp(IRDLOperation):
    """`gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>`: the block's
    dynamic shared memory (sized by the launch's `dynamic_shared_memory_size`)."""

    name = "gpu.dynamic_shared_memory"
    resultMemref = result_def(MemRefType)
    traits = traits_def(Pure())

    def __init__(self) -> None:
        super().__init__(result_types=[MemRefType(i8, [DYNAMIC_INDEX], NoneAttr(),
                                                  AddressSpaceAttr(AddressSpace.WORKGROUP))])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        return cls.create(result_types=[type_], attributes=attrs)

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.resultMemref.type)

    def verify_(self) -> None:
        t = self.resultMemref.type
        assert isinstance(t, MemRefType)
        space = t.memory_space
        if not (isinstance(space, AddressSpaceAttr) and space.data == AddressSpace.WORKGROUP):
            raise VerifyException("'gpu.dynamic_shared_memory' op address space must be "
                                  "address_space<workgroup>")
        if t.get_shape() != (DYNAMIC_INDEX,) or t.element_type != i8:
            raise VerifyException("'gpu.dynamic_shared_memory' op result must be "
                                  "memref<?xi8, #gpu.address_space<workgroup>>")
