"""Device interaction in host LLVM IR: module/kernel handles, launches, streams for async tokens,
and memory calls, all through the runtime ABI (`host_abi.AbiCalls`).

This layer knows llvmlite values only (no MLIR ops); `host_gpu_ops` maps gpu dialect ops onto it.

Handles: each device module `m` gets a private global `@__nova_modhandle_m` (null until first use)
and each kernel a private global caching its function handle; small internal functions load them
on first use, so a program loads a module once however many launches it makes.

Async tokens are streams (upstream gpu-to-llvm's scheme): an async op runs on the stream of its
first dependency, after that stream waits on an event recorded on each other dependency's stream;
its token is that stream. A synchronous op runs on the default (null) stream after the null stream
waits for every dependency, and the host synchronizes the null stream afterwards, except for
`gpu.alloc` and `gpu.dealloc`, which the runtime orders without the host waiting (docs/abi.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from nova.abi import (
    DEVICE_MODULE_DESCRIPTOR_LLVM,
    DEVICE_MODULE_PREFIX,
    MODULE_HANDLE_PREFIX,
)
from nova.backends.host.abi import I32, I64, PTR, AbiCalls
from nova.backends.host.memref import entry_alloca, gep

NULL = ir.Constant(PTR, None)
LIBRARY_PLAN_HANDLE_PREFIX = "__nova_libplan_"
"""Private global caching the handle of library plan `i`: `__nova_libplan_<i>`."""
FUNCTION_HANDLE_PREFIX = "__nova_fnhandle_"
"""Private global caching the function handle of kernel `k` of module `m`: `__nova_fnhandle_m.k`."""

_DESCRIPTOR_FIELDS = (I64, PTR, PTR, I64, PTR, I64, PTR, I64)


def descriptor_type() -> ir.LiteralStructType:
    """DEVICE_MODULE_DESCRIPTOR_LLVM as an llvmlite type (checked against the ABI's spelling)."""
    typ = ir.LiteralStructType(_DESCRIPTOR_FIELDS)
    if str(typ).replace(" ", "") != DEVICE_MODULE_DESCRIPTOR_LLVM.replace(" ", ""):
        raise AssertionError(f"{typ} disagrees with {DEVICE_MODULE_DESCRIPTOR_LLVM}")
    return typ


@dataclass(frozen=True)
class LaunchConfig:
    """Launch dimensions as i64 values; `cluster` is None for a plain launch."""

    grid: tuple[ir.Value, ir.Value, ir.Value]
    block: tuple[ir.Value, ir.Value, ir.Value]
    cluster: tuple[ir.Value, ir.Value, ir.Value] | None
    shared_bytes: ir.Value  # i32


class HostDevice:
    """Emits the ABI protocol for one LLVM module (handle caches are per module)."""

    def __init__(self, abi: AbiCalls) -> None:
        self.abi = abi
        self.module = abi.module
        self._module_loaders: dict[str, ir.Function] = {}
        self._kernel_getters: dict[tuple[str, str], ir.Function] = {}
        self.used_device_modules: list[str] = []
        self._plan_getters: dict[int, ir.Function] = {}

    # --- modules and kernels ------------------------------------------------------------------
    def module_handle(self, builder: ir.IRBuilder, module_name: str) -> ir.Value:
        """The loaded handle of device module `module_name` (loaded on first use)."""
        return builder.call(self._module_loader(module_name), [], name=f"{module_name}.module")

    def function_handle(self, builder: ir.IRBuilder, module_name: str, kernel: str) -> ir.Value:
        """The function handle of `kernel` in `module_name` (looked up on first use)."""
        return builder.call(self._kernel_getter(module_name, kernel), [], name=f"{kernel}.fn")

    def _module_loader(self, module_name: str) -> ir.Function:
        loader = self._module_loaders.get(module_name)
        if loader is not None:
            return loader
        self.used_device_modules.append(module_name)
        descriptor = ir.GlobalVariable(self.module, descriptor_type(),
                                       DEVICE_MODULE_PREFIX + module_name)
        descriptor.linkage = "external"
        descriptor.type = PTR  # referenced as the opaque `ptr` it is (llvmlite types globals)
        handle = _private_pointer_global(self.module, MODULE_HANDLE_PREFIX + module_name)
        loader = self._cached_handle_function(
            f"__nova_load_module.{module_name}", handle,
            lambda b, out: self.abi.call_checked(b, "nova_rt_module_load", [out, descriptor]))
        self._module_loaders[module_name] = loader
        return loader

    def _kernel_getter(self, module_name: str, kernel: str) -> ir.Function:
        key = (module_name, kernel)
        getter = self._kernel_getters.get(key)
        if getter is not None:
            return getter
        # get_unique_name: quoted MLIR symbols may contain '.', so `m.k` could repeat
        handle = _private_pointer_global(self.module, self.module.get_unique_name(
            f"{FUNCTION_HANDLE_PREFIX}{module_name}.{kernel}"))
        name = _cstring_global(self.module, self.module.get_unique_name(
            f"__nova_kernel_name.{module_name}.{kernel}"), kernel)
        loader = self._module_loader(module_name)

        def fill(b: ir.IRBuilder, out: ir.Value) -> None:
            mod = b.call(loader, [], name="module")
            self.abi.call_checked(b, "nova_rt_module_get_function", [out, mod, name])

        getter = self._cached_handle_function(
            self.module.get_unique_name(f"__nova_get_kernel.{module_name}.{kernel}"), handle, fill)
        self._kernel_getters[key] = getter
        return getter

    def _cached_handle_function(self, name: str, handle: ir.GlobalVariable,
                                fill: Callable[[ir.IRBuilder, ir.Value], None]) -> ir.Function:
        """`ptr name()`: return *handle, calling fill(builder, handle) first when it is null."""
        fn = ir.Function(self.module, ir.FunctionType(PTR, []), name)
        fn.linkage = "internal"
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        cached = builder.load(handle, typ=PTR, name="cached")
        with builder.if_then(builder.icmp_unsigned("==", cached, NULL), likely=False):
            fill(builder, handle)
        builder.ret(builder.load(handle, typ=PTR, name="handle"))
        return fn

    # --- library calls ---------------------------------------------------------------------------
    def library_call(self, builder: ir.IRBuilder, index: int, pointers: Sequence[ir.Value]) -> None:
        """Run library plan `index` on the default stream: its handle comes from
        `nova_rt_library_plan` on first use (cached in a private global), the operands are a
        stack array of the data pointers."""
        getter = self._plan_getters.get(index)
        if getter is None:
            handle = _private_pointer_global(self.module, f"{LIBRARY_PLAN_HANDLE_PREFIX}{index}")
            getter = self._cached_handle_function(
                f"__nova_get_library_plan.{index}", handle,
                lambda b, out: self.abi.call_checked(b, "nova_rt_library_plan",
                                                     [out, ir.Constant(I64, index)]))
            self._plan_getters[index] = getter
        plan = builder.call(getter, [], name=f"plan{index}")
        array = entry_alloca(builder, ir.ArrayType(PTR, max(1, len(pointers))),
                             name=f"library{index}.operands")
        for i, pointer in enumerate(pointers):
            slot = gep(builder, array, ir.ArrayType(PTR, max(1, len(pointers))),
                       [ir.Constant(I32, 0), ir.Constant(I32, i)])
            builder.store(pointer, slot)
        self.abi.call_checked(builder, "nova_rt_library_call",
                              [plan, array, ir.Constant(I64, len(pointers)), NULL])

    # --- launches -----------------------------------------------------------------------------
    def launch(self, builder: ir.IRBuilder, function: ir.Value, config: LaunchConfig,
               stream: ir.Value, params: Sequence[ir.Value]) -> None:
        """Build the void** array (one stack slot per expanded parameter) and launch."""
        array = self.param_array(builder, params)
        tail = [config.shared_bytes, stream, array, ir.Constant(I64, len(params))]
        if config.cluster is None:
            args = [function, *config.grid, *config.block, *tail]
            self.abi.call_checked(builder, "nova_rt_launch", args)
        else:
            args = [function, *config.cluster, *config.grid, *config.block, *tail]
            self.abi.call_checked(builder, "nova_rt_launch_cluster", args)

    def param_array(self, builder: ir.IRBuilder, params: Sequence[ir.Value]) -> ir.Value:
        """A stack `[N x ptr]` whose i-th entry points to a stack copy of params[i]."""
        if not params:
            return NULL
        array = entry_alloca(builder, ir.ArrayType(PTR, len(params)), name="params")
        for i, value in enumerate(params):
            slot = entry_alloca(builder, value.type, name=f"param{i}")
            builder.store(value, slot)
            entry = gep(builder, array, array.allocated_type,
                        [ir.Constant(I32, 0), ir.Constant(I32, i)])
            builder.store(slot, entry)
        return array

    # --- streams and events -------------------------------------------------------------------
    def create_stream(self, builder: ir.IRBuilder) -> ir.Value:
        """A new stream (a token of `gpu.wait async` without dependencies)."""
        return self._out_call(builder, "nova_rt_stream_create", [], "stream")

    def make_wait(self, builder: ir.IRBuilder, waiter: ir.Value, producer: ir.Value) -> None:
        """Future work on `waiter` waits for what has been queued on `producer` (an event)."""
        event = self._out_call(builder, "nova_rt_event_create", [], "event")
        self.abi.call_checked(builder, "nova_rt_event_record", [event, producer])
        self.abi.call_checked(builder, "nova_rt_stream_wait_event", [waiter, event])
        self.abi.call_checked(builder, "nova_rt_event_destroy", [event])

    def stream_for(self, builder: ir.IRBuilder, deps: Sequence[ir.Value],
                   is_async: bool) -> ir.Value:
        """The stream an op with async dependencies `deps` runs on (see the module docstring)."""
        if is_async and not deps:
            return self.create_stream(builder)
        stream = deps[0] if is_async else NULL
        for dep in deps[1:] if is_async else deps:
            self.make_wait(builder, stream, dep)
        return stream

    def finish(self, builder: ir.IRBuilder, stream: ir.Value, is_async: bool) -> ir.Value | None:
        """After an op on `stream`: a synchronous op blocks the host until it completes; an async
        op's token is the stream."""
        if is_async:
            return stream
        self.synchronize(builder, stream)
        return None

    def synchronize(self, builder: ir.IRBuilder, stream: ir.Value) -> None:
        self.abi.call_checked(builder, "nova_rt_stream_synchronize", [stream])

    def join(self, builder: ir.IRBuilder, deps: Sequence[ir.Value]) -> ir.Value:
        """`gpu.wait async [deps]`: a new stream that waits for all of them."""
        stream = self.create_stream(builder)
        for dep in deps:
            self.make_wait(builder, stream, dep)
        return stream

    def wait_and_destroy(self, builder: ir.IRBuilder, deps: Sequence[ir.Value]) -> None:
        """`gpu.wait [deps]`: block until each stream is idle, then destroy it. Tokens that are the
        same stream (a chain of async ops) are synchronized and destroyed once."""
        seen: list[ir.Value] = []
        for dep in deps:
            if any(dep is earlier for earlier in seen):
                continue  # the same SSA token twice: nothing to decide at run time
            if not seen:
                self._sync_and_destroy(builder, dep)
            else:
                duplicate = builder.icmp_unsigned("==", dep, seen[0])
                for earlier in seen[1:]:
                    duplicate = builder.or_(duplicate, builder.icmp_unsigned("==", dep, earlier))
                with builder.if_then(builder.not_(duplicate)):
                    self._sync_and_destroy(builder, dep)
            seen.append(dep)

    def _sync_and_destroy(self, builder: ir.IRBuilder, stream: ir.Value) -> None:
        self.synchronize(builder, stream)
        self.abi.call_checked(builder, "nova_rt_stream_destroy", [stream])

    # --- memory -------------------------------------------------------------------------------
    def alloc(self, builder: ir.IRBuilder, size: ir.Value, stream: ir.Value,
              host_shared: bool) -> ir.Value:
        """Device (or managed, when host_shared) memory of `size` bytes, ordered on `stream`."""
        shared = ir.Constant(I32, 1 if host_shared else 0)
        return self._out_call(builder, "nova_rt_mem_alloc", [size, stream, shared], "devptr")

    def free(self, builder: ir.IRBuilder, pointer: ir.Value, stream: ir.Value) -> None:
        self.abi.call_checked(builder, "nova_rt_mem_free", [pointer, stream])

    def memcpy(self, builder: ir.IRBuilder, dst: ir.Value, src: ir.Value, size: ir.Value,
               stream: ir.Value) -> None:
        self.abi.call_checked(builder, "nova_rt_memcpy", [dst, src, size, stream])

    def memset(self, builder: ir.IRBuilder, bits: int, dst: ir.Value, value: ir.Value,
               count: ir.Value, stream: ir.Value) -> None:
        """Fill `count` elements of `bits` width (32/16/8) with `value` (an i32)."""
        self.abi.call_checked(builder, f"nova_rt_memset{bits}", [dst, value, count, stream])

    def host_register(self, builder: ir.IRBuilder, pointer: ir.Value, size: ir.Value) -> None:
        self.abi.call_checked(builder, "nova_rt_host_register", [pointer, size])

    def host_unregister(self, builder: ir.IRBuilder, pointer: ir.Value) -> None:
        self.abi.call_checked(builder, "nova_rt_host_unregister", [pointer])

    def unranked_numel_function(self) -> ir.Function:
        """`i64 @__nova_unranked_numel(i64 rank, ptr desc)`: the product of a ranked descriptor's
        sizes when only the rank's run-time value is known (unranked memrefs)."""
        name = "__nova_unranked_numel"
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        fn = ir.Function(self.module, ir.FunctionType(I64, [I64, PTR]), name)
        fn.linkage = "internal"
        rank, desc = fn.args
        rank.name, desc.name = "rank", "desc"
        entry = fn.append_basic_block("entry")
        loop = fn.append_basic_block("loop")
        done = fn.append_basic_block("done")
        builder = ir.IRBuilder(entry)
        builder.cbranch(builder.icmp_signed(">", rank, ir.Constant(I64, 0)), loop, done)
        builder.position_at_end(loop)
        index = builder.phi(I64, name="i")
        product = builder.phi(I64, name="n")
        size_field = builder.add(index, ir.Constant(I64, 3))  # sizes follow ptr, ptr, offset
        size_ptr = builder.gep(desc, [size_field], source_etype=I64)
        new_product = builder.mul(product, builder.load(size_ptr, typ=I64))
        next_index = builder.add(index, ir.Constant(I64, 1))
        index.add_incoming(ir.Constant(I64, 0), entry)
        index.add_incoming(next_index, loop)
        product.add_incoming(ir.Constant(I64, 1), entry)
        product.add_incoming(new_product, loop)
        builder.cbranch(builder.icmp_signed("<", next_index, rank), loop, done)
        builder.position_at_end(done)
        result = builder.phi(I64, name="numel")
        result.add_incoming(ir.Constant(I64, 1), entry)
        result.add_incoming(new_product, loop)
        builder.ret(result)
        return fn

    def _out_call(self, builder: ir.IRBuilder, name: str, args: list[ir.Value],
                  what: str) -> ir.Value:
        """Call `name(out, *args)` checked and return *out."""
        slot = entry_alloca(builder, PTR, name=f"{what}.out")
        self.abi.call_checked(builder, name, [slot, *args])
        return builder.load(slot, typ=PTR, name=what)


def _private_pointer_global(module: ir.Module, name: str) -> ir.GlobalVariable:
    handle = ir.GlobalVariable(module, PTR, name)
    handle.linkage = "private"
    handle.initializer = NULL
    return handle


def _cstring_global(module: ir.Module, name: str, text: str) -> ir.GlobalVariable:
    """A private constant NUL-terminated string."""
    data = bytearray(text.encode("utf-8")) + b"\0"
    typ = ir.ArrayType(ir.IntType(8), len(data))
    var = ir.GlobalVariable(module, typ, name)
    var.linkage = "private"
    var.global_constant = True
    var.unnamed_addr = True
    var.initializer = ir.Constant(typ, data)
    var.type = PTR  # referenced as the opaque `ptr` it is (llvmlite types globals)
    return var
