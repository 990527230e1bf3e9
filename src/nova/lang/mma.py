"""`nova.mma`: tensor-core matrix fragments in kernels (WMMA-style, m16n16k16).

A fragment is a 16x16 tile of a matrix held collectively by the 32 lanes of a warp; how its
elements are spread over the lanes is opaque. Every call below is a warp-collective operation:
all 32 lanes of the warp must reach it together, with the same arguments (a condition around it
must be the same for the whole warp: a warp index, a block index, a loop counter; not a
`thread_id`). The translator (nova.lang.fragments) lowers them to upstream MLIR's
`gpu.subgroup_mma_*` ops: WMMA on NVPTX, an exact emulation on the CPU device.

    a = nova.mma.load(x, (i, k), "a")                 # A tile at x[i:i+16, k:k+16], float16
    b = nova.mma.load(w, (k, j), "b", layout="col")   # B tile, memory holds it column-major
    c = nova.mma.fill(0.0)                            # float32 accumulator of zeros
    c = nova.mma.mma(a, b, c)                         # c + a @ b
    nova.mma.store(out, (i, j), c)                    # out[i:i+16, j:j+16] = c

docs/python-kernels.md ("Tensor cores") has the full contract.
"""

from __future__ import annotations

from nova.lang.intrinsics import _intrinsic

SHAPE = (16, 16, 16)
"""The (m, n, k) of every fragment: A is m x k, B k x n, C m x n."""

load = _intrinsic(
    "mma.load", "load(array, index, kind, ld=None, layout='row', shape=(16, 16, 16)): the 16x16 "
    "tile of `array` whose first element is array[index], as a fragment of kind 'a', 'b' or 'c'. "
    "Rows are `ld` elements apart (a compile-time constant; default: the array's static last "
    "dimension); layout='col' reads a tile stored column-major. A/B: float16 arrays; C: float16 "
    "or float32.")
fill = _intrinsic(
    "mma.fill", "fill(value, dtype=nova.float32, shape=(16, 16, 16)): an accumulator (C) "
    "fragment with every element `value`; dtype float32 or float16.")
mma = _intrinsic(
    "mma.mma", "mma(a, b, c): the accumulator a @ b + c (tensor cores), a new C fragment of c's "
    "type.")
store = _intrinsic(
    "mma.store", "store(array, index, c, ld=None, layout='row'): write the accumulator fragment "
    "`c` to the 16x16 tile of `array` starting at array[index] (rows `ld` elements apart; "
    "layout='col' writes it column-major). The array's dtype must be c's.")

__all__ = ["SHAPE", "fill", "load", "mma", "store"]
