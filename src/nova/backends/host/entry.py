"""Entry wrappers of public host functions and their manifest signatures.

For each public `func.func @f`, the host object exports `void @__nova_entry_f(ptr args, ptr
results)` (nova.abi): `args[i]` points to argument i's storage (a scalar value, or a ranked
memref descriptor struct), `results[i]` to storage for result i. The wrapper loads the arguments,
expands memref descriptors into the lowered function's parameters (the core's calling
convention), calls it and stores each result. `entry_point` describes the same signature for the
manifest (`nova.bundle.format.EntryPoint`), which is how the executor checks and packs Python
arguments without compiler knowledge.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute

from nova.abi import ENTRY_PREFIX
from nova.backends.llvm import types as T
from nova.bundle.format import EntryPoint, TypeSpec
from nova.errors import SourceLocation, UnsupportedError

ENTRY_DTYPES = "i1, i8, i16, i32, i64, index, f16, bf16, f32, f64"


def dtype_of(ty: Attribute) -> str | None:
    """The manifest dtype spelling of a scalar MLIR type, or None when entries cannot carry it."""
    if isinstance(ty, IndexType):
        return "index"
    if isinstance(ty, IntegerType) and ty.width.data in (1, 8, 16, 32, 64):
        return f"i{ty.width.data}"
    names = {Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "f32", Float64Type: "f64"}
    return next((name for cls, name in names.items() if isinstance(ty, cls)), None)


def type_spec(ty: Attribute, what: str, location: SourceLocation | None) -> TypeSpec:
    """The TypeSpec of one entry argument/result; UnsupportedError for types Python cannot pass."""
    if isinstance(ty, MemRefType):
        dtype = dtype_of(ty.element_type)
        if dtype is not None:
            shape = tuple(-1 if T.is_dynamic(d) else int(d) for d in ty.get_shape())
            return TypeSpec("memref", dtype, str(ty), shape)
    else:
        dtype = dtype_of(ty)
        if dtype is not None:
            return TypeSpec("scalar", dtype, str(ty))
    raise UnsupportedError(
        f"{what} of type '{ty}' cannot cross a public function's boundary (supported: scalars and "
        f"ranked memrefs of {ENTRY_DTYPES}); make the function private or change the type",
        location)


def entry_point(name: str, ftype: FunctionType, location: SourceLocation | None = None,
                replay_ops: int = 0) -> EntryPoint:
    """The manifest record of public function `name` (`replay_ops`: see EntryPoint)."""
    args = tuple(type_spec(t, f"argument #{i}", location) for i, t in enumerate(ftype.inputs.data))
    results = tuple(type_spec(t, f"result #{i}", location)
                    for i, t in enumerate(ftype.outputs.data))
    return EntryPoint(name, ENTRY_PREFIX + name, args, results, replay_ops)


def emit_entry_wrapper(module: ir.Module, name: str, ftype: FunctionType,
                       target: ir.Function) -> ir.Function:
    """Define `void @__nova_entry_<name>(ptr args, ptr results)` calling `target`.

    `target` has the core's lowered signature: memref arguments expanded to their fields, results
    returned as one value (a struct when there are several; memref results as descriptors)."""
    wrapper = ir.Function(module, ir.FunctionType(T.VOID, [T.PTR, T.PTR]), ENTRY_PREFIX + name)
    args_ptr, results_ptr = wrapper.args
    args_ptr.name, results_ptr.name = "args", "results"
    builder = ir.IRBuilder(wrapper.append_basic_block("entry"))
    call_args: list[ir.Value] = []
    for i, ty in enumerate(ftype.inputs.data):
        storage = _slot(builder, args_ptr, i, f"arg{i}")
        call_args += _load_argument(builder, storage, ty, i)
    returned = builder.call(target, call_args, name="ret" if ftype.outputs.data else "")
    outputs = ftype.outputs.data
    for i in range(len(outputs)):
        value = returned if len(outputs) == 1 else builder.extract_value(returned, i)
        builder.store(value, _slot(builder, results_ptr, i, f"result{i}"))
    builder.ret_void()
    return wrapper


def _slot(builder: ir.IRBuilder, array: ir.Value, index: int, name: str) -> ir.Value:
    """Load `array[index]` (a ptr) from a `ptr*` array."""
    entry = builder.gep(array, [ir.Constant(T.I64, index)], source_etype=T.PTR)
    return builder.load(entry, typ=T.PTR, name=f"{name}.ptr")


def _load_argument(builder: ir.IRBuilder, storage: ir.Value, ty: Attribute,
                   index: int) -> list[ir.Value]:
    """The lowered parameters of one argument read from its storage."""
    if not isinstance(ty, MemRefType):
        return [builder.load(storage, typ=T.scalar_type(ty), name=f"arg{index}")]
    struct = builder.load(storage, typ=T.memref_struct(ty.get_num_dims()), name=f"arg{index}")
    rank = ty.get_num_dims()
    fields = [builder.extract_value(struct, k) for k in range(3)]
    fields += [builder.extract_value(struct, [3, k]) for k in range(rank)]
    fields += [builder.extract_value(struct, [4, k]) for k in range(rank)]
    return fields
