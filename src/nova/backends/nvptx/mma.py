"""`gpu.subgroup_mma_*` on NVPTX: the tensor-core `llvm.nvvm.wmma.m16n16k16.*` intrinsics, as
upstream's `--convert-gpu-to-nvvm` lowers them.

A fragment is what one lane holds (`types.mma_fragment_type`: f16 A/B 8 x <2 x half>, f16 C
4 x <2 x half>, f32 C 8 x float).

- load_matrix -> `wmma.m16n16k16.load.{a,b,c}.{row,col}.stride.{f16,f32}.p<AS>` at the address of
  `memref[%i, %j]` (the memref's strides and offset, as memref.load), stride = leadDimension,
  `col` when `transpose` is set; AS is the memref pointer's address space (0 generic, 1 global,
  3 shared), as upstream.
- store_matrix -> `wmma.m16n16k16.store.d.{row,col}.stride.{f16,f32}.p<AS>`.
- compute -> `wmma.m16n16k16.mma.<a layout>.<b layout>.<d type>.<c type>` (layouts `col` under
  a_transpose/b_transpose, as upstream; D has C's type).
- constant_matrix -> every register holds the value (both halves of a <2 x half>).
- elementwise -> per register (mma_common.elementwise); extf widens f16 C register i, half j to
  f32 C register 2i + j. Upstream's NVVM lowering has no extf (mlir-opt 22 crashes on it); this
  mapping assumes f16 and f32 accumulator fragments place element k of a lane at the same
  matrix position, as the mma.sync accumulator layouts of sm_80+ do.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter
from nova.backends.llvm.mma_common import (
    check_supported,
    elementwise,
    is_transposed,
    lead_dimension,
)
from nova.backends.llvm.target import Handler
from nova.ir.gpu.mma_ops import MMAElementwiseOp, MMAElementwiseOpAttr, MMAMatrixType

PREFIX = "llvm.nvvm.wmma.m16n16k16"
FRAGMENTS = {"AOp": "a", "BOp": "b", "COp": "c"}


def _elem_name(ty: MMAMatrixType) -> str:
    return "f16" if T.scalar_type(ty.element_type) == T.F16 else "f32"


def _layout(transposed: bool) -> str:
    return "col" if transposed else "row"


def _address(fe: FunctionEmitter, op: Operation, memref_operand: int) -> ir.Value:
    """Pointer to memref[indices] (the operands after the memref)."""
    desc = fe.lookup_memref(op.operands[memref_operand])
    indices = [fe.lookup(v) for v in op.operands[memref_operand + 1:]]
    return desc.element_pointer(fe.builder, indices)


def _registers(fe: FunctionEmitter, fragment: ir.Value) -> list[ir.Value]:
    count = len(fragment.type.elements)
    return [fe.builder.extract_value(fragment, i) for i in range(count)]


def _pack(fe: FunctionEmitter, llty: ir.Type, registers: list[ir.Value]) -> ir.Value:
    value: ir.Value = ir.Constant(llty, ir.Undefined)
    for i, reg in enumerate(registers):
        value = fe.builder.insert_value(value, reg, i)
    return value


def lower_load_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    res = op.results[0]
    ty = res.type
    assert isinstance(ty, MMAMatrixType)
    ptr = _address(fe, op, 0)
    space = ptr.type.addrspace
    name = (f"{PREFIX}.load.{FRAGMENTS[ty.kind]}.{_layout(is_transposed(op))}.stride."
            f"{_elem_name(ty)}.p{space}")
    llty = fe.lower_type(ty)
    fn = fe.module.declare(name, ir.FunctionType(llty, [ptr.type, T.I32]))
    fe.bind(res, fe.builder.call(fn, [ptr, ir.Constant(T.I32, lead_dimension(op))]))


def lower_store_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    ty = op.operands[0].type
    assert isinstance(ty, MMAMatrixType)
    regs = _registers(fe, fe.lookup(op.operands[0]))
    ptr = _address(fe, op, 1)
    space = ptr.type.addrspace
    name = (f"{PREFIX}.store.d.{_layout(is_transposed(op))}.stride.{_elem_name(ty)}"
            f".p{space}")
    fnty = ir.FunctionType(T.VOID, [ptr.type, *(r.type for r in regs), T.I32])
    fn = fe.module.declare(name, fnty)
    fe.builder.call(fn, [ptr, *regs, ir.Constant(T.I32, lead_dimension(op))])


def lower_compute(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    c_type = op.operands[2].type
    assert isinstance(c_type, MMAMatrixType)
    regs = [r for v in op.operands for r in _registers(fe, fe.lookup(v))]
    layouts = (f"{_layout(is_transposed(op, 'a_transpose'))}."
               f"{_layout(is_transposed(op, 'b_transpose'))}")
    elem = _elem_name(c_type)
    llty = fe.lower_type(c_type)
    fn = fe.module.declare(f"{PREFIX}.mma.{layouts}.{elem}.{elem}",
                           ir.FunctionType(llty, [r.type for r in regs]))
    fe.bind(op.results[0], fe.builder.call(fn, regs))


def lower_constant_matrix(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    value = fe.lookup(op.operands[0])
    llty = fe.lower_type(op.results[0].type)
    reg_type = llty.elements[0]
    reg = value
    if isinstance(reg_type, ir.VectorType):
        reg = ir.Constant(reg_type, ir.Undefined)
        for lane in range(reg_type.count):
            reg = fe.builder.insert_element(reg, value, ir.Constant(T.I32, lane))
    count = len(llty.elements)
    fe.bind(op.results[0], _pack(fe, llty, [reg] * count))


def _extf(fe: FunctionEmitter, source: ir.Value, llty: ir.Type) -> ir.Value:
    """f16 C (4 x <2 x half>) -> f32 C (8 x float): half j of register i -> register 2i + j."""
    b = fe.builder
    out: list[ir.Value] = []
    for reg in _registers(fe, source):
        for lane in range(2):
            out.append(b.fpext(b.extract_element(reg, ir.Constant(T.I32, lane)), T.F32))
    return _pack(fe, llty, out)


def lower_elementwise(fe: FunctionEmitter, op: Operation) -> None:
    check_supported(fe, op)
    kind_attr = op.properties["opType"]
    assert isinstance(kind_attr, MMAElementwiseOpAttr)
    kind = kind_attr.data
    llty = fe.lower_type(op.results[0].type)
    if kind == MMAElementwiseOp.EXTF:
        arch = getattr(fe.module.target, "arch", "sm_90")
        if int(arch.removeprefix("sm_").rstrip("a")) < 80:
            # the register mapping below is sm_80+'s accumulator layout; Volta/Turing differ
            raise fe.unsupported(op, f"extf on {arch}: its f16/f32 accumulator layouts are not "
                                     "modelled (sm_80 and newer are)")
        fe.bind(op.results[0], _extf(fe, fe.lookup(op.operands[0]), llty))
        return
    operands = [_registers(fe, fe.lookup(v)) for v in op.operands]
    regs = [elementwise(fe.builder, kind, list(parts), parts[0].type)
            for parts in zip(*operands, strict=True)]
    fe.bind(op.results[0], _pack(fe, llty, regs))


HANDLERS: dict[str, Handler] = {
    "gpu.subgroup_mma_load_matrix": lower_load_matrix,
    "gpu.subgroup_mma_store_matrix": lower_store_matrix,
    "gpu.subgroup_mma_compute": lower_compute,
    "gpu.subgroup_mma_constant_matrix": lower_constant_matrix,
    "gpu.subgroup_mma_elementwise": lower_elementwise,
}
