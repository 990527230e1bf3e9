"""The reader rejects every damaged, tampered, foreign or mismatched bundle with BundleFormatError.

Damage under the seal (truncation, flipped bits) must be caught by the seal or by the structural
checks before it; tampering that is resealed must be caught by the checks beneath the seal.
"""

from __future__ import annotations

import functools
import struct

import pytest
from bundle_samples import KERNEL, SAMPLE_PTX, build_bundle, replace_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.bundle import format as fmt
from nova.bundle.elf import SHDR_SIZE, SHF_ALLOC, parse_elf
from nova.bundle.format import EntryPoint
from nova.bundle.reader import read_bundle
from nova.bundle.writer import DeviceImages, seal_bundle
from nova.errors import BundleFormatError


@functools.cache
def sample() -> bytes:
    return build_bundle()[0]


def rejects(data: bytes, match: str | None = None, **kwargs: object) -> str:
    """Assert read_bundle raises BundleFormatError (and only that); return its message."""
    with pytest.raises(BundleFormatError, match=match) as info:
        read_bundle(data, name="t.nova", **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith("t.nova"), message
    return message


def flip(data: bytes, position: int, bit: int) -> bytes:
    damaged = bytearray(data)
    damaged[position] ^= 1 << bit
    return bytes(damaged)


def test_sample_is_valid() -> None:
    read_bundle(sample(), expected_arch="sm_90")


def test_truncation_at_every_offset() -> None:
    data = sample()
    for length in range(len(data)):
        rejects(data[:length])


def test_appended_bytes_break_the_seal() -> None:
    rejects(sample() + b"\0", "corrupt or was modified")


def test_flipped_bit_at_every_byte() -> None:
    data = sample()
    for position in range(len(data)):
        rejects(flip(data, position, position % 8))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_flipped_bits_at_random_positions(draw: st.DataObject) -> None:
    data = sample()
    position = draw.draw(st.integers(0, len(data) - 1))
    bit = draw.draw(st.integers(0, 7))
    rejects(flip(data, position, bit))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=256))
def test_arbitrary_bytes(blob: bytes) -> None:
    rejects(blob)


def test_digest_damage_is_a_seal_mismatch() -> None:
    data = sample()
    (seal,) = parse_elf(data).sections_named(fmt.SEAL_SECTION)
    message = rejects(flip(data, seal.offset + 20, 3), "corrupt or was modified after it")
    assert "rebuild" in message
    rejects(flip(data, seal.offset + 1, 0), "bad seal magic")
    rejects(flip(data, 4000 % len(data), 5), "corrupt or was modified")


def _reseal_with(data: bytes, old: bytes, new: bytes) -> bytes:
    return seal_bundle(replace_bytes(data, old, new))


def _patch_header(data: bytes, offset: int, fmt_: str, value: int) -> bytes:
    patched = bytearray(data)
    struct.pack_into(fmt_, patched, offset, value)
    return bytes(patched)


@pytest.mark.parametrize("blob, message", [
    (b"", "the file is empty"),
    (b"\x7fEL", "truncated"),
    (b"module {\n}\n", "not an ELF object file.*perhaps MLIR source"),
    (b"MZ\x90\x00" + bytes(100), "not an ELF object file"),
])
def test_not_elf(blob: bytes, message: str) -> None:
    rejects(blob, message)


def test_wrong_elf_class_machine_type() -> None:
    data = sample()
    rejects(_patch_header(data, 4, "<B", 1), "ELFCLASS32")
    rejects(_patch_header(data, 5, "<B", 2), "big-endian")
    rejects(_patch_header(data, 16, "<H", 2), r"ET_EXEC \(executable\); expected ET_REL")
    rejects(_patch_header(data, 18, "<H", 183), r"machine is AArch64 \(183\); expected x86-64")
    rejects(_patch_header(data, 0x28, "<Q", 0), "no section header table")
    rejects(_patch_header(data, 0x28, "<Q", len(data) - 10), "past the end of the file")
    rejects(_patch_header(data, 0x3E, "<H", 500), "section name table index 500 is out of range")


def test_section_out_of_range_beneath_the_seal() -> None:
    data = sample()
    elf = parse_elf(data)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    (cubin,) = elf.sections_named(".nova.cubin.m")
    offset_field = shoff + cubin.index * SHDR_SIZE + 0x18
    patched = seal_bundle(_patch_header(data, offset_field, "<Q", len(data) - 4))
    rejects(patched, r"section \[\d+\] '\.nova\.cubin\.m' lies outside the file")


def test_missing_payload_section_beneath_the_seal() -> None:
    data = sample()
    message = rejects(_reseal_with(data, b".nova.cubin.m\0", b".nova.cubix.m\0"),
                      r"device module 'm', cubin payload: section '\.nova\.cubin\.m' is missing")
    assert "t.nova" in message


def test_missing_manifest_and_seal_sections() -> None:
    data = sample()
    rejects(_reseal_with(data, b".nova.manifest\0", b".nova.manifesx\0"),
            r"no '\.nova\.manifest' section")
    rejects(replace_bytes(data, b".nova.seal\0", b".nova.seax\0"), r"no '\.nova\.seal' section")


def test_payload_not_allocatable_beneath_the_seal() -> None:
    data = sample()
    elf = parse_elf(data)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    (ptx,) = elf.sections_named(".nova.ptx.m")
    flags_field = shoff + ptx.index * SHDR_SIZE + 8
    patched = seal_bundle(_patch_header(data, flags_field, "<Q", ptx.flags & ~SHF_ALLOC))
    rejects(patched, "not allocatable")


def test_payload_bytes_changed_and_resealed() -> None:
    data = sample()
    rejects(_reseal_with(data, b".target sm_90\n", b".target sm_80\n"),
            r"ptx payload: SHA-256 [0-9a-f]{64} does not match")


def test_manifest_size_and_digest_tampering() -> None:
    data = sample()
    manifest = read_bundle(data).manifest
    cubin = manifest.modules[0].payloads[1]
    size = str(cubin.size).encode()
    rejects(_reseal_with(data, b'"size": ' + size, b'"size": ' + str(cubin.size + 1).encode()),
            "cubin payload: section '.nova.cubin.m' holds 791 bytes, the manifest says 792")
    digest = cubin.sha256.encode()
    other = digest[:-1] + (b"0" if digest[-1:] != b"0" else b"1")
    rejects(_reseal_with(data, digest, other), "cubin payload: SHA-256 .* does not match")


def test_wrong_format_version() -> None:
    data = sample()
    message = rejects(_reseal_with(data, b'"format_version": 1', b'"format_version": 7'),
                      "unsupported bundle format version 7")
    assert "this Nova reads format version 1" in message and "upgrade Nova" in message
    message = rejects(_reseal_with(data, b'"format_version": 1', b'"format_version": 0'),
                      "format version 0")
    assert "rebuild" in message
    rejects(_reseal_with(data, b' "format_version": 1', b'"format_version":"1"'),
            "unsupported bundle format version '1'")
    rejects(_reseal_with(data, b' "format_version": 1', b'"format_version":1.0'),
            r"manifest\.format_version: expected an integer, found a number")
    rejects(_reseal_with(data, b'"format": "nova-bundle"', b'"format": "nova-bundlf"'),
            "manifest format is 'nova-bundlf', expected 'nova-bundle'")


def test_wrong_abi_version() -> None:
    rejects(_reseal_with(sample(), b'"abi_version": 1', b'"abi_version": 2'),
            "runtime ABI version 2; this Nova's runtime implements ABI version 1")


def test_wrong_arch() -> None:
    data = build_bundle(arch="sm_80")[0]
    message = rejects(data, "was built for sm_80, but the device is sm_90", expected_arch="sm_90")
    assert "--arch sm_90" in message
    read_bundle(data, expected_arch="sm_80")
    read_bundle(data)  # no expectation: any arch


@pytest.mark.parametrize("old, new, message", [
    (b'"producer": "nova 0.1.0"', b'"producer": 123456789012', r"manifest\.producer: expected a "
     "string, found an integer"),
    (b'"uses_barriers": true', b'"uses_barriers": 1234', "expected true/false"),
    (b'"static_shared_bytes": 256', b'"static_shared_bytes": -25', "below the minimum 0"),
    (b'"kind": "cpuobj"', b'"kind": "fatbin"', "unknown payload kind 'fatbin'"),
    (b'"host_triple"', b'"host_tripl_"', "missing field 'host_triple'"),
    (b'"replay_ops": 0', b'"replay_ops":-1', r"replay_ops: -1 is below the minimum 0"),
    (b'"replay_ops": 0', b'"replay_ops":[]', r"replay_ops: expected an integer"),
    # bundles written before entries carried replay_ops: the field is optional (0)
    (b'"replay_ops": 0', b'"replay_op_": 0', None),
    (b'"abi_version": 1,\n "arch"', b'"abi_version": 1,\n "arch"', None),
])
def test_manifest_schema_errors(old: bytes, new: bytes, message: str | None) -> None:
    data = sample()
    tampered = _reseal_with(data, old, new)
    if message is None:
        read_bundle(tampered)  # control: an identity edit stays valid
    else:
        rejects(tampered, f"invalid manifest: .*{message}")


def test_manifest_not_json_or_not_utf8() -> None:
    data = sample()
    rejects(_reseal_with(data, b'"entries": [', b'"entries": {'), "invalid manifest: not JSON")
    rejects(_reseal_with(data, b'"sample.mlir"', b'"sampl\xff.mlir"'), "not UTF-8")


def test_duplicate_names_in_manifest() -> None:
    images = (DeviceImages("m", (KERNEL,), SAMPLE_PTX, None, None),
              DeviceImages("n", (KERNEL,), SAMPLE_PTX, None, None))
    data = build_bundle(images)[0]
    tampered = _reseal_with(data, b'"name": "n"', b'"name": "m"')
    rejects(tampered, "duplicate device module name")


def test_entry_symbol_missing_from_host_object() -> None:
    entry = EntryPoint("other", "__nova_entry_other", (), ())
    data = build_bundle(entries=(entry,))[0]
    rejects(data, "does not define the global symbol '__nova_entry_other' of entry point 'other'")
