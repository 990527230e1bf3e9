"""The LLVM emitter core: lowers xDSL functions to llvmlite IR, op by op, for any `Target`.

Structure
---------
`ModuleEmitter(target, name)` owns one `llvmlite.ir.Module` (target triple/data layout), the
symbol table of lowered functions/globals, and helpers to declare functions, intrinsics and string
constants. `emit_symbols(ops)` lowers module-level ops in two passes (declare every function and
global first, then define bodies), so calls may precede callees.

`FunctionEmitter(me, func_op, llvm_fn)` lowers one function body:

* **value map** `fe.values`: MLIR SSAValue -> llvmlite value, or `MemRefDescriptor` for ranked
  memrefs (fields kept as separate SSA values; `fe.lookup_memref`);
* **block map** `fe.blocks`: MLIR Block -> LLVM block; block arguments become phis (a memref
  argument becomes one phi per descriptor field); `fe.jump(block, operands)` adds the incoming
  values and branches. Blocks are emitted in reverse post-order so defs precede uses;
* **dispatch**: `fe.emit_op(op)` looks up `target.handlers[op.name]`, then the core table
  (`CORE_HANDLERS`, from the ops_*.py modules), else raises a located `UnsupportedError` naming
  the op and the supported dialects;
* **structured control flow** (scf.for/if/while/parallel/execute_region) is lowered by its
  handlers straight to basic blocks + phis with `fe.emit_inline(block, args)`, which emits the ops
  of a single-block region and hands back its terminator (scf.yield/scf.condition) unemitted.

Conventions: `index` is i64; function arguments expand memrefs into their fields (see types.py);
a function with several results returns a struct. Entry-block allocas via `fe.alloca`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

from llvmlite import ir
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    UnrankedMemRefType,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from nova.backends.llvm import memref as M
from nova.backends.llvm import types as T
from nova.backends.llvm.target import Handler, Target
from nova.errors import LoweringError, SourceLocation, UnsupportedError

#: Dialects (and single ops) every target's core handlers lower; named in UnsupportedError.
CORE_DIALECTS: tuple[str, ...] = (
    "arith", "math", "memref", "scf", "cf", "func", "index", "vector")

LoweredValue: TypeAlias = ir.Value | M.MemRefDescriptor


def supported_dialects(target_op_names: Iterable[str]) -> list[str]:
    """The sorted, duplicate-free dialect names a target lowers: the core dialects plus the
    dialects of the target's own handlers (`vector.print` is folded into `vector` when the
    target lowers the whole dialect), for UnsupportedError messages."""
    names = set(CORE_DIALECTS) | {n.split(".")[0] for n in target_op_names}
    if "vector" in names:
        names.discard("vector.print")
    return sorted(names)


def location_of(op: Operation) -> SourceLocation | None:
    """The source location of `op`, or of its closest located ancestor (ops created by passes may
    carry none); None when nothing is known."""
    from nova.ir.locations import nearest_location

    return nearest_location(op)


def display_name(op: Operation) -> str:
    """The op's name as written: an unregistered op (--allow-unregistered-dialect) is xDSL's
    `builtin.unregistered` carrying its real name."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


def attr(op: Operation, name: str) -> Attribute | None:
    """An op attribute by name, looked up in properties first, then in the attribute dict."""
    found = op.properties.get(name)
    return found if found is not None else op.attributes.get(name)


def enum_text(value: Attribute | None) -> str | None:
    """The keyword of an enum-like attribute (`#gpu<dim x>` -> 'x', `#arith.cmpf<olt>` ...)."""
    if value is None:
        return None
    data = getattr(value, "data", value)
    data = getattr(data, "value", data)
    if isinstance(data, str):
        return data.lower()
    return str(data).lower()


def int_attr(op: Operation, name: str) -> int | None:
    """An IntegerAttr/IntAttr property or attribute as a Python int (None when absent)."""
    found = attr(op, name)
    if found is None:
        return None
    value: Any = getattr(found, "value", found)  # IntegerAttr -> IntAttr; IntAttr -> itself
    return int(getattr(value, "data", value))


class ModuleEmitter:
    """One LLVM module being built for `target` (see the module docstring)."""

    def __init__(self, target: Target, name: str) -> None:
        self.target = target
        self.module = ir.Module(name=name)
        if target.triple:
            self.module.triple = target.triple
        if target.data_layout:
            self.module.data_layout = target.data_layout
        self.functions: dict[str, ir.Function] = {}
        self.func_ops: dict[str, Operation] = {}
        self.globals: dict[str, ir.GlobalVariable] = {}
        self.global_ops: dict[str, Operation] = {}
        self._strings: dict[tuple[str, int], ir.GlobalVariable] = {}

    # --- types ---------------------------------------------------------------------------
    def address_space(self, ty: Attribute) -> int:
        return self.target.pointer_address_space(ty)

    def lower_type(self, ty: Attribute) -> ir.Type:
        return T.lower_type(ty, self.address_space)

    def function_type(self, ftype: FunctionType) -> ir.FunctionType:
        return T.function_type(ftype, self.address_space)

    # --- declarations ----------------------------------------------------------------------
    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """Get or declare function `name`; raises LoweringError on a conflicting type."""
        existing = self.module.globals.get(name)
        if existing is not None:
            if not isinstance(existing, ir.Function) or existing.function_type != fnty:
                raise LoweringError(f"symbol '{name}' is used with conflicting types "
                                    f"({getattr(existing, 'type', '?')} vs {fnty})")
            return existing
        return ir.Function(self.module, fnty, name=name)

    def intrinsic(self, base: str, llty: ir.Type, arity: int,
                  result: ir.Type | None = None) -> ir.Function:
        """Declare overloaded intrinsic `base.<suffix of llty>` taking `arity` llty operands."""
        name = f"{base}.{intrinsic_suffix(llty)}"
        return self.declare(name, ir.FunctionType(result or llty, [llty] * arity))

    def string_constant(self, text: str | bytes, address_space: int = 0) -> ir.GlobalVariable:
        """A private NUL-terminated constant string (cached per text and address space)."""
        data = text.encode() if isinstance(text, str) else text
        key = (data.decode("latin-1"), address_space)
        found = self._strings.get(key)
        if found is not None:
            return found
        data += b"\0"
        arr = ir.ArrayType(T.I8, len(data))
        gv = ir.GlobalVariable(self.module, arr, self.module.get_unique_name(".str"),
                               addrspace=address_space)
        gv.global_constant = True
        gv.linkage = "private"
        gv.unnamed_addr = True
        gv.initializer = ir.Constant(arr, bytearray(data))
        self._strings[key] = gv
        return gv

    # --- module-level ops ------------------------------------------------------------------
    def emit_symbols(self, ops: Iterable[Operation], skip: frozenset[str] = frozenset()) -> None:
        """Lower func.func / gpu.func / memref.global ops: declare all, then define bodies.
        Ops named in `skip` are ignored (e.g. `gpu.module` for the host target)."""
        ops = [op for op in ops if op.name not in skip]
        from nova.backends.llvm.ops_memref import emit_global

        for op in ops:
            if op.name in ("func.func", "gpu.func"):
                self.declare_function(op)
            elif op.name == "memref.global":
                emit_global(self, op)
            else:
                raise UnsupportedError(
                    f"module-level op '{display_name(op)}' is not supported by the LLVM lowering "
                    "(supported: func.func, gpu.func, memref.global)", location_of(op))
        for op in ops:
            if op.name in ("func.func", "gpu.func") and op.regions and op.regions[0].blocks:
                self.define_function(op)

    def declare_function(self, op: Operation) -> ir.Function:
        """Declare the LLVM function for a func.func/gpu.func (memref args expanded)."""
        name = symbol_name(op)
        ftype = attr(op, "function_type")
        assert isinstance(ftype, FunctionType)
        try:
            llvm_type = self.function_type(ftype)
        except UnsupportedError as exc:  # a parameter/result type: say which function
            if exc.location is not None or location_of(op) is None:
                raise
            raise UnsupportedError(exc.message, location_of(op), exc.notes) from exc
        fn = self.declare(name, llvm_type)
        if op.regions and op.regions[0].blocks:
            fn.linkage = self.target.function_linkage(op)
        self.apply_arg_attrs(op, ftype, fn)
        self.functions[name] = fn
        self.func_ops[name] = op
        return fn

    def apply_arg_attrs(self, op: Operation, ftype: FunctionType, fn: ir.Function) -> None:
        """Carry `llvm.noalias`, `llvm.readonly` and `llvm.align = N` argument attributes onto
        the LLVM parameters. On a memref they apply to its pointers (upstream's convention):
        noalias/readonly to the allocated and aligned pointers, align to the aligned pointer
        (the one loads and stores go through). Targets that add leading parameters (the CPU
        device's thread context) are accounted for: they come before the expanded arguments."""
        dicts = attr(op, "arg_attrs")
        if not isinstance(dicts, ArrayAttr):
            return
        spans = [len(T.expanded_param_types(ty, self.address_space)) for ty in ftype.inputs.data]
        index = len(fn.args) - sum(spans)
        for ty, span, entry in zip(ftype.inputs.data, spans, dicts.data, strict=True):
            params = fn.args[index:index + span]
            index += span
            facts = entry.data if isinstance(entry, DictionaryAttr) else {}
            if not facts:
                continue
            pointers = params[:2] if isinstance(ty, MemRefType) else params[:1]
            pointers = [p for p in pointers if isinstance(p.type, ir.PointerType)]
            wanted = {"llvm.noalias", "llvm.readonly", "llvm.align"} & set(facts)
            if wanted and (not pointers or isinstance(ty, UnrankedMemRefType)):
                raise UnsupportedError(
                    f"{', '.join(sorted(wanted))} on an argument of type {ty} (they apply to "
                    "pointers and ranked memrefs)", location_of(op))
            for p in pointers:
                if "llvm.noalias" in facts:
                    p.add_attribute("noalias")
                if "llvm.readonly" in facts:
                    # llvmlite's attribute set does not list `readonly`; add it to the
                    # underlying set, which prints it verbatim
                    set.add(p.attributes, "readonly")
            align = facts.get("llvm.align")
            if isinstance(align, IntegerAttr) and pointers:
                value = align.value.data
                if value <= 0 or value & (value - 1):
                    raise UnsupportedError(f"llvm.align must be a power of two, got {value}",
                                           location_of(op))
                pointers[-1].attributes.align = value

    def define_function(self, op: Operation) -> ir.Function:
        """Lower the body of a func.func/gpu.func, then run the target's finish hook."""
        name = symbol_name(op)
        fn = self.functions.get(name) or self.declare_function(op)
        FunctionEmitter(self, op, fn).emit_body()
        self.target.finish_function(self, op, fn)
        return fn


def symbol_name(op: Operation) -> str:
    """The sym_name of a symbol op."""
    name = attr(op, "sym_name")
    return str(getattr(name, "data", name))


def intrinsic_suffix(llty: ir.Type) -> str:
    """LLVM's overload suffix for a scalar type (f32, f64, f16, bf16, iN) or a vector of
    them (v4f32)."""
    if isinstance(llty, ir.VectorType):
        return f"v{llty.count}{intrinsic_suffix(llty.element)}"
    if llty == T.F32:
        return "f32"
    if llty == T.F64:
        return "f64"
    if llty == T.F16:
        return "f16"
    if isinstance(llty, ir.IntType):
        return f"i{llty.width}"
    if str(llty) == "bfloat":
        return "bf16"
    raise LoweringError(f"no intrinsic overload suffix for LLVM type {llty}")


_CORE: dict[str, Handler] | None = None


def core_handlers() -> dict[str, Handler]:
    """The target-independent handler table (built on first use from the ops_*.py modules)."""
    global _CORE
    if _CORE is None:
        from nova.backends.llvm import (
            ops_arith,
            ops_cf,
            ops_func,
            ops_index,
            ops_llvm,
            ops_math,
            ops_memref,
            ops_scf,
            ops_vector,
        )

        table: dict[str, Handler] = {}
        for mod in (ops_arith, ops_math, ops_memref, ops_scf, ops_cf, ops_func, ops_index,
                    ops_vector, ops_llvm):
            table.update(mod.HANDLERS)
        _CORE = table
    return _CORE


class FunctionEmitter:
    """Lowers the body of one function (see the module docstring)."""

    def __init__(self, me: ModuleEmitter, func_op: Operation, fn: ir.Function) -> None:
        self.module = me
        self.target = me.target
        self.func_op = func_op
        self.function = fn
        self.values: dict[SSAValue, LoweredValue] = {}
        self.blocks: dict[Block, ir.Block] = {}
        self.phis: dict[Block, list[LoweredValue]] = {}
        # `entry` holds only allocas (fe.alloca) and a branch to `prologue`, where lowering
        # starts; no other builder ever inserts into `entry`, so builder positions stay valid.
        self.entry = fn.append_basic_block("entry")
        prologue = fn.append_basic_block("prologue")
        self._alloca_builder = ir.IRBuilder(self.entry)
        self._alloca_builder.branch(prologue)
        self.builder = ir.IRBuilder(prologue)
        self._core = core_handlers()

    # --- values ----------------------------------------------------------------------------
    def bind(self, value: SSAValue, lowered: LoweredValue) -> None:
        self.values[value] = lowered

    def lookup(self, value: SSAValue) -> ir.Value:
        """The lowered scalar (or struct) for `value`; memrefs come back as packed structs."""
        found = self.values.get(value)
        if found is None:
            raise LoweringError(f"internal: value {value} used before its definition",
                                location_of(value.owner) if isinstance(value.owner, Operation)
                                else None)
        if isinstance(found, M.MemRefDescriptor):
            return found.pack(self.builder)
        return found

    def lookup_memref(self, value: SSAValue) -> M.MemRefDescriptor:
        found = self.values.get(value)
        if isinstance(found, M.MemRefDescriptor):
            return found
        if found is not None and isinstance(value.type, MemRefType):
            return M.unpack(self.builder, value.type, found)
        raise LoweringError(f"internal: memref value {value} has no descriptor")

    def lookup_any(self, value: SSAValue) -> LoweredValue:
        """The lowered value as stored (descriptor for memrefs)."""
        if value not in self.values:
            self.lookup(value)
        return self.values[value]

    def operands(self, op: Operation) -> list[ir.Value]:
        return [self.lookup(v) for v in op.operands]

    def flat_args(self, values: Sequence[SSAValue]) -> list[ir.Value]:
        """Call arguments with memrefs expanded into their fields."""
        out: list[ir.Value] = []
        for v in values:
            if isinstance(v.type, MemRefType):
                out += self.lookup_memref(v).flatten()
            else:
                out.append(self.lookup(v))
        return out

    def bind_from_llvm(self, value: SSAValue, lowered: ir.Value) -> None:
        """Bind a value coming back as an LLVM struct/scalar (unpacks memref descriptors)."""
        if isinstance(value.type, MemRefType):
            self.bind(value, M.unpack(self.builder, value.type, lowered))
        else:
            self.bind(value, lowered)

    def lower_type(self, ty: Attribute) -> ir.Type:
        return self.module.lower_type(ty)

    # --- diagnostics -----------------------------------------------------------------------
    def location(self, op: Operation) -> SourceLocation | None:
        return location_of(op)

    def error(self, op: Operation, message: str) -> LoweringError:
        return LoweringError(message, location_of(op))

    def unsupported(self, op: Operation, detail: str = "") -> UnsupportedError:
        extra = f" ({detail})" if detail else ""
        dialects = ", ".join(supported_dialects(self.target.handlers))
        return UnsupportedError(
            f"op '{display_name(op)}' is not supported by the {self.target.name} LLVM "
            f"lowering{extra}; supported dialects: {dialects}", location_of(op))

    def unsupported_op_name(self, name: str) -> UnsupportedError:
        return UnsupportedError(f"op '{name}' is not supported by the {self.target.name} target")

    def unsupported_type(self, what: str, ty: Attribute) -> UnsupportedError:
        return UnsupportedError(f"'{what}' on type '{ty}' is not supported by the "
                                f"{self.target.name} target")

    # --- emission --------------------------------------------------------------------------
    def emit_op(self, op: Operation) -> None:
        handler = self.target.handlers.get(op.name) or self._core.get(op.name)
        if handler is None:
            raise self.unsupported(op)
        try:
            handler(self, op)
        except UnsupportedError as exc:
            if exc.location is None and location_of(op) is not None:
                raise UnsupportedError(exc.message, location_of(op), exc.notes) from exc
            raise

    def param_args(self) -> list[ir.Argument]:
        """The LLVM parameters that carry the function's MLIR arguments, expanded (all of them
        here; the CPU target's emitter drops its leading thread-context parameter)."""
        return list(self.function.args)

    def emit_body(self) -> None:
        """Bind the entry block's arguments (expanded LLVM params, attributions) and lower the
        function's region."""
        region = self.func_op.regions[0]
        entry = region.blocks[0]
        ftype = attr(self.func_op, "function_type")
        assert isinstance(ftype, FunctionType)
        params = self.param_args()
        values: list[LoweredValue] = []
        for ty in ftype.inputs.data:
            count = len(T.expanded_param_types(ty, self.module.address_space))
            chunk, params = params[:count], params[count:]
            if isinstance(ty, MemRefType):
                values.append(M.from_fields(ty, chunk))
            else:
                values.append(chunk[0])
        extra = list(entry.args[len(values):])
        n_workgroup = int_attr(self.func_op, "workgroup_attributions") or 0
        for i, arg in enumerate(extra):
            kind = "workgroup" if i < n_workgroup else "private"
            if not isinstance(arg.type, MemRefType):
                raise self.error(self.func_op, f"{kind} attribution must be a memref, "
                                               f"got {arg.type}")
            index = i if kind == "workgroup" else i - n_workgroup
            values.append(self.target.attribution(self, self.func_op, kind, arg.type, index))
        self.emit_region_cfg(region, values)

    def emit_region_cfg(self, region: Region, entry_values: Sequence[LoweredValue]) -> None:
        """Lower a (multi-block) region: entry args bound to `entry_values`, other block args as
        phis, blocks emitted in reverse post-order. Terminators are lowered by their handlers."""
        entry = region.blocks[0]
        for arg, value in zip(entry.args, entry_values, strict=True):
            self.bind(arg, value)
        for block in region.blocks:
            self.blocks[block] = self.function.append_basic_block(f"bb{len(self.blocks)}")
        for block in region.blocks:
            if block is entry:
                continue
            with self.builder.goto_block(self.blocks[block]):
                phis = [self.make_phi(a.type) for a in block.args]
            self.phis[block] = phis
            for arg, phi in zip(block.args, phis, strict=True):
                self.bind(arg, phi)
        self.builder.branch(self.blocks[entry])
        reachable = reverse_post_order(entry)
        for block in reachable:
            self.builder.position_at_end(self.blocks[block])
            for op in block.ops:
                self.emit_op(op)
        for block in region.blocks:
            if block not in reachable:  # dead block: keep the LLVM function well-formed
                self.builder.position_at_end(self.blocks[block])
                self.builder.unreachable()

    def emit_inline(self, block: Block, args: Sequence[LoweredValue]) -> Operation:
        """Emit the non-terminator ops of a single-block region at the current position with its
        arguments bound to `args`; return the (unemitted) terminator."""
        for arg, value in zip(block.args, args, strict=True):
            self.bind(arg, value)
        ops = list(block.ops)
        if not ops:
            raise LoweringError("internal: empty block in a structured region")
        for op in ops[:-1]:
            self.emit_op(op)
        return ops[-1]

    def make_phi(self, ty: Attribute) -> LoweredValue:
        """A phi (or a descriptor of phis for a ranked memref) at the current position."""
        if isinstance(ty, MemRefType):
            rank = ty.get_num_dims()
            ptr = ir.PointerType(addrspace=self.module.address_space(ty))
            fields = [self.builder.phi(ptr), self.builder.phi(ptr), self.builder.phi(T.INDEX)]
            fields += [self.builder.phi(T.INDEX) for _ in range(2 * rank)]
            return M.MemRefDescriptor(ty, fields[0], fields[1], fields[2],
                                      fields[3:3 + rank], fields[3 + rank:])
        return self.builder.phi(self.lower_type(ty))

    def add_incoming(self, phi: LoweredValue, value: LoweredValue, block: ir.Block) -> None:
        if isinstance(phi, M.MemRefDescriptor):
            assert isinstance(value, M.MemRefDescriptor)
            for p, v in zip(phi.flatten(), value.flatten(), strict=True):
                p.add_incoming(v, block)
        else:
            phi.add_incoming(value, block)

    def jump(self, target: Block, operands: Sequence[SSAValue]) -> None:
        """Branch to MLIR block `target`, feeding its argument phis."""
        here = self.builder.block
        for phi, value in zip(self.phis.get(target, []), operands, strict=True):
            self.add_incoming(phi, self.lookup_any(value), here)
        self.builder.branch(self.blocks[target])

    def alloca(self, elem: ir.Type, count: ir.Value | None = None, align: int = 0) -> ir.Value:
        """An alloca in the entry block when `count` is constant (or absent), else in place.
        Returns an opaque `ptr` (see memref.opaque)."""
        if count is None or isinstance(count, ir.Constant):
            b = self._alloca_builder
            b.position_before(self.entry.terminator)
            slot = b.alloca(elem, size=count)
            if align:
                slot.align = align
            return M.opaque(b, slot)
        slot = self.builder.alloca(elem, size=count)
        if align:
            slot.align = align
        return M.opaque(self.builder, slot)

    def index_const(self, value: int) -> ir.Constant:
        return ir.Constant(T.INDEX, value)


def reverse_post_order(entry: Block) -> list[Block]:
    """Blocks reachable from `entry` in reverse post-order (definitions before uses)."""
    seen: set[Block] = set()
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(entry, 0)]
    seen.add(entry)
    while stack:
        block, i = stack.pop()
        succs = successors(block)
        if i < len(succs):
            stack.append((block, i + 1))
            nxt = succs[i]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, 0))
        else:
            order.append(block)
    order.reverse()
    return order


def successors(block: Block) -> list[Block]:
    last = block.last_op
    return list(last.successors) if last is not None else []
