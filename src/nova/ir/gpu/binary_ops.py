"""`gpu.binary` and its attributes: device code compiled ahead of time, as upstream's
`gpu-module-to-binary` leaves it, plus the `#nvvm.target` attribute of gpu.module target lists.

    gpu.binary @kernels [<#gpu.select_object<0>>] [{attrs}] [#gpu.object<#nvvm.target<...>,
        [properties = {...},] [offload = | assembly = | bin = | fatbin =] "bytes">, ...]

`#gpu.object`'s format defaults to `fatbin` (printed without a keyword, as mlir-opt does); the
object text is bytes, printed with MLIR's `\\XX` escapes. `#nvvm.target` keeps the options it
was given (O, triple, chip, features, flags, link) and prints those that differ from upstream's
defaults in upstream's order. What Nova compiles from them is `nova.compiler.binaries`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from nova.ir.gpu.base import print_attr_dict

OBJECT_FORMATS = ("offload", "assembly", "bin", "fatbin")
"""`#gpu.object` formats: LLVM bitcode, PTX text, a cubin, a fatbinary (the default)."""

NVVM_DEFAULTS: dict[str, object] = {"O": 2, "triple": "nvptx64-nvidia-cuda", "chip": "sm_50",
                                    "features": ""}
_NVVM_KEYS = ("O", "triple", "chip", "features", "flags", "link")


def escape_bytes(data: bytes) -> str:
    """MLIR's string literal of `data`: printable ASCII as is, every other byte (and `"`, `\\`)
    as `\\XX`."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}"
                   for b in data)


def _parse_text(parser: AttrParser) -> bytes:
    text = parser.parse_optional_str_literal()
    if text is not None:
        return text.encode()
    return parser.parse_bytes_literal()


@irdl_attr_definition
class NVVMTargetAttr(ParametrizedAttribute):
    """`#nvvm.target<O = 3, chip = "sm_90", ...>`: an NVPTX compilation target."""

    name = "nvvm.target"
    options: DictionaryAttr

    def option(self, key: str) -> object:
        """The option's value (upstream's default when not given)."""
        value = self.options.data.get(key)
        if isinstance(value, IntegerAttr):
            return value.value.data
        if isinstance(value, StringAttr):
            return value.data
        return value if value is not None else NVVM_DEFAULTS.get(key)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        options: dict[str, Attribute] = {}
        if parser.parse_optional_punctuation("<") is None:
            return (DictionaryAttr({}),)

        def entry() -> None:
            pos = parser.pos
            key = parser.parse_identifier()
            if key not in _NVVM_KEYS:
                parser.raise_error(f"unknown #nvvm.target parameter '{key}' (expected one of "
                                   f"{', '.join(_NVVM_KEYS)})", pos, parser.pos)
            parser.parse_punctuation("=")
            if key == "O":
                options[key] = IntegerAttr(parser.parse_integer(), 32)
            elif key in ("triple", "chip", "features"):
                options[key] = StringAttr(parser.parse_str_literal())
            else:
                options[key] = parser.parse_attribute()

        parser.parse_comma_separated_list(Parser.Delimiter.NONE, entry)
        parser.parse_punctuation(">")
        kept = {k: options[k] for k in _NVVM_KEYS if k in options
                and not (k in NVVM_DEFAULTS and _plain(options[k]) == NVVM_DEFAULTS[k])}
        return (DictionaryAttr(kept),)

    def print_parameters(self, printer: Printer) -> None:
        if not self.options.data:
            return
        printer.print_string("<")
        for i, (key, value) in enumerate(self.options.data.items()):
            printer.print_string(f"{', ' if i else ''}{key} = ")
            if key == "O":
                printer.print_string(str(_plain(value)))
            else:
                printer.print_attribute(value)
        printer.print_string(">")


def _plain(value: Attribute) -> object:
    if isinstance(value, IntegerAttr):
        return value.value.data
    if isinstance(value, StringAttr):
        return value.data
    return value


@irdl_attr_definition
class ObjectAttr(ParametrizedAttribute):
    """`#gpu.object<TARGET, [properties = {...},] [FORMAT =] "bytes">`: one compiled image."""

    name = "gpu.object"
    target: Attribute
    properties: Attribute  # DictionaryAttr, or NoneAttr when absent
    format: StringAttr
    object: StringAttr

    def __init__(self, target: Attribute, data: bytes, format: str = "fatbin",
                 properties: DictionaryAttr | None = None) -> None:
        super().__init__(target, properties if properties is not None else NoneAttr(),
                         StringAttr(format), StringAttr(data))  # type: ignore[arg-type]

    @property
    def data(self) -> bytes:
        """The object's bytes."""
        raw: str | bytes = self.object.data
        return raw if isinstance(raw, bytes) else raw.encode()

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            target = parser.parse_attribute()
            parser.parse_punctuation(",")
            properties: Attribute = NoneAttr()
            if parser.parse_optional_keyword("properties") is not None:
                parser.parse_punctuation("=")
                properties = parser.parse_attribute()
                parser.parse_punctuation(",")
            fmt = "fatbin"
            for name in OBJECT_FORMATS:
                if parser.parse_optional_keyword(name) is not None:
                    parser.parse_punctuation("=")
                    fmt = name
                    break
            data = _parse_text(parser)
        return (target, properties, StringAttr(fmt), StringAttr(data))  # type: ignore[arg-type]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.target)
        if isinstance(self.properties, DictionaryAttr):
            printer.print_string(", properties = ")
            printer.print_attribute(self.properties)
        printer.print_string(", ")
        if self.format.data != "fatbin":
            printer.print_string(f"{self.format.data} = ")
        printer.print_string(f'"{escape_bytes(self.data)}">')

    def verify(self) -> None:
        if self.format.data not in OBJECT_FORMATS:
            raise VerifyException(f"#gpu.object format must be one of {OBJECT_FORMATS}")


@irdl_attr_definition
class SelectObjectAttr(ParametrizedAttribute):
    """`#gpu.select_object<N | TARGET>`: which object of a gpu.binary to load (default 0)."""

    name = "gpu.select_object"
    target: Attribute  # IntegerAttr index, a target attribute, or NoneAttr (the first)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return (NoneAttr(),)
        value = parser.parse_attribute()
        parser.parse_punctuation(">")
        return (value,)

    def print_parameters(self, printer: Printer) -> None:
        if not isinstance(self.target, NoneAttr):
            printer.print_string("<")
            printer.print_attribute(self.target)
            printer.print_string(">")


@irdl_op_definition
class BinaryOp(IRDLOperation):
    """`gpu.binary @name [<handler>] [{attrs}] [objects]`: a device module compiled ahead of
    time; `gpu.launch_func @name::@kernel` launches its kernels."""

    name = "gpu.binary"
    sym_name = prop_def(SymbolNameConstraint())
    offloadingHandler = opt_prop_def(Attribute)
    objects = prop_def(ArrayAttr)
    traits = traits_def(SymbolOpInterface())

    def __init__(self, name: str, objects: Sequence[Attribute],
                 handler: Attribute | None = None) -> None:
        props: dict[str, Attribute] = {"sym_name": StringAttr(name),
                                       "objects": ArrayAttr(objects)}
        # upstream materializes the default handler (printed in the generic form)
        props["offloadingHandler"] = SelectObjectAttr(NoneAttr()) if handler is None else handler
        super().__init__(properties=props)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name()
        handler = None
        if parser.parse_optional_punctuation("<") is not None:
            handler = parser.parse_attribute()
            parser.parse_punctuation(">")
        attrs = parser.parse_optional_attr_dict()  # upstream: before the objects
        parser.parse_punctuation("[")
        objects: list[Attribute] = []
        if parser.parse_optional_punctuation("]") is None:
            objects = parser.parse_comma_separated_list(Parser.Delimiter.NONE,
                                                        parser.parse_attribute)
            parser.parse_punctuation("]")
        op = cls(name.data, objects, handler)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" ")  # upstream leaves this space when there is no handler
        handler = self.offloadingHandler
        if handler is not None and not (isinstance(handler, SelectObjectAttr)
                                        and isinstance(handler.target, NoneAttr)):
            printer.print_string("<")
            printer.print_attribute(handler)
            printer.print_string(">")
        print_attr_dict(printer, self.attributes)
        printer.print_string(" [")
        printer.print_list(self.objects.data, printer.print_attribute)
        printer.print_string("]")

    def verify_(self) -> None:
        if not self.objects.data:
            raise VerifyException("'gpu.binary' op attribute 'objects' failed to satisfy "
                                  "constraint: an array of GPU object attributes with at least 1 "
                                  "elements")
        for obj in self.objects.data:
            if not isinstance(obj, ObjectAttr):
                raise VerifyException("'gpu.binary' op attribute 'objects' failed to satisfy "
                                      "constraint: an array of GPU object attributes with at "
                                      "least 1 elements")

    def selected_index(self) -> int | None:
        """The object `#gpu.select_object` names by index (None: by target, or the first)."""
        handler = self.offloadingHandler
        if isinstance(handler, SelectObjectAttr) and isinstance(handler.target, IntegerAttr):
            return handler.target.value.data
        return None


BINARY_OPS = [BinaryOp]
BINARY_ATTRS: list[type[ParametrizedAttribute]] = [ObjectAttr, SelectObjectAttr]
__all__ = ["BINARY_ATTRS", "BINARY_OPS", "OBJECT_FORMATS", "BinaryOp",
           "NVVMTargetAttr", "ObjectAttr", "SelectObjectAttr", "escape_bytes"]
