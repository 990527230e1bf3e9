"""Handlers for gpu dialect ops in host code: launch_func, wait, alloc/dealloc, memcpy, memset,
host_register/unregister, each turned into runtime-ABI calls by `host_device.HostDevice`.

Operands are read by role, not by position, so both xDSL's `gpu` ops and Nova's own dialect (same
op and operand names) lower the same way. Async tokens are bound to the stream they stand for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    IntegerType,
    MemRefType,
    NoneAttr,
    SymbolRefAttr,
    UnrankedMemRefType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from nova.abi import LIBRARY_CALL_PREFIX
from nova.backends.host.device import LaunchConfig
from nova.backends.host.memref import data_pointer
from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import FunctionEmitter, attr, location_of
from nova.backends.llvm.target import Handler

if TYPE_CHECKING:
    from nova.backends.host.device import HostDevice

TOKEN = "gpu.async.token"


def is_token(ty: Attribute) -> bool:
    """True for `!gpu.async.token` (xDSL's or Nova's class)."""
    return getattr(ty, "name", None) == TOKEN


def _deps(op: Operation) -> list[SSAValue]:
    return [v for v in op.operands if is_token(v.type)]


def _data_operands(op: Operation) -> list[SSAValue]:
    return [v for v in op.operands if not is_token(v.type)]


def _named(op: Operation, name: str, index: int) -> SSAValue:
    """Operand `name` (Nova's and xDSL's op classes share upstream's names), else the index-th
    non-token operand."""
    value = getattr(op, name, None)
    return value if isinstance(value, SSAValue) else _data_operands(op)[index]


def _token_result(op: Operation) -> SSAValue | None:
    return next((r for r in op.results if is_token(r.type)), None)


_SYNCING_OPS = ("gpu.launch_func", "gpu.memcpy", "gpu.memset")
"""Ops whose synchronous form ends by blocking the host until the null stream is idle."""


def _host_invisible(op: Operation) -> bool:
    """Ops the host cannot observe device memory through, and that leave the null stream's
    order intact: scalar arithmetic and memref.dim (no regions, no memory effects), synchronous
    gpu.alloc/gpu.dealloc (stream-ordered on the null stream, never a host wait) and library
    calls (`func.call @__nova_library_<i>`: queued on the null stream, never a host wait)."""
    name = op.name
    if op.regions:
        return False
    if name.startswith(("arith.", "index.")) or name == "memref.dim":
        return True
    if name in ("gpu.alloc", "gpu.dealloc"):
        return _token_result(op) is None and not _deps(op)
    if name == "func.call":
        callee = attr(op, "callee")
        return isinstance(callee, SymbolRefAttr) and \
            callee.root_reference.data.startswith(LIBRARY_CALL_PREFIX)
    return False


def _is_sync_stream_op(op: Operation | None) -> bool:
    """A synchronous `gpu.launch_func`/`gpu.memcpy`/`gpu.memset`: one that ends by blocking the
    host until the null stream is idle (no token result, no explicit async object)."""
    return (op is not None and op.name in _SYNCING_OPS and _token_result(op) is None
            and getattr(op, "asyncObject", None) is None)


def _is_sync_memory_op(op: Operation) -> bool:
    """A synchronous `gpu.alloc`/`gpu.dealloc` (stream-ordered on the null stream)."""
    return op.name in ("gpu.alloc", "gpu.dealloc") and _token_result(op) is None \
        and not _deps(op)


def _wait_site(op: Operation) -> Operation | None:
    """Where the host wait of synchronous stream op `op` goes, looking at the ops after it in
    its block past those the host cannot observe memory through (`_host_invisible`):

    - None when that run ends at another synchronous stream op: it is ordered after `op` on
      the same (null) stream and its own wait covers both, so `gpu.memcpy; launch_func;
      gpu.memcpy` waits once, as a CUDA stream program would, and a model's forward
      (launches, allocations, library calls) waits once, after its last launch;
    - else after the run's last synchronous `gpu.alloc`/`gpu.dealloc`, when it has one: those
      are queued on the same stream and never wait, so the host enqueues them (driver calls,
      ~1 us each on cuda) while the device still runs `op`, instead of after it finished
      (`copy out; gpu.dealloc; return` frees, then waits);
    - else `op` itself.

    Nothing can observe the difference (no host access to memory, no other call, no branch in
    between); the one visible change is that a fault of an earlier op is reported at the later
    wait, within the same call and with the same error."""
    site: Operation = op
    nxt = op.next_op
    while nxt is not None and _host_invisible(nxt):
        if _is_sync_memory_op(nxt):
            site = nxt
        nxt = nxt.next_op
    return None if _is_sync_stream_op(nxt) else site


def _owed_wait(op: Operation) -> bool:
    """Whether synchronous gpu.alloc/gpu.dealloc `op` carries the host wait of the synchronous
    stream op before it (`_wait_site`)."""
    prev = op.prev_op
    while prev is not None and _host_invisible(prev):
        prev = prev.prev_op
    return prev is not None and _is_sync_stream_op(prev) and _wait_site(prev) is op


class GpuOpLowering:
    """The gpu op handlers of one host lowering (bound to its HostDevice)."""

    def __init__(self, device_of: HostDevice) -> None:
        self.device = device_of

    def handlers(self) -> dict[str, Handler]:
        return {
            "gpu.launch": self.launch,
            "gpu.launch_func": self.launch_func,
            "gpu.wait": self.wait,
            "gpu.alloc": self.alloc,
            "gpu.dealloc": self.dealloc,
            "gpu.memcpy": self.memcpy,
            "gpu.memset": self.memset,
            "gpu.host_register": self.host_register,
            "gpu.host_unregister": self.host_unregister,
        }

    # --- shared protocol ------------------------------------------------------------------------
    def _begin(self, fe: FunctionEmitter, op: Operation) -> tuple[ir.Value, bool]:
        """Pick the op's stream from its dependencies; True when the op is async."""
        is_async = _token_result(op) is not None
        deps = [fe.lookup(d) for d in _deps(op)]
        return self.device.stream_for(fe.builder, deps, is_async), is_async

    def _end(self, fe: FunctionEmitter, op: Operation, stream: ir.Value, is_async: bool,
             host_sync: bool = True) -> None:
        """Bind the op's token; a synchronous op then blocks the host where `_wait_site` puts
        its wait. `host_sync` False (allocation and free: the runtime orders them without the
        host waiting): no wait of its own, only one deferred to it (`_owed_wait`)."""
        if not is_async and not host_sync:
            if _owed_wait(op):
                self.device.synchronize(fe.builder, stream)
            return
        if not is_async and _wait_site(op) is not op:
            return
        token = self.device.finish(fe.builder, stream, is_async)
        result = _token_result(op)
        if result is not None and token is not None:
            fe.bind(result, token)

    # --- launches -------------------------------------------------------------------------------
    def launch(self, fe: FunctionEmitter, op: Operation) -> None:
        """An inline `gpu.launch` has no kernel to launch yet."""
        raise fe.unsupported(op, "host code launches outlined kernels only: run the "
                                 "outline-kernels pass first to turn gpu.launch into "
                                 "gpu.module + gpu.launch_func")

    def launch_func(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.launch_func @m::@k blocks in (...) threads in (...) args(...)`."""
        kernel = attr(op, "kernel")
        if not isinstance(kernel, SymbolRefAttr) or len(kernel.nested_references.data) != 1:
            raise fe.error(op, f"gpu.launch_func needs a kernel of the form @module::@kernel, "
                               f"got {kernel}")
        if getattr(op, "asyncObject", None) is not None:
            raise fe.unsupported(op, "launches on an explicit async object (a stream value) are "
                                     "not supported; use async tokens")
        module_name = kernel.root_reference.data
        kernel_name = kernel.nested_references.data[0].data
        # Handlers are keyed by op name, so `op` is typed Operation: it is a gpu.LaunchFuncOp.
        operands = list(op.kernelOperands)  # type: ignore[attr-defined]
        for value in operands:
            if isinstance(value.type, UnrankedMemRefType):
                raise fe.unsupported(op, "unranked memref kernel operands cannot be passed to a "
                                         "kernel; cast to a ranked memref")
        _check_kernel_operands(op, operands)
        params = fe.flat_args(operands)
        config = LaunchConfig(
            grid=self._dims(fe, op, "gridSize"),
            block=self._dims(fe, op, "blockSize"),
            cluster=self._dims(fe, op, "clusterSize")
            if getattr(op, "clusterSizeX", None) is not None else None,
            shared_bytes=self._shared_bytes(fe, op),
        )
        function = self.device.function_handle(fe.builder, module_name, kernel_name)
        stream, is_async = self._begin(fe, op)
        self.device.launch(fe.builder, function, config, stream, params)
        self._end(fe, op, stream, is_async)

    def _dims(self, fe: FunctionEmitter, op: Operation,
              prefix: str) -> tuple[ir.Value, ir.Value, ir.Value]:
        """Three launch sizes as i64 (index/i64 as is, i32 zero-extended)."""
        values = []
        for axis in "XYZ":
            value = fe.lookup(getattr(op, prefix + axis))
            if value.type != T.I64:
                value = fe.builder.zext(value, T.I64)
            values.append(value)
        return values[0], values[1], values[2]

    def _shared_bytes(self, fe: FunctionEmitter, op: Operation) -> ir.Value:
        size = getattr(op, "dynamicSharedMemorySize", None)
        return fe.lookup(size) if size is not None else ir.Constant(T.I32, 0)

    # --- streams ----------------------------------------------------------------------------------
    def wait(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.wait async [deps]` joins into a new stream; `gpu.wait [deps]` blocks the host until
        they are done and destroys their streams (upstream semantics)."""
        deps = [fe.lookup(d) for d in _deps(op)]
        result = _token_result(op)
        if result is not None:
            stream = self.device.join(fe.builder, deps)
            fe.bind(result, stream)
            return
        self.device.wait_and_destroy(fe.builder, deps)

    # --- memory -----------------------------------------------------------------------------------
    def alloc(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.alloc [async [deps]] [host_shared] (dynamic sizes) : memref<...>` ->
        nova_rt_mem_alloc.

        Device memory is stream-ordered on the op's stream. Managed (host_shared) memory is not:
        the runtime allocates it at once, which is correct for an async op too (fresh memory has
        no prior users); its token is still the stream that joined every dependency, so work
        ordered after the token runs after them. A synchronous alloc does not block the host:
        on the null stream the runtime also orders it before later work of the thread's open
        streams (docs/abi.md), which is all a host synchronization gave device memory."""
        memref_result = next(r for r in op.results if not is_token(r.type))
        ty = memref_result.type
        if not isinstance(ty, MemRefType):
            raise fe.error(op, f"gpu.alloc must produce a memref, got {ty}")
        _require_identity(fe, op, ty)
        if list(getattr(op, "symbolOperands", ())):
            raise fe.unsupported(op, "gpu.alloc with symbol operands (affine layout maps)")
        dynamic = iter(fe.lookup(v) for v in op.dynamicSizes)  # type: ignore[attr-defined]  # gpu.AllocOp
        sizes = [ir.Constant(T.I64, d) if d is not None else next(dynamic)
                 for d in T.static_sizes(ty)]
        count = _count(fe.builder, sizes)
        nbytes = _times(fe.builder, count, T.element_size(ty.element_type))
        host_shared = attr(op, "hostShared") is not None
        stream, is_async = self._begin(fe, op)
        pointer = self.device.alloc(fe.builder, nbytes, stream, host_shared)
        fe.bind(memref_result, M.identity_descriptor(fe.builder, ty, pointer, sizes))
        self._end(fe, op, stream, is_async, host_sync=False)

    def dealloc(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.dealloc %m` -> nova_rt_mem_free(allocated pointer), stream-ordered: a
        synchronous dealloc frees on the null stream without blocking the host (the memory is
        reused only by allocations ordered after the free)."""
        (buffer,) = _data_operands(op)
        desc = fe.lookup_memref(buffer)
        stream, is_async = self._begin(fe, op)
        self.device.free(fe.builder, desc.allocated, stream)
        self._end(fe, op, stream, is_async, host_sync=False)

    def memcpy(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.memcpy %dst, %src` of contiguous memrefs -> nova_rt_memcpy (bytes of `src`)."""
        dst, src = _named(op, "dst", 0), _named(op, "src", 1)
        for value in (dst, src):
            _require_contiguous(fe, op, value.type)
        dst_desc, src_desc = fe.lookup_memref(dst), fe.lookup_memref(src)
        esize = T.element_size(src.type.element_type)  # type: ignore[attr-defined]
        nbytes = _times(fe.builder, _count(fe.builder, src_desc.sizes), esize)
        dst_ptr = data_pointer(fe.builder, dst_desc, esize)
        src_ptr = data_pointer(fe.builder, src_desc, esize)
        stream, is_async = self._begin(fe, op)
        self.device.memcpy(fe.builder, dst_ptr, src_ptr, nbytes, stream)
        self._end(fe, op, stream, is_async)

    def memset(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.memset %dst, %value` -> nova_rt_memset{32,16,8} (floats as their bits)."""
        dst, value = _named(op, "dst", 0), _named(op, "value", 1)
        _require_contiguous(fe, op, dst.type)
        bits = _memset_bits(value.type)
        if bits is None:
            raise fe.unsupported(op, f"gpu.memset of {value.type} elements (supported: 32-, 16- "
                                     "and 8-bit integers, f32, f16)")
        pattern = fe.lookup(value)
        if not isinstance(pattern.type, ir.IntType):
            pattern = fe.builder.bitcast(pattern, ir.IntType(bits))
        if bits < 32 and isinstance(pattern, ir.Constant):
            pattern = ir.Constant(T.I32, int(pattern.constant) & ((1 << bits) - 1))
        elif bits < 32:
            pattern = fe.builder.zext(pattern, T.I32)
        desc = fe.lookup_memref(dst)
        pointer = data_pointer(fe.builder, desc, bits // 8)
        count = _count(fe.builder, desc.sizes)
        stream, is_async = self._begin(fe, op)
        self.device.memset(fe.builder, bits, pointer, pattern, count, stream)
        self._end(fe, op, stream, is_async)

    def host_register(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.host_register %u : memref<*xT>`: page-lock the memref's dense data."""
        (value,) = _data_operands(op)
        pointer, nbytes = self._unranked_extent(fe, op, value)
        self.device.host_register(fe.builder, pointer, nbytes)

    def host_unregister(self, fe: FunctionEmitter, op: Operation) -> None:
        """`gpu.host_unregister %u : memref<*xT>`."""
        (value,) = _data_operands(op)
        pointer, _ = self._unranked_extent(fe, op, value)
        self.device.host_unregister(fe.builder, pointer)

    def _unranked_extent(self, fe: FunctionEmitter, op: Operation,
                         value: SSAValue) -> tuple[ir.Value, ir.Value]:
        """(first element address, dense size in bytes) of an unranked memref, read from its
        descriptor at run time (the rank is only known there)."""
        ty = value.type
        if not isinstance(ty, UnrankedMemRefType):
            raise fe.error(op, f"{op.name} expects an unranked memref, got {ty}")
        esize = T.element_size(ty.element_type)
        unranked = fe.lookup(value)
        rank = fe.builder.extract_value(unranked, 0)
        desc = fe.builder.extract_value(unranked, 1)
        helper = self.device.unranked_numel_function()
        count = fe.builder.call(helper, [rank, desc], name="numel")
        aligned = fe.builder.load(_field(fe.builder, desc, 1), typ=T.PTR, name="aligned")
        offset = fe.builder.load(_field(fe.builder, desc, 2), typ=T.I64, name="offset")
        byte_offset = fe.builder.mul(offset, ir.Constant(T.I64, esize))
        pointer = fe.builder.gep(aligned, [byte_offset], source_etype=T.I8)
        return pointer, fe.builder.mul(count, ir.Constant(T.I64, esize))


def _check_kernel_operands(op: Operation, operands: list[SSAValue]) -> None:
    """A located error at the gpu.launch_func for an operand no kernel parameter can carry (the
    device lowering rejects the kernel's signature too; this covers host-only compilation and
    launches whose operand types differ from the kernel's)."""
    from nova.backends.kernel_abi import KernelArgumentError, type_spec

    for index, value in enumerate(operands):
        try:
            type_spec(value.type)
        except KernelArgumentError as err:
            raise KernelArgumentError(f"kernel operand #{index}: {err.message}",
                                      location_of(op)) from None


def _field(builder: ir.IRBuilder, desc: ir.Value, index: int) -> ir.Value:
    """Address of 8-byte field `index` of a ranked descriptor (ptr, ptr, i64, sizes...)."""
    return builder.gep(desc, [ir.Constant(T.I64, index)], source_etype=T.I64)


def _count(builder: ir.IRBuilder, sizes: list[ir.Value]) -> ir.Value:
    """The product of memref sizes: constants folded, no multiplications by one."""
    static = 1
    dynamic: ir.Value | None = None
    for size in sizes:
        if isinstance(size, ir.Constant):
            static *= int(size.constant)
        else:
            dynamic = size if dynamic is None else builder.mul(dynamic, size)
    if dynamic is None:
        return ir.Constant(T.I64, static)
    return dynamic if static == 1 else builder.mul(dynamic, ir.Constant(T.I64, static))


def _times(builder: ir.IRBuilder, count: ir.Value, factor: int) -> ir.Value:
    if isinstance(count, ir.Constant):
        return ir.Constant(T.I64, int(count.constant) * factor)
    return builder.mul(count, ir.Constant(T.I64, factor))


def _memset_bits(ty: Attribute) -> int | None:
    if isinstance(ty, IntegerType) and ty.width.data in (8, 16, 32):
        return ty.width.data
    if isinstance(ty, Float32Type):
        return 32
    if isinstance(ty, Float16Type) or getattr(ty, "name", "") == "bf16":
        return 16
    return None


def _require_identity(fe: FunctionEmitter, op: Operation, ty: MemRefType) -> None:
    if not isinstance(ty.layout, NoneAttr):
        raise fe.unsupported(op, f"{op.name} of a memref with layout {ty.layout} (only the "
                                 "identity layout is supported)")


def _require_contiguous(fe: FunctionEmitter, op: Operation, ty: Attribute) -> None:
    """Copies and fills move one dense block: the layout must be row-major without holes."""
    if not isinstance(ty, MemRefType):
        raise fe.error(op, f"{op.name} expects ranked memrefs, got {ty}")
    if isinstance(ty.layout, NoneAttr):
        return
    expected: int | None = 1
    dense = True
    for size, stride in reversed(list(zip(T.static_sizes(ty), T.static_strides(ty),
                                          strict=True))):
        if stride is None or expected is None or stride != expected:
            dense = False
            break
        expected = None if size is None else expected * size
    if not dense:
        raise fe.unsupported(op, f"{op.name} of a non-contiguous memref {ty} (copy through a "
                                 "contiguous buffer, e.g. with memref.copy)")
