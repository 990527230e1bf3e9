"""A deterministic mutation sweep over the ELF fields of a real bundle, each mutant resealed.

Every field of the ELF header, of every section header, symbol and relocation of the host object
and of its embedded CPU object (whose manifest digest is rewritten to match) is set to a handful
of values (neighbours, 0, powers of two, all ones, the file size, ...); the file is resealed
and then must either be refused (BundleFormatError/DeviceError) or load and compute exactly what
the original does.

Run as a script, `python bundle_mutations.py BUNDLE [STRIDE]`, it prints one line per mutant
*before* trying it, so that if LLVM aborts the process the last line names the culprit, and a
JSON summary at the end. tests/unit/test_bundle_verify.py runs it in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator

import numpy as np

from nova.bundle.elf import SHDR_SIZE, SYM_SIZE, parse_elf
from nova.bundle.format import SEAL_DIGEST_OFFSET, SEAL_SECTION, PayloadKind, seal_digest
from nova.bundle.reader import read_bundle
from nova.bundle.writer import seal_bundle
from nova.errors import BackendError, BundleFormatError, DeviceError

HEADER_FIELDS = [(7, 1), (8, 1), (9, 1), (15, 1), (16, 2), (18, 2), (20, 4), (24, 8), (32, 8),
                 (40, 8), (48, 4), (52, 2), (54, 2), (56, 2), (58, 2), (60, 2), (62, 2)]
SECTION_FIELDS = [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (40, 4), (44, 4), (48, 8),
                  (56, 8)]
SYMBOL_FIELDS = [(0, 4), (4, 1), (5, 1), (6, 2), (8, 8), (16, 8)]
RELA_FIELDS = [(0, 8), (8, 4), (12, 4), (16, 8)]


def values(original: int, width: int, file_size: int) -> list[int]:
    """The values a field of `width` bytes holding `original` is set to."""
    top = (1 << (8 * width)) - 1
    candidates = {0, 1, 2, 3, 5, 16, 64, original + 1, original - 1, original + 8, original - 8,
                  original + 16, original - 16, original * 2, original | (1 << (8 * width - 1)),
                  top, file_size, file_size - 8}
    return sorted(v for v in candidates if 0 <= v <= top and v != original)


def field_sites(data: bytes, label: str) -> Iterator[tuple[str, int, int]]:
    """(name, file offset, width) of every mutable field of the object `data`."""
    elf = parse_elf(data)
    yield from ((f"{label} header+{o}", o, w) for o, w in HEADER_FIELDS)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    for section in elf.sections:
        base = shoff + section.index * SHDR_SIZE
        yield from ((f"{label} section[{section.index}] {section.name} +{o}", base + o, w)
                    for o, w in SECTION_FIELDS)
    for table in (s for s in elf.sections if s.type == 2):
        for index in range(table.size // SYM_SIZE):
            base = table.offset + index * SYM_SIZE
            yield from ((f"{label} symbol#{index} +{o}", base + o, w) for o, w in SYMBOL_FIELDS)
    for rela in (s for s in elf.sections if s.type == 4):
        for index in range(rela.size // 24):
            base = rela.offset + index * 24
            yield from ((f"{label} {rela.name}#{index} +{o}", base + o, w)
                        for o, w in RELA_FIELDS)


def reseal(data: bytes, seal_offset: int) -> bytes:
    """`seal_bundle(data)`, or when the edit makes the file unparsable for the writer, the digest
    written where the seal was (so the mutant reaches the structural checks wherever possible)."""
    try:
        return seal_bundle(data)
    except BackendError:
        sealed = bytearray(data)
        start = seal_offset + SEAL_DIGEST_OFFSET
        sealed[start:start + 32] = seal_digest(data, seal_offset)
        return bytes(sealed)


def mutants(bundle: bytes, stride: int = 1) -> Iterator[tuple[str, bytes]]:
    """(description, resealed mutant) for the host object's fields, then the CPU object's."""
    seal_offset = parse_elf(bundle).sections_named(SEAL_SECTION)[0].offset
    count = 0
    for name, offset, width in field_sites(bundle, "host"):
        original = int.from_bytes(bundle[offset:offset + width], "little")
        for value in values(original, width, len(bundle)):
            count += 1
            if count % stride == 0:
                edited = bytearray(bundle)
                edited[offset:offset + width] = value.to_bytes(width, "little")
                yield f"{name} = {value}", reseal(bytes(edited), seal_offset)
    yield from _cpu_mutants(bundle, stride)


def _cpu_mutants(bundle: bytes, stride: int) -> Iterator[tuple[str, bytes]]:
    parsed = read_bundle(bundle)
    module = parsed.manifest.modules[0]
    image = parsed.payload(module.name, PayloadKind.CPU_OBJECT)
    assert image is not None
    start = bundle.index(image)
    old_digest = hashlib.sha256(image).hexdigest().encode()
    count = 0
    for name, offset, width in field_sites(image, "cpuobj"):
        original = int.from_bytes(image[offset:offset + width], "little")
        for value in values(original, width, len(image)):
            count += 1
            if count % stride:
                continue
            edited = bytearray(image)
            edited[offset:offset + width] = value.to_bytes(width, "little")
            new_digest = hashlib.sha256(bytes(edited)).hexdigest().encode()
            data = bytearray(bundle)
            data[start:start + len(image)] = edited
            data = bytearray(bytes(data).replace(old_digest, new_digest))
            yield f"{name} = {value}", seal_bundle(bytes(data))


CODE_EDIT = re.compile(r" symbol#\d+ | \.rela\S*#\d+ ")
"""Mutants of a symbol or a relocation entry that pass the structural check still change what
the code computes (which function a call reaches, which bytes an address names, where a pointer
is patched in): like an edit of the machine code itself, nothing but a signature can refuse them.
They must never harm the linker (no death while loading), but may fail or crash when run."""


def run(data: bytes) -> np.ndarray:
    """Load on the cpu device and compute vecadd (examples/vecadd.mlir) of two small arrays."""
    import nova

    a = np.arange(300, dtype=np.float32)
    b = np.full(300, 0.5, dtype=np.float32)
    c = np.zeros(300, dtype=np.float32)
    with nova.load(data, "cpu") as module:
        module.vecadd(a, b, c)
    return c


CHILD_SECONDS = 20
"""How long one mutant may run: an edited relocation can make the host code call anything,
including a wait that never ends (seen: a call retargeted so that the process deadlocked on
the GIL). Such a child is killed and reported as hung: like a crash, acceptable for a code
edit, a bug anywhere else (and always while loading)."""


def _read_stages(read_fd: int, pid: int) -> tuple[bytes, bool]:
    """Everything the child writes until it exits; (stages, True) when it outlives
    CHILD_SECONDS (then it is killed)."""
    deadline = time.monotonic() + CHILD_SECONDS
    stages = b""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([pipe], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return stages, True
            chunk = pipe.read(64)
            if not chunk:
                return stages, False
            stages += chunk


def try_in_child(data: bytes, expected: np.ndarray | None) -> str:
    """Load and run `data` in a forked child: 'refused at load', 'identical run', 'different
    result', 'died while running' or 'hung while running' (after linking), or 'DIED WHILE
    LOADING' / 'HUNG WHILE LOADING' (the linker: a bug)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report each stage through the pipe, never return
        os.close(read_fd)
        code = 0
        try:
            import nova

            with nova.load(data, "cpu") as module:
                os.write(write_fd, b"L")
                a = np.arange(300, dtype=np.float32)
                b = np.full(300, 0.5, dtype=np.float32)
                c = np.zeros(300, dtype=np.float32)
                module.vecadd(a, b, c)
            same = expected is not None and np.array_equal(c, expected)
            os.write(write_fd, b"I" if same else b"D")
        except (BundleFormatError, DeviceError):
            os.write(write_fd, b"R")
        except BaseException:
            os.write(write_fd, b"E")
            code = 1
        os._exit(code)
    os.close(write_fd)
    stages, hung = _read_stages(read_fd, pid)
    os.waitpid(pid, 0)
    if hung:
        return "hung while running" if stages.startswith(b"L") else "HUNG WHILE LOADING"
    if stages.endswith(b"R"):
        return "refused at load"
    if stages.endswith(b"I"):
        return "identical run"
    if stages.endswith(b"D"):
        return "different result"
    return "died while running" if stages.startswith(b"L") else "DIED WHILE LOADING"


def main(argv: list[str]) -> int:
    with open(argv[1], "rb") as handle:
        bundle = handle.read()
    stride = int(argv[2]) if len(argv) > 2 else 1
    import nova.runtime.executor  # noqa: F401  (imported once, before forking)

    expected = None
    with tempfile.TemporaryDirectory() as tmp:  # the child computes the original's result
        path = os.path.join(tmp, "expected.npy")
        pid = os.fork()
        if pid == 0:
            np.save(path, run(bundle))
            os._exit(0)
        os.waitpid(pid, 0)
        expected = np.load(path)
    outcomes: Counter[str] = Counter()
    unexpected: list[str] = []
    for label, data in mutants(bundle, stride):
        print(label, flush=True)
        try:
            read_bundle(data)
        except BundleFormatError:
            outcomes["refused by the reader"] += 1
            continue
        outcome = try_in_child(data, expected)
        print(f"    accepted: {outcome}", flush=True)
        outcomes[outcome] += 1
        code_edit = CODE_EDIT.search(label) is not None
        if outcome in ("DIED WHILE LOADING", "HUNG WHILE LOADING") or (
                outcome not in ("identical run", "refused at load") and not code_edit):
            unexpected.append(f"{label}: {outcome}")
    print(json.dumps({"outcomes": outcomes, "unexpected": unexpected}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
