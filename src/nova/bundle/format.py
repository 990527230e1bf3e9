"""The .nova format in code: section names, the manifest schema, and its JSON form.

A .nova file is an x86-64 ELF relocatable object (the host code) whose extra sections carry every
device module's images and a manifest; docs/bundle-format.md is the prose specification. This
module is shared by the compiler (writer) and the runtime (reader) and imports neither.
"""

from __future__ import annotations

import builtins
from enum import StrEnum

from nova.bundle.kernel_entry import Kernel, KernelParam, TypeSpec
from nova.hashing import sha256
from nova.records import Record, as_dict

FORMAT_NAME = "nova-bundle"
FORMAT_VERSION = 1
PRODUCER = "nova 0.1.0"
HOST_TRIPLE = "x86_64-unknown-linux-gnu"

MANIFEST_SECTION = ".nova.manifest"
SEAL_SECTION = ".nova.seal"
SEAL_MAGIC = b"NOVASEAL"
SEAL_SIZE = 8 + 32  # magic + SHA-256 of the whole file with the digest bytes zeroed
SEAL_DIGEST_OFFSET = 8  # where the digest starts inside the seal section

ABI_VERSION = 1
"""The runtime ABI version this format carries; equals `nova.abi.ABI_VERSION` (a test
checks). Repeated here so the bundle reader does not import the runtime package."""

CPU_ARCH = "x86_64"
"""`Payload.arch` of CPU-device objects."""

DEVICE_MODULE_SYMBOL_PREFIX = "__nova_devmod_"
"""Descriptor global of device module `m` (same as `nova.abi.DEVICE_MODULE_PREFIX`)."""


class PayloadKind(StrEnum):
    """Kinds of device image a device module may carry."""

    PTX = "ptx"
    CUBIN = "cubin"
    CPU_OBJECT = "cpuobj"


def seal_digest(file_bytes: bytes, seal_offset: int) -> bytes:
    """SHA-256 of the whole file with the 32 digest bytes of the seal (at `seal_offset` +
    SEAL_DIGEST_OFFSET) taken as zero: what `.nova.seal` must hold after its magic."""
    start = seal_offset + SEAL_DIGEST_OFFSET
    end = start + SEAL_SIZE - SEAL_DIGEST_OFFSET
    digest = sha256(size_hint=len(file_bytes))
    digest.update(memoryview(file_bytes)[:start])
    digest.update(bytes(end - start))
    digest.update(memoryview(file_bytes)[end:])
    return digest.digest()


def payload_section(kind: PayloadKind, module: str) -> str:
    """ELF section holding one image, e.g. `.nova.ptx.main_kernel`."""
    return f".nova.{kind.value}.{module}"


class EntryPoint(Record):
    """A public host function callable from Python: `symbol` is its __nova_entry_ wrapper.

    `replay_ops`: 0 when the runtime must run the host code on every call; else the entry is
    replayable as a recorded graph and issues that many stream operations (loops counted twice;
    nova.backends.host.replay, docs/async.md "Automatic graphs"). Optional in the JSON (older
    bundles: 0)."""

    __match_args__ = ("name", "symbol", "args", "results", "replay_ops")
    _fields = __match_args__

    name: str
    symbol: str
    args: tuple[TypeSpec, ...]
    results: tuple[TypeSpec, ...]
    replay_ops: int

    def __init__(self, name: str, symbol: str, args: tuple[TypeSpec, ...],
                 results: tuple[TypeSpec, ...], replay_ops: int = 0) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "symbol", symbol)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "results", results)
        object.__setattr__(self, "replay_ops", replay_ops)


class Payload(Record):
    """One image of a device module: its section, size (PTX: without the NUL) and SHA-256."""

    __match_args__ = ("kind", "section", "size", "sha256", "arch")
    _fields = __match_args__

    kind: PayloadKind
    section: str
    size: int
    sha256: str
    arch: str  # 'sm_90' for ptx/cubin, 'x86_64' for cpu objects

    def __init__(self, kind: PayloadKind, section: str, size: int, sha256: str, arch: str) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "section", section)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "arch", arch)


class DeviceModule(Record):
    """One gpu.module: its kernels and the images (payloads) built for it."""

    __match_args__ = ("name", "kernels", "payloads")
    _fields = __match_args__

    name: str
    kernels: tuple[Kernel, ...]
    payloads: tuple[Payload, ...]

    def __init__(self, name: str, kernels: tuple[Kernel, ...],
                 payloads: tuple[Payload, ...]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kernels", kernels)
        object.__setattr__(self, "payloads", payloads)

    def payload(self, kind: PayloadKind) -> Payload | None:
        return next((p for p in self.payloads if p.kind is kind), None)


class Manifest(Record):
    """Everything the runtime needs to know about a bundle; stored as JSON in `.nova.manifest`
    (docs/bundle-format.md, section 4, gives the schema)."""

    __match_args__ = ("arch", "entries", "modules", "source_name", "format", "format_version",
                      "producer", "abi_version", "host_triple", "extra")
    _fields = __match_args__

    arch: str
    entries: tuple[EntryPoint, ...]
    modules: tuple[DeviceModule, ...]
    source_name: str
    format: str
    format_version: int
    producer: str
    abi_version: int
    host_triple: str
    extra: dict[str, str]

    def __init__(self, arch: str, entries: tuple[EntryPoint, ...],
                 modules: tuple[DeviceModule, ...], source_name: str = "",
                 format: str = FORMAT_NAME, format_version: int = FORMAT_VERSION,
                 producer: str = PRODUCER, abi_version: int = ABI_VERSION,
                 host_triple: str = HOST_TRIPLE, extra: dict[str, str] | None = None) -> None:
        object.__setattr__(self, "arch", arch)
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "modules", modules)
        object.__setattr__(self, "source_name", source_name)
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "format_version", format_version)
        object.__setattr__(self, "producer", producer)
        object.__setattr__(self, "abi_version", abi_version)
        object.__setattr__(self, "host_triple", host_triple)
        object.__setattr__(self, "extra", {} if extra is None else extra)

    def to_json(self) -> str:
        """The manifest's JSON text (stable: sorted keys), as stored in `.nova.manifest`."""
        import json  # bundles' only: a cached kernel's first call imports this module, no json

        return json.dumps(as_dict(self), indent=1, sort_keys=True)

    def module(self, name: str) -> DeviceModule | None:
        """The device module called `name`, or None."""
        return next((m for m in self.modules if m.name == name), None)

    def entry(self, name: str) -> EntryPoint | None:
        """The entry point called `name`, or None."""
        return next((e for e in self.entries if e.name == name), None)

    @staticmethod
    def from_json(text: str) -> Manifest:
        """Parse a manifest; raises ValueError naming the offending field on any schema mismatch
        (the reader turns it into BundleFormatError)."""
        import json

        try:
            raw = json.loads(text)
        except RecursionError:
            raise ValueError("manifest JSON is nested too deeply") from None
        return Manifest.from_dict(raw)

    @staticmethod
    def from_dict(raw: object) -> Manifest:
        """Build a manifest from decoded JSON, checking every field's presence and type."""
        obj = _Obj(raw, "manifest")
        return Manifest(
            arch=obj.str("arch"),
            entries=tuple(_entry(e) for e in obj.list("entries")),
            modules=tuple(_module(m) for m in obj.list("modules")),
            source_name=obj.str("source_name", ""),
            format=obj.str("format"),
            format_version=obj.int("format_version"),
            producer=obj.str("producer"),
            abi_version=obj.int("abi_version"),
            host_triple=obj.str("host_triple"),
            extra=obj.str_dict("extra"),
        )


class _Obj:
    """A JSON object under validation; `path` names it in error messages."""

    def __init__(self, raw: object, path: str) -> None:
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: expected a JSON object, found {_json_kind(raw)}")
        self.raw = raw
        self.path = path

    def _get(self, key: str, default: object) -> object:
        if key in self.raw:
            return self.raw[key]
        if default is _MISSING:
            raise ValueError(f"{self.path}: missing field '{key}'")
        return default

    def str(self, key: str, default: object = None) -> str:
        value = self._get(key, _MISSING if default is None else default)
        if not isinstance(value, str):
            raise ValueError(f"{self.path}.{key}: expected a string, found {_json_kind(value)}")
        return value

    # Annotations below name `builtins.` types: in the class body `str`/`int`/... are the methods.
    def int(self, key: builtins.str, default: object = None,
            minimum: builtins.int | None = None) -> builtins.int:
        value = self._get(key, _MISSING if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self.path}.{key}: expected an integer, found {_json_kind(value)}")
        if minimum is not None and value < minimum:
            raise ValueError(f"{self.path}.{key}: {value} is below the minimum {minimum}")
        return value

    def bool(self, key: builtins.str, default: builtins.bool) -> builtins.bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise ValueError(f"{self.path}.{key}: expected true/false, found {_json_kind(value)}")
        return value

    def list(self, key: builtins.str) -> builtins.list[_Obj]:
        value = self._get(key, _MISSING)
        if not isinstance(value, list):
            raise ValueError(f"{self.path}.{key}: expected a list, found {_json_kind(value)}")
        return [_Obj(item, f"{self.path}.{key}[{i}]") for i, item in enumerate(value)]

    def int_list(self, key: builtins.str) -> tuple[builtins.int, ...]:
        value = self._get(key, _MISSING)
        if not isinstance(value, list) or any(
                isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise ValueError(f"{self.path}.{key}: expected a list of integers")
        return tuple(value)

    def str_dict(self, key: builtins.str) -> dict[builtins.str, builtins.str]:
        value = self._get(key, {})
        if not isinstance(value, dict) or any(not isinstance(v, str) for v in value.values()):
            raise ValueError(f"{self.path}.{key}: expected an object of strings")
        return dict(value)


_MISSING = object()


def _json_kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _types(items: list[_Obj]) -> tuple[TypeSpec, ...]:
    specs = []
    for t in items:
        shape = t.int_list("shape")
        if any(d < -1 for d in shape):
            raise ValueError(f"{t.path}.shape: sizes must be >= 0, or -1 for dynamic")
        specs.append(TypeSpec(t.str("kind"), t.str("dtype"), t.str("mlir"), shape))
    return tuple(specs)


def _entry(e: _Obj) -> EntryPoint:
    return EntryPoint(e.str("name"), e.str("symbol"), _types(e.list("args")),
                      _types(e.list("results")), e.int("replay_ops", 0, minimum=0))


def _param(p: _Obj) -> KernelParam:
    """A KernelParam; `align` is optional (older manifests lack it) and a power of two."""
    param = KernelParam(p.str("llvm_type"), p.int("size", minimum=1),
                        p.int("arg_index", minimum=0), p.int("align", 0, minimum=0))
    if param.align & (param.align - 1):
        raise ValueError(f"{p.path}.align: {param.align} is not a power of two")
    return param


def _module(m: _Obj) -> DeviceModule:
    name = m.str("name")
    kernels = tuple(
        Kernel(
            k.str("name"),
            _types(k.list("args")),
            tuple(_param(p) for p in k.list("params")),
            k.int("static_shared_bytes", 0, minimum=0),
            k.bool("uses_barriers", False),
        )
        for k in m.list("kernels")
    )
    payloads = []
    for p in m.list("payloads"):
        kind_text = p.str("kind")
        try:
            kind = PayloadKind(kind_text)
        except ValueError:
            known = ", ".join(k.value for k in PayloadKind)
            raise ValueError(f"{p.path}.kind: unknown payload kind '{kind_text}' "
                             f"(known: {known})") from None
        digest = p.str("sha256")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"{p.path}.sha256: expected 64 lowercase hex digits")
        payloads.append(Payload(kind, p.str("section"), p.int("size", minimum=0), digest,
                                p.str("arch")))
    return DeviceModule(name, kernels, tuple(payloads))
