"""outline-kernels: turn each `gpu.launch` into a kernel in a `gpu.module` plus a `gpu.launch_func`.

Exactly upstream MLIR's `gpu-kernel-outlining`: a launch in `@f` becomes
`gpu.module @f_kernel { gpu.func @f_kernel(...) kernel }` inserted after `@f` (the module name is
uniqued `_0`, `_1`, ... with one counter per run; a `module(@m) function(@k)` launch goes into
`@m` as `@k`), values captured from above become kernel arguments in MLIR's order, the launch
body's index arguments become `gpu.block_id`/`thread_id`/`grid_dim`/`block_dim` (and cluster) ops,
constant launch sizes become `known_block_size`/`known_grid_size`, attributions, async tokens,
cluster sizes and the dynamic shared memory size carry over, symbols the kernel uses are cloned
into its module, and the top module is marked `gpu.container_module`. Constants are not sunk
here (as upstream): run `sink-index-computations` first for that.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    ModuleOp,
    SymbolRefAttr,
    UnitAttr,
    i32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from nova.errors import PassError
from nova.ir.gpu.kernel_ops import (
    BlockDimOp,
    BlockIdOp,
    ClusterDimOp,
    ClusterIdOp,
    GridDimOp,
    ReturnOp,
    TerminatorOp,
    ThreadIdOp,
)
from nova.ir.gpu.launch_ops import LaunchFuncOp, LaunchOp
from nova.ir.gpu.module_ops import FuncOp, GPUModuleOp
from nova.ir.locations import location_of
from nova.passes.launch_utils import captured_values, constant_int, copy_location
from nova.passes.symbols import SymbolTable, symbol_name, symbol_uses

# The ops that replace the launch body's leading arguments, in argument order.
_INDEX_OPS = (BlockIdOp, ThreadIdOp, GridDimOp, BlockDimOp)
_CLUSTER_INDEX_OPS = (ClusterIdOp, ClusterDimOp)
_UINT32_MAX = 0xFFFFFFFF


def _error(message: str, op: Operation) -> PassError:

    return PassError(f"outline-kernels: {message}", location_of(op))


def known_sizes(values: tuple[SSAValue, SSAValue, SSAValue]) -> DenseArrayBase | None:
    """`array<i32: x, y, z>` when all three sizes are integer constants that fit 32 bits
    unsigned (stored as i32, as upstream's DenseI32ArrayAttr does), else None."""
    sizes: list[int] = []
    for value in values:
        constant = constant_int(value)
        if constant is None:
            return None
        number, width = constant
        unsigned = number % (1 << width)
        if unsigned > _UINT32_MAX:
            return None
        sizes.append(unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned)
    return DenseArrayBase.from_list(i32, sizes)


def _index_ops(launch: LaunchOp) -> list[Operation]:
    """`gpu.block_id x` ... `gpu.block_dim z` (+ cluster ids/dims), named as mlir-opt names them."""
    kinds = _INDEX_OPS + (_CLUSTER_INDEX_OPS if launch.has_clusters else ())
    ops: list[Operation] = []
    for kind in kinds:
        for dim in "xyz":
            op = kind(dim)
            op.results[0].name_hint = f"{kind.name.removeprefix('gpu.')}_{dim}"
            copy_location(launch, op)
            ops.append(op)
    return ops


def outline_kernel_func(launch: LaunchOp, name: str, operands: list[SSAValue]) -> FuncOp:
    """The `gpu.func` kernel for `launch` (not inserted anywhere): arguments are `operands`, then
    the launch's workgroup and private attributions."""
    workgroup = launch.workgroup_args()
    private = launch.private_args()
    entry = Block(arg_types=[v.type for v in operands]
                  + [a.type for a in workgroup] + [a.type for a in private])
    func = FuncOp(name, FunctionType.from_lists([v.type for v in operands], []), Region(entry),
                  kernel=True, num_workgroup_attributions=len(workgroup))
    copy_location(launch, func)
    for attr_name, sizes in (("known_block_size", launch.block_sizes()),
                             ("known_grid_size", launch.grid_sizes())):
        known = known_sizes(sizes)
        if known is not None:
            func.properties[attr_name] = known

    index_ops = _index_ops(launch)
    entry.add_ops(index_ops)
    body = Region()
    launch.body.clone_into(body, value_mapper=dict(zip(operands, entry.args, strict=False)))

    cloned_entry = body.blocks[0]
    replacements = [op.results[0] for op in index_ops] + list(entry.args[len(operands):])
    for arg, new in zip(cloned_entry.args, replacements, strict=True):
        arg.replace_all_uses_with(new)
    for op in list(cloned_entry.ops):
        op.detach()
        entry.add_op(op)
    for block in list(body.blocks)[1:]:
        body.detach_block(block)
        func.body.add_block(block)
    for block in func.body.blocks:
        last = block.last_op
        if isinstance(last, TerminatorOp):
            ret = ReturnOp()
            copy_location(last, ret)
            block.insert_op_before(ret, last)
            block.erase_op(last)
    return func


def _kernel_module(launch: LaunchOp, func: FuncOp, parent: SymbolTable) -> GPUModuleOp:
    """The gpu.module that receives `func` (a new one, or the existing `module(@m)` target), with
    every symbol the kernel uses cloned in from the parent module."""
    module: GPUModuleOp | None = None
    if launch.kernelModule is not None:
        name = launch.kernelModule.root_reference.data
        found = parent.lookup(name)
        module = found if isinstance(found, GPUModuleOp) else None
    else:
        name = symbol_name(func) or ""
    if module is None:
        module = GPUModuleOp(name)
        copy_location(launch, module)
    table = SymbolTable(module)
    table.insert(func)
    worklist: list[Operation] = [func]
    while worklist:
        for user, ref in symbol_uses(worklist.pop()):
            if ref.nested_references.data:
                raise _error(f"kernel uses nested symbol reference {ref}, which cannot be "
                             "cloned into a gpu.module", user)
            used = ref.root_reference.data
            if table.lookup(used) is not None:
                continue
            definition = parent.lookup(used)
            if definition is None:
                raise _error(f"kernel uses symbol '@{used}', which is not defined in the "
                             "enclosing module", user)
            clone = definition.clone()
            worklist.append(clone)
            table.insert(clone)
    return module


def _replace_with_launch_func(launch: LaunchOp, module: GPUModuleOp, func: FuncOp,
                              operands: list[SSAValue]) -> None:
    kernel = SymbolRefAttr(module.sym_name.data, [symbol_name(func) or ""])
    launch_func = LaunchFuncOp(
        kernel, launch.grid_sizes(), launch.block_sizes(), operands,
        cluster=launch.cluster_sizes(),
        dynamic_shared_memory_size=launch.dynamicSharedMemorySize,
        async_dependencies=launch.asyncDependencies,
        is_async=launch.asyncToken is not None,
    )
    copy_location(launch, launch_func)
    parent = launch.parent_block()
    assert parent is not None
    parent.insert_op_before(launch_func, launch)
    if launch.asyncToken is not None:
        assert launch_func.asyncToken is not None
        launch_func.asyncToken.name_hint = launch.asyncToken.name_hint
        launch.asyncToken.replace_all_uses_with(launch_func.asyncToken)
    parent.erase_op(launch)


def _enclosing_symbol(op: Operation) -> str:
    parent = op.parent_op()
    while parent is not None:
        name = symbol_name(parent)
        if name is not None:
            return name
        parent = parent.parent_op()
    raise _error("gpu.launch is not inside a symbol (e.g. a func.func)", op)


@dataclass(frozen=True)
class OutlineKernelsPass(ModulePass):
    """Outline gpu.launch bodies into gpu.module kernels launched by gpu.launch_func."""

    name = "outline-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = SymbolTable(op)
        modified = False
        for top in list(op.body.block.ops):
            if symbol_name(top) is None:  # upstream visits every top-level symbol op
                continue
            launches = [nested for nested in top.walk() if isinstance(nested, LaunchOp)]
            for launch in launches:
                _check_not_nested(launch)
            insert_before = top.next_op
            for launch in launches:
                _outline(launch, table, insert_before)
                modified = True
        if modified:
            op.attributes["gpu.container_module"] = UnitAttr()


def _check_not_nested(launch: LaunchOp) -> None:
    outer = launch.parent_op()
    while outer is not None:
        if isinstance(outer, LaunchOp):
            raise _error("a gpu.launch nested in another gpu.launch cannot be outlined", launch)
        outer = outer.parent_op()


def _outline(launch: LaunchOp, table: SymbolTable, insert_before: Operation | None) -> None:
    """Outline one launch: build its kernel, place it in a module, launch it by name."""
    if launch.kernelFunc is not None:
        func_name = launch.kernelFunc.root_reference.data
    else:
        func_name = f"{_enclosing_symbol(launch)}_kernel"
    operands = captured_values(launch)
    func = outline_kernel_func(launch, func_name, operands)
    module = _kernel_module(launch, func, table)
    table.insert(module, insert_before)
    _replace_with_launch_func(launch, module, func, operands)
