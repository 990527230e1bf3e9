"""Structural verification of an x86-64 ELF relocatable object before LLVM's RuntimeDyld sees it.

The seal proves a file was not changed since it was sealed, but anyone can reseal, and RuntimeDyld
trusts its input: a section alignment that is not a power of two, a relocation outside its section
or a section offset shifted by one abort or corrupt the process before any program code runs.
`verify_object` therefore checks every field RuntimeDyld acts on against what Nova's writer (LLVM
with `reloc="static"`, `codemodel="large"`, see `nova.backends.x86`) produces, and raises
`ElfError` (a `BundleFormatError`) naming the section, symbol or relocation for the first field
that is not of that shape:

- the ELF header: every field (OS ABI, padding, entry, program headers, flags included);
- every section: a known type and known flags, name, type and flags of one of SECTION_KINDS
  (code executable and read-only, data never executable), address 0, alignment 0 or a power of
  two of at most `MAX_ALIGN`, offset a multiple of it, contents inside the file and overlapping
  neither the ELF header, the section header table nor another section,
  `sh_link`/`sh_info`/`sh_entsize` as the type requires, at most `MAX_NOBITS` bytes of
  zero-initialised (`SHT_NOBITS`) memory;
- the symbol table: exactly one, entry 0 null, locals first (`sh_info`), known binding, type and
  visibility, defined symbols in an allocatable or data section with value (and value + size)
  inside it (functions only in code), undefined ones named, global, value 0, global names defined
  once;
- every relocation: in a `SHT_RELA` section of 24-byte entries applying to an allocatable section
  with contents whose name it carries after `.rela`, a type among `RELOCATION_WIDTHS`
  (`R_X86_64_64` and `R_X86_64_PC64`, the only ones the large code model emits), the bytes it
  patches inside that section and apart from every other relocation's, its symbol index in range
  and not the null symbol, the address it computes inside the symbol's section (an external
  symbol: addend 0).

What it cannot judge is what the code computes: a resealed edit of machine code, of a symbol's
value or of a relocation's target inside its section keeps the shape; only a signature
(`nova.bundle.signature`) refuses those.

docs/bundle-format.md (section 7) lists the checks and the threat model.
"""

from __future__ import annotations

import itertools
import struct

from nova.bundle.elf import (
    EHDR_SIZE,
    SHDR_SIZE,
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHN_LORESERVE,
    SHN_UNDEF,
    SHT_NOBITS,
    SHT_NULL,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    STB_GLOBAL,
    STB_LOCAL,
    STB_WEAK,
    SYM_SIZE,
    ElfError,
    ElfFile,
    ElfSection,
    ElfSymbol,
    parse_elf,
)

SHT_RELA = 4
SHT_NOTE = 7
SHT_X86_64_UNWIND = 0x70000001
SHF_MERGE = 0x10
SHF_STRINGS = 0x20
SHF_INFO_LINK = 0x40
SHF_GNU_RETAIN = 0x200000
SHF_X86_64_LARGE = 0x10000000
SHN_ABS = 0xFFF1
ELFOSABI_NONE = 0
ELFOSABI_GNU = 3
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE = 0, 1, 2, 3, 4
R_X86_64_64 = 1
R_X86_64_PC64 = 24
RELA_SIZE = 24

ALLOWED_SECTION_TYPES = frozenset({SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS,
                                   SHT_NOTE, SHT_X86_64_UNWIND})
"""Section types LLVM emits for Nova's host code and CPU kernels (`.nova.*` are PROGBITS)."""
ALLOWED_SECTION_FLAGS = (SHF_WRITE | SHF_ALLOC | SHF_EXECINSTR | SHF_MERGE | SHF_STRINGS
                         | SHF_INFO_LINK | SHF_GNU_RETAIN | SHF_X86_64_LARGE)
"""No TLS, groups, link order, compression or OS/processor-specific flags."""
RELOCATION_WIDTHS = {R_X86_64_64: 8, R_X86_64_PC64: 8}
"""Relocation type -> bytes it patches: what the large code model with static relocations
emits (absolute 64-bit addresses; PC64 in `.eh_frame`)."""
RELOCATION_NAMES = {R_X86_64_64: "R_X86_64_64", R_X86_64_PC64: "R_X86_64_PC64"}
_A, _W, _X = SHF_ALLOC, SHF_WRITE, SHF_EXECINSTR
SECTION_KINDS: tuple[tuple[tuple[str, ...], frozenset[int], int, int], ...] = (
    ((".text", ".ltext"), frozenset({SHT_PROGBITS}), _A | _X, _W),
    ((".rodata", ".lrodata"), frozenset({SHT_PROGBITS}), _A, _W | _X),
    ((".data", ".ldata"), frozenset({SHT_PROGBITS}), _A | _W, _X),
    ((".bss", ".lbss"), frozenset({SHT_NOBITS}), _A | _W, _X),
    ((".eh_frame",), frozenset({SHT_X86_64_UNWIND, SHT_PROGBITS}), _A, _W | _X),
    ((".nova",), frozenset({SHT_PROGBITS}), 0, _W | _X),
    ((".rela",), frozenset({SHT_RELA}), SHF_INFO_LINK, _A | _W | _X),
    ((".symtab",), frozenset({SHT_SYMTAB}), 0, _A | _W | _X),
    ((".strtab", ".shstrtab"), frozenset({SHT_STRTAB}), 0, _A | _W | _X),
    ((".note",), frozenset({SHT_PROGBITS, SHT_NOTE}), 0, _A | _W | _X),
)
"""(name prefixes, types, flags required, flags forbidden) of every section LLVM emits for Nova
(a name matches a prefix exactly or followed by '.'): code is executable and read-only, data is
never executable, payloads and tables neither, so an edited flag cannot turn data into code."""
_KINDS = tuple((frozenset(prefixes), tuple(p + "." for p in prefixes), types, required, forbidden)
               for prefixes, types, required, forbidden in SECTION_KINDS)
"""SECTION_KINDS as (exact names, name prefixes with their dot, ...): one set lookup and one
startswith per kind and section (a cached kernel's first call verifies two objects)."""
MAX_ALIGN = 4096
"""Largest section alignment accepted (LLVM's output uses at most 16; model weights 64)."""
MAX_NOBITS = 1 << 30
"""Most zero-initialised bytes (`SHT_NOBITS`) one object may ask the JIT to allocate."""

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_DATA_SECTION_TYPES = (SHT_PROGBITS, SHT_NOBITS, SHT_X86_64_UNWIND, SHT_NOTE)


def verify_object(data: bytes, what: str = "host object") -> ElfFile:
    """Parse `data` and check its structure (module docstring); returns the parsed file.

    Raises `ElfError` naming `what` and the offending field.
    """
    try:
        elf = parse_elf(data)
    except ElfError as exc:
        raise ElfError(f"{what}: {exc}") from None
    verify_elf(elf, what)
    return elf


def verify_elf(elf: ElfFile, what: str = "host object") -> None:
    """`verify_object` of an already parsed file."""
    try:
        _check_header(elf.data, elf)
        for section in elf.sections:
            _check_section(elf, section)
        _check_layout(elf)
        _check_symbols(elf)
        for section in elf.sections:
            if section.type == SHT_RELA:
                _check_relocations(elf, section)
    except ElfError as exc:
        raise ElfError(f"{what}: {exc}") from None


def _section_label(section: ElfSection) -> str:
    return f"section [{section.index}] '{section.name}'"


def _check_header(data: bytes, elf: ElfFile) -> None:
    """The ELF header fields parse_elf does not check are those LLVM writes for ET_REL."""
    (ident, _type, _machine, _version, entry, phoff, shoff, flags, _ehsize, phentsize,
     phnum, _shentsize, _shnum, _shstrndx) = _EHDR.unpack_from(data, 0)
    if ident[7] not in (ELFOSABI_NONE, ELFOSABI_GNU) or ident[8] != 0:
        raise ElfError(f"ELF OS ABI {ident[7]} / ABI version {ident[8]}; expected System V (0) "
                       f"or GNU (3, LLVM's choice with SHF_GNU_RETAIN sections), version 0")
    if any(ident[9:16]):
        raise ElfError("ELF identification padding (e_ident[9:16]) is not zero")
    for field, value in (("e_entry", entry), ("e_phoff", phoff), ("e_flags", flags),
                         ("e_phentsize", phentsize), ("e_phnum", phnum)):
        if value:
            raise ElfError(f"ELF header field {field} is {value}; a relocatable object has 0")
    if shoff % 8 or shoff < EHDR_SIZE:
        raise ElfError(f"section header table offset {shoff} is not 8-byte aligned after the "
                       f"ELF header")
    null = elf.sections[0]
    if (null.type, null.flags, null.offset, null.info, null.addralign, null.entsize,
            null.name) != (SHT_NULL, 0, 0, 0, 0, 0, ""):
        raise ElfError("section [0] is not the null section")
    if null.size and null.size != len(elf.sections):
        raise ElfError(f"section [0] size {null.size} is not the extended section count")


def _check_section(elf: ElfFile, section: ElfSection) -> None:
    if section.index == 0:
        return
    label = _section_label(section)
    if section.type not in ALLOWED_SECTION_TYPES:
        raise ElfError(f"{label} has type {section.type_name}, which Nova's objects never use")
    if section.flags & ~ALLOWED_SECTION_FLAGS:
        raise ElfError(f"{label} has unsupported flags 0x{section.flags:x}")
    _check_kind(section, label)
    if _raw_addr(elf, section):
        raise ElfError(f"{label} has a load address; a relocatable object's sections have 0")
    align = section.addralign
    if align & (align - 1) or align > MAX_ALIGN:
        raise ElfError(f"{label} alignment {align} is not a power of two up to {MAX_ALIGN}")
    if section.type == SHT_NOBITS:
        if section.size > MAX_NOBITS:
            raise ElfError(f"{label} asks for {section.size} zero-initialised bytes (at most "
                           f"{MAX_NOBITS})")
        if section.offset > len(elf.data):
            raise ElfError(f"{label} offset {section.offset} is past the end of the file")
    else:
        end = section.offset + section.size
        if end > len(elf.data):
            raise ElfError(f"{label} lies outside the file (offset {section.offset}, size "
                           f"{section.size}, file size {len(elf.data)})")
        if section.size and align > 1 and section.offset % align:
            raise ElfError(f"{label} offset {section.offset} is not a multiple of its "
                           f"alignment {align}")
    _check_links(elf, section, label)


def _check_kind(section: ElfSection, label: str) -> None:
    """The section's name, type and flags form one of SECTION_KINDS."""
    name = section.name
    for exact, dotted, types, required, forbidden in _KINDS:
        if name in exact or name.startswith(dotted):
            if section.type not in types:
                raise ElfError(f"{label} has type {section.type_name}, unexpected for its name")
            if section.flags & required != required or section.flags & forbidden:
                raise ElfError(f"{label} has flags '{section.flag_letters}' (0x"
                               f"{section.flags:x}), unexpected for its name")
            return
    raise ElfError(f"{label}: not a section LLVM emits for Nova's code")


def _raw_addr(elf: ElfFile, section: ElfSection) -> int:
    """sh_addr, which ElfSection does not keep."""
    shoff = struct.unpack_from("<Q", elf.data, 0x28)[0]
    return int(struct.unpack_from("<Q", elf.data, shoff + section.index * SHDR_SIZE + 16)[0])


def _check_links(elf: ElfFile, section: ElfSection, label: str) -> None:
    """sh_link, sh_info and sh_entsize as each section type requires."""
    count = len(elf.sections)
    if section.type == SHT_SYMTAB:
        if section.entsize != SYM_SIZE or section.size % SYM_SIZE:
            raise ElfError(f"{label}: symbol entry size {section.entsize} / table size "
                           f"{section.size}; expected {SYM_SIZE}-byte entries")
        if not 0 < section.link < count or elf.sections[section.link].type != SHT_STRTAB:
            raise ElfError(f"{label}: sh_link {section.link} is not a string table")
        if section.info > section.size // SYM_SIZE:
            raise ElfError(f"{label}: sh_info {section.info} (first global symbol) is beyond "
                           f"its {section.size // SYM_SIZE} symbols")
    elif section.type == SHT_RELA:
        if section.entsize != RELA_SIZE or section.size % RELA_SIZE or not section.size:
            raise ElfError(f"{label}: relocation entry size {section.entsize} / table size "
                           f"{section.size}; expected {RELA_SIZE}-byte entries")
        if not 0 < section.link < count or elf.sections[section.link].type != SHT_SYMTAB:
            raise ElfError(f"{label}: sh_link {section.link} is not the symbol table")
        if not 0 < section.info < count:
            raise ElfError(f"{label}: sh_info {section.info} (the section it relocates) is out "
                           f"of range ({count} sections)")
        target = elf.sections[section.info]
        if section.name != ".rela" + target.name:
            raise ElfError(f"{label} relocates {_section_label(target)}; LLVM names a "
                           f"relocation section after the section it relocates")
        if target.type not in (SHT_PROGBITS, SHT_X86_64_UNWIND) or not target.is_alloc:
            raise ElfError(f"{label} relocates {_section_label(target)}, which is not an "
                           f"allocatable section with contents")
    else:
        if section.link or section.info:
            raise ElfError(f"{label}: sh_link {section.link} / sh_info {section.info}; "
                           f"expected 0 for a {section.type_name} section")
        _check_entsize(section, label)


def _check_entsize(section: ElfSection, label: str) -> None:
    if section.flags & SHF_MERGE:
        if not section.entsize or section.size % section.entsize:
            raise ElfError(f"{label}: mergeable section of {section.size} bytes with entry "
                           f"size {section.entsize}")
    elif section.entsize:
        raise ElfError(f"{label}: entry size {section.entsize}; expected 0")


def _check_packed(elf: ElfFile) -> None:
    """The content sections (SHT_PROGBITS) lie where LLVM's object writer puts them: in section
    order from the end of the ELF header, each at the next multiple of its alignment (LLVM pads
    some, e.g. large-model `.lrodata` of alignment 1, up to the next 16 bytes). A section moved
    into alignment padding overlaps nothing, yet loads other bytes (a constant pool of host-CPU
    code read from padding computed different results in the mutation sweep)."""
    position = EHDR_SIZE
    for section in elf.sections:
        if section.name.startswith(".nova."):
            break  # Nova's writer appends its sections (manifest, images, weights...) after LLVM's
        if section.type != SHT_PROGBITS:
            continue
        align = max(section.addralign, 1)
        expected = -(-position // align) * align
        latest = -(-expected // max(align, 16)) * max(align, 16)
        if not expected <= section.offset <= latest:
            raise ElfError(f"{_section_label(section)}: at file offset {section.offset}; the "
                           f"object writer puts it at {expected}")
        position = section.offset + section.size


def _check_layout(elf: ElfFile) -> None:
    """No section's bytes overlap the ELF header, the section header table or another section."""
    shoff = struct.unpack_from("<Q", elf.data, 0x28)[0]
    spans = [(0, EHDR_SIZE, "the ELF header"),
             (shoff, shoff + len(elf.sections) * SHDR_SIZE, "the section header table")]
    spans += [(s.offset, s.offset + s.size, _section_label(s)) for s in elf.sections
              if s.has_file_data and s.size]
    spans.sort()
    for (_start, end, first), (start, _end, second) in itertools.pairwise(spans):
        if start < end:
            raise ElfError(f"{second} overlaps {first}")
    _check_packed(elf)
    rela_targets: dict[int, ElfSection] = {}
    for section in elf.sections:
        if section.type == SHT_RELA:
            other = rela_targets.setdefault(section.info, section)
            if other is not section:
                raise ElfError(f"{_section_label(section)} and {_section_label(other)} both "
                               f"relocate section [{section.info}]")


def _check_symbols(elf: ElfFile) -> None:
    """Exactly one symbol table; every entry well formed (module docstring)."""
    tables = [s for s in elf.sections if s.type == SHT_SYMTAB]
    if len(tables) != 1:
        raise ElfError(f"{len(tables)} symbol tables; expected one")
    table = tables[0]
    raw = elf.section_data(table)
    names = elf.symbols()  # decodes and range-checks the names
    if not names or raw[:SYM_SIZE] != bytes(SYM_SIZE):
        raise ElfError("symbol #0 is not the null symbol")
    globals_seen: set[str] = set()
    for index in range(1, len(names)):
        fields = _SYM.unpack_from(raw, index * SYM_SIZE)
        _check_symbol(elf, index, names[index].name, fields, index < table.info)
        binding = fields[1] >> 4
        if binding != STB_LOCAL and fields[3] != SHN_UNDEF:
            if names[index].name in globals_seen:
                raise ElfError(f"symbol #{index} '{names[index].name}' is defined twice")
            globals_seen.add(names[index].name)


def _check_symbol(elf: ElfFile, index: int, name: str,
                  fields: tuple[int, int, int, int, int, int], local_part: bool) -> None:
    _name, info, other, shndx, value, size = fields
    binding, kind = info >> 4, info & 0xF
    label = f"symbol #{index} '{name}'"
    if binding not in (STB_LOCAL, STB_GLOBAL, STB_WEAK) or (binding == STB_LOCAL) != local_part:
        raise ElfError(f"{label}: binding {binding} does not fit its place in the table "
                       f"(locals first)")
    if kind not in (STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE) or other > 3:
        raise ElfError(f"{label}: unsupported type {kind} / visibility {other}")
    if shndx == SHN_UNDEF:
        if binding == STB_LOCAL or not name or value or size:
            raise ElfError(f"{label}: an undefined symbol must be a named global with value 0")
        return
    if (shndx == SHN_ABS) != (kind == STT_FILE) or (kind == STT_FILE and binding != STB_LOCAL):
        raise ElfError(f"{label}: only the (local) file name symbol is absolute")
    if shndx == SHN_ABS:
        return
    if binding != STB_LOCAL and not name:
        raise ElfError(f"{label}: a global symbol without a name")
    if shndx >= SHN_LORESERVE or shndx >= len(elf.sections):
        raise ElfError(f"{label}: section index {shndx} is out of range")
    section = elf.sections[shndx]
    if section.type not in _DATA_SECTION_TYPES or not section.is_alloc:
        raise ElfError(f"{label} is defined in {_section_label(section)}, which is not "
                       f"allocatable")
    if value + size > section.size:
        raise ElfError(f"{label}: value {value} + size {size} lies outside "
                       f"{_section_label(section)} ({section.size} bytes)")
    code = bool(section.flags & SHF_EXECINSTR)
    if (kind == STT_FUNC and not code) or (kind == STT_OBJECT and code):
        raise ElfError(f"{label}: a {'function' if kind == STT_FUNC else 'data object'} in "
                       f"{_section_label(section)}")
    if kind == STT_SECTION and (value or size or name or binding != STB_LOCAL):
        raise ElfError(f"{label}: a section symbol must be local and unnamed, with value 0")


def _check_relocations(elf: ElfFile, rela: ElfSection) -> None:
    target = elf.sections[rela.info]
    symbols = elf.symbols()
    raw = elf.section_data(rela)
    patched: list[tuple[int, int, int]] = []
    for number in range(len(raw) // RELA_SIZE):
        offset, info, addend = _RELA.unpack_from(raw, number * RELA_SIZE)
        kind, symbol = info & 0xFFFFFFFF, info >> 32
        width = RELOCATION_WIDTHS.get(kind)
        if width is None:
            raise ElfError(f"{_relocation_label(rela, number)}: type {kind} is not one Nova's "
                           f"large code model uses ({', '.join(RELOCATION_NAMES.values())})")
        if offset + width > target.size:
            raise ElfError(f"{_relocation_label(rela, number)}: offset {offset} + {width} "
                           f"bytes lies outside {_section_label(target)} ({target.size} bytes)")
        if not 0 < symbol < len(symbols):
            raise ElfError(f"{_relocation_label(rela, number)}: symbol index {symbol} is out "
                           f"of range (1..{len(symbols) - 1})")
        _check_addend(elf, symbols[symbol], addend, rela, number)
        patched.append((offset, offset + width, number))
    patched.sort()
    for (_start, end, first), (start, _end, second) in itertools.pairwise(patched):
        if start < end:
            raise ElfError(f"{_section_label(rela)} relocations #{first} and #{second} patch "
                           f"overlapping bytes")


def _check_addend(elf: ElfFile, symbol: ElfSymbol, addend: int, rela: ElfSection,
                  number: int) -> None:
    """The address a relocation computes lies within its symbol's section, and
    an external symbol (a runtime or libc function) is used as it is: what LLVM emits."""
    if symbol.shndx == SHN_UNDEF:
        if addend:
            raise ElfError(f"{_relocation_label(rela, number)}: addend {addend} to the "
                           f"external symbol '{symbol.name}'")
        return
    if symbol.shndx >= len(elf.sections):  # absolute (the file symbol): never relocated against
        raise ElfError(f"{_relocation_label(rela, number)}: relocation against the absolute "
                       f"symbol '{symbol.name}'")
    section = elf.sections[symbol.shndx]
    if not 0 <= symbol.value + addend < section.size:
        raise ElfError(f"{_relocation_label(rela, number)}: '{symbol.name}' + {addend} points "
                       f"outside {_section_label(section)} ({section.size} bytes)")


def _relocation_label(rela: ElfSection, number: int) -> str:
    """(Made for error messages only: a cached kernel's first call checks ~100 relocations.)"""
    return f"{_section_label(rela)} relocation #{number}"
