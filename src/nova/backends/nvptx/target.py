"""The NVPTX device target: gpu.* ops as NVVM intrinsics, kernels, shared memory, printf, assert.

* Kernels (`gpu.func ... kernel`) get the `ptx_kernel` calling convention; `known_block_size`
  becomes `"nvvm.reqntid"` (PTX `.reqntid`, which also bounds the block size for ptxas). Their
  parameters follow nova.abi (a memref expands to ptr, ptr, i64, sizes..., strides...).
  Other functions are `internal` (inlined and dropped by O3).
* Index ops read PTX special registers (`llvm.nvvm.read.ptx.sreg.*`, zero-extended to i64);
  `gpu.global_id` = block_id * block_dim + thread_id; subgroups are 32-lane warps numbered by the
  linear thread id.
* `gpu.barrier` -> `llvm.nvvm.barrier.cta.sync.aligned.all(0)` (bar.sync 0).
* Memory spaces: `#gpu.address_space<workgroup>` -> addrspace(3), `global` -> 1, `private` and
  default -> 0 (generic). Workgroup attributions are internal addrspace(3) globals; private ones
  are allocas. Kernels record their static shared bytes in the manifest.
  `gpu.dynamic_shared_memory` is an `extern .shared` array sized by %dynamic_smem_size.
* `gpu.printf` -> `vprintf(fmt, args)` with C vararg promotion (f32 -> f64; i1/i8/i16 -> i32);
  `vector.print` of a scalar -> vprintf with the runner utilities' formats and punctuation.
* `cf.assert` -> `__assertfail(msg, file, line, function, 1)` then `llvm.trap`; a failed bounds
  check (check_bounds) first vprintfs its formatted message, then fails the same way.
* `nvgpu` asynchronous copies -> `cp.async` intrinsics (nvgpu.py).
* Collectives (gpu.shuffle, gpu.all_reduce, gpu.subgroup_reduce) live in nvptx_collectives.py,
  math functions without an NVPTX intrinsic in nvptx_math.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from llvmlite import ir
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
    UnrankedMemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.emitter import (
    FunctionEmitter,
    ModuleEmitter,
    attr,
    core_handlers,
    enum_text,
    location_of,
    symbol_name,
)
from nova.backends.llvm.ops_math import lower_fpowi_by_squaring
from nova.backends.llvm.target import Handler, TargetBase
from nova.errors import UnsupportedError
from nova.ir.locations import UNKNOWN_SITE, assert_site

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
WARP_SIZE = 32

ADDRESS_SPACES = {"global": 1, "workgroup": 3, "private": 0}


def is_kernel(op: Operation) -> bool:
    """True for a gpu.func marked `kernel` (Nova's `gpu.kernel` attribute or a `kernel` prop)."""
    return op.name == "gpu.func" and (op.attributes.get("gpu.kernel") is not None
                                      or attr(op, "kernel") is not None)


def known_block_size(op: Operation) -> tuple[int, int, int] | None:
    """The gpu.func's `known_block_size` (x, y, z) when given."""
    found = attr(op, "known_block_size") or op.attributes.get("gpu.known_block_size")
    if found is None:
        return None
    values = tuple(int(v) for v in found.get_values())  # type: ignore[attr-defined]
    return (*values, 1, 1, 1)[:3]  # type: ignore[return-value]


def sreg(fe: FunctionEmitter, name: str) -> ir.Value:
    """Read PTX special register `name` (i32), e.g. 'tid.x', 'laneid'."""
    fn = fe.module.declare(f"llvm.nvvm.read.ptx.sreg.{name}", ir.FunctionType(T.I32, []))
    return fe.builder.call(fn, [])


def sreg64(fe: FunctionEmitter, name: str) -> ir.Value:
    """A special register zero-extended to index (i64)."""
    return fe.builder.zext(sreg(fe, name), T.INDEX)


def dimension(op: Operation) -> str:
    dim = enum_text(attr(op, "dimension"))
    if dim not in ("x", "y", "z"):
        raise ValueError(f"{op.name} without a dimension")
    return dim


def _sreg_op(register: str) -> Handler:
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        fe.bind(op.results[0], sreg64(fe, f"{register}.{dimension(op)}"))
    return handler


def lower_global_id(fe: FunctionEmitter, op: Operation) -> None:
    d = dimension(op)
    b = fe.builder
    fe.bind(op.results[0], b.add(b.mul(sreg64(fe, f"ctaid.{d}"), sreg64(fe, f"ntid.{d}")),
                                 sreg64(fe, f"tid.{d}")))


def linear_thread_id(fe: FunctionEmitter) -> ir.Value:
    """tid.x + ntid.x * (tid.y + ntid.y * tid.z), as i32."""
    b = fe.builder
    return b.add(sreg(fe, "tid.x"),
                 b.mul(sreg(fe, "ntid.x"),
                       b.add(sreg(fe, "tid.y"), b.mul(sreg(fe, "ntid.y"), sreg(fe, "tid.z")))))


def block_size(fe: FunctionEmitter) -> ir.Value:
    """ntid.x * ntid.y * ntid.z as i32 (a constant when the kernel's block size is known)."""
    known = known_block_size(fe.func_op)
    if known is not None:
        return ir.Constant(T.I32, known[0] * known[1] * known[2])
    b = fe.builder
    return b.mul(b.mul(sreg(fe, "ntid.x"), sreg(fe, "ntid.y")), sreg(fe, "ntid.z"))


def lower_lane_id(fe: FunctionEmitter, op: Operation) -> None:
    fe.bind(op.results[0], sreg64(fe, "laneid"))


def lower_subgroup_id(fe: FunctionEmitter, op: Operation) -> None:
    warp = fe.builder.udiv(linear_thread_id(fe), ir.Constant(T.I32, WARP_SIZE))
    fe.bind(op.results[0], fe.builder.zext(warp, T.INDEX))


def lower_num_subgroups(fe: FunctionEmitter, op: Operation) -> None:
    b = fe.builder
    n = b.udiv(b.add(block_size(fe), ir.Constant(T.I32, WARP_SIZE - 1)),
               ir.Constant(T.I32, WARP_SIZE))
    fe.bind(op.results[0], b.zext(n, T.INDEX))


def lower_subgroup_size(fe: FunctionEmitter, op: Operation) -> None:
    fe.bind(op.results[0], ir.Constant(T.INDEX, WARP_SIZE))


def barrier(fe: FunctionEmitter) -> None:
    """bar.sync 0 for all threads of the block."""
    fn = fe.module.declare("llvm.nvvm.barrier.cta.sync.aligned.all",
                           ir.FunctionType(T.VOID, [T.I32]))
    fe.builder.call(fn, [ir.Constant(T.I32, 0)])


def lower_barrier(fe: FunctionEmitter, op: Operation) -> None:
    barrier(fe)


def lower_printf(fe: FunctionEmitter, op: Operation) -> None:
    """gpu.printf "format", args..."""
    fmt = attr(op, "format")
    lower_printf_text(fe, fmt.data if isinstance(fmt, StringAttr) else str(fmt),
                      fe.operands(op))


def lower_vector_print(fe: FunctionEmitter, op: Operation) -> None:
    """`vector.print`: a vector as one vprintf of `( v0, v1, ... )` and the op's punctuation
    (`printf_vector`); scalars and the `str`/punctuation forms as on every target."""
    from nova.backends.llvm import ops_vector

    if op.operands and isinstance(op.operands[0].type, VectorType):
        lower_printf_text(fe, *ops_vector.printf_format(fe, op))
    else:
        ops_vector.lower_print(fe, op)


def lower_printf_text(fe: FunctionEmitter, text: str, args: Sequence[ir.Value]) -> None:
    """vprintf(format, packed args): args promoted as C varargs (f32/f16/bf16 -> double,
    i1 -> zero-extended i32, i8/i16 -> sign-extended i32) and stored in a local buffer."""
    b = fe.builder
    values: list[ir.Value] = []
    for value in args:
        ty = value.type
        if ty in (T.F32, T.F16) or str(ty) == "bfloat":
            value = b.fpext(value, T.F64)
        elif isinstance(ty, ir.IntType) and ty.width < 32:
            value = b.zext(value, T.I32) if ty.width == 1 else b.sext(value, T.I32)
        values.append(value)
    fmt_ptr = generic_string(fe, text)
    if values:
        st = ir.LiteralStructType([v.type for v in values])
        buf = fe.alloca(st, align=8)
        for i, v in enumerate(values):
            b.store(v, b.gep(buf, [ir.Constant(T.I32, 0), ir.Constant(T.I32, i)],
                             inbounds=True, source_etype=st))
        args_ptr: ir.Value = buf
    else:
        args_ptr = ir.Constant(T.PTR, None)
    vprintf = fe.module.declare("vprintf", ir.FunctionType(T.I32, [T.PTR, T.PTR]))
    b.call(vprintf, [fmt_ptr, args_ptr])


def generic_string(fe: FunctionEmitter, text: str) -> ir.Value:
    """A generic pointer to a NUL-terminated string constant in global memory."""
    gv = fe.module.string_constant(text, address_space=1)
    return fe.builder.addrspacecast(M.opaque(fe.builder, gv), T.PTR)


def lower_dynamic_shared_memory(fe: FunctionEmitter, op: Operation) -> None:
    """gpu.dynamic_shared_memory -> memref<?xi8, workgroup> over an `extern .shared` array whose
    size is the launch's dynamic shared bytes (%dynamic_smem_size)."""
    module = fe.module.module
    gv = module.globals.get("__nova_dynamic_shared")
    if gv is None:
        arr = ir.ArrayType(T.I8, 0)
        gv = ir.GlobalVariable(module, arr, "__nova_dynamic_shared", addrspace=3)
        gv.linkage = "external"
        # WMMA tiles in dynamic shared memory need 32-byte alignment; wgmma's swizzled tiles
        # repeat every 1024 bytes of shared address (nova.backends.cpu.wgmma)
        gv.align = 1024 if _uses_wgmma(fe.func_op) else 32
    ty = op.results[0].type
    base: ir.Value = M.opaque(fe.builder, gv)
    space = fe.module.address_space(ty)
    if space != 3:
        base = fe.builder.addrspacecast(base, ir.PointerType(addrspace=space))
    size = sreg64(fe, "dynamic_smem_size")
    fe.bind(op.results[0], M.identity_descriptor(fe.builder, ty, base, [size]))  # type: ignore[arg-type]


WIDE_INT_LIBCALL_OPS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
                        "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui",
                        "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")


def _no_wide_libcalls(name: str) -> Handler:
    """Wrap a core handler: integers wider than 64 bits would need compiler-rt calls that PTX
    does not have (and LLVM aborts the process on them), so reject them with a clear error."""
    def handler(fe: FunctionEmitter, op: Operation) -> None:
        for value in (*op.operands, *op.results):
            if isinstance(value.type, IntegerType) and value.type.width.data > 64:
                raise fe.unsupported(op, f"{value.type} needs a library call the NVPTX target "
                                         "does not have; integers up to 64 bits are supported")
        core_handlers()[name](fe, op)
    return handler


LIBDEVICE = {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "tanh": "tanh", "sinh": "sinh", "cosh": "cosh", "atan": "atan", "atan2": "atan2",
    "asin": "asin", "acos": "acos", "pow": "powf", "cbrt": "cbrt", "erf": "erf",
    "erfc": "erfc", "sqrt": "sqrt", "fabs": "absf", "floor": "floor", "ceil": "ceil",
    "trunc": "trunc", "round": "round", "rint": "roundeven", "fma": "fma",
    "copysign": "copysign",
}
"""libdevice function (without the `__nv_` prefix and `f` suffix) -> math op it computes."""


def define_libdevice(me: ModuleEmitter, op: Operation) -> bool:
    """Give a body-less `func.func @__nv_<fn>[f]` (a libdevice call, as MLIR programs sometimes
    declare) the inline implementation of the matching math op. Returns False for other
    declarations."""
    name = symbol_name(op)
    if not name.startswith("__nv_"):
        return False
    base = name[len("__nv_"):]
    fn = me.functions[name]
    ftype = fn.function_type
    is_f32 = ftype.return_type == T.F32
    key = base[:-1] if is_f32 and base.endswith("f") and base[:-1] in LIBDEVICE else base
    math_op = LIBDEVICE.get(key)
    scalar = ftype.return_type in (T.F32, T.F64) and all(a == ftype.return_type
                                                          for a in ftype.args)
    if math_op is None or not scalar:
        raise UnsupportedError(
            f"libdevice function '{name}' is not available on the NVPTX target (Nova has no "
            f"libdevice; supported: __nv_<fn> and __nv_<fn>f for {', '.join(sorted(LIBDEVICE))})",
            location_of(op))
    from nova.backends.llvm.emitter import FunctionEmitter as Emitter
    from nova.backends.nvptx.math import lower as lower_math

    fe = Emitter(me, op, fn)
    result = lower_math(fe, f"math.{math_op}", list(fn.args), None)  # type: ignore[arg-type]
    fe.builder.ret(result)
    fn.linkage = "internal"
    return True


PUNCTUATION = {"newline": "\n", "no_punctuation": "", "comma": ", ", "open": "( ",
               "close": " )"}


def vector_print(fe: FunctionEmitter, op: Operation, value: ir.Value | None,
                 mlir_type: Attribute | None) -> None:
    """vector.print through vprintf, spelled like MLIR's runner utilities (%lld / %llu for
    integers and index, %g for floats) followed by the op's punctuation (a newline by default)."""
    text = attr(op, "stringLiteral")
    if text is not None:
        lower_printf_text(fe, str(getattr(text, "data", text)).replace("%", "%%"), [])
        return
    punct = PUNCTUATION.get(enum_text(attr(op, "punctuation")) or "newline")
    if punct is None:
        raise fe.unsupported(op, f"punctuation {attr(op, 'punctuation')}")
    if value is None or mlir_type is None:
        lower_printf_text(fe, punct, [])
        return
    b = fe.builder
    if isinstance(mlir_type, IndexType):
        spec = "%llu"
    elif isinstance(mlir_type, IntegerType):
        unsigned = mlir_type.signedness.data == Signedness.UNSIGNED or mlir_type.width.data == 1
        if mlir_type.width.data < 64:
            value = b.zext(value, T.I64) if unsigned else b.sext(value, T.I64)
        spec = "%llu" if unsigned and mlir_type.width.data > 1 else "%lld"
    elif T.is_float(mlir_type):
        spec = "%g"
    else:
        raise fe.unsupported(op, f"vector.print of {mlir_type}")
    lower_printf_text(fe, spec + punct.replace("%", "%%"), [value])


class NvptxTarget(TargetBase):
    """Hooks for NVPTX (see the module docstring)."""

    name = "nvptx"
    triple = TRIPLE
    data_layout = DATA_LAYOUT

    def __init__(self, arch: str = "sm_90", check_bounds: bool = False) -> None:
        from nova.backends.nvptx import collectives as nvptx_collectives
        from nova.backends.nvptx import mma as nvptx_mma
        from nova.backends.nvptx import mma_sync as nvptx_mma_sync
        from nova.backends.nvptx import nvgpu as nvgpu_ops
        from nova.backends.nvptx import nvvm as nvvm_ops
        from nova.backends.nvptx import wgmma as nvptx_wgmma
        self.arch = arch
        self.check_bounds = check_bounds
        self._check_buffers: dict[tuple[ir.Function, int], ir.Value] = {}
        self.handlers: Mapping[str, Handler] = {
            "gpu.thread_id": _sreg_op("tid"),
            "gpu.block_id": _sreg_op("ctaid"),
            "gpu.block_dim": _sreg_op("ntid"),
            "gpu.grid_dim": _sreg_op("nctaid"),
            "gpu.cluster_id": _sreg_op("clusterid"),
            "gpu.cluster_dim": _sreg_op("nclusterid"),
            "gpu.cluster_dim_blocks": _sreg_op("cluster.nctaid"),
            "gpu.cluster_block_id": _sreg_op("cluster.ctaid"),
            "gpu.global_id": lower_global_id,
            "gpu.lane_id": lower_lane_id,
            "gpu.subgroup_id": lower_subgroup_id,
            "gpu.num_subgroups": lower_num_subgroups,
            "gpu.subgroup_size": lower_subgroup_size,
            "gpu.barrier": lower_barrier,
            "gpu.printf": lower_printf,
            "vector.print": lower_vector_print,
            "gpu.dynamic_shared_memory": lower_dynamic_shared_memory,
            **{name: _no_wide_libcalls(name) for name in WIDE_INT_LIBCALL_OPS},
            "math.fpowi": lower_fpowi_by_squaring,
            **nvptx_collectives.HANDLERS,
            **nvptx_mma.HANDLERS,
            **nvptx_mma_sync.HANDLERS,
            **nvvm_ops.NVPTX_HANDLERS,
            **nvgpu_ops.HANDLERS,
            **nvptx_wgmma.HANDLERS,
        }

    def pointer_address_space(self, memref_type: Attribute) -> int:
        if isinstance(memref_type, MemRefType | UnrankedMemRefType):
            space = T.memory_space_name(memref_type)
            if isinstance(space, int):
                return space
            if space is not None:
                return ADDRESS_SPACES[space]
        return 0

    def approx_math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                             mlir_type: Attribute) -> ir.Value | None:
        """`math.exp2` of f32 with `fastmath<afn>`: PTX `ex2.approx.ftz.f32` (one MUFU
        instruction, about 2 ulp, subnormal results flushed to zero), as LLVM's own NVPTX
        lowering of an `afn` exp2; everything else keeps Nova's accurate code."""
        if op_name == "math.exp2" and args[0].type == T.F32:
            fn = fe.module.declare("llvm.nvvm.ex2.approx.ftz.f32",
                                   ir.FunctionType(T.F32, [T.F32]))
            return fe.builder.call(fn, list(args))
        return None

    def math_function(self, fe: FunctionEmitter, op_name: str, args: Sequence[ir.Value],
                      mlir_type: Attribute) -> ir.Value:
        from nova.backends.nvptx import math as nvptx_math
        return nvptx_math.lower(fe, op_name, list(args), mlir_type)

    def print_value(self, fe: FunctionEmitter, op: Operation, value: ir.Value | None,
                    mlir_type: Attribute | None) -> None:
        vector_print(fe, op, value, mlir_type)

    def assert_fail(self, fe: FunctionEmitter, op: Operation, message: str) -> None:
        """`__assertfail(msg, file, line, function, 1)` + trap, the file, line and function
        resolved from the op's location as upstream's GPU-to-NVVM lowering does."""
        self._assertfail(fe, message, *assert_site(op))

    def _assertfail(self, fe: FunctionEmitter, message: str, file: str, line: int,
                    func: str) -> None:
        fail = fe.module.declare("__assertfail", ir.FunctionType(
            T.VOID, [T.PTR, T.PTR, T.I32, T.PTR, T.I64]))
        b = fe.builder
        b.call(fail, [generic_string(fe, message), generic_string(fe, file),
                      ir.Constant(T.I32, line), generic_string(fe, func), ir.Constant(T.I64, 1)])
        trap = fe.module.declare("llvm.trap", ir.FunctionType(T.VOID, []))
        b.call(trap, [])
        b.unreachable()

    def check_fail(self, fe: FunctionEmitter, op: Operation, summary: str, fmt: str,
                   args: Sequence[ir.Value]) -> None:
        """A failed runtime check: vprintf the formatted message with the function, block and
        thread (the device cannot format into __assertfail's message), then fail like
        `cf.assert` with the static summary (CUDA_ERROR_ASSERT naming the kernel)."""
        b = fe.builder
        values = [*args, *(sreg64(fe, f"{reg}.{d}") for reg in ("ctaid", "tid") for d in "xyz")]
        arr = ir.ArrayType(T.I64, len(values))
        buf = self._check_buffers.get((fe.function, len(values)))
        if buf is None:  # one per function: every check of it shares the vprintf arguments
            buf = fe.alloca(arr, align=8)
            self._check_buffers[(fe.function, len(values))] = buf
        for i, value in enumerate(values):
            b.store(value, b.gep(buf, [ir.Constant(T.I32, 0), ir.Constant(T.I32, i)],
                                 inbounds=True, source_etype=arr))
        func = symbol_name(fe.func_op).replace("%", "%%")
        text = (f"{fmt} in @{func}, block (%lld,%lld,%lld), thread (%lld,%lld,%lld)\n")
        vprintf = fe.module.declare("vprintf", ir.FunctionType(T.I32, [T.PTR, T.PTR]))
        b.call(vprintf, [generic_string(fe, text), buf])
        # Nova's own check (no upstream lowering): name the enclosing function, not "(unknown)"
        loc = location_of(op)
        self._assertfail(fe, summary, loc.filename if loc is not None else UNKNOWN_SITE,
                         loc.line if loc is not None else 0, symbol_name(fe.func_op))

    def function_linkage(self, op: Operation) -> str:
        return "external" if is_kernel(op) else "internal"

    def finish_function(self, me: ModuleEmitter, op: Operation, fn: ir.Function) -> None:
        if not is_kernel(op):
            return
        fn.calling_convention = "ptx_kernel"
        known = known_block_size(op)
        # A constant zero (or negative) block size launches nothing valid: leave the bound
        # out (LLVM aborts on `.reqntid 0`) and let the launch report CUDA's error.
        if known is not None and all(d >= 1 for d in known):
            dims = ",".join(str(d) for d in known)
            add_string_attribute(fn, "nvvm.reqntid", dims)  # implies the max (ptxas: not both)

    def attribution(self, fe: FunctionEmitter, func_op: Operation, kind: str,
                    mlir_type: MemRefType, index: int) -> M.MemRefDescriptor:
        elem = T.scalar_type(mlir_type.element_type)
        count = 1
        for d in mlir_type.get_shape():
            count *= d
        sizes = [M.const_index(d) for d in mlir_type.get_shape()]
        if kind == "private":
            base = fe.alloca(elem, ir.Constant(T.I32, count))
            space = self.pointer_address_space(mlir_type)
            if space != 0:
                base = fe.builder.addrspacecast(base, ir.PointerType(addrspace=space))
            return M.identity_descriptor(fe.builder, mlir_type, base, sizes)
        arr = ir.ArrayType(elem, count)
        name = f"__wg_{symbol_name(func_op)}_{index}"
        gv = ir.GlobalVariable(fe.module.module, arr, name, addrspace=3)
        gv.linkage = "internal"
        gv.initializer = ir.Constant(arr, ir.Undefined)
        # WMMA tiles need 32-byte alignment, swizzled wgmma tiles 1024 (their pattern's period)
        gv.align = 1024 if _uses_wgmma(func_op) else 32 if _uses_mma(func_op) else 16
        ptr: ir.Value = M.opaque(fe.builder, gv)
        space = self.pointer_address_space(mlir_type)
        if space != 3:
            ptr = fe.builder.addrspacecast(ptr, ir.PointerType(addrspace=space))
        return M.identity_descriptor(fe.builder, mlir_type, ptr, sizes)


def _uses_wgmma(func_op: Operation) -> bool:
    """Whether the gpu.module around `func_op` uses warpgroup MMA (nvvm.wgmma.*)."""
    module = func_op.parent_op() or func_op
    return any(op.name.startswith("nvvm.wgmma.") for op in module.walk())


def _uses_mma(func_op: Operation) -> bool:
    """Whether a kernel uses tensor-core fragment ops (whose tiles must be 32-byte aligned)."""
    return any(op.name.startswith("gpu.subgroup_mma_") for op in func_op.walk())


def add_string_attribute(fn: ir.Function, key: str, value: str) -> None:
    """Attach a `"key"="value"` function attribute. llvmlite's FunctionAttributes only accepts
    keyword attributes, so the spelled pair is added to the underlying set, which llvmlite prints
    verbatim in the function header."""
    set.add(fn.attributes, f'"{key}"="{value}"')
