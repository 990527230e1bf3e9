"""The CPU device target: a gpu.module's kernels compiled to x86-64 that run with GPU semantics.

`lower_cpu_module(gpu_module)` returns an llvmlite module (x86_64-unknown-linux-gnu) that
exports, for each kernel `k`, the entry of `nova.abi.CpuLaunch`:

    i32 k(ptr params, ptr launch)

It runs the blocks [launch->block_begin, launch->block_end) (x fastest), each with all of its
threads, and returns 0, or 1 after writing a message into launch->error. Everything it needs is
in the object (the fiber runtime of cpu_fibers; libc only), and it keeps no mutable global state,
so the runtime calls it from several OS threads at once for disjoint block ranges.

How a kernel runs (docs/architecture.md, "CPU device barriers"):
- Every function of the module is lowered by the shared emitter core with a hidden first
  parameter, the GPU thread's context (ids, block context); `func.call` passes it on.
- A kernel whose call graph uses no barrier, warp operation or assert runs as plain nested loops
  over the threads of each block, with the kernel body inlined (LLVM may vectorise it).
- A kernel whose only synchronisation is block barriers in its own body runs as barrier regions
  (cpu_regions: the body cut at its barriers, each region run for all threads as a loop).
- Any other kernel runs each thread of a block as a fiber (cpu_fibers), so barriers work anywhere
  and a failing assert ends its thread with CUDA's report on stderr; the block's other threads
  run on (each failing one reports too), then the block fails with the first failure's message.
- Every function is compiled for the host CPU (cpu_host_cpu, NOVA_CPU_ARCH), recorded in the
  object's `__nova_cpu_target`. docs/cpu-device.md has the whole story.
- Workgroup memory (attributions and `memref.global`s in the workgroup address space) lives in a
  per-call buffer that each block reuses, so concurrently running blocks on other OS threads
  never share it. Private attributions are allocas of the thread (on its fiber stack).
- Fiber stacks are `stack_bytes` per GPU thread (NOVA_CPU_STACK_KIB, default 64 KiB). A fiber
  kernel whose static private memory (private attributions, memref.alloca) does not fit in it
  minus `STACK_RESERVE` is rejected at compile time; deeper overflows (recursion, dynamic
  allocas) are caught at run time by a canary ("fiber stack overflow in block ...") or, when
  they run past the lowest stack, by the no-access guard zone below it (a KernelFault); every
  function probes its stack growth page by page ("probe-stack"), so no frame jumps the zone.
- The entry records the linear id of the block it runs in launch->current_block, so a fault
  report names the exact block.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from llvmlite import ir
from xdsl.dialects.builtin import FunctionType, MemRefType, SymbolRefAttr
from xdsl.ir import Attribute, Operation

from nova import config
from nova.backends.cpu import fibers as cf
from nova.backends.cpu import host_cpu, regions
from nova.backends.cpu.fibers import (
    BLOCK_CTX,
    I32,
    I64,
    LAUNCH_CTX,
    PTR,
    THREAD_CTX,
    B,
    L,
    T,
    load_field,
    store_field,
)
from nova.backends.cpu.gpu_ops import FIBER_OPS, GPU_HANDLERS, runtime
from nova.backends.cpu.mma import HANDLERS as MMA_HANDLERS
from nova.backends.cpu.mma import MMA_FIBER_OPS
from nova.backends.cpu.mma_sync import FIBER_OPS as MMA_SYNC_FIBER_OPS
from nova.backends.cpu.mma_sync import HANDLERS as MMA_SYNC_HANDLERS
from nova.backends.cpu.nvgpu import HANDLERS as NVGPU_HANDLERS
from nova.backends.cpu.nvvm import CPU_FIBER_OPS as NVVM_FIBER_OPS
from nova.backends.cpu.nvvm import CPU_HANDLERS as NVVM_HANDLERS
from nova.backends.cpu.softfloat import add_libcall_helpers
from nova.backends.cpu.wgmma import HANDLERS as WGMMA_HANDLERS
from nova.backends.kernel_abi import check_kernel_signature, kernel_params, type_spec
from nova.backends.llvm import memref as M
from nova.backends.llvm import types as TY
from nova.backends.llvm.emitter import (
    FunctionEmitter,
    ModuleEmitter,
    attr,
    core_handlers,
    display_name,
    int_attr,
    location_of,
    symbol_name,
)
from nova.backends.llvm.ops_memref import CHECKED_OPS, emit_global
from nova.backends.llvm.target import TargetBase
from nova.bundle.format import Kernel
from nova.errors import SourceLocation, UnsupportedError
from nova.ir.locations import assert_site

TRIPLE = "x86_64-unknown-linux-gnu"
DATA_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
DEFAULT_STACK_BYTES = cf.DEFAULT_STACK_BYTES
WORKGROUP_ALIGN = 64
STACK_RESERVE = 16 * 1024
"""Bytes of every fiber stack kept for the runtime, libc calls (printf) and spills."""
LIBDEVICE_PREFIX = "__nv_"
BODY_PREFIX = "__nova_cpu_fn."
FIBER_PREFIX = "__nova_cpu_fiber."


def is_workgroup(ty: Attribute | None) -> bool:
    """True for a memref in the workgroup (shared) address space (#gpu.address_space or 3)."""
    if not isinstance(ty, MemRefType):
        return False
    return TY.memory_space_name(ty) in ("workgroup", 3)


def _static_bytes(ty: MemRefType, what: str, op: Operation) -> int:
    count = 1
    for d in ty.get_shape():
        if TY.is_dynamic(d):
            raise UnsupportedError(f"{what} of dynamic shape {ty} is not supported "
                                   "(use gpu.dynamic_shared_memory)", _loc(op))
        count *= d
    return count * TY.element_size(ty.element_type)


def _loc(op: Operation) -> SourceLocation | None:
    return location_of(op)


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclass
class WorkgroupLayout:
    """Offsets into the per-block workgroup buffer: module globals first, then each kernel's
    workgroup attributions."""

    globals: dict[str, int] = field(default_factory=dict)
    globals_end: int = 0
    attributions: dict[str, list[int]] = field(default_factory=dict)
    kernel_bytes: dict[str, int] = field(default_factory=dict)

    def add_global(self, op: Operation) -> None:
        ty = attr(op, "type")
        assert isinstance(ty, MemRefType)
        align = max(int_attr(op, "alignment") or 16, 16)
        offset = _align(self.globals_end, align)
        self.globals[symbol_name(op)] = offset
        self.globals_end = offset + _static_bytes(ty, "workgroup memref.global", op)

    def add_kernel(self, op: Operation) -> None:
        """Place the kernel's workgroup attributions after the globals."""
        name = symbol_name(op)
        n_inputs = len(_ftype(op).inputs.data)
        n_workgroup = int_attr(op, "workgroup_attributions") or 0
        args = list(op.regions[0].blocks[0].args)[n_inputs:n_inputs + n_workgroup]
        end = self.globals_end
        offsets: list[int] = []
        for arg in args:
            if not isinstance(arg.type, MemRefType):
                raise UnsupportedError(f"workgroup attribution of type {arg.type}", _loc(op))
            offset = _align(end, 16)
            offsets.append(offset)
            end = offset + _static_bytes(arg.type, "workgroup attribution", op)
        self.attributions[name] = offsets
        self.kernel_bytes[name] = end


def _ftype(op: Operation) -> FunctionType:
    ftype = attr(op, "function_type")
    assert isinstance(ftype, FunctionType)
    return ftype


@functools.cache
def _c_libraries() -> tuple[ctypes.CDLL, ...]:
    """libc and libm of this (glibc x86-64) host, by soname (find_library as a fallback)."""
    libs = []
    for soname, short in (("libc.so.6", "c"), ("libm.so.6", "m")):
        try:
            libs.append(ctypes.CDLL(soname))
        except OSError:
            path = ctypes.util.find_library(short)
            if path:
                libs.append(ctypes.CDLL(path))
    return tuple(libs)


def _in_libc(name: str) -> bool:
    return any(hasattr(lib, name) for lib in _c_libraries())


def external_symbol(op: Operation) -> str:
    """The symbol a function declared (not defined) in a gpu.module binds to on the CPU device:
    a libc/libm function of the same name, or for CUDA libdevice's `__nv_<f>` the libm `<f>`.
    Anything else would be unresolved when the runtime loads the object, so it is an error."""
    name = symbol_name(op)
    if name.startswith(LIBDEVICE_PREFIX) and _in_libc(name[len(LIBDEVICE_PREFIX):]):
        return name[len(LIBDEVICE_PREFIX):]
    if _in_libc(name):
        return name
    raise UnsupportedError(
        f"function @{name} is declared but not defined in the gpu.module; CPU device kernels "
        "may only call functions defined in their gpu.module, libc/libm functions, or libdevice "
        "functions (__nv_*) that have a libm equivalent", _loc(op))


def is_kernel(op: Operation) -> bool:
    return op.name == "gpu.func" and "gpu.kernel" in op.attributes


class CpuFunctionEmitter(FunctionEmitter):
    """A FunctionEmitter whose LLVM function has the thread context as a leading parameter."""

    def __init__(self, me: ModuleEmitter, func_op: Operation, fn: ir.Function) -> None:
        super().__init__(me, func_op, fn)
        self.tctx = fn.args[0]

    def param_args(self) -> list[ir.Argument]:
        return list(self.function.args)[1:]


def _workgroup_base(fe: FunctionEmitter) -> ir.Value:
    b = fe.builder
    bctx = load_field(b, THREAD_CTX, fe.tctx, T.BCTX)  # type: ignore[attr-defined]
    return load_field(b, BLOCK_CTX, bctx, B.WORKGROUP)


class CpuTarget(TargetBase):
    """Target hooks of the CPU device (see the module docstring)."""

    name = "cpu"
    triple = TRIPLE
    data_layout = DATA_LAYOUT

    def __init__(self, stack_bytes: int = DEFAULT_STACK_BYTES, check_bounds: bool = False) -> None:
        if stack_bytes < STACK_RESERVE + cf.MIN_STACK_BYTES or stack_bytes % 16:
            raise UnsupportedError(
                f"CPU fiber stacks must be a multiple of 16 bytes and at least "
                f"{(STACK_RESERVE + cf.MIN_STACK_BYTES) // 1024} KiB (NOVA_CPU_STACK_KIB); got "
                f"{stack_bytes} bytes")
        self.stack_bytes = stack_bytes
        self.check_bounds = check_bounds
        self._check_buffers: dict[ir.Function, ir.Value] = {}
        self.layout = WorkgroupLayout()
        self.handlers = {
            **GPU_HANDLERS,
            **MMA_HANDLERS,
            **MMA_SYNC_HANDLERS,
            **NVVM_HANDLERS,
            **NVGPU_HANDLERS,
            **WGMMA_HANDLERS,
            "func.call": self._lower_call,
            "memref.get_global": self._lower_get_global,
        }

    def pointer_address_space(self, memref_type: Attribute) -> int:
        return 0  # one flat address space on the CPU

    def function_linkage(self, op: Operation) -> str:
        return "internal"

    def attribution(self, fe: FunctionEmitter, func_op: Operation, kind: str,
                    mlir_type: MemRefType, index: int) -> M.MemRefDescriptor:
        b = fe.builder
        sizes = [M.const_index(d) for d in mlir_type.get_shape()]
        if kind == "workgroup":
            offsets = self.layout.attributions.get(symbol_name(func_op))
            if offsets is None:
                raise UnsupportedError("workgroup attributions are only supported on kernels",
                                       fe.location(func_op))
            base = cf.gep(b, _workgroup_base(fe), [I64(offsets[index])], cf.I8)
            return M.identity_descriptor(b, mlir_type, base, sizes)
        nbytes = _static_bytes(mlir_type, "private attribution", func_op)
        slot = fe.alloca(ir.ArrayType(cf.I8, nbytes), align=16)
        return M.identity_descriptor(b, mlir_type, cf.gep(b, slot, [I64(0)], cf.I8), sizes)

    def assert_fail(self, fe: FunctionEmitter, op: Operation, message: str) -> None:
        loc = fe.location(op)
        where = f" ({loc.filename}:{loc.line}:{loc.column})" if loc is not None else ""
        text = f"assertion failed: {message}{where}"
        file, line, func = assert_site(op)
        module = fe.module.module
        tctx = fe.tctx  # type: ignore[attr-defined]
        fe.builder.call(runtime(fe).assert_fail, [
            tctx, cf.cstring(module, message), cf.cstring(module, file), ir.Constant(cf.I32, line),
            cf.cstring(module, func), cf.cstring(module, text)])
        fe.builder.unreachable()

    def check_fail(self, fe: FunctionEmitter, op: Operation, summary: str, fmt: str,
                   args: Sequence[ir.Value]) -> None:
        """A failed runtime check: snprintf the message into a stack buffer and fail the thread
        like `cf.assert` (the kernel runs as fibers: `needs_fibers` counts checked accesses)."""
        b = fe.builder
        buf = self._check_buffers.get(fe.function)
        if buf is None:  # one per function: every check of it shares the entry-block buffer
            buf = fe.alloca(ir.ArrayType(cf.I8, cf.ERROR_BYTES), align=16)
            self._check_buffers[fe.function] = buf
        text = cf.gep(b, buf, [I64(0)], cf.I8)
        b.call(cf.libc(fe.module.module, "snprintf"),
               [text, I64(cf.ERROR_BYTES), cf.cstring(fe.module.module, fmt), *args])
        b.call(runtime(fe).fail, [fe.tctx, text])  # type: ignore[attr-defined]
        b.unreachable()

    # --- op overrides --------------------------------------------------------------------
    def _lower_call(self, fe: FunctionEmitter, op: Operation) -> None:
        callee = attr(op, "callee")
        assert isinstance(callee, SymbolRefAttr)
        name = callee.root_reference.data
        fn = fe.module.functions.get(name)
        args = fe.flat_args(op.operands)
        if fn is None:
            raise fe.error(op, f"func.call of @{name}, which is not in the gpu.module")
        if name in getattr(fe.module, "cpu_with_ctx", ()):
            args = [fe.tctx, *args]  # type: ignore[attr-defined]
        result = fe.builder.call(fn, args)
        if len(op.results) == 1:
            fe.bind_from_llvm(op.results[0], result)
        else:
            for i, res in enumerate(op.results):
                fe.bind_from_llvm(res, fe.builder.extract_value(result, i))

    def _lower_get_global(self, fe: FunctionEmitter, op: Operation) -> None:
        name = attr(op, "name")
        sym = name.root_reference.data  # type: ignore[union-attr]
        offset = self.layout.globals.get(sym)
        if offset is None:
            core_handlers()["memref.get_global"](fe, op)
            return
        ty = op.results[0].type
        assert isinstance(ty, MemRefType)
        base = cf.gep(fe.builder, _workgroup_base(fe), [I64(offset)], cf.I8)
        sizes = [M.const_index(d) for d in ty.get_shape()]
        fe.bind(op.results[0], M.identity_descriptor(fe.builder, ty, base, sizes))


@dataclass(frozen=True)
class CpuLowering:
    """The LLVM module of one gpu.module for the CPU device, and its kernels."""

    llvm_module: ir.Module
    kernels: tuple[Kernel, ...]


def _module_ops(gpu_module: Operation) -> list[Operation]:
    ops: list[Operation] = []
    for region in gpu_module.regions:
        for block in region.blocks:
            ops += [op for op in block.ops if op.name not in ("gpu.module_end",)]
    return ops


def _callees(op: Operation) -> Iterable[str]:
    for inner in op.walk():
        if inner.name == "func.call":
            callee = attr(inner, "callee")
            if isinstance(callee, SymbolRefAttr):
                yield callee.root_reference.data


def needs_fibers(kernel: Operation, funcs: dict[str, Operation],
                 check_bounds: bool = False) -> bool:
    """True when the kernel or anything it calls uses a barrier, warp op, assert or trap, or,
    with `check_bounds`, a bounds-checked memref access (its failure stops the thread as a
    failed assert does)."""

    names = (FIBER_OPS | MMA_FIBER_OPS | MMA_SYNC_FIBER_OPS | NVVM_FIBER_OPS
             | (CHECKED_OPS if check_bounds else frozenset()))
    seen: set[str] = set()
    todo = [kernel]
    while todo:
        op = todo.pop()
        if any(inner.name in names for inner in op.walk()):
            return True
        for name in _callees(op):
            if name not in seen and name in funcs:
                seen.add(name)
                todo.append(funcs[name])
    return False


SPLIT_BARRIERS = frozenset({"gpu.barrier", "nvvm.barrier0"})
"""The block barriers a kernel may contain and still run as barrier regions (cpu_regions)."""


def splittable(kernel: Operation, funcs: dict[str, Operation], check_bounds: bool = False) -> bool:
    """True when the kernel's only reasons for fibers are block barriers in its own body (no
    warp operations, asserts, checked accesses, and no callee that needs fibers): then
    `regions.split_at_barriers` may run it as barrier regions (it still refuses bodies with
    private memory)."""
    names = (FIBER_OPS | MMA_FIBER_OPS | MMA_SYNC_FIBER_OPS | NVVM_FIBER_OPS
             | (CHECKED_OPS if check_bounds else frozenset())) - SPLIT_BARRIERS
    if any(inner.name in names for inner in kernel.walk()):
        return False
    return not any(needs_fibers(funcs[name], funcs, check_bounds)
                   for name in set(_callees(kernel)) if name in funcs)


def private_bytes(kernel: Operation, funcs: dict[str, Operation]) -> int:
    """Static per-thread private memory of a kernel: its private attributions plus every
    statically shaped memref.alloca in it and in the functions it calls (an upper bound)."""
    total = 0
    ftype = _ftype(kernel)
    n_in = len(ftype.inputs.data)
    n_workgroup = int_attr(kernel, "workgroup_attributions") or 0
    for arg in list(kernel.regions[0].blocks[0].args)[n_in + n_workgroup:]:
        if isinstance(arg.type, MemRefType):
            total += _static_bytes(arg.type, "private attribution", kernel)
    seen: set[str] = set()
    todo = [kernel]
    while todo:
        op = todo.pop()
        for inner in op.walk():
            ty = inner.results[0].type if inner.name == "memref.alloca" else None
            if isinstance(ty, MemRefType) and not any(TY.is_dynamic(d) for d in ty.get_shape()):
                total += _static_bytes(ty, "memref.alloca", inner)
        for name in _callees(op):
            if name in funcs and name not in seen:
                seen.add(name)
                todo.append(funcs[name])
    return total


def _check_stack(op: Operation, funcs: dict[str, Operation], stack_bytes: int) -> None:
    need = private_bytes(op, funcs)
    if need > stack_bytes - STACK_RESERVE:
        raise UnsupportedError(
            f"kernel @{symbol_name(op)} needs {need} bytes of private memory per GPU thread, but "
            f"on the CPU device each thread of a kernel with barriers, warp operations or asserts "
            f"runs on a {stack_bytes}-byte fiber stack ({STACK_RESERVE} of them kept for calls); "
            "use workgroup or global memory for large per-thread arrays", _loc(op))


def lower_cpu_module(gpu_module: Operation, stack_bytes: int | None = None,
                     check_bounds: bool = False) -> CpuLowering:
    """Lower one gpu.module for the CPU device (see the module docstring). `stack_bytes` is the
    fiber stack per GPU thread (default: `nova.config` cpu_stack_kib, NOVA_CPU_STACK_KIB);
    `check_bounds` bounds-checks memref accesses (their kernels then run as fibers)."""
    if stack_bytes is None:

        stack_bytes = config.get().cpu_stack_kib * 1024
    target = CpuTarget(stack_bytes, check_bounds)
    regions_on = config.get().cpu_regions
    name = symbol_name(gpu_module)
    me = ModuleEmitter(target, name)

    ops = _module_ops(gpu_module)
    funcs = {symbol_name(op): op for op in ops if op.name in ("func.func", "gpu.func")}
    with_ctx: set[str] = set()
    me.cpu_with_ctx = with_ctx  # type: ignore[attr-defined]
    for op in ops:
        if op.name == "memref.global":
            ty = attr(op, "type")
            if is_workgroup(ty):
                target.layout.add_global(op)
            else:
                emit_global(me, op)
        elif op.name not in ("func.func", "gpu.func"):
            raise UnsupportedError(f"op '{display_name(op)}' in a gpu.module is not supported by "
                                   "the CPU device (supported: gpu.func, func.func, "
                                   "memref.global)",
                                   _loc(op))

    for fname, op in funcs.items():
        if is_kernel(op):
            check_kernel_signature(op)
            target.layout.add_kernel(op)
        has_body = bool(op.regions and op.regions[0].blocks)
        fnty = me.function_type(_ftype(op))
        if has_body:
            fn = ir.Function(me.module, ir.FunctionType(fnty.return_type, [PTR, *fnty.args]),
                             BODY_PREFIX + fname)
            fn.linkage = "internal"
            with_ctx.add(fname)
        else:
            fn = me.declare(external_symbol(op), fnty)
        me.apply_arg_attrs(op, _ftype(op), fn)
        me.functions[fname] = fn
        me.func_ops[fname] = op
    kernels: list[Kernel] = []
    for fname, op in funcs.items():
        if fname not in with_ctx:
            continue
        fn = me.functions[fname]
        CpuFunctionEmitter(me, op, fn).emit_body()
        if is_kernel(op):
            fiber = needs_fibers(op, funcs, check_bounds)
            split = None
            if fiber and regions_on and splittable(op, funcs, check_bounds):
                split = regions.split_at_barriers(fn, cf.fiber_runtime(me.module).wait)
            if fiber and split is None:
                _check_stack(op, funcs, stack_bytes)
            _emit_entry(me, target, op, fn, fiber and split is None, split)
            kernels.append(kernel_info(op, target.layout.kernel_bytes[fname], fiber))
    add_libcall_helpers(me.module)
    _probe_stacks(me.module)
    host_cpu.apply(me.module, host_cpu.cpu_target())
    return CpuLowering(me.module, tuple(kernels))


PROBE_STACK = '"probe-stack"="inline-asm"'


def _probe_stacks(module: ir.Module) -> None:
    """Make every function probe its stack page by page when it grows it by more than a page
    (LLVM's stack-clash protection, also for dynamic allocas), so a large frame or alloca on a
    fiber stack walks into the no-access guard zone below the stacks (a clean KernelFault)
    instead of jumping over it into the malloc heap. llvmlite's attribute set only admits
    keyword attributes, hence `set.add` for this string attribute."""
    for fn in module.functions:
        if not fn.is_declaration and "naked" not in fn.attributes:
            set.add(fn.attributes, PROBE_STACK)


# ---- kernel entries --------------------------------------------------------------------------

def _load_params(b: ir.IRBuilder, params: ir.Value, types: list[ir.Type]) -> list[ir.Value]:
    """Load each expanded parameter: params[i] points to its value. A vector is loaded aligned
    to its element only: the runtime's parameter block aligns a value to at most 16 bytes, less
    than LLVM's alignment of a 32- or 64-byte vector (nova.runtime.launch_params)."""
    values = []
    for i, ty in enumerate(types):
        slot = b.load(cf.gep(b, params, [I64(i)], PTR), typ=PTR)
        align = TY.element_size_llvm(ty.element) if isinstance(ty, ir.VectorType) else None
        values.append(b.load(slot, typ=ty, align=align))
    return values


def _emit_fiber_entry(me: ModuleEmitter, name: str, body: ir.Function) -> ir.Function:
    """void fiber(ptr tctx): load the params, run the body, exit the fiber (never returns)."""
    rt = cf.fiber_runtime(me.module)
    fn = ir.Function(me.module, ir.FunctionType(cf.VOID, [PTR]), FIBER_PREFIX + name)
    fn.linkage = "internal"
    fn.attributes.add("noreturn")
    fn.attributes.add("nounwind")
    (tctx,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = load_field(b, THREAD_CTX, tctx, T.BCTX)
    params = load_field(b, BLOCK_CTX, bctx, B.PARAMS)
    values = _load_params(b, params, [a.type for a in body.args[1:]])
    b.call(body, [tctx, *values])
    b.call(rt.exit, [tctx])
    b.unreachable()
    return fn


def _emit_entry(me: ModuleEmitter, target: CpuTarget, op: Operation, body: ir.Function,
                fiber: bool, split: regions.SplitKernel | None = None) -> None:
    """The exported `i32 k(ptr params, ptr launch)` (see the module docstring): the blocks run
    as fibers (`fiber`), as barrier regions (`split`) or as plain loops over the threads."""
    name = symbol_name(op)
    fn = ir.Function(me.module, ir.FunctionType(I32, [PTR, PTR]), name)
    params, launch = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bctx = cf.alloca(b, BLOCK_CTX, name="bctx")
    store_field(b, BLOCK_CTX, bctx, launch, B.LAUNCH)
    store_field(b, BLOCK_CTX, bctx, params, B.PARAMS)
    dims = [load_field(b, LAUNCH_CTX, launch, L.BLOCK, d) for d in range(3)]
    grid = [load_field(b, LAUNCH_CTX, launch, L.GRID, d) for d in range(3)]
    for d in range(3):
        store_field(b, BLOCK_CTX, bctx, dims[d], B.BDIM_X + d)
        store_field(b, BLOCK_CTX, bctx, grid[d], B.GDIM_X + d)
    nthreads = b.mul(b.mul(dims[0], dims[1]), dims[2])
    store_field(b, BLOCK_CTX, bctx, nthreads, B.NTHREADS)
    wg_bytes = target.layout.kernel_bytes[name]
    scratch: list[ir.Value] = []  # malloc'd per call, freed on every way out
    if wg_bytes:
        wg = _malloc_aligned(me, b, launch, scratch, I64(wg_bytes),
                             f"{wg_bytes} bytes of workgroup memory for kernel @{name}")
        store_field(b, BLOCK_CTX, bctx, wg, B.WORKGROUP)
    else:
        store_field(b, BLOCK_CTX, bctx, ir.Constant(PTR, None), B.WORKGROUP)
    rt = cf.fiber_runtime(me.module) if fiber else None
    run = None
    if rt is not None:
        store_field(b, BLOCK_CTX, bctx, _emit_fiber_entry(me, name, body), B.ENTRY)
        status = b.call(rt.block_alloc, [bctx, nthreads, I64(target.stack_bytes)])
        with b.if_then(b.icmp_unsigned("!=", status, I32(0)), likely=False):
            b.call(rt.block_free, [bctx])  # frees what was allocated (free(NULL) is a no-op)
            _free_all(me, b, scratch)
            b.ret(I32(1))
    else:
        body.attributes.add("alwaysinline")
        values = _load_params(b, params, [a.type for a in body.args[1:]])
        tctx = cf.alloca(b, THREAD_CTX, name="tctx")
        store_field(b, THREAD_CTX, tctx, bctx, T.BCTX)
        run = _SplitRun(me, bctx, tctx, dims, body, values, split, fn) if split else None
        if run is not None and split is not None:
            run.allocate(b, launch, scratch, nthreads)
    begin = load_field(b, LAUNCH_CTX, launch, L.BLOCK_BEGIN)
    end = load_field(b, LAUNCH_CTX, launch, L.BLOCK_END)
    failed = fn.append_basic_block("failed") if rt is not None or run is not None else None

    def run_block(b: ir.IRBuilder, i: ir.Value) -> None:
        blk = b.add(begin, i)
        # for the fault guard's report: an atomic store, which LLVM neither sinks out of the
        # loop nor lets the block's own (possibly faulting) accesses pass
        record = ir.instructions.StoreAtomicInstr(  # IRBuilder's checks want typed pointers
            b.block, blk, cf.field(b, LAUNCH_CTX, launch, L.CURRENT_BLOCK), "monotonic", 8)
        b._insert(record)
        store_field(b, BLOCK_CTX, bctx, b.urem(blk, grid[0]), B.BID_X)
        store_field(b, BLOCK_CTX, bctx, b.urem(b.udiv(blk, grid[0]), grid[1]), B.BID_Y)
        store_field(b, BLOCK_CTX, bctx, b.udiv(blk, b.mul(grid[0], grid[1])), B.BID_Z)
        if rt is not None:
            status = b.call(rt.run_block, [bctx])
            ok = b.append_basic_block("block.ok")
            assert failed is not None
            b.cbranch(b.icmp_unsigned("!=", status, I32(0)), failed, ok)
            b.position_at_end(ok)
        elif run is not None:
            assert failed is not None
            run.run_block(b, failed)
        else:
            _thread_loops(b, dims, tctx, lambda b: b.call(body, [tctx, *values]))

    cf.counted_loop(b, b.sub(end, begin), run_block, "blocks")
    for result, block in ((0, None), (1, failed)):
        if result and block is None:
            continue
        if block is not None:
            b.position_at_end(block)
        if rt is not None:
            b.call(rt.block_free, [bctx])
        _free_all(me, b, scratch)
        b.ret(I32(result))


def _malloc_aligned(me: ModuleEmitter, b: ir.IRBuilder, launch: ir.Value,
                    scratch: list[ir.Value], nbytes: ir.Value, what: str) -> ir.Value:
    """malloc(nbytes) aligned to WORKGROUP_ALIGN, added to `scratch`; out of memory frees the
    earlier scratch and returns 1 with a message naming `what`."""
    raw = b.call(cf.libc(me.module, "malloc"), [b.add(nbytes, I64(WORKGROUP_ALIGN))])
    with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
        err = cf.field(b, LAUNCH_CTX, launch, L.ERROR, 0)
        msg = cf.cstring(me.module, f"CPU device: out of memory allocating {what}")
        b.call(cf.libc(me.module, "snprintf"), [err, I64(cf.ERROR_BYTES), msg])
        _free_all(me, b, scratch)
        b.ret(I32(1))
    scratch.append(raw)
    aligned = b.and_(b.add(b.ptrtoint(raw, I64), I64(WORKGROUP_ALIGN - 1)),
                     I64(-WORKGROUP_ALIGN & 0xFFFFFFFFFFFFFFFF))
    return b.inttoptr(aligned, PTR)


def _free_all(me: ModuleEmitter, b: ir.IRBuilder, scratch: list[ir.Value]) -> None:
    for raw in scratch:
        b.call(cf.libc(me.module, "free"), [raw])


def _thread_loops(b: ir.IRBuilder, dims: list[ir.Value], tctx: ir.Value,
                  each: Callable[[ir.IRBuilder], None]) -> None:
    """for z, y, x over the block's threads (x fastest): set the thread's ids, then `each`."""

    def z_loop(b: ir.IRBuilder, z: ir.Value) -> None:
        def y_loop(b: ir.IRBuilder, y: ir.Value) -> None:
            def x_loop(b: ir.IRBuilder, x: ir.Value) -> None:
                linear = b.add(b.mul(b.add(b.mul(z, dims[1]), y), dims[0]), x)
                for f, v in ((T.TID_X, x), (T.TID_Y, y), (T.TID_Z, z), (T.LINEAR, linear)):
                    store_field(b, THREAD_CTX, tctx, v, f)
                each(b)

            cf.counted_loop(b, dims[0], x_loop, "tx")

        cf.counted_loop(b, dims[1], y_loop, "ty")

    cf.counted_loop(b, dims[2], z_loop, "tz")


ALL_ONES = 0xFFFFFFFFFFFFFFFF


class _SplitRun:
    """Runs one block of a region-split kernel (cpu_regions): passes over the threads in
    order, each thread resuming from its state; a pass where all threads share a state runs
    that region alone (a loop LLVM may vectorise). Between passes: all exited -> the block is
    done; some exited while others wait at a barrier -> barrier divergence (the fiber runtime's
    error); otherwise the next pass."""

    def __init__(self, me: ModuleEmitter, bctx: ir.Value, tctx: ir.Value, dims: list[ir.Value],
                 body: ir.Function, values: list[ir.Value], split: regions.SplitKernel,
                 fn: ir.Function) -> None:
        self.me, self.bctx, self.tctx, self.dims = me, bctx, tctx, dims
        self.body, self.values, self.split, self.fn = body, values, split, fn
        self.states: ir.Value = ir.Constant(PTR, None)
        self.vars: dict[str, ir.Value] = {}

    def allocate(self, b: ir.IRBuilder, launch: ir.Value, scratch: list[ir.Value],
                 nthreads: ir.Value) -> None:
        """The per-call states array (one i64 per thread) and frame, one malloc."""
        states_bytes = b.and_(b.add(b.mul(nthreads, I64(8)), I64(63)), I64(-64 & ALL_ONES))
        total = b.add(states_bytes, b.mul(nthreads, I64(self.split.frame_bytes)))
        self.states = _malloc_aligned(self.me, b, launch, scratch, total,
                                      "the barrier-region frame of a kernel")
        frame = cf.gep(b, self.states, [states_bytes], cf.I8)
        store_field(b, BLOCK_CTX, self.bctx, frame, B.FRAME)
        shared = self.split.uniform_bytes
        for field_index in (B.UNIFORM_IN, B.UNIFORM_OUT):
            area = ir.Constant(PTR, None)
            if shared:  # allocas: LLVM sees that the body's stores never alias them
                area = cf.alloca(b, ir.ArrayType(cf.I8, shared), name="uniform")
                area.align = 16
            store_field(b, BLOCK_CTX, self.bctx, area, field_index)
            self.vars[f"uniform{field_index}"] = area
        for var in ("state", "min", "max"):
            self.vars[var] = cf.alloca(b, I64, name=f"pass.{var}")

    def _pass(self, b: ir.IRBuilder, state: int | None) -> None:
        tctx, states = self.tctx, self.states
        b.store(I64(ALL_ONES), self.vars["min"])
        b.store(I64(0), self.vars["max"])
        if state is not None and self.split.uniform_passes:
            # every thread stops in the same state (uniformity): the last thread's is the pass's
            def run(b: ir.IRBuilder) -> None:
                store_field(b, THREAD_CTX, tctx, I64(state), T.STATE)
                b.call(self.body, [tctx, *self.values])

            store_field(b, THREAD_CTX, tctx, I64(self.split.exit_state), T.STATE)  # no threads
            _thread_loops(b, self.dims, tctx, run)
            last = load_field(b, THREAD_CTX, tctx, T.STATE)
            b.store(last, self.vars["min"])
            b.store(last, self.vars["max"])
            return

        def each(b: ir.IRBuilder) -> None:
            linear = load_field(b, THREAD_CTX, tctx, T.LINEAR)
            slot = b.gep(states, [linear], source_etype=I64)
            current = I64(state) if state is not None else b.load(slot, typ=I64)
            store_field(b, THREAD_CTX, tctx, current, T.STATE)
            b.call(self.body, [tctx, *self.values])
            nxt = load_field(b, THREAD_CTX, tctx, T.STATE)
            b.store(nxt, slot)
            lo = b.load(self.vars["min"], typ=I64)
            hi = b.load(self.vars["max"], typ=I64)
            b.store(b.select(b.icmp_unsigned("<", nxt, lo), nxt, lo), self.vars["min"])
            b.store(b.select(b.icmp_unsigned(">", nxt, hi), nxt, hi), self.vars["max"])

        _thread_loops(b, self.dims, tctx, each)

    def run_block(self, b: ir.IRBuilder, failed: ir.Block) -> None:
        fn, exit_state = self.fn, self.split.exit_state
        b.store(I64(0), self.vars["state"])
        dispatch = fn.append_basic_block("pass.dispatch")
        general = fn.append_basic_block("pass.any")
        check = fn.append_basic_block("pass.check")
        done = fn.append_basic_block("block.done")
        n = load_field(b, BLOCK_CTX, self.bctx, B.NTHREADS)
        b.cbranch(b.icmp_unsigned("==", n, I64(0)), done, dispatch)  # a block without threads
        b.position_at_end(dispatch)
        switch = b.switch(b.load(self.vars["state"], typ=I64), general)
        for k in range(exit_state):
            region = fn.append_basic_block(f"pass.{k}")
            switch.add_case(I64(k), region)
            b.position_at_end(region)
            self._pass(b, k)
            b.branch(check)
        b.position_at_end(general)
        self._pass(b, None)
        b.branch(check)
        b.position_at_end(check)
        lo = b.load(self.vars["min"], typ=I64)
        hi = b.load(self.vars["max"], typ=I64)
        waiting = fn.append_basic_block("pass.waiting")
        diverged = fn.append_basic_block("pass.diverged")
        again = fn.append_basic_block("pass.next")
        b.cbranch(b.icmp_unsigned("==", lo, I64(exit_state)), done, waiting)
        b.position_at_end(waiting)
        b.cbranch(b.icmp_unsigned("==", hi, I64(exit_state)), diverged, again)
        b.position_at_end(again)
        if self.split.uniform_bytes:  # what this pass wrote is what the next one reads
            b.call(self._memcpy(), [self.vars[f"uniform{B.UNIFORM_IN}"],
                                    self.vars[f"uniform{B.UNIFORM_OUT}"],
                                    I64(self.split.uniform_bytes), ir.Constant(ir.IntType(1), 0)])
        same = b.icmp_unsigned("==", lo, hi)
        b.store(b.select(same, lo, I64(exit_state + 1)), self.vars["state"])  # +1: pass.any
        b.branch(dispatch)
        b.position_at_end(diverged)
        self._report_divergence(b)
        b.branch(failed)
        b.position_at_end(done)

    def _memcpy(self) -> ir.Function:
        return regions.memcpy(self.me.module)

    def _report_divergence(self, b: ir.IRBuilder) -> None:
        """The fiber scheduler's message: some threads exited, the others wait at barriers."""
        n = load_field(b, BLOCK_CTX, self.bctx, B.NTHREADS)
        count = self.vars["min"]  # free now: reused as the counter of exited threads
        b.store(I64(0), count)

        def tally(b: ir.IRBuilder, i: ir.Value) -> None:
            state = b.load(b.gep(self.states, [i], source_etype=I64), typ=I64)
            exited = b.zext(b.icmp_unsigned("==", state, I64(self.split.exit_state)), I64)
            b.store(b.add(b.load(count, typ=I64), exited), count)

        cf.counted_loop(b, n, tally, "tally")
        n_exited = b.load(count, typ=I64)
        launch = load_field(b, BLOCK_CTX, self.bctx, B.LAUNCH)
        ids = [load_field(b, BLOCK_CTX, self.bctx, f) for f in (B.BID_X, B.BID_Y, B.BID_Z)]
        b.call(cf.libc(self.me.module, "snprintf"),
               [cf.field(b, LAUNCH_CTX, launch, L.ERROR, 0), I64(cf.ERROR_BYTES),
                cf.cstring(self.me.module, cf.DIVERGENCE_FORMAT), *ids, n_exited, n,
                b.sub(n, n_exited)])


# ---- kernel descriptions ---------------------------------------------------------------------

def kernel_info(op: Operation, workgroup_bytes: int, uses_fibers: bool) -> Kernel:
    """The manifest's description of a kernel (args and expanded params as for every target;
    `static_shared_bytes` is the CPU per-block workgroup buffer, `uses_barriers` whether the
    kernel synchronises its threads: fibers or barrier regions)."""

    ftype = _ftype(op)
    return Kernel(symbol_name(op), tuple(type_spec(t) for t in ftype.inputs.data),
                  kernel_params(ftype, lambda _t: 0), workgroup_bytes, uses_fibers)
