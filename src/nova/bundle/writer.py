"""Build a .nova bundle: embed device images, descriptors, manifest and seal into the host module.

A .nova file is the host's x86-64 ELF relocatable object. Before llvmlite emits it,
`embed_device_images` adds to the host `llvmlite.ir.Module`:

- per device module `m`: its images as constant byte arrays in the allocatable sections
  `.nova.ptx.m` (NUL-terminated), `.nova.cubin.m` and `.nova.cpuobj.m`, a NUL-terminated name
  string, and the descriptor `@__nova_devmod_m` (`nova.abi.DeviceModuleDescriptor`)
  pointing at them, which host code passes to `nova_rt_module_load`;
- the manifest JSON in `.nova.manifest`, and a seal in `.nova.seal` (SEAL_MAGIC + 32 zero bytes);
- every one of those globals in `@llvm.used`, so LLVM neither drops nor merges them.

After emission, `seal_bundle` writes the SHA-256 of the whole file into the seal.
docs/bundle-format.md is the specification.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import llvmlite.ir as ir

from nova.bundle.elf import ElfError, parse_elf
from nova.bundle.format import (
    ABI_VERSION,
    CPU_ARCH,
    DEVICE_MODULE_SYMBOL_PREFIX,
    MANIFEST_SECTION,
    SEAL_DIGEST_OFFSET,
    SEAL_MAGIC,
    SEAL_SECTION,
    SEAL_SIZE,
    DeviceModule,
    EntryPoint,
    Kernel,
    Manifest,
    Payload,
    PayloadKind,
    payload_section,
    seal_digest,
)
from nova.errors import BackendError

MANIFEST_SYMBOL = "__nova_manifest"
SEAL_SYMBOL = "__nova_seal"
PAYLOAD_ALIGN = 16  # cubins and CPU objects are ELF images: keep them 16-byte aligned
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
_I8 = ir.IntType(8)
_I64 = ir.IntType(64)


@dataclass(frozen=True)
class DeviceImages:
    """Every compiled image of one gpu.module; an image that was not built is None."""

    name: str
    kernels: tuple[Kernel, ...]
    ptx: str | None
    cubin: bytes | None
    cpu_object: bytes | None

    def payloads(self) -> list[tuple[PayloadKind, bytes]]:
        """(kind, image bytes) for each present image, in descriptor order (PTX without NUL)."""
        items: list[tuple[PayloadKind, bytes | None]] = [
            (PayloadKind.PTX, None if self.ptx is None else self.ptx.encode("utf-8")),
            (PayloadKind.CUBIN, self.cubin),
            (PayloadKind.CPU_OBJECT, self.cpu_object),
        ]
        return [(kind, bytes(data)) for kind, data in items if data is not None]


def embed_device_images(llvm_module: ir.Module, images: Sequence[DeviceImages],
                        entries: Sequence[EntryPoint], arch: str, source_name: str,
                        extra: Mapping[str, str] | None = None) -> Manifest:
    """Add every image, descriptor, the manifest and the seal placeholder to `llvm_module`.

    A descriptor `@__nova_devmod_<m>` the host lowering already declared is completed in place
    (same global, now a constant with an initializer); otherwise it is created. Returns the
    manifest written into `.nova.manifest` (payload sizes and SHA-256 digests included), with
    `extra` as its free-form notes.
    Raises BackendError for invalid input (bad or duplicate module names, empty images, a PTX
    text containing NUL, a descriptor already defined, or a module that was embedded into twice).
    """
    _check_images(images)
    if MANIFEST_SYMBOL in llvm_module.globals:
        raise BackendError("device images were already embedded into this host module")
    used: list[ir.GlobalValue] = []
    modules: list[DeviceModule] = []
    for image in images:
        payloads: list[Payload] = []
        by_kind: dict[PayloadKind, tuple[ir.GlobalVariable, int]] = {}
        for kind, data in image.payloads():
            section = payload_section(kind, image.name)
            stored = data + b"\0" if kind is PayloadKind.PTX else data
            gv = _bytes_global(llvm_module, f"__nova_{kind.value}_{image.name}", stored, section,
                               PAYLOAD_ALIGN)
            by_kind[kind] = (gv, len(data))
            used.append(gv)
            payloads.append(Payload(kind, section, len(data), hashlib.sha256(data).hexdigest(),
                                    CPU_ARCH if kind is PayloadKind.CPU_OBJECT else arch))
        name_gv = _bytes_global(llvm_module, f"__nova_devmod_name_{image.name}",
                                image.name.encode("utf-8") + b"\0", None, 1)
        used.append(_define_descriptor(llvm_module, image.name, name_gv, by_kind))
        modules.append(DeviceModule(image.name, tuple(image.kernels), tuple(payloads)))
    manifest = Manifest(arch=arch, entries=tuple(entries), modules=tuple(modules),
                        source_name=source_name, extra=dict(extra or {}))
    used.append(_bytes_global(llvm_module, MANIFEST_SYMBOL, manifest.to_json().encode("utf-8"),
                              MANIFEST_SECTION, 1, exact_name=True))
    used.append(_bytes_global(llvm_module, SEAL_SYMBOL, SEAL_MAGIC + bytes(SEAL_SIZE - 8),
                              SEAL_SECTION, 8, exact_name=True))
    _append_used(llvm_module, used)
    return manifest


def seal_bundle(object_bytes: bytes) -> bytes:
    """Write SHA-256(whole file with the 32 digest bytes zeroed) into the `.nova.seal` section.

    `object_bytes` is the object llvmlite emitted from a module prepared by
    `embed_device_images`. Resealing an already sealed file gives the same seal.
    """
    try:
        elf = parse_elf(object_bytes)
        seals = elf.sections_named(SEAL_SECTION)
        if len(seals) != 1:
            raise BackendError(f"the object has {len(seals)} '{SEAL_SECTION}' sections, expected "
                               f"1 (was it built by embed_device_images?)")
        content = elf.section_data(seals[0])
    except ElfError as exc:
        raise BackendError(f"cannot seal the bundle: {exc}") from None
    if len(content) != SEAL_SIZE or not content.startswith(SEAL_MAGIC):
        raise BackendError(f"'{SEAL_SECTION}' does not hold the {SEAL_SIZE}-byte seal placeholder")
    digest = seal_digest(object_bytes, seals[0].offset)
    start = seals[0].offset + SEAL_DIGEST_OFFSET
    sealed = bytearray(object_bytes)
    sealed[start:start + len(digest)] = digest
    return bytes(sealed)


def _check_images(images: Sequence[DeviceImages]) -> None:
    seen: set[str] = set()
    for image in images:
        if not _MODULE_NAME.match(image.name):
            raise BackendError(f"device module name '{image.name}' cannot name a bundle section "
                               f"(letters, digits, '_', '$', '.' only, not starting with a digit)")
        if image.name in seen:
            raise BackendError(f"two device modules are named '{image.name}'")
        seen.add(image.name)
        if image.ptx is None and image.cubin is None and image.cpu_object is None:
            raise BackendError(f"device module '{image.name}' has no image (PTX, cubin or CPU "
                               f"object) to embed")
        for kind, data in image.payloads():
            if not data:
                raise BackendError(f"device module '{image.name}': the {kind.value} image is "
                                   f"empty (pass None for an image that was not built)")
        if image.ptx is not None and "\0" in image.ptx:
            raise BackendError(f"device module '{image.name}': the PTX text contains a NUL byte")


def _bytes_global(module: ir.Module, name: str, data: bytes, section: str | None, align: int,
                  exact_name: bool = False) -> ir.GlobalVariable:
    """An internal constant `[N x i8]` holding `data`, optionally in its own section."""
    if not exact_name:
        name = module.get_unique_name(name)
    gv = ir.GlobalVariable(module, ir.ArrayType(_I8, len(data)), name)
    gv.initializer = ir.FormattedConstant(gv.value_type, _llvm_bytes(data))
    gv.global_constant = True
    gv.linkage = "internal"
    gv.align = align
    if section is not None:
        gv.section = section
    return gv


def _llvm_bytes(data: bytes) -> str:
    """`data` as an LLVM IR byte-string constant, every byte escaped (`c"\\01\\ab..."`): the
    same constant as llvmlite's `Constant(ArrayType(i8, n), bytearray(data))`, whose escaping
    loops over the bytes in Python (~0.25 s for the ~1-2 MB of PTX and cubins of a model);
    `bytes.hex` does it in C."""
    return f'c"\\{data.hex(chr(92))}"' if data else 'c""'


def _define_descriptor(module: ir.Module, name: str, name_gv: ir.GlobalVariable,
                       images: dict[PayloadKind, tuple[ir.GlobalVariable, int]]
                       ) -> ir.GlobalVariable:
    """Define (or complete the declaration of) the descriptor global of device module `name`."""
    symbol = DEVICE_MODULE_SYMBOL_PREFIX + name
    existing = module.globals.get(symbol)
    if existing is None:
        gv = ir.GlobalVariable(module, _descriptor_type(), symbol)
    elif not isinstance(existing, ir.GlobalVariable):
        raise BackendError(f"'@{symbol}' exists in the host module but is not a global variable")
    elif existing.initializer is not None:
        raise BackendError(f"the descriptor '@{symbol}' is already defined in the host module")
    else:
        gv = existing
        _check_descriptor_type(symbol, gv.value_type)
    ptr_type = gv.value_type.elements[1]
    fields: list[ir.Constant | ir.GlobalValue] = [ir.Constant(_I64, ABI_VERSION), name_gv]
    for kind in (PayloadKind.PTX, PayloadKind.CUBIN, PayloadKind.CPU_OBJECT):
        if kind in images:
            image_gv, size = images[kind]
            fields += [image_gv, ir.Constant(_I64, size)]
        else:
            fields += [ir.Constant(ptr_type, None), ir.Constant(_I64, 0)]
    gv.initializer = ir.Constant(gv.value_type, fields)
    gv.global_constant = True
    gv.linkage = ""  # a definition with external linkage: the runtime looks it up by name
    gv.align = 8
    # llvmlite caches a global's text on first print: a host module dumped (NOVA_DUMP_DIR) before
    # embedding would otherwise keep printing the `external` declaration.
    gv._clear_string_cache()
    return gv


def _descriptor_type() -> ir.LiteralStructType:
    ptr = ir.PointerType()
    return ir.LiteralStructType([_I64, ptr, ptr, _I64, ptr, _I64, ptr, _I64])


def _check_descriptor_type(symbol: str, value_type: ir.Type) -> None:
    expected = ["i", "p", "p", "i", "p", "i", "p", "i"]
    elements = getattr(value_type, "elements", None)
    shape = None if elements is None else [
        "i" if isinstance(t, ir.IntType) and t.width == 64 else
        "p" if isinstance(t, ir.PointerType) else "?" for t in elements]
    if shape != expected:
        raise BackendError(f"'@{symbol}' is declared as {value_type}; a device module "
                           f"descriptor is {_descriptor_type()} "
                           f"(nova.abi.DEVICE_MODULE_DESCRIPTOR_LLVM)")


def _append_used(module: ir.Module, values: Iterable[ir.GlobalValue]) -> None:
    """Add `values` to `@llvm.used`, creating it or extending the one already there."""
    items: list[ir.Constant | ir.GlobalValue] = list(values)
    existing = module.globals.get("llvm.used")
    if existing is not None:
        if not isinstance(existing, ir.GlobalVariable) or existing.initializer is None:
            raise BackendError("the host module has a malformed '@llvm.used'")
        items = list(existing.initializer.constant) + items
        gv = existing
    else:
        gv = ir.GlobalVariable(module, ir.ArrayType(ir.PointerType(), len(items)), "llvm.used")
    array_type = ir.ArrayType(ir.PointerType(), len(items))
    gv.value_type = array_type
    gv.type = array_type.as_pointer()
    gv.initializer = ir.Constant(array_type, items)
    gv.linkage = "appending"
    gv.section = "llvm.metadata"
