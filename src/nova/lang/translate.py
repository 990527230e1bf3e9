"""Python AST -> one `gpu.module` holding a `gpu.func ... kernel` (Nova's gpu dialect).

Control flow becomes a CFG of `cf` branches, so `break`, `continue` and early `return` need no
restructuring; mutable local variables live in rank-0 `memref.alloca` slots of the entry block,
which LLVM's mem2reg turns back into registers. Names assigned once at the top level of a function
are bound directly (an SSA value, or a compile-time constant when the value is one). `@nova.func`
device functions are inlined at each call (so they may use shared memory and barriers).

Variable types: a variable takes the type of its first assignment; a later assignment of another
type widens it by the promotion rules of `types.py` (`acc = 0` then `acc += x[i]` with float32 x
makes `acc` float32), which is found by translating again until the types settle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import cf, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, UnitAttr
from xdsl.ir import Block, Region, SSAValue

from nova.errors import SourceLocation
from nova.ir.gpu import CONTAINER_MODULE_ATTR, FuncOp, GPUModuleOp, ReturnOp
from nova.lang import calls, expressions, statements
from nova.lang import types as T
from nova.lang.fragvars import FragmentGetOp, FragmentSetOp, promote_fragments
from nova.lang.lanes import UNIFORM, LaneLevels
from nova.lang.source import (
    FunctionSource,
    KernelSyntaxError,
    KernelTypeError,
    assigned_names,
)
from nova.lang.values import Const, Emitter, TypeFault, Val, Value, is_number

_MAX_PASSES = 8


@dataclass(frozen=True)
class Tup:
    """A tuple of values known element by element (shapes, index tuples)."""

    items: tuple[Value, ...]


@dataclass
class Var:
    """A mutable scalar variable: a rank-0 memref slot and its type."""

    slot: SSAValue
    type: T.ScalarType


@dataclass
class FragVar:
    """A variable holding a tensor-core fragment (see fragvars: promoted to SSA values)."""

    slot: int
    type: T.FragmentType | T.WgmmaAccType


Binding = Value | Tup | Var | FragVar


class _Retranslate(Exception):
    """A variable's type widened; translate the kernel again with the new types."""


@dataclass
class Frame:
    """One function being translated (the kernel, or an inlined device function)."""

    src: FunctionSource
    key: str
    scope: dict[str, Binding] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    direct: set[str] = field(default_factory=set)
    loops: list[tuple[Block, Block]] = field(default_factory=list)  # (continue, break)
    exit_block: Block | None = None
    result: Var | None = None
    diverged: SourceLocation | None = None  # a lane-dependent return happened before this point


_READS = frozenset({"memref.load", "memref.dim", "gpu.subgroup_mma_load_matrix"})
_VIEWS = frozenset({"memref.cast", "memref.subview", "memref.reinterpret_cast", "memref.view",
                    "memref.collapse_shape", "memref.expand_shape"})


def _only_read(value: SSAValue) -> bool:
    """Whether the kernel only reads the memory behind `value` (loads and sizes, through views);
    any other use (stores, atomics, calls, anything unknown) counts as a write."""
    for use in value.uses:
        op = use.operation
        if op.name in _VIEWS:
            if not all(_only_read(r) for r in op.results):
                return False
        elif op.name not in _READS:
            return False
    return True


def _arg_attrs(ty: T.NovaType, arg: SSAValue) -> dict:
    """The argument attributes of a kernel parameter: an array's launch-checked facts, with
    `llvm.noalias` only on arrays the kernel never writes. LLVM takes a noalias argument's memory
    as private to this thread's call, so it would keep a value loaded before a barrier across it
    even when another thread stored there in between (threads that talk through a global array);
    an array nobody writes during the kernel has no such traffic, and its reads become
    ld.global.nc."""
    if not isinstance(ty, T.ArrayType):
        return {}
    attrs = ty.arg_attrs()
    if "llvm.noalias" in attrs and not _only_read(arg):
        del attrs["llvm.noalias"]
    return attrs


class Translator:
    """Translates one kernel for one signature; `build()` returns the enclosing builtin module."""

    def __init__(self, src: FunctionSource, arg_types: tuple[T.NovaType, ...], symbol: str,
                 module_name: str = "nova_kernels") -> None:
        self.src = src
        self.arg_types = arg_types
        self.symbol = symbol
        self.module_name = module_name
        self.var_types: dict[tuple[str, str], tuple[T.ScalarType, bool]] = {}
        self.em = Emitter()

    # --- driver ---------------------------------------------------------------------------------
    def build(self) -> ModuleOp:
        for _ in range(_MAX_PASSES):
            try:
                return self._build_once()
            except _Retranslate:
                continue
        raise KernelTypeError("variable types of the kernel do not settle; annotate them "
                              "(x: nova.float32 = 0)", self.src.location(self.src.tree))

    def _build_once(self) -> ModuleOp:

        self.calls = calls
        self.inline_count = 0
        self.call_stack: list[Any] = [self.src.func]
        self.workgroup: list[T.ArrayType] = []
        self.fragment_types: dict[int, Any] = {}
        self.async_entry_token: Any = None  # nova.lang.copies' wait token
        self.em.lanes = LaneLevels()
        self.entry = Block(arg_types=[t.mlir for t in self.arg_types])
        body = Block()
        self.blocks = [self.entry, body]
        self.em.block = body
        frame = self._frame(self.src, "k")
        self.frame = frame
        self.active = [frame]
        params = self.src.tree.args
        self._check_params(self.src, len(self.arg_types))
        for arg, ty, ssa in zip(params.args, self.arg_types, self.entry.args, strict=True):
            self._bind_param(frame, arg, Val(ssa, ty))
        exit_block = self.new_block()
        frame.exit_block = exit_block
        self.stmts(self.src.tree.body)
        self.branch(exit_block)
        self.em.block = exit_block
        self.em.location = self.src.location(self.src.tree)
        self.em.op(ReturnOp())
        self.blocks.remove(exit_block)
        self.blocks.append(exit_block)
        self.em.block = self.entry
        if self.async_entry_token is not None:  # last in the entry block (nova.lang.copies)
            self.entry.add_op(self.async_entry_token.owner)
        self.em.op(cf.BranchOp(body))
        promote_fragments(self.blocks, self.fragment_types)
        ftype = FunctionType.from_lists([t.mlir for t in self.arg_types], [])
        func = FuncOp(self.symbol, ftype, Region(self.blocks), kernel=True,
                      num_workgroup_attributions=len(self.workgroup))
        arg_values = self.entry.args[:len(self.arg_types)]  # then workgroup attributions
        arg_dicts = [_arg_attrs(t, arg)
                     for t, arg in zip(self.arg_types, arg_values, strict=True)]
        if any(arg_dicts):  # launch-checked alignment/aliasing facts (see T.ArrayType)
            func.properties["arg_attrs"] = ArrayAttr(DictionaryAttr(d) for d in arg_dicts)
        gpu_module = GPUModuleOp(self.module_name, Region(Block([func])))
        module = ModuleOp([gpu_module])
        module.attributes[CONTAINER_MODULE_ATTR] = UnitAttr()
        return module

    def _check_params(self, src: FunctionSource, given: int) -> None:
        a = src.tree.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.unsupported(a, "kernel and device-function parameters must be plain "
                                   "positional names (no *args, **kwargs, defaults)", src)
        if len(a.args) != given:
            raise KernelTypeError(f"{src.name}() takes {len(a.args)} arguments, {given} given",
                                  src.location(src.tree))

    def _frame(self, src: FunctionSource, key: str) -> Frame:
        counts, direct = assigned_names(src.tree.body)
        return Frame(src, key, counts=counts, direct=direct)

    def _bind_param(self, frame: Frame, arg: ast.arg, value: Value | Tup) -> None:
        if frame.counts.get(arg.arg, 0) == 0:
            frame.scope[arg.arg] = value
            return
        if not isinstance(value, Val | Const) or (isinstance(value, Val) and \
                isinstance(value.type, T.ArrayType)):
            raise self.type_error(arg, f"parameter '{arg.arg}' is reassigned; only scalar "
                                  "and fragment parameters may be", frame.src)
        prev, self.frame = self.frame, frame
        try:
            self.assign_name(arg.arg, value, arg)
        finally:
            self.frame = prev

    # --- errors ---------------------------------------------------------------------------------
    def unsupported(self, node: ast.AST, message: str,
                    src: FunctionSource | None = None) -> KernelSyntaxError:
        return KernelSyntaxError(message, (src or self.frame.src).location(node))

    def type_error(self, node: ast.AST, message: str,
                   src: FunctionSource | None = None) -> KernelTypeError:
        return KernelTypeError(message, (src or self.frame.src).location(node))

    def at(self, node: ast.AST) -> None:
        self.em.location = self.frame.src.location(node)

    # --- blocks ---------------------------------------------------------------------------------
    def new_block(self) -> Block:
        b = Block()
        self.blocks.append(b)
        return b

    def branch(self, target: Block) -> None:
        if self.em.block is not None:
            self.em.op(cf.BranchOp(target))
            self.em.block = None

    def cond_branch(self, cond: Val, then: Block, other: Block) -> None:
        self.em.op(cf.ConditionalBranchOp(cond.ssa, then, [], other, []))
        self.em.block = None

    # --- variables ------------------------------------------------------------------------------
    def slot(self, ty: T.ScalarType) -> SSAValue:
        """A rank-0 memref in the entry block (promoted to a register by LLVM)."""
        op = memref.AllocaOp.get(ty.mlir, shape=[])
        op.attributes.clear()
        self.entry.add_op(op)
        return op.results[0]

    def lookup(self, name: str, node: ast.AST) -> Binding:
        found = self.frame.scope.get(name)
        if found is not None:
            return found
        if self.frame.counts.get(name):
            raise self.type_error(node, f"'{name}' is used before it is assigned")
        ok, value = self.frame.src.lookup_global(name)
        if not ok:
            raise self.type_error(node, f"name '{name}' is not defined")
        return Const(value)

    def read(self, binding: Binding) -> Value | Tup:
        if isinstance(binding, Var):
            return Val(self.em.res(memref.LoadOp.get(binding.slot, [])), binding.type)
        if isinstance(binding, FragVar):
            return Val(self.em.res(FragmentGetOp(binding.slot, binding.type.mlir)),
                       binding.type)
        return binding

    def assign_name(self, name: str, value: Value | Tup, node: ast.AST,
                    declared: T.ScalarType | None = None) -> None:
        frame = self.frame
        if name in frame.direct and declared is None:
            frame.scope[name] = value
            return
        if (isinstance(value, Val) and isinstance(value.type, T.FRAGMENT_TYPES)) or \
                isinstance(frame.scope.get(name), FragVar):
            self._assign_fragment(name, value, node)
            return
        if isinstance(value, Tup) or (isinstance(value, Val) and isinstance(value.type,
                                                                           T.ArrayType)):
            raise self.type_error(node, f"'{name}' holds an array or tuple and is assigned more "
                                  "than once (or inside a branch or loop); such names must be "
                                  "assigned exactly once, at the top level of the function")
        if isinstance(value, Const) and not is_number(value.value):
            raise self.type_error(node, f"'{name}' is assigned the non-numeric value "
                                  f"{value.value!r}; variables hold numbers")
        key = (frame.key, name)
        weak = isinstance(value, Const)
        vt = T.literal_type(value.value) if isinstance(value, Const) else value.type
        assert isinstance(vt, T.ScalarType)
        known = self.var_types.get(key)
        if declared is not None:
            if known is None or known[0] is not declared or known[1]:
                self.var_types[key] = (declared, False)
                if known is not None:
                    raise _Retranslate
        elif known is None:
            self.var_types[key] = (vt, weak)
        else:
            self._widen(key, known, vt, weak)
        ty = self.var_types[key][0]
        var = frame.scope.get(name)
        if not isinstance(var, Var):
            var = Var(self.slot(ty), ty)
            frame.scope[name] = var
        self.store_var(var, value, node)

    def _assign_fragment(self, name: str, value: Value | Tup, node: ast.AST) -> None:
        """Assign a fragment variable (its type is fixed by the first assignment)."""
        frame = self.frame
        var = frame.scope.get(name)
        vt = value.type if isinstance(value, Val) else None
        if isinstance(var, Var) or (var is not None and not isinstance(var, FragVar)):
            raise self.type_error(node, f"'{name}' holds a {self.describe_binding(var)} and is "
                                  f"assigned an {self.describe(value)}; a variable keeps one "
                                  "kind of value")
        if var is None:
            assert isinstance(vt, T.FRAGMENT_TYPES)
            var = FragVar(len(self.fragment_types), vt)
            self.fragment_types[var.slot] = vt.mlir
            frame.scope[name] = var
        elif vt != var.type:
            raise self.type_error(node, f"'{name}' holds an {var.type} and is assigned "
                                  f"{self.describe(value)}; a fragment variable keeps its "
                                  "kind, dtype and layout")
        assert isinstance(value, Val)
        self.em.op(FragmentSetOp(var.slot, value.ssa))

    def describe_binding(self, binding: Binding | None) -> str:
        if isinstance(binding, Var):
            return str(binding.type)
        if isinstance(binding, FragVar):
            return str(binding.type)
        return self.describe(binding) if binding is not None else "nothing"

    def _widen(self, key: tuple[str, str], known: tuple[T.ScalarType, bool],
               vt: T.ScalarType, weak: bool) -> None:
        """Unify a variable's recorded type with a new assignment's (see the module doc)."""
        ktype, kweak = known
        if weak:
            fits = vt is ktype or (ktype.is_float and not vt.is_bool) or (
                ktype.is_int and vt.is_int)
            new = ktype if fits else T.promote(ktype, vt)
        elif kweak:
            fits = vt is ktype or (ktype.is_int and not vt.is_bool) or (
                ktype.is_float and vt.is_float)
            new = vt if fits else T.promote(ktype, vt)
        else:
            new = T.promote(ktype, vt)
        self.var_types[key] = (new, kweak and weak)
        if new is not ktype:
            raise _Retranslate

    def store_var(self, var: Var, value: Value, node: ast.AST) -> None:
        v = self.as_type(value, var.type, node)
        self.em.op(memref.StoreOp.get(v.ssa, var.slot, []))

    # --- typing helpers -------------------------------------------------------------------------
    def as_type(self, value: Value | Tup, ty: T.ScalarType, node: ast.AST) -> Val:
        """`value` converted to `ty` (a literal must fit; a typed value converts C-style)."""
        try:
            if isinstance(value, Const):
                if not is_number(value.value):
                    raise TypeFault(f"expected a number, got {value.value!r}")
                return self.em.constant(value.value, ty)
            if isinstance(value, Tup) or not isinstance(value.type, T.ScalarType):
                raise TypeFault(f"expected a {ty} scalar, got {self.describe(value)}")
            return self.em.convert(value, ty)
        except TypeFault as exc:
            raise self.type_error(node, str(exc)) from None

    def scalar(self, value: Value | Tup, node: ast.AST) -> Val:
        """A run-time scalar (a literal becomes its standalone type)."""
        if isinstance(value, Const):
            if not is_number(value.value):
                raise self.type_error(node, f"expected a number, got {value.value!r}")
            return self.as_type(value, T.literal_type(value.value), node)
        if isinstance(value, Tup) or not isinstance(value.type, T.ScalarType):
            raise self.type_error(node, f"expected a scalar, got {self.describe(value)}")
        return value

    def common(self, a: Value, b: Value, node: ast.AST) -> tuple[Val, Val, T.ScalarType]:
        """Both operands converted to their common type (types.py rules)."""
        for v in (a, b):
            if (isinstance(v, Val) and not isinstance(v.type, T.ScalarType)) or \
                    isinstance(v, Tup) or (isinstance(v, Const) and not is_number(v.value)):
                raise self.type_error(node, f"operands must be numbers, got "
                                      f"{self.describe(v)}")
        if isinstance(a, Const) and isinstance(b, Val):
            ty = self.weak_type(a.value, b.type)  # type: ignore[arg-type]
        elif isinstance(b, Const) and isinstance(a, Val):
            ty = self.weak_type(b.value, a.type)  # type: ignore[arg-type]
        else:
            sa, sb = self.scalar(a, node), self.scalar(b, node)
            ty = T.promote(sa.type, sb.type)  # type: ignore[arg-type]
            return self.as_type(sa, ty, node), self.as_type(sb, ty, node), ty
        return self.as_type(a, ty, node), self.as_type(b, ty, node), ty

    @staticmethod
    def weak_type(literal: Any, typed: T.ScalarType) -> T.ScalarType:
        lit = T.literal_type(literal)
        if typed.is_float:
            return typed
        if typed.is_bool:
            return lit if not lit.is_bool else typed
        if lit.is_float:
            return T.float64
        return typed

    @staticmethod
    def describe(value: Value | Tup) -> str:
        if isinstance(value, Tup):
            return "a tuple"
        if isinstance(value, Const):
            return repr(value.value)
        return str(value.type)

    # --- statements -----------------------------------------------------------------------------
    def stmts(self, body: list[ast.stmt]) -> None:

        for stmt in body:
            if self.em.block is None:
                return  # after break/continue/return: the rest is unreachable
            self.at(stmt)
            statements.statement(self, stmt)

    def expr(self, node: ast.expr) -> Value | Tup:

        saved = self.em.location
        self.at(node)
        try:
            return expressions.expression(self, node)
        finally:
            self.em.location = saved

    # --- inlining -------------------------------------------------------------------------------
    def inline(self, device_func: Any, args: list[Value | Tup], node: ast.AST) -> Value:
        src: FunctionSource = device_func.source
        if device_func.py_func in self.call_stack:
            raise self.unsupported(node, f"recursive call of device function {src.name}(); "
                                   "device functions are inlined, so recursion is not supported")
        self._check_params(src, len(args))
        self.inline_count += 1
        frame = self._frame(src, f"f{self.inline_count}")
        caller = self.frame
        for arg, value in zip(src.tree.args.args, args, strict=True):
            self._bind_param(frame, arg, value)
        frame.exit_block = self.new_block()
        self.frame = frame
        self.call_stack.append(device_func.py_func)
        self.active.append(frame)
        try:
            self.stmts(src.tree.body)
            self.branch(frame.exit_block)
        finally:
            self.active.pop()
            self.call_stack.pop()
            self.frame = caller
        self.em.block = frame.exit_block
        if frame.result is None:
            return Const(None)
        return self.read(frame.result)  # type: ignore[return-value]

    # --- warp uniformity (nova.lang.lanes) --------------------------------------------------
    def enter_branch(self, values: list[Value], node: ast.AST) -> bool:
        """Before the body of a branch or loop controlled by `values`: True (and a divergent
        region begins) when one of them may differ between the lanes of a warp."""
        if all(not isinstance(v, Val) or self.em.lanes.of(v.ssa) == UNIFORM for v in values):
            return False
        self.em.lanes.regions.append(self.frame.src.location(node))
        return True

    def leave_branch(self, entered: bool) -> None:
        if entered:
            self.em.lanes.regions.pop()

    def divergence(self) -> SourceLocation | None:
        """Where the current point became reachable by only some lanes of a warp (the
        condition of an enclosing branch, or of an earlier lane-dependent return), or None."""
        if self.em.lanes.regions:
            return self.em.lanes.regions[-1]
        for frame in self.active:
            if frame.diverged is not None:
                return frame.diverged
        return None

    def return_value(self, node: ast.Return) -> None:
        frame = self.frame
        if self.em.lanes.regions and frame.diverged is None:
            frame.diverged = self.em.lanes.regions[-1]
        if frame.key == "k":
            if node.value is not None:
                v = self.expr(node.value)
                if not (isinstance(v, Const) and v.value is None):
                    raise self.type_error(node, "a kernel cannot return a value; write results "
                                          "into an array argument")
            self.branch(frame.exit_block)  # type: ignore[arg-type]
            return
        if node.value is None:
            self.branch(frame.exit_block)  # type: ignore[arg-type]
            return
        value = self.expr(node.value)
        if isinstance(value, Const) and value.value is None:
            self.branch(frame.exit_block)  # type: ignore[arg-type]
            return
        if isinstance(value, Tup) or (isinstance(value, Val) and isinstance(value.type,
                                                                           T.ArrayType)):
            raise self.type_error(node.value, "device functions return scalars only")
        saved = self.frame.direct
        self.frame.direct = set()
        try:
            self.assign_name("<return>", value, node)
        finally:
            self.frame.direct = saved
        frame.result = frame.scope["<return>"]  # type: ignore[assignment]
        self.branch(frame.exit_block)  # type: ignore[arg-type]
