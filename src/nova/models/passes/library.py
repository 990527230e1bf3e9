"""GEMM backend choice: which MatMul groups of a fusion plan run as a library call.

A MatMul group goes to the library (cuBLASLt on cuda, NumPy on the cpu device; the runtime ABI's
`nova_rt_library_call`) when the policy asks for it and the library can express it:

- policy `"nova"`: never; `"library"`: every eligible MatMul; `"auto"`: eligible MatMuls that
  would not run as the GEMV kernel (more than SMALL_M rows of A), a *static* rule: the GEMV
  kernel runs batch-1 Linear layers at memory bandwidth, the library wins the large products;
- eligible: A, B and the output share one float storage type, the operands are read as stored
  (no prologue of index maps) and each operand's batch dims equal the output's or are all 1.

The group's epilogue is matched against what the library fuses, in the order it applies it,
`act(alpha * A @ B + bias + C)`: an Add of a length-N vector (bias), an Add of a tensor of the
output's shape (residual C), then Relu or tanh-GELU. The matched prefix goes into the plan; any
remaining epilogue nodes (exact-erf GELU, a second residual, ...) become a pointwise kernel
reading the library's output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from nova.abi import LIBRARY_DTYPES, AnyPlan, LibraryPlan
from nova.models.errors import ModelError
from nova.models.graph import Graph, Node
from nova.models.ops import get_op
from nova.models.passes.fusion import FusionPlan, KernelGroup
from nova.models.passes.rewrite import gemv_rows

GEMM_POLICIES = ("auto", "nova", "library")


@dataclass
class LibraryCall:
    """A group given to the library: its plan and the tensors passed, in plan order."""

    plan: AnyPlan
    tensors: list[str]


@dataclass
class GemmChoice:
    """What the manifest records about one MatMul: where it runs and why."""

    output: str
    backend: str
    shape: tuple[int, int, int, int]  # batch, m, n, k
    reason: str
    epilogue: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "backend": self.backend, "shape": list(self.shape),
                "reason": self.reason, "epilogue": self.epilogue}


def check_policy(policy: str) -> str:
    if policy not in GEMM_POLICIES:
        raise ModelError(f"gemm='{policy}' is not a GEMM policy (use one of "
                         f"{', '.join(GEMM_POLICIES)})")
    return policy


def _operand_stride(shape: tuple[int, ...], out_batch: tuple[int, ...],
                    matrix: int) -> int | None:
    """Element stride between batches of an operand, 0 when shared, None when it broadcasts
    only partly (not expressible with one stride)."""
    batch = math.prod(shape[:-2])
    if batch == 1:
        return 0
    # out_batch is the broadcast of every operand's batch dims: equal products mean equal dims
    return matrix if batch == math.prod(out_batch) else None


def _base_plan(graph: Graph, group: KernelGroup, node: Node) -> tuple[LibraryPlan | None, str]:
    """The plan of the bare product, or None and why the library cannot run it."""
    a, b = node.inputs
    out = node.outputs[0]
    ta, tb = graph.type_of(a), graph.type_of(b)

    def _ints(t: str) -> tuple[int, ...]:
        return tuple(int(d) for d in graph.type_of(t).shape)

    to = graph.type_of(out)
    if group.prologue:
        return None, "operands read through index maps (prologue)"
    if not (ta.dtype == tb.dtype == to.dtype and to.dtype in LIBRARY_DTYPES):
        return None, f"dtypes {ta.dtype} x {tb.dtype} -> {to.dtype}"
    if ta.rank < 2 or tb.rank < 2:
        return None, "1-D operand"
    a_shape, b_shape, out_shape = _ints(a), _ints(b), _ints(out)
    trans_a, trans_b = bool(node.attrs.get("trans_a", 0)), bool(node.attrs.get("trans_b", 0))
    m, n = out_shape[-2], out_shape[-1]
    k = a_shape[-2] if trans_a else a_shape[-1]
    out_batch = out_shape[:-2]
    a_stride = _operand_stride(a_shape, out_batch, m * k)
    b_stride = _operand_stride(b_shape, out_batch, k * n)
    if a_stride is None or b_stride is None:
        return None, "operand batch dims broadcast partly"
    if min(m, n, k) < 1:
        return None, "empty product"
    batch = max(1, math.prod(out_batch))
    if batch > 1 and b_stride == 0 and not trans_a:
        # a shared B (a Linear on a 3-D input): one GEMM of batch*m rows, the batches of A
        # and D being consecutive rows
        m, batch, a_stride = m * batch, 1, 0
    return LibraryPlan(m=m, n=n, k=k, dtype=to.dtype, batch=batch,
                       a_stride=a_stride, b_stride=b_stride, trans_a=trans_a, trans_b=trans_b,
                       alpha=float(node.attrs.get("alpha", 1.0))), ""


def _is_bias(graph: Graph, tensor: str, n: int) -> bool:
    shape = tuple(int(d) for d in graph.type_of(tensor).shape)
    return len(shape) >= 1 and shape[-1] == n and math.prod(shape) == n


def _match_epilogue(graph: Graph, group: KernelGroup, plan: LibraryPlan) \
        -> tuple[LibraryPlan, list[str], list[Node], str]:
    """Fuse the longest matching prefix of the epilogue into `plan`: (plan, extra operand
    tensors [bias, c], matched nodes, the tensor the library writes)."""
    anchor = group.anchor
    assert anchor is not None
    current = anchor.outputs[0]
    produced = {o for node in group.nodes for o in node.outputs}
    out_type = graph.type_of(current)
    bias: str | None = None
    residual: str | None = None
    activation = "none"
    matched: list[Node] = []
    remaining = list(group.nodes)
    while True:
        readers = [nd for nd in remaining if current in nd.inputs]
        if len(readers) != 1 or activation != "none":
            break
        node = readers[0]
        if node.op == "Add" and len(node.inputs) == 2 and node.inputs.count(current) == 1:
            other = node.inputs[1] if node.inputs[0] == current else node.inputs[0]
            if other in produced or graph.type_of(other).dtype != out_type.dtype:
                break
            if bias is None and residual is None and _is_bias(graph, other, plan.n):
                bias = other
            elif residual is None and graph.type_of(other).shape == out_type.shape:
                residual = other
            else:
                break
        elif node.op == "Relu":
            activation = "relu"
        elif node.op == "Gelu" and node.attrs.get("approximate", "none") == "tanh":
            activation = "gelu_tanh"
        else:
            break
        matched.append(node)
        remaining.remove(node)
        current = node.outputs[0]
    fused = LibraryPlan(**{**plan.to_json(), "bias": bias is not None,
                           "residual": residual is not None, "activation": activation})
    extra = [t for t in (bias, residual) if t is not None]
    return fused, extra, matched, current


def _wanted(graph: Graph, node: Node, policy: str) -> tuple[bool, str]:
    rows = gemv_rows(graph, node)
    if policy == "nova":
        return False, "policy 'nova'"
    if policy == "auto" and rows is not None:
        return False, f"GEMV kernel ({rows} rows, auto policy)"
    return True, f"policy '{policy}'"


def select_library(graph: Graph, plan: FusionPlan, policy: str,
                   backend: str) -> list[GemmChoice]:
    """Give MatMul groups to the library per `policy` (see the module doc), in place: a chosen
    group gets `group.library`, and unmatched epilogue nodes move to a new pointwise group right
    after it. `backend` names the library in the choices (e.g. 'cublaslt', 'numpy')."""
    check_policy(policy)
    choices: list[GemmChoice] = []
    out: list[KernelGroup] = []
    for group in plan.kernels:
        out.append(group)
        node = group.anchor
        if node is None or node.op != "MatMul":
            continue
        shape = _shape(graph, node)
        wanted, reason = _wanted(graph, node, policy)
        if wanted and group.prologue:
            out[-1:-1] = _materialise_prologue(graph, group, node, plan.aliases)
        base, why = _base_plan(graph, group, node)
        if not wanted or base is None:
            choices.append(GemmChoice(node.outputs[0], "nova", shape, reason if not wanted
                                      else f"not expressible as a library GEMM: {why}"))
            continue
        fused, extra, matched, written = _match_epilogue(graph, group, base)
        a, b = node.inputs
        give_to_library(out, group, LibraryCall(fused, [a, b, *extra, written]), matched,
                        written)
        choices.append(GemmChoice(node.outputs[0], backend, shape, reason,
                                  [nd.op for nd in matched]))
    plan.kernels = out
    return choices


def give_to_library(out: list[KernelGroup], group: KernelGroup, call: LibraryCall,
                    matched: list[Node], written: str) -> None:
    """Make `group` (the last of `out`) the library call `call`, which computes its anchor and
    the `matched` epilogue nodes into `written`; the group's other epilogue nodes become a
    pointwise kernel right after it, reading `written`."""
    rest = [nd for nd in group.nodes if not any(nd is m for m in matched)]
    group.library = call
    if rest:
        out.append(KernelGroup(group.root, None, rest))
        group.root = written
    group.nodes = matched


def _materialise_prologue(graph: Graph, group: KernelGroup, node: Node,
                          aliases: dict[str, str]) -> list[KernelGroup]:
    """Pointwise kernels writing the MatMul operands that its prologue computed while loading
    (attention's head split and merge): the library reads dense operands. A prologue node
    feeding both operands is computed by both kernels. An operand made by views alone (the
    Reshape after a fused attention kernel that wrote the merged-heads layout) aliases its
    source buffer in `aliases` instead: no kernel."""
    producers = {o: nd for nd in group.prologue for o in nd.outputs}
    groups = []
    for operand in dict.fromkeys(node.inputs):
        if operand not in producers:
            continue
        needed: set[int] = set()
        stack = [operand]
        while stack:
            producer = producers.get(stack.pop())
            if producer is not None and id(producer) not in needed:
                needed.add(id(producer))
                stack.extend(producer.inputs)
        nodes = [nd for nd in group.prologue if id(nd) in needed]
        if all(get_op(nd).kind == "view" for nd in nodes):
            source = nodes[0].inputs[0]
            aliases[operand] = aliases.get(source, source)
            continue
        groups.append(KernelGroup(operand, None, nodes))
    group.prologue = []
    return groups


def _shape(graph: Graph, node: Node) -> tuple[int, int, int, int]:
    out = tuple(int(d) for d in graph.type_of(node.outputs[0]).shape)
    a = tuple(int(d) for d in graph.type_of(node.inputs[0]).shape)
    k = a[-2] if node.attrs.get("trans_a", 0) else a[-1]
    return (math.prod(out[:-2]), out[-2], out[-1], k)
