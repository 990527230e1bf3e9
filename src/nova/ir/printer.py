"""An xDSL printer that prints like `mlir-opt` (LLVM 22) where xDSL's own printer differs.

Differences from xDSL 0.74's `Printer` that this subclass fixes:

* op names: `builtin.module` prints as `module`, and ops of the `func` dialect directly inside a
  `func.func` drop their `func.` prefix (`return`, `call`), as MLIR's default-dialect rule does;
* ops built with xDSL's own classes of ops Nova overrides (`memref.cast`, `scf.parallel`, ...)
  still print MLIR's custom syntax;
* multi-result ops whose results have no name hint, or one shared (`%x:2` parsed), print as
  `%0:2 = ...` and their results as `%0#1`;
* blocks with predecessors get MLIR's `// pred: ^bb0` / `// 2 preds: ^bb0, ^bb1` comments;
* attribute dictionaries and properties print sorted by name (MLIR's DictionaryAttr order);
* affine maps and integer sets print as aliases (`#map`, `#map1`, `#set`) defined before the
  top-level op, numbered in the order they are first printed, as MLIR's AliasInitializer does;
* integer memory spaces print bare (`memref<4xf32, 3>`, not `3 : i64`), and so do i64 integers
  in arrays (`[1, 2]`);
* floats that need the shortest form print with an upper-case exponent (`3.40282347E+38`) and
  NaN/Inf as upper-case hex (`0x7FC00000`), as MLIR's APFloat printing does.
"""

from __future__ import annotations

import io
import math
import struct
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    UnrankedMemRefType,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove

# Ops whose regions make their own dialect the default one for direct children (MLIR's
# OpAsmOpInterface::getDefaultDialect).
_DEFAULT_DIALECT_OF_PARENT = {"func.func": "func"}


_OVERRIDES: dict[str, type[Operation]] | None = None


def _override_for(op: Operation) -> type[Operation] | None:
    """Nova's class for `op.name` when `op` is an instance of xDSL's original class (e.g. built
    by a pass with `xdsl.dialects.memref.CastOp.get`), so it still prints MLIR's syntax."""
    global _OVERRIDES
    if _OVERRIDES is None:
        from nova.ir.dialects.memref import AtomicRMWOp, CastOp, CopyOp, GlobalOp, RankOp
        from nova.ir.dialects.scf_arith_func import (
            ExecuteRegionOp,
            FuncOp,
            IndexCastUIOp,
            ParallelOp,
            ReduceOp,
            WhileOp,
        )

        _OVERRIDES = {cls.name: cls for cls in (
            FuncOp, IndexCastUIOp, ParallelOp, ReduceOp, WhileOp, ExecuteRegionOp, AtomicRMWOp,
            CastOp, CopyOp, GlobalOp, RankOp)}
    cls = _OVERRIDES.get(op.name)
    return cls if cls is not None and not isinstance(op, cls) else None


class NovaPrinter(Printer):
    """`Printer` with mlir-opt's op-name elision, result groups, block comments and formats.

    `aliases`: the alias name of each affine map / integer set attribute (printed as `#name`);
    every such attribute printed is recorded in `aliased`, in order, to build that table."""

    aliases: dict[Attribute, str]
    aliased: list[Attribute]

    # ---- op names and results -------------------------------------------------------------
    def _print_results(self, op: Operation) -> None:
        results = op.results
        hints = {r.name_hint for r in results}
        if len(results) <= 1 or self.print_generic_format or len(hints) > 1:
            super()._print_results(op)
            return
        (hint,) = hints
        if hint is None:
            name = self._get_new_valid_name_id()
        else:  # `%x:2 = ...` parsed: one name for the group, as written
            count = self.ssa_names.get(hint, 0)
            name = f"{hint}_{count}" if count else hint
            self.ssa_names[hint] = count + 1
        for index, result in enumerate(results):
            self._ssa_values[result] = f"{name}#{index}"
        self.print_string(f"%{name}:{len(results)} = ")

    def _custom_name(self, op: Operation) -> str:
        name = op.name
        if name == "builtin.module":
            return "module"
        parent = op.parent_op()
        if parent is not None:
            default = _DEFAULT_DIALECT_OF_PARENT.get(parent.name)
            if default is not None and name.startswith(default + "."):
                return name[len(default) + 1:]
        return name

    _reassociation_op = False
    """True while the custom form of memref.expand_shape/collapse_shape prints."""

    def print_op(self, op: Operation) -> None:
        """Print one op (generic or custom form), eliding its dialect like MLIR does."""
        self._reassociation_op = (not self.print_generic_format
                                  and op.name in _REASSOCIATION_OPS)
        scope = bool(op.get_traits_of_type(IsolatedFromAbove))
        self._print_results(op)
        if scope:
            self.enter_scope()
        try:
            if isinstance(op, UnregisteredOp):
                op_name = op.op_name
                self.print_string(f'"{op_name.data}"')
                del op.attributes["op_name__"]
                self.print_op_with_default_format(op)
                op.attributes["op_name__"] = op_name
            elif not self.print_generic_format and (override := _override_for(op)):
                self.print_string(self._custom_name(op))
                override.print(op, self)
            elif self.print_generic_format or Operation.print is type(op).print:
                self.print_string(f'"{op.name}"')
                self.print_op_with_default_format(op)
            else:
                self.print_string(self._custom_name(op))
                op.print(self)
        finally:
            if scope:
                self.exit_scope()

    # ---- blocks ---------------------------------------------------------------------------
    def _populate_block_name(self, block: Block, block_index: int | None = None) -> None:
        """Name blocks `^bbN` by position in their region, as MLIR does (source names drop)."""
        if block_index is None:
            region = block.parent
            block_index = 0
            if region is not None:
                for index, candidate in enumerate(region.blocks):
                    if candidate is block:
                        block_index = index
                        break
        self._blocks[block] = f"bb{block_index}"

    def print_block(self, block: Block, print_block_args: bool = True,
                    print_block_terminator: bool = True) -> None:
        """Print a block; labelled blocks get MLIR's predecessor comment."""
        if not print_block_args:
            super().print_block(block, False, print_block_terminator)
            return
        self._print_new_line()
        if block not in self._blocks:
            self._populate_block_name(block)
        self.print_block_name(block)
        if block.args:
            with self.in_parens():
                self.print_list(block.args, self.print_block_argument)
        self.print_string(":")
        preds = _predecessors(block)
        if preds:
            names = sorted((self._get_block_name(p) for p in preds), key=_block_sort_key)
            label = "pred" if len(names) == 1 else f"{len(names)} preds"
            self.print_string(f"  // {label}: " + ", ".join("^" + n for n in names))
        super().print_block(block, False, print_block_terminator)

    def print_successors(self, successors: Sequence[Block]) -> None:
        """The generic form's successor list, `(%x)[^bb1]` (no space before it, as MLIR)."""
        if successors:
            with self.in_square_brackets():
                self.print_list(successors, self.print_block_name)

    # ---- attributes -----------------------------------------------------------------------
    def print_attr_dict(self, attr_dict: Mapping[str, Attribute]) -> None:
        """Print `{a = .., b}` with entries sorted by name, as MLIR's DictionaryAttr is."""
        with self.in_braces():
            self.print_list(sorted(attr_dict.items()), self._print_attr_string)

    def print_attribute(self, attribute: Attribute) -> None:
        """Print an attribute; memref types with an i64 memory space print it bare; affine
        maps and sets as their alias, else in MLIR's syntax."""
        if isinstance(attribute, AffineMapAttr | AffineSetAttr):
            self._print_affine(attribute)
            return
        if isinstance(attribute, MemRefType | UnrankedMemRefType) and _is_i64_int(
                attribute.memory_space):
            self._print_memref_with_int_space(attribute)
            return
        if self._reassociation_op and _is_reassociation(attribute):
            # memref.expand_shape / collapse_shape print their groups as bare integers
            self.print_string("[" + ", ".join(
                "[" + ", ".join(str(i.value.data) for i in group.data) + "]"
                for group in attribute.data) + "]")  # type: ignore[attr-defined]
            return
        if isinstance(attribute, ArrayAttr):
            # elements that are i64 integers print without their type, as in MLIR
            self.print_string("[")
            self.print_list(attribute.data, self._print_array_element)
            self.print_string("]")
            return
        super().print_attribute(attribute)

    def _print_array_element(self, attribute: Attribute) -> None:
        if _is_i64_int(attribute):
            self.print_string(str(attribute.value.data))  # type: ignore[attr-defined]
        else:
            self.print_attribute(attribute)

    def _print_affine(self, attribute: AffineMapAttr | AffineSetAttr) -> None:
        aliases = getattr(self, "aliases", {})
        if attribute in aliases:
            self.print_string("#" + aliases[attribute])
            return
        if not hasattr(self, "aliased"):
            self.aliased = []
        self.aliased.append(attribute)
        self.print_string(format_affine(attribute))

    def _print_memref_with_int_space(self, t: MemRefType | UnrankedMemRefType) -> None:
        space = t.memory_space
        assert isinstance(space, IntegerAttr)
        self.print_string("memref<")
        if isinstance(t, UnrankedMemRefType):
            self.print_string("*x")
        elif t.shape.data:
            self.print_dimension_list(t.get_shape())
            self.print_string("x")
        self.print_attribute(t.element_type)
        if isinstance(t, MemRefType) and not isinstance(t.layout, NoneAttr):
            self.print_string(", ")
            self.print_attribute(t.layout)
        self.print_string(f", {space.value.data}>")

    def print_float(self, value: float, type: AnyFloat) -> None:
        """Print a float as MLIR does: `%.6e` when exact, else shortest, NaN/Inf as hex."""
        if math.isnan(value) or math.isinf(value):
            raw = type.pack((value,))
            self.print_string(f"0x{raw[::-1].hex().upper()}")
            return
        text = f"{value:.6e}"
        if type.unpack(type.pack([float(text)]), 1)[0] == value:
            self.print_string(text)
            return
        if isinstance(type, Float32Type):
            text = f"{value:.9g}"
        elif isinstance(type, Float64Type):
            text = f"{value:.17g}"
        else:
            text = repr(value)
        if "." not in text and "e" not in text:
            bits = struct.unpack("<I", struct.pack("<f", value))[0] if isinstance(
                type, Float32Type) else struct.unpack("<Q", struct.pack("<d", value))[0]
            self.print_string(f"0x{bits:X}")
            return
        self.print_string(text.replace("e", "E"))


def _is_i64_int(attr: Attribute) -> bool:
    return (isinstance(attr, IntegerAttr) and isinstance(attr.type, IntegerType)
            and attr.type.width.data == 64)


_REASSOCIATION_OPS = frozenset({"memref.expand_shape", "memref.collapse_shape"})


def _is_reassociation(attr: Attribute) -> bool:
    """An array of arrays of i64 integers (a reassociation's index groups)."""
    return isinstance(attr, ArrayAttr) and all(
        isinstance(group, ArrayAttr) and all(_is_i64_int(i) for i in group.data)
        for group in attr.data)


def _predecessors(block: Block) -> list[Block]:
    """The blocks whose terminators branch to `block`, once per branch edge (as MLIR's
    `getPredecessors`: a switch with two cases to the block counts twice)."""
    found: list[Block] = []
    for use in block.uses:
        owner_block = use.operation.parent_block()
        if owner_block is not None:
            found.append(owner_block)
    return found


def _block_sort_key(name: str) -> tuple[int, str]:
    digits = name[2:] if name.startswith("bb") else ""
    return (int(digits), name) if digits.isdigit() else (1 << 30, name)


def format_affine(attribute: AffineMapAttr | AffineSetAttr) -> str:
    """`affine_map<...>` / `affine_set<...>` in MLIR's syntax."""
    from nova.ir.dialects.affine_syntax import format_map, format_set
    if isinstance(attribute, AffineMapAttr):
        return format_map(attribute.data)
    return format_set(attribute.data)


def alias_names(attributes: list[Attribute]) -> dict[Attribute, str]:
    """MLIR's alias of each affine map (`map`, `map1`, ...) and integer set (`set`, ...): the
    distinct attributes in first-printed order, maps before sets (AliasInitializer sorts its
    aliases by name, stably), each name numbered from its second use on."""
    distinct = list(dict.fromkeys(attributes))
    names: dict[Attribute, str] = {}
    for kind, prefix in ((AffineMapAttr, "map"), (AffineSetAttr, "set")):
        for index, attr in enumerate(a for a in distinct if isinstance(a, kind)):
            names[attr] = prefix if index == 0 else f"{prefix}{index}"
    return names


def print_to_string(op: Operation, generic: bool = False) -> str:
    """Print `op` (and everything nested) to a string, ending in a newline; preceded by the
    alias definitions of its affine maps and sets when it has any (printed a second time
    then, with the aliases)."""
    printer = _print_once(op, generic, {})
    if not getattr(printer, "aliased", None):
        return printer.stream.getvalue()  # type: ignore[union-attr]
    aliases = alias_names(_generic_alias_order(op) if generic else printer.aliased)
    header = "".join(f"#{name} = {format_affine(attr)}\n"  # type: ignore[arg-type]
                     for attr, name in sorted(aliases.items(),
                                              key=lambda item: _alias_key(item[1])))
    return header + _print_once(op, generic, aliases).stream.getvalue()  # type: ignore[union-attr]


def _affine_attrs(attr: Attribute, found: list[Attribute]) -> None:
    """Append the affine maps and sets in `attr` (itself, or nested in it) to `found`."""
    if isinstance(attr, AffineMapAttr | AffineSetAttr):
        found.append(attr)
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            _affine_attrs(item, found)
    elif isinstance(attr, DictionaryAttr):
        for item in attr.data.values():
            _affine_attrs(item, found)
    elif isinstance(attr, ParametrizedAttribute):
        for param in attr.parameters:
            _affine_attrs(param, found)


def _generic_alias_order(op: Operation, found: list[Attribute] | None = None
                         ) -> list[Attribute]:
    """The affine maps and sets of `op` in the order MLIR's alias initializer meets them when
    it prints generically: an op's regions first (block argument types, then the nested ops),
    then its operand and result types, then its properties and attributes, each by name."""
    found = [] if found is None else found
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                _affine_attrs(arg.type, found)
            for child in block.ops:
                _generic_alias_order(child, found)
    for value in (*op.operands, *op.results):
        _affine_attrs(value.type, found)
    for _, attr in (*sorted(op.properties.items()), *sorted(op.attributes.items())):
        _affine_attrs(attr, found)
    return found


def _alias_key(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or "0")


def _print_once(op: Operation, generic: bool, aliases: dict[Attribute, str]) -> NovaPrinter:
    stream = io.StringIO()
    printer = NovaPrinter(stream=stream, print_generic_format=generic)
    printer.aliases = aliases
    printer.print_op(op)
    stream.write("\n")
    return printer
