"""`gpu.launch` and `gpu.launch_func` of Nova's `gpu` dialect, with MLIR's custom syntax.

Operand segments follow MLIR's `operandSegmentSizes` exactly:
`gpu.launch`: asyncDependencies, gridSizeX/Y/Z, blockSizeX/Y/Z, clusterSizeX/Y/Z (optional),
dynamicSharedMemorySize (optional) — 11 segments;
`gpu.launch_func`: the same, then kernelOperands and asyncObject — 13 segments.
The `gpu.launch` body's entry block takes block ids, thread ids, grid sizes, block sizes (3 each),
then cluster ids and cluster sizes when clustered, then workgroup and private attributions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Self

from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import (
    AddressSpace,
    AsyncTokenType,
    parse_async_dependencies,
    print_async_dependencies,
    print_attr_dict,
    verify_attributions,
)
from nova.ir.gpu.module_ops import (
    FuncOp,
    GPUModuleOp,
    _parse_attributions,
    _print_attributions,
)

Triple = tuple[SSAValue, SSAValue, SSAValue]


class _LaunchSizes:
    """The grid/block/cluster size operands of gpu.launch and gpu.launch_func, as triples (both
    ops define the operands `gridSizeX` ... `clusterSizeZ`; IRDL forbids declaring them here)."""

    if TYPE_CHECKING:  # what the ops' operand definitions give
        gridSizeX: SSAValue
        gridSizeY: SSAValue
        gridSizeZ: SSAValue
        blockSizeX: SSAValue
        blockSizeY: SSAValue
        blockSizeZ: SSAValue
        clusterSizeX: SSAValue | None
        clusterSizeY: SSAValue | None
        clusterSizeZ: SSAValue | None

    def grid_sizes(self) -> Triple:
        return (self.gridSizeX, self.gridSizeY, self.gridSizeZ)

    def block_sizes(self) -> Triple:
        return (self.blockSizeX, self.blockSizeY, self.blockSizeZ)

    def cluster_sizes(self) -> Triple | None:
        if self.clusterSizeX is None or self.clusterSizeY is None or self.clusterSizeZ is None:
            return None
        return (self.clusterSizeX, self.clusterSizeY, self.clusterSizeZ)


def _parse_size_assignment(parser: Parser) -> tuple[list[Parser.Argument], list[SSAValue],
                                                    list[Parser.Argument]]:
    """Parse `(%i, %j, %k) in (%x = %a, %y = %b, %z = %c)`: ids, sizes, size arguments."""
    index = IndexType()
    ids = [u.resolve(index) for u in parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))]
    if len(ids) != 3:
        parser.raise_error("expected 3 ids (x, y, z)")
    parser.parse_keyword("in")
    size_args: list[Parser.Argument] = []
    sizes: list[SSAValue] = []

    def parse_one() -> None:
        size_args.append(parser.parse_argument(expect_type=False).resolve(index))
        parser.parse_punctuation("=")
        sizes.append(parser.parse_operand(index))

    parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_one)
    if len(sizes) != 3:
        parser.raise_error("expected 3 sizes (x, y, z)")
    return ids, sizes, size_args


def _print_size_assignment(printer: Printer, ids: Sequence[BlockArgument],
                           size_args: Sequence[BlockArgument],
                           sizes: Sequence[SSAValue]) -> None:
    printer.print_string("(")
    printer.print_list(ids, printer.print_operand)
    printer.print_string(") in (")
    for i, (arg, size) in enumerate(zip(size_args, sizes, strict=True)):
        if i:
            printer.print_string(", ")
        printer.print_operand(arg)
        printer.print_string(" = ")
        printer.print_operand(size)
    printer.print_string(")")


@irdl_op_definition
class LaunchOp(_LaunchSizes, IRDLOperation):
    """`gpu.launch blocks(...) in (...) threads(...) in (...) { ... }`: an inline kernel."""

    name = "gpu.launch"
    asyncDependencies = var_operand_def(AsyncTokenType)
    gridSizeX = operand_def(IndexType)
    gridSizeY = operand_def(IndexType)
    gridSizeZ = operand_def(IndexType)
    blockSizeX = operand_def(IndexType)
    blockSizeY = operand_def(IndexType)
    blockSizeZ = operand_def(IndexType)
    clusterSizeX = opt_operand_def(IndexType)
    clusterSizeY = opt_operand_def(IndexType)
    clusterSizeZ = opt_operand_def(IndexType)
    dynamicSharedMemorySize = opt_operand_def(i32)
    asyncToken = opt_result_def(AsyncTokenType)
    kernel_func = opt_prop_def(SymbolRefAttr, prop_name="function")
    kernel_module = opt_prop_def(SymbolRefAttr, prop_name="module")
    workgroup_attributions = opt_attr_def(IntegerAttr)
    body = region_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, grid: Sequence[SSAValue], block: Sequence[SSAValue], body: Region,
                 cluster: Sequence[SSAValue] | None = None,
                 dynamic_shared_memory_size: SSAValue | None = None,
                 async_dependencies: Sequence[SSAValue] = (), is_async: bool = False,
                 num_workgroup_attributions: int = 0) -> None:
        cl = list(cluster) if cluster else [None, None, None]
        operands: list[SSAValue | Sequence[SSAValue]] = [
            list(async_dependencies), *grid, *block,
            *([c] if c is not None else [] for c in cl),
            [dynamic_shared_memory_size] if dynamic_shared_memory_size is not None else []]
        super().__init__(
            operands=operands, result_types=[[AsyncTokenType()] if is_async else []],
            attributes={"workgroup_attributions": IntegerAttr(num_workgroup_attributions, i64)},
            regions=[body])

    # ---- accessors ------------------------------------------------------------------------
    @property
    def kernelModule(self) -> SymbolRefAttr | None:
        """The `module(@m)` name an outlining pass should use (property `module`)."""
        return self.kernel_module

    @property
    def kernelFunc(self) -> SymbolRefAttr | None:
        """The `function(@f)` name an outlining pass should use (property `function`)."""
        return self.kernel_func

    @property
    def has_clusters(self) -> bool:
        return self.clusterSizeX is not None

    def _args(self) -> tuple[BlockArgument, ...]:
        return self.body.blocks[0].args

    def block_ids(self) -> tuple[BlockArgument, ...]:
        return self._args()[0:3]

    def thread_ids(self) -> tuple[BlockArgument, ...]:
        return self._args()[3:6]

    def grid_size_args(self) -> tuple[BlockArgument, ...]:
        return self._args()[6:9]

    def block_size_args(self) -> tuple[BlockArgument, ...]:
        return self._args()[9:12]

    def cluster_ids(self) -> tuple[BlockArgument, ...]:
        return self._args()[12:15] if self.has_clusters else ()

    def cluster_size_args(self) -> tuple[BlockArgument, ...]:
        return self._args()[15:18] if self.has_clusters else ()

    def num_workgroup_attributions(self) -> int:
        attr = self.workgroup_attributions
        return attr.value.data if attr is not None else 0

    def _num_config_args(self) -> int:
        return 18 if self.has_clusters else 12

    def workgroup_args(self) -> tuple[BlockArgument, ...]:
        start = self._num_config_args()
        return self._args()[start:start + self.num_workgroup_attributions()]

    def private_args(self) -> tuple[BlockArgument, ...]:
        return self._args()[self._num_config_args() + self.num_workgroup_attributions():]

    # ---- syntax ---------------------------------------------------------------------------
    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        cluster: list[SSAValue] | None = None
        cluster_ids: list[Parser.Argument] = []
        cluster_args: list[Parser.Argument] = []
        if parser.parse_optional_keyword("clusters") is not None:
            cluster_ids, cluster, cluster_args = _parse_size_assignment(parser)
        parser.parse_keyword("blocks")
        block_ids, grid, grid_args = _parse_size_assignment(parser)
        parser.parse_keyword("threads")
        thread_ids, block, block_args = _parse_size_assignment(parser)
        dsms = None
        if parser.parse_optional_keyword("dynamic_shared_memory_size") is not None:
            dsms = parser.parse_operand(i32)
        kernel_module = kernel_func = None
        if parser.parse_optional_keyword("module") is not None:
            parser.parse_punctuation("(")
            kernel_module = SymbolRefAttr(parser.parse_symbol_name())
            parser.parse_punctuation(")")
        if parser.parse_optional_keyword("function") is not None:
            parser.parse_punctuation("(")
            kernel_func = SymbolRefAttr(parser.parse_symbol_name())
            parser.parse_punctuation(")")
        workgroup = _parse_attributions(parser, "workgroup")
        private = _parse_attributions(parser, "private")
        region_args = [*block_ids, *thread_ids, *grid_args, *block_args, *cluster_ids,
                       *cluster_args, *workgroup, *private]
        body = parser.parse_region(region_args)
        attrs = parser.parse_optional_attr_dict()
        op = cls(grid, block, body, cluster, dsms, deps, is_async, len(workgroup))
        if kernel_module is not None:
            op.properties["module"] = kernel_module
        if kernel_func is not None:
            op.properties["function"] = kernel_func
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        if self.asyncToken is not None:
            printer.print_string(" async")
            if self.asyncDependencies:
                printer.print_string(" [")
                printer.print_list(self.asyncDependencies, printer.print_operand)
                printer.print_string("]")
        sizes = self.cluster_sizes()
        if sizes is not None:
            printer.print_string(" clusters")
            _print_size_assignment(printer, self.cluster_ids(), self.cluster_size_args(), sizes)
        printer.print_string(" blocks")
        _print_size_assignment(printer, self.block_ids(), self.grid_size_args(),
                               self.grid_sizes())
        printer.print_string(" threads")
        _print_size_assignment(printer, self.thread_ids(), self.block_size_args(),
                               self.block_sizes())
        if self.dynamicSharedMemorySize is not None:
            printer.print_string(" dynamic_shared_memory_size ")
            printer.print_operand(self.dynamicSharedMemorySize)
        if self.kernel_module is not None:
            printer.print_string(" module(")
            printer.print_symbol_name(self.kernel_module.root_reference.data)
            printer.print_string(")")
        if self.kernel_func is not None:
            printer.print_string(" function(")
            printer.print_symbol_name(self.kernel_func.root_reference.data)
            printer.print_string(")")
        _print_attributions(printer, "workgroup", self.workgroup_args())
        _print_attributions(printer, "private", self.private_args())
        printer.print_string(" ")
        printer.print_region(self.body, False, True)
        print_attr_dict(printer, self.attributes, ("workgroup_attributions",))

    def verify_(self) -> None:
        if not self.body.blocks:
            raise VerifyException("'gpu.launch' op region must not be empty")
        n_cluster = [self.clusterSizeX, self.clusterSizeY, self.clusterSizeZ].count(None)
        if n_cluster not in (0, 3):
            raise VerifyException("'gpu.launch' op cluster sizes must be given for x, y and z")
        expected = self._num_config_args() + self.num_workgroup_attributions()
        args = self._args()
        if len(args) < expected:
            raise VerifyException(
                f"'gpu.launch' op expected at least {expected} body block arguments, got "
                f"{len(args)}")
        for arg in args[:self._num_config_args()]:
            if not isinstance(arg.type, IndexType):
                raise VerifyException("'gpu.launch' op launch config block arguments must be "
                                      "of index type")
        verify_attributions("gpu.launch", self.workgroup_args(), AddressSpace.WORKGROUP)
        verify_attributions("gpu.launch", self.private_args(), AddressSpace.PRIVATE)
        if self.asyncDependencies and self.asyncToken is None:
            raise VerifyException("'gpu.launch' op async dependencies require 'async'")

    def verify_regions_(self) -> None:
        """The body's terminators, checked after the body's ops (nova.ir.verify), as MLIR's
        verifyRegions: a misplaced terminator is reported at itself first."""
        for block in self.body.blocks:
            last = block.last_op
            if last is not None and last.name == "gpu.terminator":
                continue
            if last is None or not last.successors:
                raise VerifyException(
                    "'gpu.launch' op expected body blocks to end in 'gpu.terminator' or a "
                    "branch")


# xDSL accepts a type union as a constraint; its opt_operand_def annotation does not say so
_LAUNCH_INDEX = IndexType | IntegerType


@irdl_op_definition
class LaunchFuncOp(_LaunchSizes, IRDLOperation):
    """`gpu.launch_func @mod::@kernel blocks in (...) threads in (...) args(...)`."""

    name = "gpu.launch_func"
    asyncDependencies = var_operand_def(AsyncTokenType)
    gridSizeX = operand_def(_LAUNCH_INDEX)
    gridSizeY = operand_def(_LAUNCH_INDEX)
    gridSizeZ = operand_def(_LAUNCH_INDEX)
    blockSizeX = operand_def(_LAUNCH_INDEX)
    blockSizeY = operand_def(_LAUNCH_INDEX)
    blockSizeZ = operand_def(_LAUNCH_INDEX)
    clusterSizeX = opt_operand_def(_LAUNCH_INDEX)  # type: ignore[arg-type]  # see _LAUNCH_INDEX
    clusterSizeY = opt_operand_def(_LAUNCH_INDEX)  # type: ignore[arg-type]  # see _LAUNCH_INDEX
    clusterSizeZ = opt_operand_def(_LAUNCH_INDEX)  # type: ignore[arg-type]  # see _LAUNCH_INDEX
    dynamicSharedMemorySize = opt_operand_def(i32)
    kernelOperands = var_operand_def()
    asyncObject = opt_operand_def()
    kernel = prop_def(SymbolRefAttr)
    asyncToken = opt_result_def(AsyncTokenType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, kernel: SymbolRefAttr, grid: Sequence[SSAValue],
                 block: Sequence[SSAValue], args: Sequence[SSAValue] = (),
                 cluster: Sequence[SSAValue] | None = None,
                 dynamic_shared_memory_size: SSAValue | None = None,
                 async_dependencies: Sequence[SSAValue] = (), is_async: bool = False) -> None:
        cl = list(cluster) if cluster else [None, None, None]
        operands: list[SSAValue | Sequence[SSAValue]] = [
            list(async_dependencies), *grid, *block,
            *([c] if c is not None else [] for c in cl),
            [dynamic_shared_memory_size] if dynamic_shared_memory_size is not None else [],
            list(args), []]
        super().__init__(operands=operands,
                         result_types=[[AsyncTokenType()] if is_async else []],
                         properties={"kernel": kernel})

    @property
    def kernel_module_name(self) -> str:
        return self.kernel.root_reference.data

    @property
    def kernel_name(self) -> str:
        return self.kernel.nested_references.data[-1].data

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = parse_async_dependencies(parser)
        kernel = parser.parse_attribute()
        if not isinstance(kernel, SymbolRefAttr):
            parser.raise_error("expected a kernel symbol (@module::@kernel)")
        names = {}
        for key in ("clusters", "blocks", "threads"):
            if key != "clusters" or parser.parse_optional_keyword(key) is not None:
                if key != "clusters":
                    parser.parse_keyword(key)
                parser.parse_keyword("in")
                names[key] = parser.parse_comma_separated_list(
                    Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
                if len(names[key]) != 3:
                    parser.raise_error(f"expected 3 {key} sizes (x, y, z)")
        dim_type: Attribute = IndexType()
        if parser.parse_optional_punctuation(":") is not None:
            dim_type = parser.parse_type()
        grid = [parser.resolve_operand(u, dim_type) for u in names["blocks"]]
        block = [parser.resolve_operand(u, dim_type) for u in names["threads"]]
        cluster = ([parser.resolve_operand(u, dim_type) for u in names["clusters"]]
                   if "clusters" in names else None)
        dsms = None
        if parser.parse_optional_keyword("dynamic_shared_memory_size") is not None:
            dsms = parser.parse_operand(i32)
        args: list[SSAValue] = []
        if parser.parse_optional_keyword("args") is not None:
            def parse_arg() -> SSAValue:
                operand = parser.parse_unresolved_operand()
                parser.parse_punctuation(":")
                return parser.resolve_operand(operand, parser.parse_type())
            args = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_arg)
        attrs = parser.parse_optional_attr_dict()
        op = cls(kernel, grid, block, args, cluster, dsms, deps, is_async)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_async_dependencies(printer, self.asyncToken is not None, self.asyncDependencies)
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        sizes = self.cluster_sizes()
        if sizes is not None:
            printer.print_string(" clusters in (")
            printer.print_list(sizes, printer.print_operand)
            printer.print_string(")")
        printer.print_string(" blocks in (")
        printer.print_list(self.grid_sizes(), printer.print_operand)
        printer.print_string(") threads in (")
        printer.print_list(self.block_sizes(), printer.print_operand)
        printer.print_string(") ")
        if not isinstance(self.gridSizeX.type, IndexType):
            printer.print_string(": ")
            printer.print_attribute(self.gridSizeX.type)
        if self.dynamicSharedMemorySize is not None:
            printer.print_string(" dynamic_shared_memory_size ")
            printer.print_operand(self.dynamicSharedMemorySize)
        printer.print_string(" ")
        if self.kernelOperands:
            printer.print_string("args(")
            for i, arg in enumerate(self.kernelOperands):
                if i:
                    printer.print_string(", ")
                printer.print_operand(arg)
                printer.print_string(" : ")
                printer.print_attribute(arg.type)
            printer.print_string(")")
        print_attr_dict(printer, self.attributes)

    def verify_(self) -> None:
        dims = [*self.grid_sizes(), *self.block_sizes(), *(self.cluster_sizes() or ())]
        if len({d.type for d in dims}) != 1:
            raise VerifyException("'gpu.launch_func' op grid, block and cluster sizes must all "
                                  "have the same type")
        if self.asyncDependencies and self.asyncToken is None:
            raise VerifyException("'gpu.launch_func' op async dependencies require 'async'")
        if len(self.kernel.nested_references.data) != 1:
            raise VerifyException("'gpu.launch_func' op expected the kernel symbol to be "
                                  "@module::@kernel")
        top = self.parent_op()
        while top is not None and top.parent_op() is not None:
            top = top.parent_op()
        if top is None:
            return  # a detached op: nothing to resolve against yet
        if "gpu.container_module" not in top.attributes:
            raise VerifyException("'gpu.launch_func' op expected the closest surrounding module "
                                  "to have the 'gpu.container_module' attribute")
        if _is_binary(top, self.kernel_module_name):
            return  # pre-compiled: no signature to check (nova.backends.gpu_binary)
        func = _lookup_kernel(top, self.kernel_module_name, self.kernel_name)
        if func is None and not _has_gpu_module(top, self.kernel_module_name):
            raise VerifyException(f"'gpu.launch_func' op kernel container "
                                  f"'{self.kernel_module_name}' is undefined")
        if func is None:
            raise VerifyException(
                f"'gpu.launch_func' op kernel function '{self.kernel}' is undefined")
        if not func.is_kernel:
            raise VerifyException("'gpu.launch_func' op kernel function is missing the "
                                  "'gpu.kernel' attribute")
        expected = func.function_type.inputs.data
        got = tuple(a.type for a in self.kernelOperands)
        if len(expected) != len(got):
            raise VerifyException(
                f"'gpu.launch_func' op got {len(got)} kernel operands but expected "
                f"{len(expected)}")
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            if e != g:
                raise VerifyException(f"'gpu.launch_func' op type of function argument {i} "
                                      "does not match")


def _has_gpu_module(top: Operation, module_name: str) -> bool:
    """True when `top` holds a `gpu.module @module_name`."""
    return any(op.name == "gpu.module" and getattr(op.properties.get("sym_name"), "data", None)
               == module_name for region in top.regions for block in region.blocks
               for op in block.ops)


def _is_binary(top: Operation, module_name: str) -> bool:
    """True when `top` holds a `gpu.binary @module_name`."""
    return any(op.name == "gpu.binary" and getattr(op.properties.get("sym_name"), "data", None)
               == module_name for region in top.regions for block in region.blocks
               for op in block.ops)


def _lookup_kernel(top: Operation, module_name: str, kernel_name: str) -> FuncOp | None:
    """Find `@module_name::@kernel_name` among the gpu.modules directly in `top`."""
    for region in top.regions:
        for block in region.blocks:
            for op in block.ops:
                if isinstance(op, GPUModuleOp) and op.sym_name.data == module_name:
                    for inner in op.body.block.ops:
                        if isinstance(inner, FuncOp) and inner.sym_name.data == kernel_name:
                            return inner
                    return None
    return None


LAUNCH_OPS: tuple[type[IRDLOperation], ...] = (LaunchOp, LaunchFuncOp)
