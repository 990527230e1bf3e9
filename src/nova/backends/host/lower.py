"""The x86-64 host target: the outlined module minus its gpu.modules -> LLVM IR that drives the
device only through the runtime ABI (`nova.abi`).

`lower_host(module)` runs the shared emitter core (`nova.backends.llvm.emitter`) with `HostTarget`,
whose hooks and handlers make the host-specific parts:

* gpu ops (launch_func, wait, alloc, memcpy, ...) -> ABI calls, async tokens as streams
  (`host_gpu_ops`, `host_device`), every fallible call checked (`host_abi`);
* memref.alloc/dealloc -> malloc (aligned_alloc for alignments above 16) / free; a null result
  (or a negative / overflowing size) -> nova_rt_host_alloc_failed + nova_rt_raise;
* cf.assert -> nova_rt_host_assert_fail + nova_rt_raise (a failed bounds check, check_bounds,
  formats its message with snprintf and fails the same way);
* runner utilities, vector.print, external declarations (`host_runner`);
* each public function `@f` -> an exported `void @__nova_entry_f(ptr args, ptr results)` wrapper
  and a manifest `EntryPoint` (`host_entry`); every lowered function itself is internal, so LLVM
  may inline it into its wrapper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation

from nova.abi import UNOWNED_ALLOCATED
from nova.backends.host.abi import RAISE, AbiCalls
from nova.backends.host.device import HostDevice
from nova.backends.host.entry import emit_entry_wrapper, entry_point
from nova.backends.host.gpu_ops import GpuOpLowering
from nova.backends.host.replay import replay_ops
from nova.backends.host.runner import RunnerCalls
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import (
    FunctionEmitter,
    ModuleEmitter,
    attr,
    location_of,
    symbol_name,
)
from nova.backends.llvm.target import Handler, TargetBase
from nova.bundle.format import HOST_TRIPLE, EntryPoint
from nova.errors import UnsupportedError

HOST_DATA_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
"""LLVM's x86-64 Linux data layout (what `llc -mtriple=x86_64-unknown-linux-gnu` uses)."""

CHECK_MESSAGE_BYTES = 512
"""Size of the stack buffer a failed runtime check (check_bounds) formats its message into."""

MALLOC_ALIGNMENT = 16
"""glibc malloc's guaranteed alignment on x86-64; larger `alignment` values use aligned_alloc."""


@dataclass(frozen=True)
class HostLowering:
    """The host module's LLVM IR and the entry points it exports."""

    llvm_module: ir.Module
    entries: tuple[EntryPoint, ...]
    device_modules: tuple[str, ...] = ()
    """gpu.modules whose `__nova_devmod_<m>` descriptor the host code references."""


def _invalid_byte_size(fe: FunctionEmitter, op: Operation) -> ir.Value | None:
    """An i1 that is true when a dynamic size of memref.alloc `op` is negative or the byte size
    (element size times every dimension) overflows i64; None when every size is static (the
    core lowering's count then cannot wrap at run time)."""
    ty = op.results[0].type
    assert isinstance(ty, MemRefType)
    shape = ty.get_shape()
    if not any(T.is_dynamic(d) for d in shape):
        return None
    b = fe.builder
    zero = ir.Constant(T.I64, 0)
    dynamic = iter(op.operands)
    total: ir.Value = ir.Constant(T.I64, T.element_size(ty.element_type))
    invalid: ir.Value = ir.Constant(ir.IntType(1), 0)
    for dim in shape:
        size = fe.lookup(next(dynamic)) if T.is_dynamic(dim) else ir.Constant(T.I64, dim)
        product = b.smul_with_overflow(total, size)
        total = b.extract_value(product, 0)
        negative = b.icmp_signed("<", size, zero)
        invalid = b.or_(invalid, b.or_(negative, b.extract_value(product, 1)))
    return invalid


class HostTarget(TargetBase):
    """Target hooks for x86-64 host code (see the module docstring)."""

    name = "host"
    triple = HOST_TRIPLE
    data_layout = HOST_DATA_LAYOUT
    unowned_allocated: int | None = UNOWNED_ALLOCATED  # returned memrefs: only heap ones freed

    def __init__(self, check_bounds: bool = False) -> None:
        self.check_bounds = check_bounds
        self._check_buffers: dict[ir.Function, ir.Value] = {}
        self.handlers: Mapping[str, Handler] = {}
        self.entries: list[EntryPoint] = []
        self.abi: AbiCalls | None = None
        self.device: HostDevice | None = None

    def attach(self, me: ModuleEmitter) -> None:
        """Bind the ABI and device helpers to the module being emitted, and build the table."""
        self.abi = AbiCalls(me.module)
        self.device = HostDevice(self.abi)
        table: dict[str, Handler] = {}
        table.update(GpuOpLowering(self.device).handlers())
        table.update(RunnerCalls(self.abi, self.device).handlers())
        self.handlers = table

    # --- hooks ----------------------------------------------------------------------------------
    def pointer_address_space(self, memref_type: Attribute) -> int:
        """Host pointers live in one address space, whatever device memory space a memref names."""
        return 0

    def alloc(self, fe: FunctionEmitter, op: Operation, size_bytes: ir.Value,
              alignment: int) -> ir.Value:
        """malloc/aligned_alloc, checked: a negative dynamic size or an overflowing byte size,
        and a null result for a nonzero size, report `nova_rt_host_alloc_failed` and unwind
        (an OutOfMemoryError) instead of handing a null pointer to the program."""
        b = fe.builder
        invalid = _invalid_byte_size(fe, op)
        if invalid is not None:
            with b.if_then(invalid, likely=False):
                self._alloc_failed(fe, ir.Constant(T.I64, -1))
        pointer = self._heap_alloc(fe, op, size_bytes, alignment)
        null = b.icmp_unsigned("==", pointer, ir.Constant(T.PTR, None))
        nonempty = b.icmp_unsigned("!=", size_bytes, ir.Constant(T.I64, 0))
        with b.if_then(b.and_(null, nonempty), likely=False):
            self._alloc_failed(fe, size_bytes)
        return pointer

    def _alloc_failed(self, fe: FunctionEmitter, size: ir.Value) -> None:
        abi = self._abi()
        abi.call(fe.builder, "nova_rt_host_alloc_failed", [size])
        abi.call(fe.builder, RAISE, [])
        fe.builder.unreachable()

    @staticmethod
    def _heap_alloc(fe: FunctionEmitter, op: Operation, size_bytes: ir.Value,
                    alignment: int) -> ir.Value:
        if alignment <= MALLOC_ALIGNMENT:
            malloc = fe.module.declare("malloc", ir.FunctionType(T.PTR, [T.I64]))
            return fe.builder.call(malloc, [size_bytes])
        if alignment & (alignment - 1):
            raise UnsupportedError(f"memref.alloc alignment {alignment} is not a power of two",
                                   fe.location(op))
        # aligned_alloc wants a size that is a multiple of the alignment.
        padded = fe.builder.add(size_bytes, ir.Constant(T.I64, alignment - 1))
        rounded = fe.builder.and_(padded, ir.Constant(T.I64, -alignment))
        aligned_alloc = fe.module.declare("aligned_alloc", ir.FunctionType(T.PTR, [T.I64, T.I64]))
        return fe.builder.call(aligned_alloc, [ir.Constant(T.I64, alignment), rounded])

    def assert_fail(self, fe: FunctionEmitter, op: Operation, message: str) -> None:
        """Record the failure with the runtime, then unwind (nova_rt_raise never returns)."""
        abi = self._abi()
        text = fe.module.string_constant(message)
        abi.call(fe.builder, "nova_rt_host_assert_fail", [text])
        abi.call(fe.builder, RAISE, [])
        fe.builder.unreachable()

    def check_fail(self, fe: FunctionEmitter, op: Operation, summary: str, fmt: str,
                   args: Sequence[ir.Value]) -> None:
        """A failed runtime check: snprintf the message into a stack buffer (one per
        function), then fail like `cf.assert` (the NovaError carries the message)."""
        b = fe.builder
        buf = self._check_buffers.get(fe.function)
        if buf is None:
            buf = fe.alloca(ir.ArrayType(T.I8, CHECK_MESSAGE_BYTES), align=16)
            self._check_buffers[fe.function] = buf
        text = b.bitcast(buf, T.PTR)
        snprintf = fe.module.declare("snprintf", ir.FunctionType(
            T.I32, [T.PTR, T.I64, T.PTR], var_arg=True))
        b.call(snprintf, [text, ir.Constant(T.I64, CHECK_MESSAGE_BYTES),
                          fe.module.string_constant(fmt), *args])
        self._abi().call(b, "nova_rt_host_assert_fail", [text])
        self._abi().call(b, RAISE, [])
        b.unreachable()

    def print_value(self, fe: FunctionEmitter, op: Operation, value: ir.Value | None,
                    mlir_type: Attribute | None) -> None:
        RunnerCalls(self._abi()).print_scalar(fe, op, value, mlir_type)

    def function_linkage(self, op: Operation) -> str:
        return "internal"

    def finish_function(self, me: ModuleEmitter, op: Operation, fn: ir.Function) -> None:
        """Public func.funcs get an exported entry wrapper and a manifest record."""
        if op.name != "func.func" or not _is_public(op):
            return
        ftype = attr(op, "function_type")
        assert isinstance(ftype, FunctionType)
        name = symbol_name(op)
        self.entries.append(entry_point(name, ftype, location_of(op), replay_ops(op)))
        emit_entry_wrapper(me.module, name, ftype, fn)

    def _abi(self) -> AbiCalls:
        if self.abi is None:
            raise RuntimeError("HostTarget used before attach()")
        return self.abi


def lower_host(module: ModuleOp, name: str = "nova_host",
               check_bounds: bool = False) -> HostLowering:
    """Lower the host part of an outlined module (func.func + memref.global; gpu.modules are
    skipped) to LLVM IR for x86_64-unknown-linux-gnu; `check_bounds` checks memref accesses."""
    target = HostTarget(check_bounds)
    me = ModuleEmitter(target, name)
    target.attach(me)
    ops = [op for op in module.body.block.ops if not _is_external_declaration(op)]
    me.emit_symbols(ops, skip=frozenset({"gpu.module", "gpu.binary"}))
    assert target.device is not None
    return HostLowering(me.module, tuple(target.entries), tuple(target.device.used_device_modules))


def _is_external_declaration(op: Operation) -> bool:
    """A body-less func.func: resolved per call (runner utility or a located error), never
    declared as an LLVM symbol the object would import."""
    return op.name == "func.func" and not (op.regions and op.regions[0].blocks)


def _is_public(op: Operation) -> bool:
    visibility = attr(op, "sym_visibility")
    return visibility is None or getattr(visibility, "data", "") == "public"

