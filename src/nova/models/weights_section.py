"""The `.nova.weights` section: a model's weights and signature inside its `.nova` file.

Layout of the section (little-endian; documented in docs/bundle-format.md and docs/models.md):

    b"NOVAWTS1"            8 bytes, magic + layout version
    u64 header_size        bytes of the JSON header that follows
    header                 UTF-8 JSON: {"format": 1, "weights": [{"name", "dtype", "shape",
                           "offset", "nbytes"}], "model": {...}}
    zero padding           to a multiple of 64 (the data area starts there)
    weight bytes           each weight C-contiguous at data area + offset (a multiple of 64)

It is appended to the sealed bundle that Nova's compiler produced, as one more ELF section
(SHT_PROGBITS, not SHF_ALLOC: the runtime's linker ignores it, so weights are never copied into
the linked image), after which the file is resealed; the section header table moves to the end
of the file. `read_weights` reads it back with NumPy views over the file bytes (no per-weight
copies), and `nova.models.load` uploads them to device memory once.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from nova.bundle.elf import parse_elf
from nova.bundle.writer import seal_bundle
from nova.models.errors import ModelError
from nova.models.graph import dtype_name, numpy_dtype

SECTION = ".nova.weights"
MAGIC = b"NOVAWTS1"
ALIGN = 64
SHT_PROGBITS = 1
_SHDR = struct.Struct("<IIQQQQIIQQ")


@dataclass
class WeightsSection:
    """Weights (NumPy views over the file) and the model description stored beside them."""

    weights: dict[str, np.ndarray]
    model: dict[str, Any]


def _pad(n: int) -> int:
    return -n % ALIGN


def encode(weights: dict[str, np.ndarray], model: dict[str, Any]) -> bytearray:
    """The section payload for `weights` (in order) and the `model` description. Each weight's
    bytes are copied once, into their place in the payload (the weights of an encoder layer are
    tens of megabytes, written on every model-cache store)."""
    arrays = [np.asarray(value, order="C") for value in weights.values()]
    entries: list[dict[str, Any]] = []
    offsets = []
    offset = 0
    for name, data in zip(weights, arrays, strict=True):
        offsets.append(offset)
        entries.append({"name": name, "dtype": dtype_name(data.dtype),
                        "shape": list(data.shape), "offset": offset, "nbytes": data.nbytes})
        offset += data.nbytes + _pad(data.nbytes)
    text = json.dumps({"format": 1, "weights": entries, "model": model},
                      sort_keys=True).encode("utf-8")
    head = MAGIC + struct.pack("<Q", len(text)) + text
    base = len(head) + _pad(len(head))
    out = bytearray(base + offset)  # zero-filled: the padding
    out[:len(head)] = head
    for at, data in zip(offsets, arrays, strict=True):
        begin = base + at
        out[begin:begin + data.nbytes] = data.reshape(-1).view(np.uint8).data
    return out


def decode(payload: bytes | memoryview, name: str = "<bundle>") -> WeightsSection:
    """Parse a section payload (weight offsets count from the first 64-byte boundary after the
    header); errors name the file and the problem."""
    view = memoryview(payload)
    if len(view) < 16 or bytes(view[:8]) != MAGIC:
        raise ModelError(f"{name}: the {SECTION} section does not start with {MAGIC!r}")
    (size,) = struct.unpack("<Q", view[8:16])
    if 16 + size > len(view):
        raise ModelError(f"{name}: the {SECTION} header runs past the section")
    base = 16 + size + _pad(16 + size)
    try:
        header = json.loads(bytes(view[16:16 + size]).decode("utf-8"))
        if header.get("format") != 1:
            raise ModelError(f"{name}: {SECTION} format {header.get('format')} is not "
                             "supported (this Nova reads format 1)")
        weights = {}
        for e in header["weights"]:
            dt = numpy_dtype(e["dtype"])
            begin = base + int(e["offset"])
            end = begin + int(e["nbytes"])
            if end > len(view) or e["nbytes"] != dt.itemsize * int(
                    np.prod(e["shape"], dtype=np.int64)):
                raise ModelError(f"{name}: weight '{e['name']}' lies outside the section or "
                                 "has the wrong size")
            weights[e["name"]] = np.frombuffer(view[begin:end], dtype=dt).reshape(e["shape"])
        return WeightsSection(weights, dict(header.get("model", {})))
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{name}: malformed {SECTION} header ({exc})") from exc


def append_section(bundle: bytes, payload: bytes | bytearray) -> bytes:
    """`bundle` with one more non-allocated section `.nova.weights` holding `payload`, resealed.

    The new layout: the original bytes up to the end of the last section, the payload (64-byte
    aligned), the section-name table extended with the new name, then the section header table
    (old headers, the name table's header pointing at its new copy, the new header)."""
    elf = parse_elf(bundle)
    if elf.sections_named(SECTION):
        raise ModelError(f"the bundle already has a {SECTION} section")
    data = bytes(bundle)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shnum == 0 or shstrndx >= 0xFF00 or shentsize != _SHDR.size:
        raise ModelError("cannot add a section: the object uses extended section numbering")
    end = max(s.offset + (s.size if s.has_file_data else 0) for s in elf.sections)
    out = bytearray(data[:max(end, 0x40)])
    out += b"\0" * _pad(len(out))
    payload_offset = len(out)
    out += payload
    strtab = elf.sections[shstrndx]
    names = bytearray(elf.section_data(strtab))
    name_offset = len(names)
    names += SECTION.encode() + b"\0"
    strtab_offset = len(out)
    out += names
    out += b"\0" * (-len(out) % 8)
    new_shoff = len(out)
    for i in range(shnum):
        header = list(_SHDR.unpack_from(data, shoff + i * shentsize))
        if i == shstrndx:
            header[4], header[5] = strtab_offset, len(names)
        out += _SHDR.pack(*header)
    out += _SHDR.pack(name_offset, SHT_PROGBITS, 0, 0, payload_offset, len(payload), 0, 0,
                      ALIGN, 0)
    struct.pack_into("<Q", out, 0x28, new_shoff)
    struct.pack_into("<H", out, 0x3C, shnum + 1)
    return seal_bundle(bytes(out))


def read_section(bundle: bytes, name: str = "<bundle>") -> WeightsSection | None:
    """The weights section of a bundle (None when it has none)."""
    elf = parse_elf(bundle)
    found = elf.sections_named(SECTION)
    if not found:
        return None
    if len(found) > 1:
        raise ModelError(f"{name}: {len(found)} {SECTION} sections, expected one")
    section = found[0]
    if section.offset + section.size > len(bundle):
        raise ModelError(f"{name}: the {SECTION} section lies outside the file")
    return decode(memoryview(bundle)[section.offset:section.offset + section.size], name)
