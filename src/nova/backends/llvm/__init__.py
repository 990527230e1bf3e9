"""Nova's LLVM emitter: one op-by-op lowering from xDSL to llvmlite IR shared by every target.

* `emitter`  - ModuleEmitter / FunctionEmitter (value map, block map, handler dispatch, scf);
* `target`   - the Target hook protocol and `TargetBase` defaults;
* `types`    - MLIR type -> LLVM type mapping (index -> i64, memref descriptors);
* `memref`   - MemRefDescriptor (descriptor fields as SSA values) and strided addressing;
* `ops_*`    - target-independent handlers (arith, math, memref, scf, cf, func, index);
* `nvptx_target` - the NVPTX device target (gpu.* ops, kernels, NVVM intrinsics).
"""

from nova.backends.llvm.emitter import FunctionEmitter, ModuleEmitter, core_handlers
from nova.backends.llvm.memref import MemRefDescriptor
from nova.backends.llvm.target import Handler, Target, TargetBase

__all__ = ["FunctionEmitter", "Handler", "MemRefDescriptor", "ModuleEmitter", "Target",
           "TargetBase", "core_handlers"]
