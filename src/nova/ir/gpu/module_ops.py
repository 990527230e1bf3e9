"""`gpu.module` and `gpu.func` of Nova's `gpu` dialect, with MLIR's custom syntax.

Generic-form names follow MLIR: `gpu.func` keeps `sym_name`, `gpu.kernel` and
`workgroup_attributions` as discardable attributes and `function_type`, `arg_attrs`, `res_attrs`,
`known_block_size`, `known_grid_size`, `workgroup_attrib_attrs`, `private_attrib_attrs` as
properties. The entry block's arguments are the function inputs, then the workgroup
attributions, then the private attributions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Region
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import AddressSpace, print_attr_dict, verify_attributions

_FUNC_PROPS = ("function_type", "arg_attrs", "res_attrs", "known_block_size",
               "known_grid_size", "workgroup_attrib_attrs", "private_attrib_attrs")


@irdl_op_definition
class GPUModuleOp(IRDLOperation):
    """`gpu.module @name { ... }`: the device code of a program (kernels and device functions)."""

    name = "gpu.module"
    sym_name = prop_def(SymbolNameConstraint())
    targets = opt_prop_def(ArrayAttr)
    offloadingHandler = opt_prop_def(Attribute)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), SymbolOpInterface(), SymbolTable())

    def __init__(self, sym_name: str, body: Region | None = None) -> None:
        super().__init__(properties={"sym_name": StringAttr(sym_name)},
                         regions=[body if body is not None else Region(Block())])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name()
        targets = None
        if parser.parse_optional_punctuation("[") is not None:
            listed: list[Attribute] = []
            if parser.parse_optional_punctuation("]") is None:
                listed = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                           parser.parse_attribute)
                parser.parse_punctuation("]")
            targets = ArrayAttr(listed)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls(name.data, region)
        if targets is not None:
            op.properties["targets"] = targets
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.targets is not None:
            printer.print_string(" [")
            printer.print_list(self.targets.data, printer.print_attribute)
            printer.print_string("]")
        print_attr_dict(printer, self.attributes, keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, False, False)


    def verify_(self) -> None:
        if self.targets is not None and not self.targets.data:
            raise VerifyException("'gpu.module' op attribute 'targets' failed to satisfy "
                                  "constraint: array of GPU target attributes with at least 1 "
                                  "elements")


def _is_i32_triple(attr: Attribute) -> bool:
    return (isinstance(attr, DenseArrayBase) and attr.elt_type == i32
            and len(attr.get_values()) == 3)


def _after_previous_token(parser: Parser) -> int:
    """The offset just after the token before the current one (where MLIR reports a missing
    token), skipping whitespace and whole-line comments."""
    text = parser.lexer.input.content
    end = parser.pos
    while True:
        stripped = text[:end].rstrip()
        line_start = stripped.rfind("\n") + 1
        if stripped[line_start:].lstrip().startswith("//"):
            end = line_start
            continue
        return len(stripped)


@irdl_op_definition
class FuncOp(IRDLOperation):
    """`gpu.func @name(args) workgroup(...) private(...) kernel attributes {...} { ... }`."""

    name = "gpu.func"
    sym_name = attr_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_attrs = opt_prop_def(ArrayAttr)
    res_attrs = opt_prop_def(ArrayAttr)
    known_block_size = opt_prop_def(Attribute)  # checked in verify_, with upstream's message
    known_grid_size = opt_prop_def(Attribute)
    workgroup_attrib_attrs = opt_prop_def(ArrayAttr)
    private_attrib_attrs = opt_prop_def(ArrayAttr)
    kernel = opt_attr_def(UnitAttr, attr_name="gpu.kernel")
    workgroup_attributions = opt_attr_def(IntegerAttr)
    body = region_def()
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, sym_name: str, function_type: FunctionType, body: Region,
                 kernel: bool = False, num_workgroup_attributions: int = 0) -> None:
        attrs: dict[str, Attribute | None] = {
            "sym_name": StringAttr(sym_name),
            "workgroup_attributions": IntegerAttr(num_workgroup_attributions, i64),
        }
        if kernel:
            attrs["gpu.kernel"] = UnitAttr()
        super().__init__(properties={"function_type": function_type}, attributes=attrs,
                         regions=[body])

    # ---- convenience accessors ------------------------------------------------------------
    @property
    def is_kernel(self) -> bool:
        return self.kernel is not None

    def num_workgroup_attributions(self) -> int:
        attr = self.workgroup_attributions
        return attr.value.data if attr is not None else 0

    def workgroup_args(self) -> tuple[BlockArgument, ...]:
        """The entry-block arguments that stand for workgroup (shared) memory buffers."""
        n_in = len(self.function_type.inputs.data)
        args = self.body.blocks[0].args
        return args[n_in:n_in + self.num_workgroup_attributions()]

    def private_args(self) -> tuple[BlockArgument, ...]:
        """The entry-block arguments that stand for per-thread private buffers."""
        n_in = len(self.function_type.inputs.data)
        return self.body.blocks[0].args[n_in + self.num_workgroup_attributions():]

    # ---- syntax ---------------------------------------------------------------------------
    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name()
        args: list[Parser.Argument] = []
        arg_dicts: list[dict[str, Attribute]] = []

        def parse_arg() -> None:
            args.append(parser.parse_argument())
            arg_dicts.append(parser.parse_optional_dictionary_attr_dict())

        parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_arg)
        results: list[Attribute] = []
        res_dicts: list[dict[str, Attribute]] = []
        if parser.parse_optional_punctuation("->") is not None:
            parsed = parser.parse_optional_comma_separated_list(
                Parser.Delimiter.PAREN,
                lambda: (parser.parse_type(), parser.parse_optional_dictionary_attr_dict()))
            if parsed is None:
                parsed = [(parser.parse_type(), {})]
            results = [t for t, _ in parsed]
            res_dicts = [d for _, d in parsed]
        workgroup = _parse_attributions(parser, "workgroup")
        private = _parse_attributions(parser, "private")
        kernel = parser.parse_optional_keyword("kernel") is not None
        attrs = parser.parse_optional_attr_dict_with_keyword()
        ftype = FunctionType.from_lists([a.type for a in args], results)
        region = parser.parse_optional_region([*args, *workgroup, *private])
        if region is None:  # as MLIR: a gpu.func always has a body
            at = _after_previous_token(parser)
            parser.raise_error("expected '{' to begin a region", at, at + 1)
        op = cls(name.data, ftype, region, kernel, len(workgroup))
        if any(arg_dicts):
            op.properties["arg_attrs"] = ArrayAttr(DictionaryAttr(d) for d in arg_dicts)
        if any(res_dicts):
            op.properties["res_attrs"] = ArrayAttr(DictionaryAttr(d) for d in res_dicts)
        if attrs is not None:
            for key, value in attrs.data.items():
                if key in _FUNC_PROPS:
                    op.properties[key] = value
                else:
                    op.attributes[key] = value
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        entry = self.body.blocks[0] if self.body.blocks else None
        self._print_arguments(printer, entry)
        self._print_results(printer)
        if entry is not None:
            _print_attributions(printer, "workgroup", self.workgroup_args())
            _print_attributions(printer, "private", self.private_args())
        if self.is_kernel:
            printer.print_string(" kernel")
        shown = dict(self.attributes)
        for key in ("known_block_size", "known_grid_size"):
            if key in self.properties:
                shown[key] = self.properties[key]
        print_attr_dict(printer, shown, ("sym_name", "gpu.kernel", "workgroup_attributions"),
                        keyword=True)
        if self.body.blocks:
            printer.print_string(" ")
            printer.print_region(self.body, False, True)

    def _print_arguments(self, printer: Printer, entry: Block | None) -> None:
        """`(%a: T {attrs}, ...)`; types only for a declaration (no entry block)."""
        inputs = self.function_type.inputs.data
        arg_dicts = self.arg_attrs.data if self.arg_attrs is not None else None
        printer.print_string("(")
        for i, t in enumerate(inputs):
            if i:
                printer.print_string(", ")
            if entry is not None:
                printer.print_ssa_value(entry.args[i])
                printer.print_string(": ")
            printer.print_attribute(t)
            if arg_dicts is not None and arg_dicts[i].data:
                printer.print_string(" ")
                printer.print_attr_dict(arg_dicts[i].data)
        printer.print_string(")")

    def _print_results(self, printer: Printer) -> None:
        """` -> T`, or ` -> (T {attrs}, U)` with several results or result attributes."""
        outputs = self.function_type.outputs.data
        if not outputs:
            return
        res_dicts = self.res_attrs.data if self.res_attrs is not None else None
        printer.print_string(" -> ")
        paren = len(outputs) > 1 or (res_dicts is not None and any(
            d.data for d in res_dicts))
        if paren:
            printer.print_string("(")
        for i, t in enumerate(outputs):
            if i:
                printer.print_string(", ")
            printer.print_attribute(t)
            if res_dicts is not None and res_dicts[i].data:
                printer.print_string(" ")
                printer.print_attr_dict(res_dicts[i].data)
        if paren:
            printer.print_string(")")

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), GPUModuleOp):
            raise VerifyException("'gpu.func' op expects parent op 'gpu.module'")
        if self.is_kernel and self.function_type.outputs.data:
            raise VerifyException("'gpu.func' op kernel function must have no results "
                                  "(kernels return void)")
        for key in ("known_block_size", "known_grid_size"):
            attr = self.properties.get(key)
            if attr is not None and not _is_i32_triple(attr):
                raise VerifyException(f"'gpu.func' op attribute '{key}' failed to satisfy "
                                      "constraint: i32 dense array attribute with 3 elements "
                                      "(if present)")
        if not self.body.blocks:
            return
        inputs = self.function_type.inputs.data
        entry = self.body.blocks[0]
        if len(entry.args) < len(inputs) + self.num_workgroup_attributions():
            raise VerifyException("'gpu.func' op expected at least "
                                  f"{len(inputs) + self.num_workgroup_attributions()} "
                                  "entry block arguments")
        if tuple(entry.arg_types[:len(inputs)]) != tuple(inputs):
            raise VerifyException("'gpu.func' op entry block argument types must match the "
                                  "function signature")
        verify_attributions("gpu.func", self.workgroup_args(), AddressSpace.WORKGROUP)
        verify_attributions("gpu.func", self.private_args(), AddressSpace.PRIVATE)


def _parse_attributions(parser: Parser, keyword: str) -> list[Parser.Argument]:
    """Parse `keyword(%a : type, ...)` if present."""
    if parser.parse_optional_keyword(keyword) is None:
        return []
    return parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)


def _print_attributions(printer: Printer, keyword: str, args: Sequence[BlockArgument]) -> None:
    """Print ` keyword(%a : type, ...)` as MLIR's printAttributions (space before the colon)."""
    if not args:
        return
    printer.print_string(f" {keyword}(")
    for i, arg in enumerate(args):
        if i:
            printer.print_string(", ")
        printer.print_ssa_value(arg)
        printer.print_string(" : ")
        printer.print_attribute(arg.type)
    printer.print_string(")")


MODULE_OPS: tuple[type[IRDLOperation], ...] = (GPUModuleOp, FuncOp)
