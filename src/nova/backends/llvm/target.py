"""The Target hook protocol: what an LLVM target tells the shared emitter core.

The emitter core (`nova.backends.llvm.emitter`) lowers arith/math/memref/scf/cf/func/index ops
the same way for every target. Whatever differs between the NVPTX device, the CPU device and the
x86-64 host goes through a `Target`:

``handlers``
    ``dict[op name, Handler]`` consulted *before* the core table: gpu.* ops, and overrides of core
    ops (e.g. the host target's `gpu.launch_func`, the CPU target's `gpu.barrier`). A handler is
    ``fn(fe: FunctionEmitter, op: Operation) -> None`` and binds op results via ``fe.bind``.
``pointer_address_space(memref_type) -> int``
    LLVM address space of a memref's pointers (NVPTX: workgroup -> 3; default -> 0).
``math_function(fe, op_name, args, mlir_type) -> ir.Value``
    One `math.*` op on already-lowered operands (intrinsic, libm call or inline code).
``alloc(fe, op, desc_type, size_bytes, alignment) -> ir.Value`` / ``dealloc(fe, op, pointer)``
    Heap policy for `memref.alloc`/`memref.dealloc` (host/CPU: malloc; NVPTX: device malloc).
``stack_alloc(fe, op, llvm_elem_type, count) -> ir.Value``
    `memref.alloca` policy (default: an alloca in the entry block when static, else in place).
``assert_fail(fe, op, message)``
    Emit the failing path of `cf.assert` (the emitter branches around it; must not return
    normally: end with unreachable or a trap).
``check_fail(fe, op, summary, fmt, args)``
    Emit the failing path of a runtime check (bounds checks, ``check_bounds``): report the
    printf-style message `fmt` (``%lld`` for each i64 of `args`, ``%%`` for a percent sign) the
    way a failed `cf.assert` is reported, then stop; must not return normally. `summary` is
    the message's static part, for reports that cannot be formatted (CUDA's __assertfail).
``check_bounds``
    True when memref accesses are bounds-checked (the ``check_bounds`` compile option).
``print_value(fe, op, value, mlir_type)``
    `vector.print` (value/mlir_type are None for the `str`/punctuation-only forms; the hook reads
    the op's `punctuation` and `stringLiteral`).
``function_linkage(op) -> str`` and ``finish_function(me, op, fn)``
    Linkage of a lowered func.func/gpu.func, and a post-definition hook (kernel calling
    convention, nvvm.annotations, wrapper generation...).
``attribution(fe, func_op, kind, mlir_type, index) -> MemRefDescriptor``
    Storage of gpu.func workgroup (`kind == "workgroup"`) and private attributions.
``declare_runtime(me, name) -> ir.Function``
    Declare a function of the target's runtime (vprintf, __assertfail, ABI calls, libm, ...).

`TargetBase` implements every hook with a CPU-style default (libm, malloc/free, allocas, address
space 0) so a target overrides only what differs. Targets own module triple and data layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from llvmlite import ir
from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.ir import Attribute, Operation

from nova.backends.llvm import types as T
from nova.errors import UnsupportedError

if TYPE_CHECKING:
    from nova.backends.llvm.emitter import FunctionEmitter, ModuleEmitter
    from nova.backends.llvm.memref import MemRefDescriptor

Handler = Callable[["FunctionEmitter", Operation], None]


class Target(Protocol):
    """The hooks a target provides to the emitter core (see the module docstring)."""

    name: str
    triple: str
    data_layout: str
    handlers: Mapping[str, Handler]

    def pointer_address_space(self, memref_type: Attribute) -> int: ...

    def math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                      mlir_type: Attribute) -> ir.Value: ...

    def approx_math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                             mlir_type: Attribute) -> ir.Value | None: ...

    def alloc(self, fe: FunctionEmitter, op: Operation, size_bytes: ir.Value,
              alignment: int) -> ir.Value: ...

    def dealloc(self, fe: FunctionEmitter, op: Operation, pointer: ir.Value) -> None: ...

    def stack_alloc(self, fe: FunctionEmitter, op: Operation, elem: ir.Type,
                    count: ir.Value) -> ir.Value: ...

    def assert_fail(self, fe: FunctionEmitter, op: Operation, message: str) -> None: ...

    check_bounds: bool
    unowned_allocated: int | None

    def check_fail(self, fe: FunctionEmitter, op: Operation, summary: str, fmt: str,
                   args: Sequence[ir.Value]) -> None: ...

    def print_value(self, fe: FunctionEmitter, op: Operation, value: ir.Value | None,
                    mlir_type: Attribute | None) -> None: ...

    def function_linkage(self, op: Operation) -> str: ...

    def finish_function(self, me: ModuleEmitter, op: Operation, fn: ir.Function) -> None: ...

    def attribution(self, fe: FunctionEmitter, func_op: Operation, kind: str,
                    mlir_type: MemRefType, index: int) -> MemRefDescriptor: ...

    def declare_runtime(self, me: ModuleEmitter, name: str) -> ir.Function: ...


# math op name -> (LLVM intrinsic base name, arity) for ops with a direct LLVM intrinsic.
MATH_INTRINSICS: dict[str, tuple[str, int]] = {
    "math.sqrt": ("llvm.sqrt", 1), "math.absf": ("llvm.fabs", 1),
    "math.floor": ("llvm.floor", 1), "math.ceil": ("llvm.ceil", 1),
    "math.trunc": ("llvm.trunc", 1), "math.round": ("llvm.round", 1),
    "math.roundeven": ("llvm.roundeven", 1), "math.fma": ("llvm.fma", 3),
    "math.copysign": ("llvm.copysign", 2), "math.exp": ("llvm.exp", 1),
    "math.exp2": ("llvm.exp2", 1), "math.log": ("llvm.log", 1), "math.log2": ("llvm.log2", 1),
    "math.log10": ("llvm.log10", 1), "math.sin": ("llvm.sin", 1), "math.cos": ("llvm.cos", 1),
    "math.powf": ("llvm.pow", 2),
}

# math op name -> libm base name (f64 spelling; f32 adds the 'f' suffix).
MATH_LIBM: dict[str, str] = {
    "math.tan": "tan", "math.tanh": "tanh", "math.atan": "atan", "math.atan2": "atan2",
    "math.asin": "asin", "math.acos": "acos", "math.sinh": "sinh", "math.cosh": "cosh",
    "math.asinh": "asinh", "math.acosh": "acosh", "math.atanh": "atanh", "math.erf": "erf",
    "math.erfc": "erfc", "math.expm1": "expm1", "math.log1p": "log1p", "math.cbrt": "cbrt",
}


class TargetBase:
    """Default hooks (CPU-style): libm math, malloc/free, entry-block allocas, address space 0.

    Subclasses set `name`, `triple`, `data_layout`, `handlers` and override what differs.
    """

    name = "generic"
    triple = ""
    data_layout = ""
    handlers: Mapping[str, Handler] = {}
    check_bounds = False
    unowned_allocated: int | None = None
    """When set, the `allocated` pointer of memrefs not taken from the heap (memref.alloca,
    memref.get_global): the host target marks them so the runtime never frees them."""

    def pointer_address_space(self, memref_type: Attribute) -> int:
        if isinstance(memref_type, MemRefType | UnrankedMemRefType):
            space = T.memory_space_name(memref_type)
            if isinstance(space, int):
                return space
        return 0

    def approx_math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                             mlir_type: Attribute) -> ir.Value | None:
        """A faster, less accurate form of a math function for ops that allow one
        (`fastmath<afn>` or `fast`), or None to use `math_function`."""
        return None

    def math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                      mlir_type: Attribute) -> ir.Value:
        llty = args[0].type
        if op_name in MATH_INTRINSICS:
            base, _ = MATH_INTRINSICS[op_name]
            fn = fe.module.intrinsic(base, llty, len(args))
            return fe.builder.call(fn, list(args))
        if op_name in MATH_LIBM:
            base = MATH_LIBM[op_name]
            if llty == T.F32:
                name = base + "f"
            elif llty == T.F64:
                name = base
            else:
                raise fe.unsupported_type(op_name, mlir_type)
            fn = fe.module.declare(name, ir.FunctionType(llty, [llty] * len(args)))
            return fe.builder.call(fn, list(args))
        raise fe.unsupported_op_name(op_name)

    def alloc(self, fe: FunctionEmitter, op: Operation, size_bytes: ir.Value,
              alignment: int) -> ir.Value:
        malloc = fe.module.declare("malloc", ir.FunctionType(T.PTR, [T.I64]))
        return fe.builder.call(malloc, [size_bytes])

    def dealloc(self, fe: FunctionEmitter, op: Operation, pointer: ir.Value) -> None:
        free = fe.module.declare("free", ir.FunctionType(T.VOID, [T.PTR]))
        fe.builder.call(free, [pointer])

    def stack_alloc(self, fe: FunctionEmitter, op: Operation, elem: ir.Type,
                    count: ir.Value) -> ir.Value:
        return fe.alloca(elem, count)

    def assert_fail(self, fe: FunctionEmitter, op: Operation, message: str) -> None:
        raise UnsupportedError(f"cf.assert is not supported by the {self.name} target",
                               fe.location(op))

    def check_fail(self, fe: FunctionEmitter, op: Operation, summary: str, fmt: str,
                   args: Sequence[ir.Value]) -> None:
        raise UnsupportedError(f"runtime checks (check_bounds) are not supported by the "
                               f"{self.name} target", fe.location(op))

    def print_value(self, fe: FunctionEmitter, op: Operation, value: ir.Value | None,
                    mlir_type: Attribute | None) -> None:
        raise UnsupportedError(f"vector.print is not supported by the {self.name} target",
                               fe.location(op))

    def function_linkage(self, op: Operation) -> str:
        visibility = op.attributes.get("sym_visibility") or op.properties.get("sym_visibility")
        if visibility is not None and getattr(visibility, "data", "") == "private":
            return "internal"
        return "external"

    def finish_function(self, me: ModuleEmitter, op: Operation, fn: ir.Function) -> None:
        return None

    def attribution(self, fe: FunctionEmitter, func_op: Operation, kind: str,
                    mlir_type: MemRefType, index: int) -> MemRefDescriptor:
        raise UnsupportedError(f"gpu.func {kind} attributions are not supported by the "
                               f"{self.name} target", fe.location(func_op))

    def declare_runtime(self, me: ModuleEmitter, name: str) -> ir.Function:
        raise UnsupportedError(f"the {self.name} target has no runtime function '{name}'")
