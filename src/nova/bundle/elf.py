"""A minimal, defensive ELF64 little-endian reader: header, section table, symbol table.

Just enough of ELF to validate and take apart a .nova bundle (an x86-64 relocatable object) without
external tools or libraries. Every offset and size read from the file is range-checked, so any
malformed input raises `ElfError` (a BundleFormatError) and never IndexError/struct.error.
"""

from __future__ import annotations

import struct

from nova.errors import BundleFormatError
from nova.records import Record

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
ET_REL = 1
EM_X86_64 = 62

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_NOBITS = 8
SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2

EHDR_SIZE = 64
SHDR_SIZE = 64
SYM_SIZE = 24
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")

_TYPE_NAMES = {0: "ET_NONE (no file type)", 1: "ET_REL (relocatable object)",
               2: "ET_EXEC (executable)", 3: "ET_DYN (shared object or PIE)", 4: "ET_CORE (core)"}
_MACHINE_NAMES = {3: "i386", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 40: "ARM",
                  62: "x86-64", 183: "AArch64", 190: "NVIDIA CUDA", 243: "RISC-V"}
SECTION_TYPE_NAMES = {0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 5: "HASH",
                      6: "DYNAMIC", 7: "NOTE", 8: "NOBITS", 9: "REL", 11: "DYNSYM",
                      14: "INIT_ARRAY", 15: "FINI_ARRAY", 17: "GROUP", 18: "SYMTAB_SHNDX",
                      0x6FFF4C03: "LLVM_ADDRSIG", 0x70000001: "X86_64_UNWIND"}


class ElfError(BundleFormatError):
    """The bytes are not a well-formed ELF64 object of the expected kind."""


class ElfSection(Record):
    """One section header (with its decoded name)."""

    __match_args__ = ("index", "name", "type", "flags", "offset", "size", "link", "info",
                      "addralign", "entsize")
    _fields = __match_args__

    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int

    def __init__(self, index: int, name: str, type: int, flags: int, offset: int, size: int,
                 link: int, info: int, addralign: int, entsize: int) -> None:
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "link", link)
        object.__setattr__(self, "info", info)
        object.__setattr__(self, "addralign", addralign)
        object.__setattr__(self, "entsize", entsize)

    @property
    def has_file_data(self) -> bool:
        """False for SHT_NOBITS/SHT_NULL sections, which occupy no bytes of the file."""
        return self.type not in (SHT_NOBITS, SHT_NULL)

    @property
    def is_alloc(self) -> bool:
        return bool(self.flags & SHF_ALLOC)

    @property
    def type_name(self) -> str:
        return SECTION_TYPE_NAMES.get(self.type, f"0x{self.type:x}")

    @property
    def flag_letters(self) -> str:
        """readelf-style flags: W (write), A (alloc), X (execute)."""
        return "".join(c for bit, c in ((SHF_WRITE, "W"), (SHF_ALLOC, "A"),
                                        (SHF_EXECINSTR, "X")) if self.flags & bit)


class ElfSymbol(Record):
    """One symbol table entry."""

    __match_args__ = ("name", "value", "size", "binding", "type", "shndx")
    _fields = __match_args__

    name: str
    value: int
    size: int
    binding: int
    type: int
    shndx: int

    def __init__(self, name: str, value: int, size: int, binding: int, type: int,
                 shndx: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "binding", binding)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "shndx", shndx)

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF

    @property
    def is_global(self) -> bool:
        return self.binding in (STB_GLOBAL, STB_WEAK)


class ElfFile(Record):
    """A parsed ELF64 object: the raw bytes and its section headers."""

    __match_args__ = ("data", "sections")
    _fields = __match_args__

    data: bytes
    sections: tuple[ElfSection, ...]

    def __init__(self, data: bytes, sections: tuple[ElfSection, ...]) -> None:
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "sections", sections)

    def sections_named(self, name: str) -> list[ElfSection]:
        return [s for s in self.sections if s.name == name]

    def section_data(self, section: ElfSection) -> bytes:
        """The section's bytes; raises ElfError when they lie outside the file."""
        if not section.has_file_data:
            return b""
        end = section.offset + section.size
        if end > len(self.data):
            raise ElfError(f"section [{section.index}] '{section.name}' lies outside the file "
                           f"(offset {section.offset}, size {section.size}, "
                           f"file size {len(self.data)})")
        return self.data[section.offset:end]

    def check_section_ranges(self) -> None:
        """Check that every section's bytes lie inside the file."""
        for section in self.sections:
            self.section_data(section)

    def symbols(self) -> tuple[ElfSymbol, ...]:
        """Entries of the (single) SHT_SYMTAB section, or () when there is none (decoded once:
        the verifier and the object loader each ask, several times)."""
        found: tuple[ElfSymbol, ...] | None = self.__dict__.get("_symbols")
        if found is None:
            found = self._decode_symbols()
            object.__setattr__(self, "_symbols", found)
        return found

    def _decode_symbols(self) -> tuple[ElfSymbol, ...]:
        tables = [s for s in self.sections if s.type == SHT_SYMTAB]
        if not tables:
            return ()
        if len(tables) > 1:
            raise ElfError(f"{len(tables)} symbol tables (SHT_SYMTAB); expected one")
        table = tables[0]
        if table.link >= len(self.sections):
            raise ElfError(f"symbol table's string table index {table.link} is out of range")
        strtab = self.sections[table.link]
        if strtab.type != SHT_STRTAB:
            raise ElfError(f"symbol table's string table [{strtab.index}] is not SHT_STRTAB")
        names = self.section_data(strtab)
        raw = self.section_data(table)
        if table.size % SYM_SIZE:
            raise ElfError(f"symbol table size {table.size} is not a multiple of {SYM_SIZE}")
        result = []
        for pos in range(0, len(raw), SYM_SIZE):
            st_name, st_info, _other, shndx, value, size = _SYM.unpack_from(raw, pos)
            if shndx != SHN_UNDEF and shndx < SHN_LORESERVE and shndx >= len(self.sections):
                raise ElfError(f"symbol #{pos // SYM_SIZE} refers to section {shndx}, "
                               f"beyond the {len(self.sections)} sections")
            result.append(ElfSymbol(_string_at(names, st_name, "symbol name"), value, size,
                                    st_info >> 4, st_info & 0xF, shndx))
        return tuple(result)


def parse_elf(data: bytes, machine: int = EM_X86_64, elf_type: int = ET_REL) -> ElfFile:
    """Parse and check the ELF header and section header table of `data`.

    Checks magic, class (ELF64), byte order (little-endian), version, `elf_type` and `machine`,
    that the section header table and the section-name string table lie inside the file, and that
    every section name is in range. Section contents are range-checked when read.
    """
    if len(data) < 4 or data[:4] != ELF_MAGIC:
        return _raise_not_elf(data)
    if len(data) < EHDR_SIZE:
        raise ElfError(f"truncated: {len(data)} bytes, too short for an ELF64 header "
                       f"({EHDR_SIZE} bytes)")
    (ident, e_type, e_machine, e_version, _entry, _phoff, shoff, _flags, ehsize, _phentsize,
     _phnum, shentsize, shnum, shstrndx) = _EHDR.unpack_from(data, 0)
    _check_ident(ident, e_version)
    _check_kind(e_type, e_machine, elf_type, machine)
    _check_header_sizes(ehsize, shoff, shentsize)
    headers, shstrndx = _section_headers(data, shoff, shnum, shstrndx)
    names = _section_names(data, headers, shstrndx)
    sections = tuple(
        ElfSection(i, _string_at(names, h[0], "section name"), h[1], h[2], h[4], h[5], h[6], h[7],
                   h[8], h[9])
        for i, h in enumerate(headers)
    )
    return ElfFile(data, sections)


def _check_ident(ident: bytes, e_version: int) -> None:
    """Class ELF64, little-endian, version 1 (e_ident and e_version)."""
    if ident[4] != ELFCLASS64:
        found = "ELFCLASS32 (32-bit)" if ident[4] == 1 else f"class {ident[4]}"
        raise ElfError(f"ELF {found}; a .nova bundle is ELFCLASS64")
    if ident[5] != ELFDATA2LSB:
        found = "big-endian" if ident[5] == 2 else f"data encoding {ident[5]}"
        raise ElfError(f"ELF byte order is {found}; a .nova bundle is little-endian")
    if ident[6] != EV_CURRENT or e_version != EV_CURRENT:
        raise ElfError(f"unknown ELF version {ident[6]}/{e_version}; expected 1")


def _check_kind(e_type: int, e_machine: int, elf_type: int, machine: int) -> None:
    """The expected object type (ET_REL...) and machine."""
    if e_type != elf_type:
        raise ElfError(f"ELF type is {_TYPE_NAMES.get(e_type, str(e_type))}; expected "
                       f"{_TYPE_NAMES.get(elf_type, str(elf_type))}")
    if e_machine != machine:
        raise ElfError(f"ELF machine is {_MACHINE_NAMES.get(e_machine, 'unknown')} ({e_machine}); "
                       f"expected {_MACHINE_NAMES.get(machine, 'unknown')} ({machine})")


def _check_header_sizes(ehsize: int, shoff: int, shentsize: int) -> None:
    """The ELF64 header and section header sizes, and a section header table present."""
    if ehsize != EHDR_SIZE:
        raise ElfError(f"ELF header size is {ehsize}; expected {EHDR_SIZE}")
    if shoff == 0:
        raise ElfError("the file has no section header table")
    if shentsize != SHDR_SIZE:
        raise ElfError(f"section header size is {shentsize}; expected {SHDR_SIZE}")


def _section_headers(data: bytes, shoff: int, shnum: int,
                     shstrndx: int) -> tuple[list[tuple[int, ...]], int]:
    """The section headers, checked to lie inside the file, and the section-name table index
    (with extended numbering, the count and that index are read from section 0)."""
    first = _section_header(data, shoff, 0)
    if shnum == 0:  # extended numbering: the count lives in section 0's sh_size
        shnum = first[5]
    if shstrndx == SHN_XINDEX:
        shstrndx = first[6]
    if shnum == 0:
        raise ElfError("the section header table is empty")
    if shoff + shnum * SHDR_SIZE > len(data):
        raise ElfError(f"section header table (offset {shoff}, {shnum} entries) extends past the "
                       f"end of the file ({len(data)} bytes): truncated or corrupt")
    headers = [_section_header(data, shoff, i) for i in range(shnum)]
    if shstrndx >= shnum:
        raise ElfError(f"section name table index {shstrndx} is out of range ({shnum} sections)")
    return headers, shstrndx


def _section_names(data: bytes, headers: list[tuple[int, ...]], shstrndx: int) -> bytes:
    """The section-name string table's bytes (a string table inside the file)."""
    str_hdr = headers[shstrndx]
    if str_hdr[1] != SHT_STRTAB:
        raise ElfError(f"section name table [{shstrndx}] is not a string table")
    str_end = str_hdr[4] + str_hdr[5]
    if str_end > len(data):
        raise ElfError(f"section name table lies outside the file (ends at {str_end}, file size "
                       f"{len(data)}): truncated or corrupt")
    return data[str_hdr[4]:str_end]


def _section_header(data: bytes, shoff: int, index: int) -> tuple[int, ...]:
    start = shoff + index * SHDR_SIZE
    if start + SHDR_SIZE > len(data):
        raise ElfError(f"section header {index} at offset {start} lies past the end of the file "
                       f"({len(data)} bytes): truncated or corrupt")
    return _SHDR.unpack_from(data, start)


def _string_at(table: bytes, offset: int, what: str) -> str:
    if offset >= len(table):
        if offset == 0:
            return ""
        raise ElfError(f"{what} offset {offset} is outside its string table ({len(table)} bytes)")
    end = table.find(b"\0", offset)
    if end < 0:
        raise ElfError(f"{what} at offset {offset} is not NUL-terminated")
    return table[offset:end].decode("utf-8", errors="backslashreplace")


def _raise_not_elf(data: bytes) -> ElfFile:
    if not data:
        raise ElfError("the file is empty")
    if ELF_MAGIC.startswith(data):
        raise ElfError(f"truncated: {len(data)} bytes, too short for an ELF64 header")
    head = data[:8]
    if head.lstrip().startswith((b"{", b"//", b"module", b"func", b"gpu")):
        hint = " (it looks like text, perhaps MLIR source; compile it first)"
    else:
        hint = ""
    raise ElfError(f"not an ELF object file (starts with {head!r}){hint}")
