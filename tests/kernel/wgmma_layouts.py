"""Host-side model of the shared memory layouts wgmma matrix descriptors address (PTX ISA
"Shared memory matrix layout", CUTLASS's GMMA layouts), for the wgmma tests: `operand_layout`
picks the descriptor's leading / stride byte offsets for a 16-deep operand tile, `pack` places
a matrix's elements at the (swizzled) byte offsets the tensor cores read them from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    """One operand tile of `mn` rows (A: M, B: N) by K = 16 in shared memory: the swizzle
    (0, 32, 64, 128 bytes), whether K is the contiguous dimension, the descriptor's byte
    offsets and the tile's size in float16 elements."""

    mn: int
    swizzle: int
    k_major: bool
    lbo: int
    sbo: int
    elements: int


def operand_layout(mn: int, swizzle: int, k_major: bool) -> Layout:
    """The canonical layout Nova's tests use: 8x16-byte core matrices packed densely."""
    if swizzle == 0:
        if k_major:  # core matrices (8 rows x 8 k): the two k halves, then 8-row blocks
            return Layout(mn, 0, True, lbo=128, sbo=256, elements=mn * 16)
        # MN-major: core matrix = 8 k rows x 8 mn; mn blocks SBO apart, k halves LBO apart
        return Layout(mn, 0, False, lbo=mn * 16, sbo=128, elements=mn * 16)
    if k_major:  # rows of `swizzle` bytes (only the first 32 used by k = 16), 8-row atoms
        return Layout(mn, swizzle, True, lbo=16, sbo=8 * swizzle, elements=mn * swizzle // 2)
    per_row = swizzle // 2  # mn elements per row; 8 k rows per atom, 2 atoms deep (k = 16)
    blocks = -(-mn // per_row)
    return Layout(mn, swizzle, False, lbo=16 * swizzle, sbo=8 * swizzle,
                  elements=blocks * 16 * per_row)


def byte_offset(layout: Layout, mn: int, k: int) -> int:
    """Where element (mn, k) lives, relative to a tile base aligned to 1024 bytes."""
    w = layout.swizzle or 16
    if layout.k_major:
        off = (mn % 8) * w + (mn // 8) * layout.sbo + (k % 8) * 2 + \
            (k // 8) * (layout.lbo if layout.swizzle == 0 else 16)
    else:
        per = w // 2
        off = (mn % per) * 2 + (mn // per) * (layout.sbo if layout.swizzle == 0 else layout.lbo)
        off += (k % 8) * w + (k // 8) * (layout.lbo if layout.swizzle == 0 else layout.sbo)
    if layout.swizzle:
        bits = {128: 7, 64: 3, 32: 1}[layout.swizzle]
        off ^= ((off >> 7) & bits) << 4
    return off


def pack(matrix: np.ndarray, layout: Layout, mn_axis: int) -> np.ndarray:
    """The tile's shared memory image (float16 elements) holding `matrix` (A: [M, 16] with
    mn_axis 0; B: [16, N] with mn_axis 1)."""
    out = np.zeros(layout.elements, np.float16)
    rows = matrix.shape[mn_axis]
    for mn in range(rows):
        for k in range(16):
            value = matrix[mn, k] if mn_axis == 0 else matrix[k, mn]
            out[byte_offset(layout, mn, k) // 2] = value
    return out
