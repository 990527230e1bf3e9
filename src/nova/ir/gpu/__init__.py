"""Nova's `gpu` dialect: MLIR's complete `gpu` dialect with its exact custom syntax.

It replaces xDSL 0.74's `gpu` dialect (which prints only generic form and lacks `gpu.shuffle`,
`gpu.printf`, `gpu.subgroup_reduce`, cluster queries and more). Ops live in four modules by role;
this module re-exports them and builds the `Dialect` that `nova.ir.context` loads.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from nova.ir.gpu.base import (
    AddressSpace,
    AddressSpaceAttr,
    AllReduceOperation,
    AllReduceOperationAttr,
    AsyncTokenType,
    Dimension,
    DimensionAttr,
    ShuffleMode,
    ShuffleModeAttr,
)
from nova.ir.gpu.binary_ops import BINARY_ATTRS, BINARY_OPS, BinaryOp, ObjectAttr
from nova.ir.gpu.kernel_ops import (
    KERNEL_OPS,
    AllReduceOp,
    BarrierOp,
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
    PrintfOp,
    ReturnOp,
    ShuffleOp,
    SubgroupIdOp,
    SubgroupReduceOp,
    SubgroupSizeOp,
    TerminatorOp,
    ThreadIdOp,
    YieldOp,
)
from nova.ir.gpu.launch_ops import LAUNCH_OPS, LaunchFuncOp, LaunchOp
from nova.ir.gpu.memory_ops import (
    MEMORY_OPS,
    AllocOp,
    DeallocOp,
    HostRegisterOp,
    HostUnregisterOp,
    MemcpyOp,
    MemsetOp,
    WaitOp,
)
from nova.ir.gpu.mma_ops import MMA_ATTRS, MMA_OPS, MMAElementwiseOpAttr, MMAMatrixType
from nova.ir.gpu.module_ops import MODULE_OPS, FuncOp, GPUModuleOp

CONTAINER_MODULE_ATTR = "gpu.container_module"
"""The unit attribute on `builtin.module` that marks a module holding gpu.modules."""

GPU = Dialect(
    "gpu",
    [*MODULE_OPS, *LAUNCH_OPS, *KERNEL_OPS, *MEMORY_OPS, *MMA_OPS, *BINARY_OPS],
    [AsyncTokenType, DimensionAttr, AllReduceOperationAttr, ShuffleModeAttr, AddressSpaceAttr,
     *MMA_ATTRS, *BINARY_ATTRS],
)

__all__ = [
    "CONTAINER_MODULE_ATTR",
    "GPU",
    "AddressSpace",
    "AddressSpaceAttr",
    "AllReduceOp",
    "AllReduceOperation",
    "AllReduceOperationAttr",
    "AllocOp",
    "AsyncTokenType",
    "BarrierOp",
    "BinaryOp",
    "BlockDimOp",
    "BlockIdOp",
    "ClusterBlockIdOp",
    "ClusterDimBlocksOp",
    "ClusterDimOp",
    "ClusterIdOp",
    "DeallocOp",
    "Dimension",
    "DimensionAttr",
    "DynamicSharedMemoryOp",
    "FuncOp",
    "GPUModuleOp",
    "GlobalIdOp",
    "GridDimOp",
    "HostRegisterOp",
    "HostUnregisterOp",
    "LaneIdOp",
    "LaunchFuncOp",
    "LaunchOp",
    "MMAElementwiseOpAttr",
    "MMAMatrixType",
    "MemcpyOp",
    "MemsetOp",
    "NumSubgroupsOp",
    "ObjectAttr",
    "PrintfOp",
    "ReturnOp",
    "ShuffleMode",
    "ShuffleModeAttr",
    "ShuffleOp",
    "SubgroupIdOp",
    "SubgroupReduceOp",
    "SubgroupSizeOp",
    "TerminatorOp",
    "ThreadIdOp",
    "WaitOp",
    "YieldOp",
]
