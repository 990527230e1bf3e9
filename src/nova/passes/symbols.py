"""MLIR's symbol-table behaviour that passes need: lookup, uniquing insertion, symbol uses.

`SymbolTable` mirrors `mlir::SymbolTable`: inserting a symbol whose name is taken renames it to
`<name>_<N>` with one counter per table (so the second and third collisions of a pass run get `_1`
and `_2`, as upstream passes produce). `symbol_uses` lists symbol references in the order MLIR's
`SymbolTable::getSymbolUses` visits them.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, Region
from xdsl.traits import SymbolTable as SymbolTableTrait


def symbol_name(op: Operation) -> str | None:
    """The `sym_name` of a symbol op (property or attribute), or None."""
    attr = op.get_attr_or_prop("sym_name")
    return attr.data if isinstance(attr, StringAttr) else None


def set_symbol_name(op: Operation, name: str) -> None:
    """Rename a symbol op in place (keeping `sym_name` where the op stores it)."""
    if "sym_name" in op.properties:
        op.properties["sym_name"] = StringAttr(name)
    else:
        op.attributes["sym_name"] = StringAttr(name)


def is_symbol_table(op: Operation) -> bool:
    """Whether `op` opens a new symbol scope (builtin.module, gpu.module)."""
    return op.has_trait(SymbolTableTrait) or op.name in ("builtin.module", "gpu.module")


class SymbolTable:
    """The symbols directly inside one symbol-table op, with MLIR's uniquing insertion."""

    def __init__(self, table_op: Operation) -> None:
        self.op = table_op
        self.block: Block = table_op.regions[0].blocks[0]
        self._symbols: dict[str, Operation] = {}
        self._counter = 0
        for op in self.block.ops:
            name = symbol_name(op)
            if name is not None and name not in self._symbols:
                self._symbols[name] = op

    def lookup(self, name: str) -> Operation | None:
        return self._symbols.get(name)

    def insert(self, op: Operation, before: Operation | None = None) -> str:
        """Add `op` (detached, or already in this table) before `before` (default: the end) and
        return its name, renamed `<name>_<N>` if the name was taken by another op."""
        if op.parent is None:
            if before is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, before)
        name = symbol_name(op)
        assert name is not None, f"{op.name} is not a symbol"
        if self._symbols.setdefault(name, op) is op:
            return name
        while True:
            candidate = f"{name}_{self._counter}"
            self._counter += 1
            if candidate not in self._symbols:
                break
        set_symbol_name(op, candidate)
        self._symbols[candidate] = op
        return candidate


def _symbol_refs(attr: Attribute) -> Iterator[SymbolRefAttr]:
    """Symbol references inside an attribute, pre-order, not descending into a reference."""
    if isinstance(attr, SymbolRefAttr):
        yield attr
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            yield from _symbol_refs(item)
    elif isinstance(attr, DictionaryAttr):
        for key in sorted(attr.data):
            yield from _symbol_refs(attr.data[key])
    elif isinstance(attr, ParametrizedAttribute):
        for param in attr.parameters:
            if isinstance(param, Attribute):
                yield from _symbol_refs(param)


def op_symbol_refs(op: Operation) -> Iterator[SymbolRefAttr]:
    """The references in one op's attributes and properties, in name order (MLIR's dictionary)."""
    merged = {**op.attributes, **op.properties}
    for key in sorted(merged):
        yield from _symbol_refs(merged[key])


def symbol_uses(op: Operation) -> Iterator[tuple[Operation, SymbolRefAttr]]:
    """(user, reference) pairs on `op` and nested in it, not entering nested symbol tables, in
    the order of MLIR's `SymbolTable::getSymbolUses(op)` (a LIFO worklist of regions)."""
    for ref in op_symbol_refs(op):
        yield op, ref
    if is_symbol_table(op):
        return
    worklist: list[Region] = list(op.regions)
    while worklist:
        region = worklist.pop()
        for block in region.blocks:
            for nested in block.ops:
                for ref in op_symbol_refs(nested):
                    yield nested, ref
                if not is_symbol_table(nested):
                    worklist.extend(nested.regions)
