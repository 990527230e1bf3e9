"""A page corpus built from real data, for tests and benchmarks.

Classes (each an array of shape (n, page_size), uint8):

- `text`: Nova's own Python sources, page after page;
- `binary`: native code: the running Python executable and the shared libraries it has loaded
  (read from their files, skipping the ELF header page);
- `heap`: this process's heap pages (read through /proc/self/mem from the `[heap]` mapping and
  anonymous read-write mappings), the pages a zram/zswap-style compressor sees;
- `floats`: float tensors: float32 weights (Gaussian, std 0.02), activations after ReLU (half
  zeros) and a bfloat16-like tensor (float32 with the low 16 bits cleared);
- `zeros`, `random`;
- `mixed`: every class above, interleaved in a fixed pseudo-random order.

Why real data: the ratio of a page compressor depends on what pages hold; synthetic repeats
would flatter the matcher. Deterministic for a given seed and machine (the heap and libraries
differ between machines, which is the point of measuring on the machine at hand).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from nova.lz4.batch import check_page_size

CLASSES = ("text", "binary", "heap", "floats", "zeros", "random", "mixed")


def _pages_from_bytes(data: bytes, page_size: int, count: int) -> np.ndarray:
    usable = len(data) // page_size
    if usable == 0:
        return np.zeros((0, page_size), np.uint8)
    arr = np.frombuffer(data[:usable * page_size], np.uint8).reshape(usable, page_size)
    if usable >= count:
        idx = np.linspace(0, usable - 1, count).astype(np.int64)
        return arr[idx].copy()
    reps = -(-count // usable)
    return np.concatenate([arr] * reps)[:count].copy()


def text_pages(page_size: int, count: int) -> np.ndarray:
    root = Path(__file__).resolve().parents[1]
    data = b"".join(p.read_bytes() for p in sorted(root.rglob("*.py")))
    return _pages_from_bytes(data, page_size, count)


def _loaded_libraries() -> list[str]:
    libs: list[str] = []
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if ".so" in path and path.startswith("/") and path not in libs:
                libs.append(path)
    except OSError:
        pass
    return libs


def binary_pages(page_size: int, count: int) -> np.ndarray:
    chunks: list[bytes] = []
    for path in [sys.executable, *_loaded_libraries()]:
        try:
            chunks.append(Path(path).read_bytes()[page_size:])
        except OSError:
            continue
        if sum(map(len, chunks)) > 4 * count * page_size:
            break
    return _pages_from_bytes(b"".join(chunks), page_size, count)


def heap_pages(page_size: int, count: int) -> np.ndarray:
    """Pages of this process's heap and anonymous writable mappings (empty off Linux)."""
    ranges: list[tuple[int, int]] = []
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw.p \S+ \S+ 0\s*(\[heap\])?\s*$", line)
            if m:
                ranges.append((int(m.group(1), 16), int(m.group(2), 16)))
    except OSError:
        return np.zeros((0, page_size), np.uint8)
    data = bytearray()
    want = 4 * count * page_size
    try:
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            for lo, hi in ranges:
                try:
                    mem.seek(lo)
                    data += mem.read(min(hi - lo, want - len(data)))
                except (OSError, OverflowError, ValueError):
                    continue
                if len(data) >= want:
                    break
    except OSError:
        return np.zeros((0, page_size), np.uint8)
    pages = _pages_from_bytes(bytes(data), page_size, 4 * count)
    nonzero = pages[pages.any(axis=1)]  # zero pages are their own class
    return nonzero[:count] if len(nonzero) >= count else pages[:count]


def float_pages(page_size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    n = count * page_size // 4
    third = n // 3
    weights = (rng.standard_normal(third) * 0.02).astype(np.float32)
    relu = np.maximum(rng.standard_normal(third), 0).astype(np.float32)
    bf16 = (rng.standard_normal(n - 2 * third).astype(np.float32).view(np.uint32)
            & np.uint32(0xFFFF0000)).view(np.float32)
    data = np.concatenate([weights, relu, bf16]).view(np.uint8)
    return data.reshape(count, page_size).copy()


def build_corpus(page_size: int = 4096, pages_per_class: int = 64,
                 seed: int = 2026) -> dict[str, np.ndarray]:
    """{class name: pages} for every class of CLASSES (module docstring)."""
    page_size = check_page_size(page_size)
    rng = np.random.default_rng(seed)
    n = pages_per_class
    corpus = {
        "text": text_pages(page_size, n),
        "binary": binary_pages(page_size, n),
        "heap": heap_pages(page_size, n),
        "floats": float_pages(page_size, n, rng),
        "zeros": np.zeros((n, page_size), np.uint8),
        "random": rng.integers(0, 256, (n, page_size), dtype=np.uint8),
    }
    parts = [p for p in corpus.values() if len(p)]
    mixed = np.concatenate(parts)
    corpus["mixed"] = mixed[rng.permutation(len(mixed))[:n * 6]].copy()
    return corpus
