"""Read and validate a .nova bundle before anything of it runs.

`read_bundle` checks, in order: the ELF structure (ELF64, little-endian, x86-64, relocatable,
section headers and names in range), the seal (magic, and the SHA-256 of the whole file, so any
changed byte anywhere is caught), the manifest (UTF-8 JSON, format name and version, ABI version,
schema), the device architecture when one is expected, and every payload (its section exists,
size and SHA-256 match), plus the symbols the runtime will look up (entry wrappers and module
descriptors are defined). Every problem raises `BundleFormatError` naming the file.

The runtime imports this module: it uses only the standard library, `nova.bundle.format`,
`nova.bundle.elf` and `nova.errors` (no xDSL, no llvmlite, nothing of the compiler).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nova.bundle.elf import ElfError, ElfFile, ElfSection, ElfSymbol, parse_elf
from nova.bundle.format import (
    ABI_VERSION,
    DEVICE_MODULE_SYMBOL_PREFIX,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_SECTION,
    SEAL_DIGEST_OFFSET,
    SEAL_MAGIC,
    SEAL_SECTION,
    SEAL_SIZE,
    DeviceModule,
    EntryPoint,
    Manifest,
    PayloadKind,
    payload_section,
    seal_digest,
)
from nova.bundle.verify import verify_elf, verify_object
from nova.errors import BundleFormatError
from nova.hashing import sha256

REBUILD_HINT = "rebuild it from its source with this Nova"


@dataclass(frozen=True)
class Bundle:
    """A validated .nova bundle.

    `object_bytes` is the whole file (the host object, for linking); `manifest` its decoded
    manifest; `sections` every ELF section header; `seal` the stored SHA-256 (hex).
    """

    name: str
    manifest: Manifest
    object_bytes: bytes
    sections: tuple[ElfSection, ...]
    seal: str
    symbols: tuple[ElfSymbol, ...] = ()
    _payloads: dict[tuple[str, PayloadKind], bytes] = field(default_factory=dict, repr=False)

    @property
    def section_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sections if s.index != 0)

    @property
    def undefined_symbols(self) -> tuple[str, ...]:
        """Global symbols the host code needs from outside (runtime ABI functions, libc)."""
        return tuple(sorted({s.name for s in self.symbols if not s.defined and s.name}))

    def module(self, name: str) -> DeviceModule:
        """The device module `name`; BundleFormatError (listing the modules) when absent."""
        found = self.manifest.module(name)
        if found is None:
            known = ", ".join(m.name for m in self.manifest.modules) or "none"
            raise BundleFormatError(f"{self.name}: no device module '{name}' (modules: {known})")
        return found

    def payload(self, module_name: str, kind: PayloadKind) -> bytes | None:
        """The image bytes of one payload (PTX without its NUL), or None when the module has no
        image of that kind. Raises BundleFormatError for an unknown module."""
        self.module(module_name)
        return self._payloads.get((module_name, PayloadKind(kind)))

    def ptx(self, module_name: str) -> str | None:
        """The PTX text of a device module, or None when it carries none."""
        data = self.payload(module_name, PayloadKind.PTX)
        return None if data is None else data.decode("utf-8", errors="replace")


def read_bundle_file(path: str | Path, expected_arch: str | None = None,
                     trusted_keys: Sequence[bytes] | None = None) -> Bundle:
    """Read and validate the bundle at `path` (see read_bundle)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise BundleFormatError(f"cannot read bundle '{path}': {reason}") from None
    return read_bundle(data, expected_arch=expected_arch, name=str(path),
                       trusted_keys=trusted_keys)


def read_bundle(data: bytes, expected_arch: str | None = None, name: str = "<bundle>",
                trusted_keys: Sequence[bytes] | None = None) -> Bundle:
    """Validate `data` as a .nova bundle and return it; raises BundleFormatError on any problem.

    `expected_arch` (e.g. 'sm_90'): the GPU architecture the caller will run the bundle on; a
    bundle built for another one is rejected with a message saying how to rebuild it.
    `trusted_keys` (raw 32-byte Ed25519 public keys, `nova.bundle.signature.trusted_key_bytes`):
    a trust policy; the bundle must then be signed by one of them (SignatureError otherwise).
    """
    data = bytes(data)
    try:
        elf = parse_elf(data)
        seal = _check_seal(elf, name)
        if trusted_keys is not None:
            # signed bundles only: hashlib (OpenSSL), base64 and pathlib cost a cold start
            from nova.bundle.signature import check_signature

            check_signature(elf, trusted_keys, name)
        manifest = _read_manifest(elf, name)
        if expected_arch is not None and manifest.arch != expected_arch:
            raise BundleFormatError(
                f"{name} was built for {manifest.arch}, but the device is {expected_arch}; "
                f"rebuild it with --arch {expected_arch} (or NOVA_ARCH={expected_arch})")
        verify_elf(elf, "host object")
        payloads = _read_payloads(elf, manifest, name)
        for (module, kind), image in payloads.items():
            if kind is PayloadKind.CPU_OBJECT:
                verify_object(image, f"CPU object of device module '{module}'")
        symbols = elf.symbols()
        _check_symbols(symbols, manifest, name)
    except ElfError as exc:
        raise BundleFormatError(f"{name}: not a valid .nova bundle: {exc}") from None
    return Bundle(name, manifest, data, elf.sections, seal, symbols, payloads)


def _unique_section(elf: ElfFile, section: str, name: str, what: str) -> ElfSection:
    found = elf.sections_named(section)
    if not found:
        raise BundleFormatError(f"{name}: not a valid .nova bundle: it has no '{section}' "
                                f"section ({what}); is it a plain object file, or was it "
                                f"stripped?")
    if len(found) > 1:
        raise BundleFormatError(f"{name}: not a valid .nova bundle: {len(found)} '{section}' "
                                f"sections, expected one")
    return found[0]


def _check_seal(elf: ElfFile, name: str) -> str:
    section = _unique_section(elf, SEAL_SECTION, name, "the integrity seal")
    content = elf.section_data(section)
    if len(content) != SEAL_SIZE:
        raise BundleFormatError(f"{name}: not a valid .nova bundle: the seal section is "
                                f"{len(content)} bytes, expected {SEAL_SIZE}")
    if not content.startswith(SEAL_MAGIC):
        raise BundleFormatError(f"{name}: not a valid .nova bundle: bad seal magic "
                                f"{content[:len(SEAL_MAGIC)]!r} (expected {SEAL_MAGIC!r})")
    stored = content[SEAL_DIGEST_OFFSET:]
    computed = seal_digest(elf.data, section.offset)
    if stored != computed:
        raise BundleFormatError(
            f"{name}: the bundle is corrupt or was modified after it was built: its seal "
            f"(SHA-256 {stored.hex()[:16]}...) does not match its contents "
            f"(SHA-256 {computed.hex()[:16]}...); {REBUILD_HINT}")
    return stored.hex()


def _read_manifest(elf: ElfFile, name: str) -> Manifest:
    section = _unique_section(elf, MANIFEST_SECTION, name, "the manifest")
    prefix = f"{name}: invalid manifest"
    try:
        text = elf.section_data(section).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleFormatError(f"{prefix}: not UTF-8 text ({exc.reason} at byte "
                                f"{exc.start})") from None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleFormatError(f"{prefix}: not JSON ({exc})") from None
    if isinstance(raw, dict):
        _check_versions(raw, name)
    try:
        manifest = Manifest.from_dict(raw)
    except ValueError as exc:
        raise BundleFormatError(f"{prefix}: {exc}") from None
    _check_unique(manifest, prefix)
    return manifest


def _check_versions(raw: dict, name: str) -> None:
    """Format name, format version and ABI version, checked before the rest of the schema (a
    bundle of another version may have another schema)."""
    fmt = raw.get("format")
    if fmt != FORMAT_NAME:
        raise BundleFormatError(f"{name}: not a .nova bundle: manifest format is {fmt!r}, "
                                f"expected {FORMAT_NAME!r}")
    version = raw.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        producer = raw.get("producer")
        by = f" by {producer}" if isinstance(producer, str) else ""
        if isinstance(version, int) and not isinstance(version, bool) and \
                version > FORMAT_VERSION:
            advice = "upgrade Nova, or rebuild the bundle with this Nova"
        else:
            advice = REBUILD_HINT
        raise BundleFormatError(f"{name}: unsupported bundle format version {version!r} (built"
                                f"{by}); this Nova reads format version {FORMAT_VERSION}: "
                                f"{advice}")
    abi = raw.get("abi_version")
    if abi != ABI_VERSION or isinstance(abi, bool):
        raise BundleFormatError(f"{name}: the bundle uses runtime ABI version {abi!r}; this Nova's "
                                f"runtime implements ABI version {ABI_VERSION}: {REBUILD_HINT}")


def _check_unique(manifest: Manifest, prefix: str) -> None:
    for what, names in (("entry point", [e.name for e in manifest.entries]),
                        ("device module", [m.name for m in manifest.modules])):
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise BundleFormatError(f"{prefix}: duplicate {what} name(s): {', '.join(dups)}")
    for module in manifest.modules:
        kinds = [p.kind for p in module.payloads]
        if len(set(kinds)) != len(kinds):
            raise BundleFormatError(f"{prefix}: device module '{module.name}' lists a payload "
                                    f"kind twice")
        kernels = [k.name for k in module.kernels]
        if len(set(kernels)) != len(kernels):
            raise BundleFormatError(f"{prefix}: device module '{module.name}' lists a kernel "
                                    f"twice")


def _read_payloads(elf: ElfFile, manifest: Manifest, name: str
                   ) -> dict[tuple[str, PayloadKind], bytes]:
    result: dict[tuple[str, PayloadKind], bytes] = {}
    for module in manifest.modules:
        for payload in module.payloads:
            where = f"{name}: device module '{module.name}', {payload.kind.value} payload"
            expected_section = payload_section(payload.kind, module.name)
            if payload.section != expected_section:
                raise BundleFormatError(f"{where}: manifest names section '{payload.section}', "
                                        f"expected '{expected_section}'")
            found = elf.sections_named(payload.section)
            if len(found) != 1:
                problem = "is missing" if not found else f"appears {len(found)} times"
                raise BundleFormatError(f"{where}: section '{payload.section}' {problem}")
            content = elf.section_data(found[0])
            if not found[0].is_alloc:
                raise BundleFormatError(f"{where}: section '{payload.section}' is not "
                                        f"allocatable, so host code could not reach it")
            stored_size = payload.size + (1 if payload.kind is PayloadKind.PTX else 0)
            if len(content) != stored_size:
                raise BundleFormatError(f"{where}: section '{payload.section}' holds "
                                        f"{len(content)} bytes, the manifest says {stored_size}")
            if payload.kind is PayloadKind.PTX:
                if content[-1:] != b"\0":
                    raise BundleFormatError(f"{where}: the PTX is not NUL-terminated")
                content = content[:-1]
            digest = sha256(content).hexdigest()
            if digest != payload.sha256:
                raise BundleFormatError(f"{where}: SHA-256 {digest} does not match the "
                                        f"manifest's {payload.sha256}")
            result[(module.name, payload.kind)] = content
    return result


def _check_symbols(symbols: tuple[ElfSymbol, ...], manifest: Manifest, name: str) -> None:
    defined = {s.name for s in symbols if s.defined and s.is_global}
    needed: list[tuple[str, str]] = [(e.symbol, f"entry point '{e.name}'")
                                     for e in manifest.entries]
    needed += [(DEVICE_MODULE_SYMBOL_PREFIX + m.name, f"device module '{m.name}' descriptor")
               for m in manifest.modules]
    for symbol, what in needed:
        if symbol not in defined:
            raise BundleFormatError(f"{name}: the host object does not define the global symbol "
                                    f"'{symbol}' of {what}")


def describe_entry(entry: EntryPoint) -> str:
    """`name(arg types) -> (result types)` in MLIR spelling, for messages and nova-objdump."""
    args = ", ".join(t.mlir for t in entry.args)
    results = ", ".join(t.mlir for t in entry.results)
    return f"{entry.name}({args})" + (f" -> ({results})" if entry.results else "")
