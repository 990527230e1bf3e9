"""Convolution backend choice: which Conv groups of a fusion plan run as a library call.

A Conv group goes to the library (cuDNN on cuda, NumPy on the cpu device; `nova.abi.ConvPlan`
through `nova_rt_library_call`) when the `conv=` policy asks for it and the library can express
it:

- policy `"nova"`: never; `"auto"` and `"library"`: every expressible Conv (no static size rule:
  cuDNN's kernels beat the generated implicit GEMM at every size measured). Under `"auto"` a
  Conv the library cannot express stays a generated kernel, the choice saying why; under
  `"library"` it is a `ModelError` naming the node;
- expressible: a 2-D NCHW Conv whose input, filter, bias and output share one float storage
  type, with symmetric padding (cuDNN's legacy API has one pad per dimension) and tensors of
  fewer than 2^31 elements (its descriptors take `int` dims).

BatchNorm is folded into the Conv's weights and bias before this pass. The group's epilogue is
matched against what the library computes, `act(conv(x, w) + bias + z)`: an Add of a tensor of
the output's shape (residual z), then Relu. The matched prefix goes into the plan; any remaining
epilogue nodes become a pointwise kernel reading the library's output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from nova.abi import LIBRARY_DTYPES, ConvPlan
from nova.models.errors import ModelError
from nova.models.graph import Graph, Node
from nova.models.ops.nn import conv_params
from nova.models.passes.fusion import FusionPlan, KernelGroup
from nova.models.passes.library import LibraryCall, give_to_library

CONV_POLICIES = ("auto", "nova", "library")
_MAX_ELEMENTS = 2 ** 31


@dataclass
class ConvChoice:
    """What the manifest records about one Conv: where it runs and why."""

    output: str
    backend: str
    shape: tuple[int, ...]  # n, c, h, w, k, r, s
    reason: str
    epilogue: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "backend": self.backend, "shape": list(self.shape),
                "reason": self.reason, "epilogue": self.epilogue}


def check_conv_policy(policy: str) -> str:
    if policy not in CONV_POLICIES:
        raise ModelError(f"conv='{policy}' is not a convolution policy (use one of "
                         f"{', '.join(CONV_POLICIES)})")
    return policy


def _ints(graph: Graph, tensor: str) -> tuple[int, ...]:
    return tuple(int(d) for d in graph.type_of(tensor).shape)


def _bias_of(node: Node) -> str | None:
    return node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None


def conv_plan(graph: Graph, group: KernelGroup, node: Node) -> tuple[ConvPlan | None, str]:
    """The plan of the bare convolution (+ its own bias), or None and why the library cannot
    run it."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    bias = _bias_of(node)
    tensors = [x, w, out, *([bias] if bias else [])]
    dtypes = [graph.type_of(t).dtype for t in tensors]
    if group.prologue:
        return None, "operands read through index maps (prologue)"
    if len(set(dtypes)) != 1 or dtypes[0] not in LIBRARY_DTYPES:
        return None, f"dtypes {' x '.join(dtypes)}"
    if graph.type_of(x).rank != 4 or graph.type_of(w).rank != 4:
        return None, "not a 2-D convolution"
    big = [t for t in tensors if math.prod(_ints(graph, t)) >= _MAX_ELEMENTS]
    if big:
        return None, f"tensor '{big[0]}' has 2^31 or more elements"
    n, c, h, wd = _ints(graph, x)
    k, _, r, s = _ints(graph, w)
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = conv_params(node, (r, s))
    if (pt, pl) != (pb, pr):
        return None, f"asymmetric padding {[pt, pl, pb, pr]}"
    plan = ConvPlan(n=n, c=c, h=h, w=wd, k=k, r=r, s=s, dtype=dtypes[0], stride_h=sh,
                    stride_w=sw, pad_h=pt, pad_w=pl, dil_h=dh, dil_w=dw,
                    groups=int(node.attrs.get("group", 1)), bias=bias is not None)
    try:
        plan.check()
    except ValueError as exc:
        return None, str(exc)
    if (*_ints(graph, out)[2:],) != plan.out_hw:
        return None, f"output {_ints(graph, out)} is not the window's {plan.out_hw}"
    return plan, ""


def _match_epilogue(graph: Graph, group: KernelGroup, plan: ConvPlan) \
        -> tuple[ConvPlan, list[str], list[Node], str]:
    """Fuse the longest matching prefix of the epilogue (residual Add, then Relu) into `plan`:
    (plan, residual operand [z] or [], matched nodes, the tensor the library writes)."""
    anchor = group.anchor
    assert anchor is not None
    current = anchor.outputs[0]
    out_type = graph.type_of(current)
    produced = {o for nd in group.nodes for o in nd.outputs}
    residual: str | None = None
    activation = "none"
    matched: list[Node] = []
    remaining = list(group.nodes)
    while activation == "none":
        readers = [nd for nd in remaining if current in nd.inputs]
        if len(readers) != 1:
            break
        node = readers[0]
        if node.op == "Add" and residual is None and len(node.inputs) == 2 \
                and node.inputs.count(current) == 1:
            other = node.inputs[1] if node.inputs[0] == current else node.inputs[0]
            t = graph.type_of(other)
            if other in produced or t.dtype != out_type.dtype or t.shape != out_type.shape:
                break
            residual = other
        elif node.op == "Relu":
            activation = "relu"
        else:
            break
        matched.append(node)
        remaining.remove(node)
        current = node.outputs[0]
    fused = ConvPlan(**{**plan.to_json(), "residual": residual is not None,
                        "activation": activation})
    return fused, [residual] if residual else [], matched, current


def select_conv_library(graph: Graph, plan: FusionPlan, policy: str,
                        backend: str) -> list[ConvChoice]:
    """Give Conv groups to the library per `policy` (see the module doc), in place; `backend`
    names the library in the choices (e.g. 'cudnn', 'numpy')."""
    check_conv_policy(policy)
    choices: list[ConvChoice] = []
    out: list[KernelGroup] = []
    for group in plan.kernels:
        out.append(group)
        node = group.anchor
        if node is None or node.op != "Conv" or group.library is not None:
            continue
        shape = _shape(graph, node)
        if policy == "nova":
            choices.append(ConvChoice(node.outputs[0], "nova", shape, "policy 'nova'"))
            continue
        base, why = conv_plan(graph, group, node)
        if base is None:
            if policy == "library":
                raise ModelError(f"{node.describe()}: conv='library' cannot run it as a library "
                                 f"convolution: {why} (use conv='auto' or conv='nova')")
            choices.append(ConvChoice(node.outputs[0], "nova", shape,
                                      f"not expressible as a library convolution: {why}"))
            continue
        fused, extra, matched, written = _match_epilogue(graph, group, base)
        bias = _bias_of(node)
        tensors = [node.inputs[0], node.inputs[1], *([bias] if bias else []), *extra, written]
        give_to_library(out, group, LibraryCall(fused, tensors), matched, written)
        choices.append(ConvChoice(node.outputs[0], backend, shape, f"policy '{policy}'",
                                  [nd.op for nd in matched]))
    plan.kernels = out
    return choices


def _shape(graph: Graph, node: Node) -> tuple[int, ...]:
    x, w = _ints(graph, node.inputs[0]), _ints(graph, node.inputs[1])
    if len(x) != 4 or len(w) != 4:
        return (*x, *w)
    return (*x, w[0], w[2], w[3])
