"""Writer + reader round trip on real llvmlite-emitted bundles, linked and inspected with MCJIT."""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import sys

import llvmlite.binding as llvm
import llvmlite.ir as ir
import pytest
from bundle_samples import (
    ENTRY,
    KERNEL,
    SAMPLE_CUBIN,
    SAMPLE_PTX,
    TRIPLE,
    build_bundle,
    cpu_object,
    default_images,
    emit_object,
    host_module,
)

from nova import abi
from nova.bundle import format as fmt
from nova.bundle.elf import parse_elf
from nova.bundle.format import Manifest, PayloadKind, payload_section
from nova.bundle.reader import read_bundle, read_bundle_file
from nova.bundle.writer import DeviceImages, embed_device_images, seal_bundle
from nova.errors import BackendError, BundleFormatError


@pytest.fixture(scope="module")
def sample() -> tuple[bytes, Manifest]:
    return build_bundle()


def test_round_trip_manifest_and_payloads(sample: tuple[bytes, Manifest]) -> None:
    data, manifest = sample
    bundle = read_bundle(data, expected_arch="sm_90", name="s.nova")
    assert bundle.manifest == manifest
    assert bundle.object_bytes == data
    assert bundle.manifest.entries == (ENTRY,)
    module = bundle.module("m")
    assert module.kernels == (KERNEL,)
    assert bundle.payload("m", PayloadKind.PTX) == SAMPLE_PTX.encode()
    assert bundle.ptx("m") == SAMPLE_PTX
    assert bundle.payload("m", PayloadKind.CUBIN) == SAMPLE_CUBIN
    cpu = bundle.payload("m", PayloadKind.CPU_OBJECT)
    assert cpu is not None and cpu[:4] == b"\x7fELF"
    for payload in module.payloads:
        assert payload.section == payload_section(payload.kind, "m")
        content = bundle.payload("m", payload.kind)
        assert content is not None
        assert payload.size == len(content)
        assert payload.sha256 == hashlib.sha256(content).hexdigest()
    assert {p.kind: p.arch for p in module.payloads} == {
        PayloadKind.PTX: "sm_90", PayloadKind.CUBIN: "sm_90", PayloadKind.CPU_OBJECT: "x86_64"}
    for section in (".nova.ptx.m", ".nova.cubin.m", ".nova.cpuobj.m", fmt.MANIFEST_SECTION,
                    fmt.SEAL_SECTION):
        assert section in bundle.section_names


def test_manifest_section_holds_the_manifest_json(sample: tuple[bytes, Manifest]) -> None:
    data, manifest = sample
    elf = parse_elf(data)
    (section,) = elf.sections_named(fmt.MANIFEST_SECTION)
    assert elf.section_data(section).decode() == manifest.to_json()
    assert Manifest.from_json(manifest.to_json()) == manifest


def test_payload_sections_are_allocatable_and_aligned(sample: tuple[bytes, Manifest]) -> None:
    elf = parse_elf(sample[0])
    for kind in PayloadKind:
        (section,) = elf.sections_named(payload_section(kind, "m"))
        assert section.is_alloc
        assert section.addralign >= 16
        assert section.offset % 16 == 0


def test_seal_is_sha256_of_file_with_digest_zeroed(sample: tuple[bytes, Manifest]) -> None:
    data = sample[0]
    elf = parse_elf(data)
    (seal,) = elf.sections_named(fmt.SEAL_SECTION)
    content = elf.section_data(seal)
    assert content[:8] == fmt.SEAL_MAGIC
    zeroed = bytearray(data)
    zeroed[seal.offset + 8:seal.offset + 40] = bytes(32)
    assert content[8:] == hashlib.sha256(zeroed).digest()
    assert seal_bundle(data) == data  # resealing is idempotent
    assert read_bundle(data).seal == content[8:].hex()
    assert read_bundle(bytearray(data)).seal == read_bundle(memoryview(data)).seal


def test_readelf_lists_the_sections(sample: tuple[bytes, Manifest], tmp_path) -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not installed")
    path = tmp_path / "s.nova"
    path.write_bytes(sample[0])
    out = subprocess.run([readelf, "-S", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    for section in (".nova.ptx.m", ".nova.cubin.m", ".nova.cpuobj.m", ".nova.manifest",
                    ".nova.seal"):
        line = next(ln for ln in out.splitlines() if f" {section} " in ln)
        assert "PROGBITS" in line
    symbols = subprocess.run([readelf, "-s", "-W", str(path)], capture_output=True, text=True,
                             check=True).stdout
    line = next(ln for ln in symbols.splitlines() if ln.endswith(" __nova_devmod_m"))
    assert "GLOBAL" in line and "OBJECT" in line and " UND " not in line


def _mcjit(data: bytes) -> llvm.ExecutionEngine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(reloc="pic")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    return engine


def test_mcjit_links_the_bundle_and_descriptor_points_at_images(
        sample: tuple[bytes, Manifest]) -> None:
    data = sample[0]
    bundle = read_bundle(data)
    engine = _mcjit(bundle.object_bytes)
    address = engine.get_global_value_address("__nova_devmod_m")
    assert address
    # host code reaches the same descriptor through its relocation
    getter = ctypes.CFUNCTYPE(ctypes.c_void_p)(engine.get_function_address("devmod_m"))
    assert getter() == address
    desc = abi.DeviceModuleDescriptor.from_address(address)
    assert desc.abi_version == abi.ABI_VERSION
    assert desc.name == b"m"
    assert desc.ptx_size == len(SAMPLE_PTX)
    assert ctypes.string_at(desc.ptx, desc.ptx_size + 1) == SAMPLE_PTX.encode() + b"\0"
    assert ctypes.string_at(desc.cubin, desc.cubin_size) == SAMPLE_CUBIN
    assert desc.cubin % 16 == 0 and desc.cpu_object % 16 == 0
    cpu = bundle.payload("m", PayloadKind.CPU_OBJECT)
    assert ctypes.string_at(desc.cpu_object, desc.cpu_object_size) == cpu
    assert engine.get_function_address(ENTRY.symbol)


def test_optimized_host_module_keeps_everything() -> None:
    """LLVM's O3 module pipeline must neither drop nor merge the bundle's globals."""
    data, manifest = build_bundle(optimize=True)
    bundle = read_bundle(data)
    assert bundle.manifest == manifest
    engine = _mcjit(data)  # keep it alive while its memory is read
    address = engine.get_global_value_address("__nova_devmod_m")
    desc = abi.DeviceModuleDescriptor.from_address(address)
    assert ctypes.string_at(desc.ptx) == SAMPLE_PTX.encode()
    assert ctypes.string_at(desc.cubin, desc.cubin_size) == SAMPLE_CUBIN


def test_absent_images_are_null_with_size_zero() -> None:
    images = (DeviceImages("a", (KERNEL,), SAMPLE_PTX, None, None),
              DeviceImages("b", (), None, None, cpu_object()))
    data, _ = build_bundle(images)
    bundle = read_bundle(data)
    assert [m.name for m in bundle.manifest.modules] == ["a", "b"]
    assert bundle.payload("a", PayloadKind.CUBIN) is None
    assert bundle.payload("b", PayloadKind.PTX) is None
    assert bundle.ptx("b") is None
    assert ".nova.cubin.a" not in bundle.section_names
    engine = _mcjit(data)
    a = abi.DeviceModuleDescriptor.from_address(engine.get_global_value_address("__nova_devmod_a"))
    b = abi.DeviceModuleDescriptor.from_address(engine.get_global_value_address("__nova_devmod_b"))
    assert (a.name, b.name) == (b"a", b"b")
    assert not a.cubin and a.cubin_size == 0 and not a.cpu_object and a.cpu_object_size == 0
    assert not b.ptx and b.ptx_size == 0 and b.cpu_object_size > 0
    assert ctypes.string_at(a.ptx) == SAMPLE_PTX.encode()


def test_descriptor_created_when_not_declared_and_llvm_used_extended() -> None:
    module = ir.Module("host")
    module.triple = TRIPLE
    keep = ir.GlobalVariable(module, ir.IntType(32), "keep_me")
    keep.initializer = ir.Constant(ir.IntType(32), 5)
    keep.linkage = "internal"
    used = ir.GlobalVariable(module, ir.ArrayType(ir.PointerType(), 1), "llvm.used")
    used.initializer = ir.Constant(used.value_type, [keep])
    used.linkage = "appending"
    used.section = "llvm.metadata"
    embed_device_images(module, (default_images("solo"),), (), "sm_80", "x.mlir")
    data = seal_bundle(emit_object(module))
    bundle = read_bundle(data, expected_arch="sm_80")
    assert bundle.manifest.arch == "sm_80" and bundle.manifest.entries == ()
    names = {s.name for s in parse_elf(data).symbols()}
    assert {"keep_me", "__nova_devmod_solo"} <= names


def test_identified_struct_declaration_is_completed() -> None:
    module = host_module(())
    struct = module.context.get_identified_type("nova.devmod")
    ptr = ir.PointerType()
    i64 = ir.IntType(64)
    struct.set_body(i64, ptr, ptr, i64, ptr, i64, ptr, i64)
    ir.GlobalVariable(module, struct, "__nova_devmod_m").linkage = "external"
    embed_device_images(module, (default_images(),), (ENTRY,), "sm_90", "x.mlir")
    read_bundle(seal_bundle(emit_object(module)))


@pytest.mark.parametrize("images, message", [
    ((DeviceImages("9bad", (), SAMPLE_PTX, None, None),), "cannot name a bundle section"),
    ((DeviceImages("a b", (), SAMPLE_PTX, None, None),), "cannot name a bundle section"),
    ((DeviceImages("m", (), SAMPLE_PTX, None, None),) * 2, "two device modules"),
    ((DeviceImages("m", (), None, None, None),), "has no image"),
    ((DeviceImages("m", (), "", None, None),), "empty"),
    ((DeviceImages("m", (), None, b"", None),), "empty"),
    ((DeviceImages("m", (), "a\0b", None, None),), "NUL"),
])
def test_writer_rejects_bad_images(images: tuple[DeviceImages, ...], message: str) -> None:
    with pytest.raises(BackendError, match=message):
        embed_device_images(host_module(()), images, (), "sm_90", "x.mlir")


def test_writer_rejects_mismatched_or_defined_descriptor() -> None:
    module = host_module(())
    ir.GlobalVariable(module, ir.IntType(64), "__nova_devmod_m")
    with pytest.raises(BackendError, match="declared as i64"):
        embed_device_images(module, (default_images(),), (), "sm_90", "x.mlir")
    module = host_module(("m",))
    embed_device_images(module, (default_images(),), (), "sm_90", "x.mlir")
    with pytest.raises(BackendError, match="already embedded"):
        embed_device_images(module, (default_images(),), (), "sm_90", "x.mlir")


def test_seal_bundle_rejects_objects_without_seal() -> None:
    with pytest.raises(BackendError, match=r"\.nova\.seal"):
        seal_bundle(emit_object(host_module(())))
    with pytest.raises(BackendError, match="not an ELF"):
        seal_bundle(b"hello")


def test_missing_file_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(BundleFormatError, match=r"cannot read bundle .*nope\.nova.*No such file"):
        read_bundle_file(tmp_path / "nope.nova")
    path = tmp_path / "ok.nova"
    data, _ = build_bundle()
    path.write_bytes(data)
    assert read_bundle_file(path).name == str(path)


def test_unknown_module_lookup_names_the_modules(sample: tuple[bytes, Manifest]) -> None:
    with pytest.raises(BundleFormatError, match=r"no device module 'zz' \(modules: m\)"):
        read_bundle(sample[0]).payload("zz", PayloadKind.PTX)


def test_abi_version_mirrors_the_runtime_contract() -> None:
    assert fmt.ABI_VERSION == abi.ABI_VERSION
    assert fmt.DEVICE_MODULE_SYMBOL_PREFIX == abi.DEVICE_MODULE_PREFIX


def test_reader_imports_no_compiler_code() -> None:
    code = ("import sys, nova.bundle.reader, nova.bundle.format\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'llvmlite') or "
            "m.startswith(('nova.ir', 'nova.lang', 'nova.passes', 'nova.backends', "
            "'nova.compiler', 'nova.runtime')))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)
