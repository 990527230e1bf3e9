"""nova.bundle.elf against readelf and against hand-made ELF files (extended numbering, errors)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from bundle_samples import build_bundle

from nova.bundle.elf import SHT_STRTAB, ElfError, parse_elf


def _elf(sections: list[tuple[bytes, int, bytes]], extended: bool = False) -> bytes:
    """A minimal ELF64 x86-64 ET_REL file: `sections` are (name, type, content) after the null
    section; a `.shstrtab` is appended. `extended` uses e_shnum = 0 / SHN_XINDEX numbering."""
    names = b"\0" + b"".join(name + b"\0" for name, _, _ in sections) + b".shstrtab\0"
    all_sections = [*sections, (b".shstrtab", SHT_STRTAB, names)]
    body = b""
    headers = [bytes(64)]  # section 0
    name_offset = 1
    for name, kind, content in all_sections:
        offset = 64 + len(body)
        body += content
        headers.append(struct.pack("<IIQQQQIIQQ", name_offset, kind, 0, 0, offset, len(content),
                                   0, 0, 1, 0))
        name_offset += len(name) + 1
    shnum = len(headers)
    shstrndx = shnum - 1
    if extended:
        headers[0] = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, shnum, shstrndx, 0, 0, 0)
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = struct.pack("<16sHHIQQQIHHHHHH", ident, 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                         0 if extended else shnum, 0xFFFF if extended else shstrndx)
    return header + body + b"".join(headers)


@pytest.mark.parametrize("extended", [False, True])
def test_hand_made_elf(extended: bool) -> None:
    elf = parse_elf(_elf([(b".a", 1, b"hello"), (b".nova.b", 1, b"xyz")], extended))
    assert [s.name for s in elf.sections] == ["", ".a", ".nova.b", ".shstrtab"]
    (b,) = elf.sections_named(".nova.b")
    assert elf.section_data(b) == b"xyz"
    assert elf.symbols() == ()


def test_bad_name_offset_and_unterminated_names() -> None:
    data = bytearray(_elf([(b".a", 1, b"hello")]))
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    struct.pack_into("<I", data, shoff + 64, 9999)  # section 1's sh_name
    with pytest.raises(ElfError, match="section name offset 9999 is outside"):
        parse_elf(bytes(data))


def test_section_data_out_of_range() -> None:
    data = bytearray(_elf([(b".a", 1, b"hello")]))
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    struct.pack_into("<Q", data, shoff + 64 + 0x20, 1 << 40)  # section 1's sh_size
    elf = parse_elf(bytes(data))
    with pytest.raises(ElfError, match=r"section \[1\] '\.a' lies outside the file"):
        elf.check_section_ranges()


def test_matches_readelf(tmp_path: Path) -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not installed")
    data = build_bundle()[0]
    path = tmp_path / "b.nova"
    path.write_bytes(data)
    out = subprocess.run([readelf, "-S", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    expected = {}
    for match in re.finditer(r"\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+"
                             r"([0-9a-f]+)", out):
        if int(match[1]):
            expected[int(match[1])] = (match[2], int(match[3], 16), int(match[4], 16))
    elf = parse_elf(data)
    got = {s.index: (s.name, s.offset, s.size) for s in elf.sections if s.index}
    assert got == expected
    symbols = subprocess.run([readelf, "-s", "-W", str(path)], capture_output=True, text=True,
                             check=True).stdout
    names = {line.split()[-1] for line in symbols.splitlines()
             if re.match(r"\s*\d+:", line) and len(line.split()) == 8
             and line.split()[3] != "SECTION"}  # readelf shows section names for those
    assert names == {s.name for s in elf.symbols() if s.name}
    assert "__nova_devmod_m" in names
