"""Structural verification (nova.bundle.verify): an edited and resealed bundle never reaches LLVM.

The e1 reproducer of issue 12 (reliability-2026-11-26/e1-resealed-bundle-llvm-abort.py in the
shared reproducer directory) aborted the process inside RuntimeDyld; its three edits are repeated
here, then single-field edits of a real bundle, and a mutation sweep run in a subprocess (so an
abort fails the test instead of killing pytest).
"""

from __future__ import annotations

import functools
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import nova
from nova import config
from nova.bundle.elf import SHDR_SIZE, SYM_SIZE, parse_elf
from nova.bundle.reader import read_bundle
from nova.bundle.verify import verify_object
from nova.bundle.writer import seal_bundle
from nova.compiler import driver
from nova.errors import BundleFormatError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "vecadd.mlir"
SWEEP = Path(__file__).with_name("bundle_mutations.py")


@functools.cache
def bundle() -> bytes:
    """examples/vecadd.mlir compiled for the cpu device (no GPU images)."""
    with config.scoped(cache_enabled=False):
        return driver.compile_to_bundle(EXAMPLE.read_text(), EXAMPLE.name,
                                        driver.CompileOptions(ptx=False, cubin=False))


def shoff(data: bytes | bytearray) -> int:
    return int(struct.unpack_from("<Q", data, 0x28)[0])


def section_index(data: bytes, name: str) -> int:
    return next(s.index for s in parse_elf(data).sections if s.name == name)


def edited(edit: Callable[[bytearray], None]) -> bytes:
    data = bytearray(bundle())
    edit(data)
    return seal_bundle(bytes(data))


def refused(data: bytes, match: str) -> str:
    with pytest.raises(BundleFormatError, match=match) as info:
        read_bundle(data, name="t.nova")
    with pytest.raises(BundleFormatError, match=match):
        nova.load(data, "cpu")
    return str(info.value)


def field(name: str, offset: int) -> Callable[[bytes | bytearray], int]:
    """File offset of a section header field of section `name`."""
    return lambda data: shoff(data) + section_index(bytes(data), name) * SHDR_SIZE + offset


def test_real_bundles_pass_and_run() -> None:
    data = bundle()
    verify_object(data)
    a = np.arange(10, dtype=np.float32)
    c = np.zeros(10, dtype=np.float32)
    with nova.load(data, "cpu") as module:
        module.vecadd(a, a, c)
    assert np.array_equal(c, a + a)


# --- the e1 reproducer's three edits --------------------------------------------------------

def test_e1_align() -> None:
    at = field(".ltext", 48)(bundle())
    data = edited(lambda d: struct.pack_into("<Q", d, at, 3))
    message = refused(data, r"section \[\d+\] '.ltext' alignment 3 is not a power of two")
    assert message.startswith("t.nova: not a valid .nova bundle: host object:")


def test_e1_rela() -> None:
    rela = parse_elf(bundle()).sections[section_index(bundle(), ".rela.ltext")]

    def edit(d: bytearray) -> None:
        old = struct.unpack_from("<Q", d, rela.offset)[0]
        struct.pack_into("<Q", d, rela.offset, old + 0x100000)

    refused(edited(edit), r"'.rela.ltext' relocation #0: offset \d+ \+ 8 bytes lies outside "
                          r"section \[\d+\] '.ltext'")


def test_e1_offset() -> None:
    at = field(".ltext", 24)(bundle())
    data = edited(lambda d: struct.pack_into("<Q", d, at, struct.unpack_from("<Q", d, at)[0] + 1))
    refused(data, r"'.ltext' offset \d+ is not a multiple of its alignment 16")


def test_e1_reproducer_script(tmp_path: Path) -> None:
    """The reproducer itself, when the shared directory is there: every mode is refused."""
    script = ROOT.parent / "shared" / "repro" / "reliability-2026-11-26" / \
        "e1-resealed-bundle-llvm-abort.py"
    if not script.exists():
        pytest.skip(f"{script} is not available here (the three edits are tested above)")
    path = tmp_path / "vecadd.nova"
    path.write_bytes(bundle())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for mode in ("align", "rela", "offset"):
        out = subprocess.run([sys.executable, str(script), str(path), mode], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
        run = subprocess.run([sys.executable, "-m", "nova", "run", out, "--device", "cpu"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 1, (mode, run.returncode, run.stderr)
        assert "not a valid .nova bundle: host object:" in run.stderr, run.stderr


# --- one field at a time --------------------------------------------------------------------

def _sym(data: bytes, name: str) -> int:
    """File offset of the symbol table entry of `name`."""
    elf = parse_elf(data)
    table = next(s for s in elf.sections if s.name == ".symtab")
    index = next(i for i, s in enumerate(elf.symbols()) if s.name == name)
    return table.offset + index * SYM_SIZE


CASES: list[tuple[str, Callable[[bytes], tuple[int, str, int]], str]] = [
    ("e_flags", lambda d: (0x30, "<I", 1), "e_flags is 1"),
    ("e_phnum", lambda d: (0x38, "<H", 1), "e_phnum is 1"),
    ("padding", lambda d: (0x0C, "<B", 7), "padding"),
    ("sh_addr", lambda d: (field(".ltext", 16)(d), "<Q", 0x1000), "load address"),
    ("huge align", lambda d: (field(".ltext", 48)(d), "<Q", 1 << 40), "power of two up to"),
    ("overlap", lambda d: (field(".ltext", 32)(d), "<Q", 0x700), "overlaps"),
    ("bss size", lambda d: (field(".lbss", 32)(d), "<Q", 1 << 40), "zero-initialised"),
    ("type", lambda d: (field(".ltext", 4)(d), "<I", 7), "unexpected for its name"),
    ("exec data", lambda d: (field(".nova.manifest", 8)(d), "<Q", 0x6), "unexpected for its"),
    ("rela link", lambda d: (field(".rela.ltext", 40)(d), "<I", 1), "not the symbol table"),
    ("rela info", lambda d: (field(".rela.ltext", 44)(d), "<I", 99), "out of range"),
    ("rela other", lambda d: (field(".rela.ltext", 44)(d), "<I", 2), "names a relocation"),
    ("rela entsize", lambda d: (field(".rela.ltext", 56)(d), "<Q", 16), "entry size"),
    ("symtab info", lambda d: (field(".symtab", 44)(d), "<I", 999), "beyond"),
    ("sym section", lambda d: (_sym(d, "__nova_entry_vecadd") + 6, "<H", 999), "beyond the"),
    ("sym value", lambda d: (_sym(d, "__nova_entry_vecadd") + 8, "<Q", 1 << 20), "outside"),
    ("sym bind", lambda d: (_sym(d, "__nova_entry_vecadd") + 4, "<B", 0x02), "binding"),
    ("sym in data", lambda d: (_sym(d, "__nova_entry_vecadd") + 6, "<H",
                               section_index(d, ".nova.manifest")), "a function in"),
]


@pytest.mark.parametrize(("what", "where", "match"), CASES, ids=[c[0] for c in CASES])
def test_single_field_edits_are_refused(what: str, where: Callable[[bytes], tuple[int, str, int]],
                                        match: str) -> None:
    offset, fmt, value = where(bundle())
    refused(edited(lambda d: struct.pack_into(fmt, d, offset, value)), match)


def _rela_entry(data: bytes, number: int) -> int:
    rela = parse_elf(data).sections[section_index(data, ".rela.ltext")]
    return rela.offset + 24 * number


def test_relocation_type_symbol_and_addend() -> None:
    at = _rela_entry(bundle(), 0)
    refused(edited(lambda d: struct.pack_into("<I", d, at + 8, 2)),
            r"relocation #0: type 2 is not one Nova's large code model uses")
    refused(edited(lambda d: struct.pack_into("<I", d, at + 12, 9999)),
            r"relocation #0: symbol index 9999 is out of range")
    refused(edited(lambda d: struct.pack_into("<I", d, at + 12, 0)),
            r"relocation #0: symbol index 0 is out of range")
    refused(edited(lambda d: struct.pack_into("<q", d, at + 16, 1 << 40)), "points outside|addend")
    second = _rela_entry(bundle(), 1)
    refused(edited(lambda d: d.__setitem__(slice(second, second + 8), d[at:at + 8])),
            "patch overlapping bytes")


def test_cpu_object_is_verified_too() -> None:
    """The CPU object inside the bundle (its digest in the manifest rewritten to match) is held
    to the same rules, by the reader and again by the cpu device before MCJIT sees it."""
    import hashlib

    from nova.bundle.format import PayloadKind
    from nova.errors import DeviceError
    from nova.runtime.cpu.module import check_elf_object

    data = bundle()
    parsed = read_bundle(data)
    module = parsed.manifest.modules[0]
    image = parsed.payload(module.name, PayloadKind.CPU_OBJECT)
    assert image is not None
    bad = bytearray(image)
    text = next(s for s in parse_elf(image).sections if s.name == ".ltext")
    struct.pack_into("<Q", bad, shoff(bad) + text.index * SHDR_SIZE + 48, 3)
    with pytest.raises(DeviceError, match="alignment 3 is not a power of two"):
        check_elf_object(bytes(bad), module.name)
    start = data.index(image)
    patched = data[:start] + bytes(bad) + data[start + len(image):]
    patched = patched.replace(hashlib.sha256(image).hexdigest().encode(),
                              hashlib.sha256(bytes(bad)).hexdigest().encode())
    refused(seal_bundle(patched), f"CPU object of device module '{module.name}': section "
                                  r"\[\d+\] '.ltext' alignment 3")


# --- the mutation sweep ---------------------------------------------------------------------

def _sweep(tmp_path: Path, stride: int) -> dict:
    path = tmp_path / "vecadd.nova"
    path.write_bytes(bundle())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SWEEP), str(path), str(stride)], env=env,
                          capture_output=True, text=True, timeout=900, cwd=SWEEP.parent)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, (f"the sweep died (status {proc.returncode}) at mutant "
                                  f"{lines[-1] if lines else '?'}: {proc.stderr[-2000:]}")
    summary = json.loads(lines[-1])
    assert not summary["unexpected"], summary
    assert summary["outcomes"]["refused by the reader"] > 0
    return summary


def test_mutation_sweep_sample(tmp_path: Path) -> None:
    """Every 17th mutant (about 500): refused, or loaded and identical; never a dead linker."""
    _sweep(tmp_path, 17)


@pytest.mark.slow
def test_mutation_sweep_full(tmp_path: Path) -> None:
    """All of them (about 8 500, a few minutes)."""
    _sweep(tmp_path, 1)


def test_cpu_kernel_lookup_refuses_names_llvm_cannot_mangle() -> None:
    """Edited host code can pass any kernel name to nova_rt_module_get_function: an empty one
    (or one starting with \\x01) made LLVM's Mangler abort the process; now a DeviceError."""
    from nova.bundle.format import PayloadKind
    from nova.errors import DeviceError
    from nova.runtime.device import ModuleImages
    from nova.runtime.selection import get_device

    parsed = read_bundle(bundle())
    module = parsed.manifest.modules[0]
    image = parsed.payload(module.name, PayloadKind.CPU_OBJECT)
    loaded = get_device("cpu").load_module(ModuleImages(module.name, cpu_object=image))
    for name in ("", "\x01", "\x01k"):
        with pytest.raises(DeviceError, match="no kernel named"):
            loaded.get_function(name)
    assert loaded.get_function(module.kernels[0].name).handle
