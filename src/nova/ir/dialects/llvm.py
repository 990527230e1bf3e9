"""The `llvm` dialect subset Nova parses: struct values, as the wgmma accumulators of the
`nvvm` dialect need them (nova.ir.dialects.nvvm_wgmma).

- `!llvm.struct<(f32, f32, ...)>`: a literal struct type;
- `%z = llvm.mlir.zero : !llvm.struct<(...)>`, `%u = llvm.mlir.undef : ...`: constants;
- `%e = llvm.extractvalue %s[i] : !llvm.struct<(...)>` and
  `%t = llvm.insertvalue %e, %s[i] : !llvm.struct<(...)>`: one member out / in.

These are xDSL's op classes, whose custom syntax is MLIR 22's; the backends lower them on both
devices (nova.backends.llvm.ops_llvm). Other `llvm` ops and types are not part of Nova.
"""

from __future__ import annotations

from xdsl.dialects.llvm import ExtractValueOp, InsertValueOp, LLVMStructType, UndefOp, ZeroOp
from xdsl.ir import Dialect

LLVM = Dialect("llvm", [ZeroOp, UndefOp, ExtractValueOp, InsertValueOp], [LLVMStructType])
"""The `llvm` ops and types Nova supports (see the module docstring)."""

__all__ = ["LLVM", "ExtractValueOp", "InsertValueOp", "LLVMStructType", "UndefOp", "ZeroOp"]
