"""Fusion grouping: which nodes become one kernel, and which tensors get a buffer.

- **Views** (Reshape, Flatten, Squeeze, Unsqueeze) are index maps like the pointwise ops below
  when their readers are all in one pointwise kernel; otherwise their output aliases the input's
  buffer (buffers are flat, row-major), so a reshape never costs a kernel (except as a graph
  output, which gets a copy).
- **Pointwise** nodes (elementwise math with broadcasting, Cast, Where, and the index maps
  Transpose/Slice/Concat/Gather/Expand) are inlined into their readers when all readers are in
  the same kernel and the tensor is not a graph output: a chain like
  `Mul(Add(x, b), Sigmoid(Add(x, b)))` is one kernel that reads x and b once per element.
- **Anchors** (MatMul, Conv, pooling, Softmax, LayerNormalization, reductions) start a kernel;
  a pointwise chain reading only the anchor's output at the same index (bias add, activation,
  residual add, scale) becomes the anchor's **epilogue**, applied in registers before the store.

Groups are found in one reverse walk (a node joins the group of its readers when it may), and
returned in an order that respects data dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nova.models.graph import Graph, Node
from nova.models.ops import get_op
from nova.models.ops.elementwise import BINARY, COMPARE, LOGICAL, UNARY

if TYPE_CHECKING:
    from nova.models.passes.library import LibraryCall

ELEMENTWISE = frozenset([*UNARY, *BINARY, *COMPARE, *LOGICAL, "Gelu", "LeakyRelu", "Clip",
                         "Where", "Cast", "Trilu"])
"""Pointwise ops whose output element i reads each input at (the broadcast of) index i."""


@dataclass
class KernelGroup:
    """One generated kernel: `anchor` (None for a pure pointwise kernel) computes a value per
    element of its output, the pointwise `nodes` (topological order) turn it into `root`, the
    one tensor this kernel writes."""

    root: str
    anchor: Node | None
    nodes: list[Node] = field(default_factory=list)
    prologue: list[Node] = field(default_factory=list)
    """Index maps (Transpose, Reshape, Slice, Cast, ...) a MatMul anchor applies while loading
    its operands, instead of a copy kernel before it."""
    library: LibraryCall | None = None
    """Set when the group runs as a library call (passes/library.py), not a generated kernel."""

    @property
    def kind(self) -> str:
        return "pointwise" if self.anchor is None else get_op(self.anchor).kind

    def describe(self) -> str:
        head = f"{self.kind}[{self.anchor.op}]" if self.anchor else "pointwise"
        if self.library is not None:
            head = f"library[{self.anchor.op if self.anchor else '?'}]"
        if self.prologue:
            head += f"({'+'.join(n.op for n in self.prologue)})"
        ops = "+".join(n.op for n in self.nodes)
        return f"{head}{(' + ' + ops) if ops else ''} -> {self.root}"


@dataclass
class FusionPlan:
    """Kernels in execution order, and the buffer each materialised tensor lives in."""

    kernels: list[KernelGroup]
    aliases: dict[str, str]
    """View output tensor -> the tensor whose buffer it shares (transitively resolved)."""

    def buffer_of(self, tensor: str) -> str:
        return self.aliases.get(tensor, tensor)

    def describe(self) -> str:
        lines = [k.describe() for k in self.kernels]
        lines += [f"view {a} = {b}" for a, b in sorted(self.aliases.items())]
        return "\n".join(lines)


def plan_fusion(graph: Graph) -> FusionPlan:
    """Group the typed, canonical `graph` into kernels (see the module doc)."""
    consumers = graph.consumers()
    outputs = set(graph.outputs)
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    group_of: dict[int, KernelGroup] = {}
    groups: list[KernelGroup] = []
    views: list[Node] = []
    for node in reversed(graph.nodes):
        kind = get_op(node).kind
        out = node.outputs[0]
        readers = consumers.get(out, [])
        if out not in outputs and node.op in PROLOGUE_OPS:
            host = _prologue_group(graph, readers, group_of)
            if host is not None:
                host.prologue.insert(0, node)
                group_of[id(node)] = host
                continue
        target = _common_group(readers, group_of) if out not in outputs else None
        if kind in ("pointwise", "view"):
            if target is not None:
                target.nodes.insert(0, node)
                group_of[id(node)] = target
                continue
            if kind == "view" and out not in outputs:
                views.append(node)  # aliases its input's buffer: no kernel, input materialised
                continue
            group = KernelGroup(out, None, [node])
        else:
            if target is not None and target.anchor is None and _is_epilogue(graph, node,
                                                                            target):
                target.anchor = node
                group_of[id(node)] = target
                continue
            group = KernelGroup(out, node, [])
        group_of[id(node)] = group
        groups.append(group)
    producers = graph.producers()
    groups.sort(key=lambda g: order[id(producers[g.root])])
    aliases: dict[str, str] = {}
    for node in sorted(views, key=lambda n: order[id(n)]):
        src = node.inputs[0]
        aliases[node.outputs[0]] = aliases.get(src, src)
    return FusionPlan(groups, aliases)


def _common_group(readers: list[Node], group_of: dict[int, KernelGroup]) -> KernelGroup | None:
    """The one group all `readers` are pointwise members of, if any."""
    if not readers:
        return None
    group = group_of.get(id(readers[0]))
    if group is None or any(group_of.get(id(r)) is not group for r in readers):
        return None
    if any(get_op(r).kind not in ("pointwise", "view") for r in readers):
        return None
    if any(r is p for r in readers for p in group.prologue):
        return None  # readers inside a prologue take only index maps (see _prologue_group)
    return group


PROLOGUE_OPS = frozenset({"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice",
                          "Cast", "Expand", "Identity"})
"""Cheap index maps a MatMul may apply while loading an operand (recomputing them per load
costs a few integer ops; anything heavier is materialised once instead)."""


PROLOGUE_ANCHORS = frozenset({"MatMul", "FusedAttention"})
"""Anchors whose operand loaders evaluate a prologue (the fused attention kernel reads Q, K, V
through the head split of a QKV GEMM output)."""


def _prologue_group(graph: Graph, readers: list[Node],
                    group_of: dict[int, KernelGroup]) -> KernelGroup | None:
    """The MatMul (or FusedAttention) group all `readers` belong to as its anchor or its
    prologue, if any (GEMV MatMuls read their operands with vector loads and take no prologue)."""
    from nova.models.passes.rewrite import gemv_rows

    if not readers:
        return None
    group = group_of.get(id(readers[0]))
    if group is None or group.anchor is None or group.anchor.op not in PROLOGUE_ANCHORS or \
            gemv_rows(graph, group.anchor) is not None:
        return None
    for r in readers:
        if r is not group.anchor and not any(r is p for p in group.prologue):
            return None
    return group


def _is_epilogue(graph: Graph, anchor: Node, group: KernelGroup) -> bool:
    """Whether every node of `group` that depends on the anchor's output reads it elementwise at
    the same index (same shape, no broadcast of the dependent operand, no index maps)."""
    src = anchor.outputs[0]
    shape = graph.type_of(src).shape
    dependent = {src}
    for node in group.nodes:
        if not dependent.intersection(node.inputs):
            continue
        if node.op not in ELEMENTWISE or graph.type_of(node.outputs[0]).shape != shape:
            return False
        if any(graph.type_of(i).shape != shape for i in node.inputs if i in dependent):
            return False
        dependent.add(node.outputs[0])
    return group.root in dependent
