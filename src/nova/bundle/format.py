"""The .nova format in code: section names, the manifest schema, and its JSON form.

A .nova file is an x86-64 ELF relocatable object (the host code) whose extra sections carry every
device module's images and a manifest; docs/bundle-format.md is the prose specification. This
module is shared by the compiler (writer) and the runtime (reader) and imports neither.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum

FORMAT_NAME = "nova-bundle"
FORMAT_VERSION = 1
PRODUCER = "nova 0.1.0"
HOST_TRIPLE = "x86_64-unknown-linux-gnu"

MANIFEST_SECTION = ".nova.manifest"
SEAL_SECTION = ".nova.seal"
SEAL_MAGIC = b"NOVASEAL"
SEAL_SIZE = 8 + 32  # magic + SHA-256 of the whole file with the digest bytes zeroed


class PayloadKind(StrEnum):
    """Kinds of device image a device module may carry."""

    PTX = "ptx"
    CUBIN = "cubin"
    CPU_OBJECT = "cpuobj"


def payload_section(kind: PayloadKind, module: str) -> str:
    """ELF section holding one image, e.g. `.nova.ptx.main_kernel`."""
    return f".nova.{kind.value}.{module}"


@dataclass(frozen=True)
class TypeSpec:
    """An argument/result type of an entry point or kernel as the runtime needs it.

    kind: 'scalar' or 'memref'. dtype: 'i1','i8','i16','i32','i64','index','f16','bf16','f32','f64'.
    shape: memref sizes, -1 for dynamic. mlir: the type's MLIR spelling, for messages.
    """

    kind: str
    dtype: str
    mlir: str
    shape: tuple[int, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class EntryPoint:
    """A public host function callable from Python: `symbol` is its __nova_entry_ wrapper."""

    name: str
    symbol: str
    args: tuple[TypeSpec, ...]
    results: tuple[TypeSpec, ...]


@dataclass(frozen=True)
class KernelParam:
    """One expanded kernel parameter (a memref contributes 3 + 2*rank of them)."""

    llvm_type: str  # 'ptr', 'i64', 'i32', 'float', ...
    size: int  # bytes
    arg_index: int  # which MLIR kernel argument it comes from


@dataclass(frozen=True)
class Kernel:
    name: str
    args: tuple[TypeSpec, ...]
    params: tuple[KernelParam, ...]
    static_shared_bytes: int = 0
    uses_barriers: bool = False


@dataclass(frozen=True)
class Payload:
    kind: PayloadKind
    section: str
    size: int
    sha256: str
    arch: str  # 'sm_90' for ptx/cubin, 'x86_64' for cpu objects


@dataclass(frozen=True)
class DeviceModule:
    name: str
    kernels: tuple[Kernel, ...]
    payloads: tuple[Payload, ...]

    def payload(self, kind: PayloadKind) -> Payload | None:
        return next((p for p in self.payloads if p.kind is kind), None)


@dataclass(frozen=True)
class Manifest:
    arch: str
    entries: tuple[EntryPoint, ...]
    modules: tuple[DeviceModule, ...]
    source_name: str = ""
    format: str = FORMAT_NAME
    format_version: int = FORMAT_VERSION
    producer: str = PRODUCER
    abi_version: int = 1
    host_triple: str = HOST_TRIPLE
    extra: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Manifest:
        """Parse a manifest; raises KeyError/TypeError/ValueError on schema mismatch (the reader
        turns those into BundleFormatError)."""
        raw = json.loads(text)
        return Manifest(
            arch=raw["arch"],
            entries=tuple(
                EntryPoint(e["name"], e["symbol"], _types(e["args"]), _types(e["results"]))
                for e in raw["entries"]
            ),
            modules=tuple(_module(m) for m in raw["modules"]),
            source_name=raw.get("source_name", ""),
            format=raw["format"],
            format_version=int(raw["format_version"]),
            producer=raw["producer"],
            abi_version=int(raw["abi_version"]),
            host_triple=raw["host_triple"],
            extra=dict(raw.get("extra", {})),
        )


def _types(items: list[dict]) -> tuple[TypeSpec, ...]:
    return tuple(TypeSpec(t["kind"], t["dtype"], t["mlir"], tuple(t["shape"])) for t in items)


def _module(raw: dict) -> DeviceModule:
    kernels = tuple(
        Kernel(
            k["name"],
            _types(k["args"]),
            tuple(KernelParam(p["llvm_type"], int(p["size"]), int(p["arg_index"]))
                  for p in k["params"]),
            int(k.get("static_shared_bytes", 0)),
            bool(k.get("uses_barriers", False)),
        )
        for k in raw["kernels"]
    )
    payloads = tuple(
        Payload(PayloadKind(p["kind"]), p["section"], int(p["size"]), p["sha256"], p["arch"])
        for p in raw["payloads"]
    )
    return DeviceModule(raw["name"], kernels, payloads)
