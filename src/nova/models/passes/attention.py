"""Scaled-dot-product attention as one kernel: find `softmax(Q K^T * scale [+ mask]) V` in the
typed graph and replace it by a `FusedAttention` node (the flash-attention kernel of
nova.models.codegen.attention), so the scores are never materialised.

Recognised (after canonicalize, which turns the Attention op into the same chain, and
fold_transposes, which turns `MatMul(Q, Transpose(K))` into `trans_b`):

    MatMul(Q, K, trans_a=0, alpha) -> [Mul|Div by a one-element constant]* -> [Add(., mask)]
        -> Softmax(axis=-1) -> MatMul(., V, trans_a=0, alpha=1) [-> Transpose]

every intermediate read only by the next node and no graph output. A Transpose reading the
result is absorbed (`out_perm`): the kernel writes the layout the consumer wants, so the
head merge `Transpose -> Reshape` before the out-projection costs no copy. The index maps that
produce Q, K, V (the head split of a QKV GEMM output) become the kernel's prologue in the
fusion plan, so it reads them where they live.

Every recognised pattern gets an `AttentionChoice` (recorded in the model signature, like GEMM
choices): `fused-mma` (fp16 on tensor cores: FlashAttention-2 style with mma.sync, the tile
BMxBN in the reason), `fused-wmma` (fp16 on tensor cores through WMMA, asked for by
`attention="fused-wmma"`), `fused-simt` (CUDA cores: fp32, bf16, or no tensor cores) or
`unfused` with the reason (`attention="unfused"`, a head dim the tiles do not allow, or the
`auto` policy). `attention="fused-mma-BMxBN"` picks the mma variant's tile (BM 64/128 query rows
per block, BN 32/64 keys per tile; default 64x64), for benchmarking sweeps; the variant modes
fuse as `fused` does and change only the tensor-core kernel.

`attention="auto"` (the default) fuses where the fused kernel wins: always on tensor cores, and
on CUDA cores only where the unfused path's GEMMs would be generated kernels too. Where they go
to a library (cuBLASLt on cuda), the CUDA-core kernel loses to library GEMMs plus the row
softmax: H100, encoder layer 8x512x768 fp32, graph replay 1.75 ms fused-simt against 1.66 ms
unfused (bench/results/models-2026-11-26-h100-run6.md); fp16 with tensor cores 0.213 ms fused
against 0.253 ms unfused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nova.models.errors import ModelError
from nova.models.graph import Graph, Node
from nova.models.ops.shape import transpose_perm

ATTENTION_MODES = ("auto", "fused", "unfused", "fused-wmma", "fused-mma")
"""The `attention=` values; `fused-mma-BMxBN` (BM in MMA_BM, BN in MMA_BN) too."""
MMA_BM = (64, 128)
"""Query rows per block of the mma variant (4 or 8 warps)."""
MMA_BN = (32, 64)
"""Keys per tile of the mma variant."""
MMA_TILE = (64, 64)
"""The mma variant's default (BM, BN)."""
MAX_HEAD_DIM = 128
"""Largest head dim (of Q/K and of V) the kernels' shared-memory tiles and registers hold."""
WMMA_STEP = 16
"""Tensor-core head dims must be multiples of the 16x16x16 fragment."""


@dataclass
class AttentionChoice:
    """What the manifest records about one attention pattern: how it runs and why."""

    output: str
    backend: str
    shape: tuple[int, int, int, int, int]  # batch (all batch dims), sq, sk, d, dv
    reason: str
    tile: tuple[int, int] | None = None
    """(BM, BN) asked of the fused-mma kernel (it may halve BN to fit shared memory)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"output": self.output, "backend": self.backend,
                               "shape": list(self.shape), "reason": self.reason}
        if self.tile is not None:
            out["tile"] = list(self.tile)
        return out


def check_attention_mode(mode: str) -> str:
    if mode not in ATTENTION_MODES and _mma_tile(mode) is None:
        raise ModelError(f"attention='{mode}' is not an attention mode (use one of "
                         f"{', '.join(ATTENTION_MODES)}, or fused-mma-BMxBN with BM in "
                         f"{'/'.join(map(str, MMA_BM))} and BN in {'/'.join(map(str, MMA_BN))})")
    return mode


def _mma_tile(mode: str) -> tuple[int, int] | None:
    """(BM, BN) of a `fused-mma-BMxBN` mode (None for anything else)."""
    prefix = "fused-mma-"
    if not mode.startswith(prefix):
        return None
    bm, _, bn = mode.removeprefix(prefix).partition("x")
    if not (bm.isdigit() and bn.isdigit()) or int(bm) not in MMA_BM or int(bn) not in MMA_BN:
        return None
    return int(bm), int(bn)


def _tensor_core_variant(mode: str) -> tuple[str, dict[str, Any]]:
    """(backend, node attributes) of the tensor-core variant `mode` asks for: the mma variant
    (with its tile) unless `fused-wmma`."""
    if mode == "fused-wmma":
        return "fused-wmma", {"variant": "wmma"}
    bm, bn = _mma_tile(mode) or MMA_TILE
    return "fused-mma", {"variant": "mma", "tile": [bm, bn]}


@dataclass
class _Match:
    qk: Node
    pv: Node
    mask: str | None
    scale: float
    transpose: Node | None


def fuse_attention(graph: Graph, mode: str, tensor_cores: bool,
                   library_gemms: bool = False) -> list[AttentionChoice]:
    """Replace every recognised pattern per `mode` (see the module doc), in place; the dead
    intermediate nodes are left for eliminate_dead_code. `library_gemms`: the unfused path's
    GEMMs would be library calls (the `auto` policy's question). Returns the choices."""
    check_attention_mode(mode)
    choices = []
    for softmax in [n for n in graph.nodes if n.op == "Softmax"]:
        match = _match(graph, softmax)
        if match is None:
            continue
        q, k, v = match.qk.inputs[0], match.qk.inputs[1], match.pv.inputs[1]
        trans_k, trans_v = int(match.qk.attrs.get("trans_b", 0)), int(
            match.pv.attrs.get("trans_b", 0))
        qt, vt = graph.type_of(q), graph.type_of(v)
        scores = graph.type_of(match.qk.outputs[0]).shape
        d = int(qt.shape[-1])
        dv = int(vt.shape[-2] if trans_v else vt.shape[-1])
        shape = (math.prod(int(x) for x in scores[:-2]), int(scores[-2]), int(scores[-1]), d, dv)
        output = (match.transpose or match.pv).outputs[0]
        wmma = tensor_cores and qt.dtype == "float16"
        reason = _unsupported(d, dv, wmma)
        if not reason and mode == "unfused":
            reason = "attention='unfused'"
        if not reason and mode == "auto" and not wmma and library_gemms:
            reason = ("auto: on CUDA cores, library GEMMs and the row softmax are faster than "
                      "the fused kernel")
        if reason:
            choices.append(AttentionChoice(output, "unfused", shape, reason))
            continue
        attrs: dict[str, Any] = {"scale": match.scale, "batch": [int(x) for x in scores[:-2]],
                                 "trans_k": trans_k, "trans_v": trans_v,
                                 "tensor_cores": int(wmma), "out_perm": None}
        backend, variant = _tensor_core_variant(mode) if wmma else ("fused-simt", {})
        attrs.update(variant)
        if match.transpose is not None:
            attrs["out_perm"] = transpose_perm(match.transpose, qt.rank)
        inputs = [q, k, v] + ([match.mask] if match.mask else [])
        fused = Node("FusedAttention", inputs, [output], attrs, match.pv.name + "_fused")
        last = match.transpose or match.pv
        graph.nodes = [fused if n is last else n for n in graph.nodes
                       if n is last or n is not match.pv]
        tile = (variant["tile"][0], variant["tile"][1]) if "tile" in variant else None
        choices.append(AttentionChoice(output, backend, shape, _why(backend, variant), tile))
    return choices


def _why(backend: str, variant: dict[str, Any]) -> str:
    if backend == "fused-mma":
        bm, bn = variant["tile"]
        return f"tensor cores (fp16), mma.sync, BM={bm} BN={bn}"
    if backend == "fused-wmma":
        return "tensor cores (fp16), WMMA"
    return "CUDA cores (fp32 accumulation)"


def _unsupported(d: int, dv: int, wmma: bool) -> str:
    if max(d, dv) > MAX_HEAD_DIM:
        return f"head dim {max(d, dv)} > {MAX_HEAD_DIM} (the fused kernel's tile limit)"
    if wmma and (d % WMMA_STEP or dv % WMMA_STEP):
        return (f"head dims {d}/{dv} are not multiples of {WMMA_STEP} (tensor-core "
                "fragments)")
    return ""


def _only_reader(graph: Graph, tensor: str, consumers: dict[str, list[Node]]) -> Node | None:
    readers = consumers.get(tensor, [])
    if len(readers) != 1 or tensor in graph.outputs:
        return None
    return readers[0]


def _match(graph: Graph, softmax: Node) -> _Match | None:
    """The pattern around `softmax`, or None."""
    consumers, producers = graph.consumers(), graph.producers()
    rank = graph.type_of(softmax.inputs[0]).rank
    if rank < 2 or int(softmax.attrs.get("axis", -1)) not in (-1, rank - 1):
        return None
    pv = _only_reader(graph, softmax.outputs[0], consumers)
    if pv is None or pv.op != "MatMul" or pv.inputs[0] != softmax.outputs[0] or \
            pv.attrs.get("trans_a", 0) or float(pv.attrs.get("alpha", 1.0)) != 1.0:
        return None
    if graph.type_of(pv.outputs[0]).shape[:-2] != graph.type_of(softmax.inputs[0]).shape[:-2]:
        return None  # V would broadcast the batch dims beyond the scores'
    chain = _scores_chain(graph, softmax.inputs[0], consumers, producers)
    if chain is None:
        return None
    qk, mask, scale = chain
    dtypes = {graph.type_of(t).dtype for t in (*qk.inputs, pv.inputs[1])}
    if len(dtypes) != 1 or dtypes.pop() not in ("float32", "float16", "bfloat16"):
        return None
    if mask is not None and graph.type_of(mask).dtype != graph.type_of(qk.inputs[0]).dtype:
        return None
    after = _only_reader(graph, pv.outputs[0], consumers)
    transpose = after if after is not None and after.op == "Transpose" else None
    return _Match(qk, pv, mask, scale, transpose)


def _scores_chain(graph: Graph, tensor: str, consumers: dict[str, list[Node]],
                  producers: dict[str, Node]) -> tuple[Node, str | None, float] | None:
    """Walk back from the softmax input: [Add mask] <- [scalar Mul/Div]* <- MatMul(Q, K)."""
    mask: str | None = None
    scale = 1.0
    shape = graph.type_of(tensor).shape
    node = producers.get(tensor)
    if node is not None and node.op == "Add" and _only_reader(graph, tensor, consumers):
        for i in (0, 1):
            src = producers.get(node.inputs[i])
            other = node.inputs[1 - i]
            if src is not None and src.op in ("MatMul", "Mul", "Div") and \
                    graph.type_of(node.inputs[i]).shape == shape and \
                    len(graph.type_of(other).shape) <= len(shape):
                mask, tensor, node = other, node.inputs[i], src
                break
        else:
            return None
    while node is not None and node.op in ("Mul", "Div"):
        if _only_reader(graph, node.outputs[0], consumers) is None:
            return None
        factor = _scalar_operand(graph, node)
        if factor is None:
            return None
        value, tensor = factor
        scale = scale / value if node.op == "Div" else scale * value
        node = producers.get(tensor)
    if node is None or node.op != "MatMul" or node.attrs.get("trans_a", 0) or \
            _only_reader(graph, node.outputs[0], consumers) is None:
        return None
    return node, mask, scale * float(node.attrs.get("alpha", 1.0))


def _scalar_operand(graph: Graph, node: Node) -> tuple[float, str] | None:
    """(the one-element constant, the other operand) of a Mul/Div, or None (Div only as
    `x / c`)."""
    for i in ((1,) if node.op == "Div" else (1, 0)):
        w = graph.weights.get(node.inputs[i])
        if w is not None and w.size == 1 and graph.type_of(node.outputs[0]).shape == \
                graph.type_of(node.inputs[1 - i]).shape:
            value = float(w.reshape(-1)[0])
            if node.op == "Div" and value == 0.0:
                return None
            return value, node.inputs[1 - i]
    return None
