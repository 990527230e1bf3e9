"""The whole program: the generated kernels, one `gpu.module` each, and the host function
`@forward`.

`@forward(inputs..., weights..., outputs...)` takes every tensor as a flat memref (row-major, the
layout NumPy uses): graph inputs, then the weights kernels read (uploaded once by the caller and
passed by reference), then the graph outputs to write (destination passing, so the program never
returns memory it allocated). Intermediates are `gpu.alloc`ed right before the kernel that
writes them and `gpu.dealloc`ed right after the last kernel that reads them (the device pool makes
both cheap); every launch goes on the default stream in order, exactly as seed 000 describes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nova.abi import LIBRARY_CALL_PREFIX, AnyPlan
from nova.compiler.parallel import SplitSource, split_text
from nova.models.codegen.attention import attention_kernel
from nova.models.codegen.context import GeneratedKernel, KernelContext
from nova.models.codegen.matmul import conv_kernel, matmul_kernel, small_m_kernel, small_m_rows
from nova.models.codegen.pointwise import pointwise_kernel
from nova.models.codegen.pool import pool_kernel
from nova.models.codegen.rows import row_kernel
from nova.models.codegen.text import Body, memref_type
from nova.models.errors import UnsupportedOpError
from nova.models.graph import Graph
from nova.models.passes.attention import AttentionChoice
from nova.models.passes.fusion import FusionPlan, KernelGroup
from nova.models.passes.library import GemmChoice
from nova.models.passes.library_conv import ConvChoice


@dataclass
class Program:
    """Generated MLIR and the @forward signature it implements."""

    mlir: str
    inputs: list[str]
    weights: list[str]
    outputs: list[str]
    kernels: list[GeneratedKernel]
    library_plans: list[AnyPlan] = field(default_factory=list)
    """Plans of the library calls, by index (the manifest's `nova.library.plans`)."""
    gemm: list[GemmChoice] = field(default_factory=list)
    """Where each MatMul runs (set by the pipeline; recorded in the manifest)."""
    conv: list[ConvChoice] = field(default_factory=list)
    """Where each Conv runs (likewise)."""
    attention: list[AttentionChoice] = field(default_factory=list)
    """How each attention pattern runs (set by the pipeline; recorded in the manifest)."""
    split: SplitSource | None = None
    """`mlir` split by device module, for the driver's parallel compile."""


@dataclass
class LibraryStep:
    """A library call of @forward: plan `index`, with these buffers as operands."""

    index: int
    buffers: list[str]
    plan: AnyPlan


Step = GeneratedKernel | LibraryStep


def generate_kernel(graph: Graph, plan: FusionPlan, group: KernelGroup, name: str,
                    tensor_cores: bool = True) -> GeneratedKernel:
    ctx = KernelContext(graph, plan, name)
    ctx.tensor_cores = tensor_cores
    anchor = group.anchor
    if anchor is None:
        return pointwise_kernel(ctx, group)
    kind = group.kind
    if kind == "matmul":
        rows = small_m_rows(ctx, anchor)
        if rows is not None:
            return small_m_kernel(ctx, group, anchor, rows)
        return matmul_kernel(ctx, group, anchor)
    if kind == "conv":
        return conv_kernel(ctx, group, anchor)
    if kind == "row":
        return row_kernel(ctx, group, anchor)
    if kind == "pool":
        return pool_kernel(ctx, group, anchor)
    if kind == "attention":
        return attention_kernel(ctx, group, anchor)
    raise UnsupportedOpError(f"{anchor.describe()}: no kernel generator for kind '{kind}'")


def generate_program(graph: Graph, plan: FusionPlan, tensor_cores: bool = True) -> Program:
    """The MLIR module (host @forward + gpu.module) of a typed, fused graph. `tensor_cores`:
    fp16 GEMMs use WMMA (for the GPU; the cpu device emulates WMMA correctly but slowly, and its
    object takes seconds per kernel to compile, so cpu-only programs use CUDA-core tiles).
    Groups given to a library (`group.library`) become `func.call @__nova_library_<i>`."""
    steps: list[Step] = []
    plans: list[AnyPlan] = []
    for i, g in enumerate(plan.kernels):
        if g.library is not None:
            steps.append(LibraryStep(len(plans), [plan.buffer_of(t) for t in g.library.tensors],
                                     g.library.plan))
            plans.append(g.library.plan)
        else:
            steps.append(generate_kernel(graph, plan, g, f"k{i}_{_slug(g)}", tensor_cores))
    kernels = [s for s in steps if isinstance(s, GeneratedKernel)]
    symbols, unique = _deduplicate(kernels)
    outputs = list(graph.outputs)
    inputs = list(graph.inputs)
    read = {buf for k in steps for buf in k.buffers}
    weights = [w for w in graph.weights if w in read]
    body, sig = _host_body(graph, plan, steps, inputs, weights, outputs, symbols)
    declarations = [f"  func.func private @{LIBRARY_CALL_PREFIX}{s.index}("
                    f"{', '.join(_buffer_type(graph, b) for b in s.buffers)})"
                    for s in steps if isinstance(s, LibraryStep)]
    modules = [_module(k) for k in unique]
    tail = [*declarations, f"  func.func @forward({', '.join(sig)}) {{", _indent(body.text(), 1),
            "    return", "  }", "}", ""]
    mlir = "\n".join([CONTAINER, *(line for m in modules for line in m), *tail])
    return Program(mlir, inputs, weights, outputs, kernels, plans,
                   split=split_text(mlir, _spans(unique, modules)))


CONTAINER = "module attributes {gpu.container_module} {"


def _spans(unique: list[GeneratedKernel], modules: list[list[str]]) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each device module in the program text."""
    spans, line = [], 1
    for kernel, module in zip(unique, modules, strict=True):
        count = sum(part.count("\n") + 1 for part in module)
        spans.append((kernel.name, line, line + count - 1))
        line += count
    return spans


def _module(kernel: GeneratedKernel) -> list[str]:
    """The lines of the gpu.module holding one kernel (named after it, as upstream's outlining
    names the module of each kernel): each kernel is its own device module so that the driver
    assembles it (ptxas) while the next one is still being compiled, and a kernel's PTX does not
    depend on which others the model has."""
    text = "\n".join(_indent(t, 2) for t in (kernel.globals, kernel.text) if t)
    return [f"  gpu.module @{kernel.name} {{", text, "  }"]


def _deduplicate(kernels: list[GeneratedKernel]) -> tuple[dict[str, str], list[GeneratedKernel]]:
    """Kernels whose code differs only in their name (the two LayerNorms of an encoder layer,
    same-shaped GEMMs with the same epilogue) are emitted once: (kernel name -> the gpu.func it
    launches, the kernels to emit). The code compares equal as text with the kernel's own name
    (its symbol and its workgroup globals' prefix) masked, so the launches run exactly the code
    each would have had; compile time drops by the duplicates' share."""
    first: dict[tuple[str, str], str] = {}
    symbols: dict[str, str] = {}
    unique: list[GeneratedKernel] = []
    for k in kernels:
        key = (k.text.replace(k.name, "\0"), k.globals.replace(k.name, "\0"))
        symbols[k.name] = first.setdefault(key, k.name)
        if symbols[k.name] == k.name:
            unique.append(k)
    return symbols, unique


def _buffer_type(graph: Graph, buffer: str) -> str:
    t = graph.type_of(buffer)
    return memref_type(t.numel(), t.dtype)


def _host_body(graph: Graph, plan: FusionPlan, steps: list[Step], inputs: list[str],
               weights: list[str], outputs: list[str],
               symbols: dict[str, str]) -> tuple[Body, list[str]]:
    """@forward's body: allocations before each step's output, launches (of the gpu.func
    `symbols` names for each kernel) / library calls in order, deallocations after each
    buffer's last use; and the signature."""
    external = set(inputs) | set(weights) | set(outputs)
    last_use: dict[str, int] = {}
    for i, k in enumerate(steps):
        for buf in k.buffers:
            last_use[buf] = i
    body = Body("h")
    live: dict[str, str] = {}
    sig = []
    for kind, names in (("in", inputs), ("w", weights), ("out", outputs)):
        for j, name in enumerate(names):
            ref = f"%{kind}{j}"
            live[name] = ref
            sig.append(f"{ref}: {_buffer_type(graph, name)}")
    body.ix(1)  # the constant 1 first, as before library steps existed (stable MLIR text)
    for i, (group, k) in enumerate(zip(plan.kernels, steps, strict=True)):
        root = plan.buffer_of(group.root)
        if root not in live:
            live[root] = body.op(f"gpu.alloc () : {_buffer_type(graph, root)}", "buf")
        operands = [f"{live[buf]} : {_buffer_type(graph, buf)}" for buf in k.buffers]
        if isinstance(k, LibraryStep):
            refs = ", ".join(live[buf] for buf in k.buffers)
            types = ", ".join(_buffer_type(graph, buf) for buf in k.buffers)
            body.line(f"func.call @{LIBRARY_CALL_PREFIX}{k.index}({refs}) : ({types}) -> ()")
        else:
            operands += [f"{body.ix(v)} : index" for v in k.scalars]
            gx, gy, gz = (body.ix(v) for v in k.grid)
            bx, by, bz = (body.ix(v) for v in k.block)
            kernel = symbols[k.name]  # its module and gpu.func have the same name
            body.line(f"gpu.launch_func @{kernel}::@{kernel} blocks in ({gx}, {gy}, {gz}) "
                      f"threads in ({bx}, {by}, {bz}) args({', '.join(operands)})")
        for buf in dict.fromkeys(k.buffers):
            if last_use.get(buf) == i and buf not in external:
                body.line(f"gpu.dealloc {live[buf]} : {_buffer_type(graph, buf)}")
    return body, sig


def _indent(text: str, levels: int) -> str:
    pad = "  " * levels
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _slug(group: KernelGroup) -> str:
    ops = ([group.anchor.op] if group.anchor else []) + [n.op for n in group.nodes]
    slug = "_".join(o.lower() for o in ops[:4])
    return slug + ("_etc" if len(ops) > 4 else "")
