"""Signed bundles: an Ed25519 signature in the section `.nova.signature` (docs/bundle-format.md).

The seal says a file is intact; anyone can reseal. A signature says *who* made it: `sign_bundle`
appends (or refills) the section

    b"NOVASIG1" (8 bytes) | Ed25519 public key (32 bytes, raw) | Ed25519 signature (64 bytes)

and signs `SIGNED_CONTEXT + SHA-256(the whole file with the 64 signature bytes and the seal's 32
digest bytes taken as zero)`, then reseals; so the signature covers every byte of the file but
itself and the seal digest (which is computed last, over the signature too). `check_signature`
accepts a bundle only when its key is one of the trusted keys and the signature verifies: the
key stored in the file only says which key to check; it is never trusted by itself.

Keys are PEM files (PKCS#8 private keys, SubjectPublicKeyInfo public keys) as written by
`nova-translate --gen-key` or `openssl genpkey -algorithm ed25519`. The `cryptography` package
(the `sign` extra) is imported only when something is signed or a trust policy is checked.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.bundle.elf import SHDR_SIZE, SHT_PROGBITS, ElfError, ElfFile, parse_elf
from nova.bundle.format import SEAL_DIGEST_OFFSET, SEAL_SECTION, SEAL_SIZE, seal_digest
from nova.errors import BundleFormatError

SIGNATURE_SECTION = ".nova.signature"
SIGNATURE_MAGIC = b"NOVASIG1"
KEY_SIZE = 32
SIG_SIZE = 64
SIGNATURE_SECTION_SIZE = len(SIGNATURE_MAGIC) + KEY_SIZE + SIG_SIZE
SIGNATURE_ALIGN = 8
SIGNED_CONTEXT = b"nova-bundle-signature-v1\0"
"""Prefix of the signed message (domain separation: the key signs nothing else that reads so)."""
INSTALL_HINT = "signed bundles need the 'cryptography' package: pip install 'nova-gpu[sign]'"


class SignatureError(BundleFormatError):
    """A bundle refused by the trust policy, or a key that cannot be used."""


@dataclass(frozen=True)
class SignatureInfo:
    """The signature section of a bundle: the signer's raw public key and the signature."""

    public_key: bytes
    signature: bytes
    offset: int  # of the section in the file

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)


def fingerprint(public_key: bytes) -> str:
    """`SHA256:` + unpadded base64 of SHA-256(raw 32-byte Ed25519 public key)."""
    digest = base64.b64encode(hashlib.sha256(public_key).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise SignatureError(INSTALL_HINT) from None
    return ed25519


def _serialization() -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization


# --- keys -----------------------------------------------------------------------------------

def generate_key(path: str | Path) -> tuple[Path, Path]:
    """Write a new Ed25519 private key to `path` (PEM, PKCS#8, mode 0600) and its public key to
    `path` + '.pub' (PEM); returns both paths."""
    ed25519 = _crypto()
    ser = _serialization()
    key = ed25519.Ed25519PrivateKey.generate()
    private = Path(path)
    public = private.with_name(private.name + ".pub")
    pem = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    public.write_bytes(key.public_key().public_bytes(ser.Encoding.PEM,
                                                     ser.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _read_pem(path: str | Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SignatureError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None


def load_private_key(path: str | Path) -> Any:
    """The Ed25519 private key in the PEM file `path` (unencrypted)."""
    ed25519 = _crypto()
    ser = _serialization()
    try:
        key = ser.load_pem_private_key(_read_pem(path, "private key"), password=None)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"'{path}' is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SignatureError(f"'{path}' holds a {type(key).__name__}; bundles are signed with "
                             f"Ed25519 keys (nova-translate --gen-key KEY)")
    return key


def load_public_key(path: str | Path) -> bytes:
    """The raw 32 bytes of the Ed25519 public key in the PEM file `path` (a private key's file
    is accepted too: its public half is used)."""
    ed25519 = _crypto()
    ser = _serialization()
    data = _read_pem(path, "trusted key")
    try:
        key = ser.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            key = ser.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError) as exc:
            raise SignatureError(f"trusted key '{path}' is not a PEM public key ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise SignatureError(f"trusted key '{path}' is a {type(key).__name__}, not Ed25519")
    return bytes(key.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw))


def trusted_key_bytes(keys: Sequence[str | Path | bytes]) -> tuple[bytes, ...]:
    """Raw public keys from paths of PEM files, PEM text (bytes starting with '-----') or raw
    32-byte keys."""
    result = []
    for key in keys:
        if isinstance(key, bytes) and len(key) == KEY_SIZE:
            result.append(key)
        elif isinstance(key, bytes):
            result.append(_public_from_pem(key))
        else:
            result.append(load_public_key(key))
    return tuple(result)


def _public_from_pem(pem: bytes) -> bytes:
    ed25519 = _crypto()
    ser = _serialization()
    try:
        key = ser.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"a trusted key is neither 32 raw bytes nor PEM ({exc})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise SignatureError(f"a trusted key is a {type(key).__name__}, not Ed25519")
    return bytes(key.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw))


# --- the section ----------------------------------------------------------------------------

def find_signature(elf: ElfFile) -> SignatureInfo | None:
    """The bundle's signature section, or None when it has none; BundleFormatError when it is
    malformed."""
    found = elf.sections_named(SIGNATURE_SECTION)
    if not found:
        return None
    if len(found) > 1:
        raise SignatureError(f"{len(found)} '{SIGNATURE_SECTION}' sections, expected one")
    content = elf.section_data(found[0])
    if len(content) != SIGNATURE_SECTION_SIZE or not content.startswith(SIGNATURE_MAGIC):
        raise SignatureError(f"'{SIGNATURE_SECTION}' is not a {SIGNATURE_SECTION_SIZE}-byte "
                             f"{SIGNATURE_MAGIC.decode()} record")
    key = content[8:8 + KEY_SIZE]
    return SignatureInfo(key, content[8 + KEY_SIZE:], found[0].offset)


def signed_message(data: bytes, signature_offset: int, seal_offset: int) -> bytes:
    """What the key signs: SIGNED_CONTEXT + SHA-256 of the file with the signature bytes and
    the seal digest taken as zero."""
    blank = bytearray(data)
    sig_start = signature_offset + len(SIGNATURE_MAGIC) + KEY_SIZE
    blank[sig_start:sig_start + SIG_SIZE] = bytes(SIG_SIZE)
    seal_start = seal_offset + SEAL_DIGEST_OFFSET
    blank[seal_start:seal_start + SEAL_SIZE - SEAL_DIGEST_OFFSET] = bytes(
        SEAL_SIZE - SEAL_DIGEST_OFFSET)
    return SIGNED_CONTEXT + hashlib.sha256(bytes(blank)).digest()


def _seal_offset(elf: ElfFile) -> int:
    seals = elf.sections_named(SEAL_SECTION)
    if len(seals) != 1:
        raise BundleFormatError(f"the bundle has {len(seals)} '{SEAL_SECTION}' sections")
    return seals[0].offset


def sign_bundle(data: bytes, private_key_path: str | Path) -> bytes:
    """`data` (a sealed bundle) signed with the Ed25519 key in `private_key_path`, resealed.

    The signature section is appended (or, when the bundle is signed already, overwritten)."""
    key = load_private_key(private_key_path)
    ser = _serialization()
    public = key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    elf = parse_elf(data)
    existing = find_signature(elf)
    if existing is None:
        data = append_section(data, elf, SIGNATURE_SECTION,
                              SIGNATURE_MAGIC + public + bytes(SIG_SIZE))
        elf = parse_elf(data)
        existing = find_signature(elf)
        assert existing is not None
    record = bytearray(data)
    start = existing.offset + len(SIGNATURE_MAGIC)
    record[start:start + KEY_SIZE] = public
    record[start + KEY_SIZE:start + KEY_SIZE + SIG_SIZE] = bytes(SIG_SIZE)
    data = bytes(record)
    message = signed_message(data, existing.offset, _seal_offset(elf))
    record[start + KEY_SIZE:start + KEY_SIZE + SIG_SIZE] = key.sign(message)
    seal_start = _seal_offset(elf) + SEAL_DIGEST_OFFSET
    record[seal_start:seal_start + 32] = seal_digest(bytes(record), _seal_offset(elf))
    return bytes(record)


def append_section(data: bytes, elf: ElfFile, name: str, payload: bytes) -> bytes:
    """`data` with one more non-allocated SHT_PROGBITS section `name` (SIGNATURE_ALIGN-aligned)
    holding `payload`: the payload and a copy of the section-name table extended with `name` go
    after the last section's bytes, then the section header table (the layout nova.models uses
    for `.nova.weights`). Not resealed."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    if shnum == 0 or shnum >= 0xFF00 or shstrndx >= shnum:
        raise BundleFormatError("cannot add a section: the object uses extended numbering")
    end = max(s.offset + (s.size if s.has_file_data else 0) for s in elf.sections)
    out = bytearray(data[:max(end, 0x40)])
    out += bytes(-len(out) % SIGNATURE_ALIGN)
    payload_offset = len(out)
    out += payload
    names = bytearray(elf.section_data(elf.sections[shstrndx]))
    name_offset = len(names)
    names += name.encode() + b"\0"
    names_offset = len(out)
    out += names
    out += bytes(-len(out) % 8)
    new_shoff = len(out)
    for index in range(shnum):
        header = bytearray(data[shoff + index * SHDR_SIZE:shoff + (index + 1) * SHDR_SIZE])
        if index == shstrndx:
            struct.pack_into("<QQ", header, 24, names_offset, len(names))
        out += header
    out += struct.pack("<IIQQQQIIQQ", name_offset, SHT_PROGBITS, 0, 0, payload_offset,
                       len(payload), 0, 0, SIGNATURE_ALIGN, 0)
    struct.pack_into("<Q", out, 0x28, new_shoff)
    struct.pack_into("<H", out, 0x3C, shnum + 1)
    return bytes(out)


def check_signature(elf: ElfFile, trusted: Sequence[bytes], name: str) -> SignatureInfo:
    """Enforce a trust policy: the bundle is signed, by one of the `trusted` raw public keys,
    and the signature verifies. Raises SignatureError saying which of these failed."""
    ed25519 = _crypto()
    try:
        info = find_signature(elf)
    except ElfError as exc:
        raise SignatureError(f"{name}: malformed signature section: {exc}") from None
    policy = f"a trust policy is set ({len(trusted)} trusted key(s): trusted_keys / " \
             f"NOVA_TRUSTED_KEYS)"
    if info is None:
        raise SignatureError(f"{name} is not signed, and {policy}; sign it with "
                             f"nova-translate --sign KEY")
    if info.public_key not in trusted:
        raise SignatureError(f"{name} is signed by key {info.fingerprint}, which is not "
                             f"trusted; {policy}")
    message = signed_message(elf.data, info.offset, _seal_offset(elf))
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(info.public_key).verify(info.signature,
                                                                            message)
    except Exception:  # cryptography.exceptions.InvalidSignature
        raise SignatureError(f"{name}: the signature by {info.fingerprint} does not match the "
                             f"file: it was modified after it was signed") from None
    return info


def signature_status(elf: ElfFile) -> str:
    """For nova-objdump: 'unsigned', or the signer's fingerprint and whether the signature
    matches the file for that key (which says nothing about trusting the key)."""
    info = find_signature(elf)
    if info is None:
        return "unsigned"
    try:
        ed25519 = _crypto()
    except SignatureError:
        return f"Ed25519, key {info.fingerprint} (not checked: cryptography is not installed)"
    message = signed_message(elf.data, info.offset, _seal_offset(elf))
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(info.public_key).verify(info.signature,
                                                                            message)
    except Exception:
        return f"Ed25519, key {info.fingerprint}: INVALID (does not match the file)"
    return f"Ed25519, key {info.fingerprint} (valid for this key; trust is the loader's choice)"
