"""The whole program: one `gpu.module` of generated kernels and the host function `@forward`.

`@forward(inputs..., weights..., outputs...)` takes every tensor as a flat memref (row-major, the
layout NumPy uses): graph inputs, then the weights kernels read (uploaded once by the caller and
passed by reference), then the graph outputs to write (destination passing, so the program never
returns memory it allocated). Intermediates are `gpu.alloc`ed right before the kernel that
writes them and `gpu.dealloc`ed right after the last kernel that reads them (the device pool makes
both cheap); every launch goes on the default stream in order, exactly as seed 000 describes.
"""

from __future__ import annotations

from dataclasses import dataclass

from nova.models.codegen.context import GeneratedKernel, KernelContext
from nova.models.codegen.matmul import conv_kernel, matmul_kernel, small_m_kernel, small_m_rows
from nova.models.codegen.pointwise import pointwise_kernel
from nova.models.codegen.pool import pool_kernel
from nova.models.codegen.rows import row_kernel
from nova.models.codegen.text import Body, memref_type
from nova.models.errors import UnsupportedOpError
from nova.models.graph import Graph
from nova.models.passes.fusion import FusionPlan, KernelGroup

MODULE = "nova_model"


@dataclass
class Program:
    """Generated MLIR and the @forward signature it implements."""

    mlir: str
    inputs: list[str]
    weights: list[str]
    outputs: list[str]
    kernels: list[GeneratedKernel]


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
    raise UnsupportedOpError(f"{anchor.describe()}: no kernel generator for kind '{kind}'")


def generate_program(graph: Graph, plan: FusionPlan, tensor_cores: bool = True) -> Program:
    """The MLIR module (host @forward + gpu.module) of a typed, fused graph. `tensor_cores`:
    fp16 GEMMs use WMMA (for the GPU; the cpu device emulates WMMA correctly but slowly, and its
    object takes seconds per kernel to compile, so cpu-only programs use CUDA-core tiles)."""
    kernels = [generate_kernel(graph, plan, g, f"k{i}_{_slug(g)}", tensor_cores)
               for i, g in enumerate(plan.kernels)]
    outputs = list(graph.outputs)
    inputs = list(graph.inputs)
    read = {buf for k in kernels for buf in k.buffers}
    weights = [w for w in graph.weights if w in read]
    external = set(inputs) | set(weights) | set(outputs)
    # last kernel reading each internal buffer
    last_use: dict[str, int] = {}
    for i, k in enumerate(kernels):
        for buf in k.buffers:
            last_use[buf] = i

    body = Body("h")
    args: dict[str, str] = {}
    sig = []
    for kind, names in (("in", inputs), ("w", weights), ("out", outputs)):
        for j, name in enumerate(names):
            ref = f"%{kind}{j}"
            args[name] = ref
            t = graph.type_of(name)
            sig.append(f"{ref}: {memref_type(t.numel(), t.dtype)}")
    one = body.ix(1)
    live: dict[str, str] = dict(args)
    for i, (group, k) in enumerate(zip(plan.kernels, kernels, strict=True)):
        root = plan.buffer_of(group.root)
        if root not in live:
            t = graph.type_of(root)
            live[root] = body.op(f"gpu.alloc () : {memref_type(t.numel(), t.dtype)}", "buf")
        operands = []
        for buf in k.buffers:
            t = graph.type_of(buf)
            operands.append(f"{live[buf]} : {memref_type(t.numel(), t.dtype)}")
        operands += [f"{body.ix(v)} : index" for v in k.scalars]
        gx, gy, gz = (body.ix(v) for v in k.grid)
        bx, by, bz = (body.ix(v) for v in k.block)
        body.line(f"gpu.launch_func @{MODULE}::@{k.name} blocks in ({gx}, {gy}, {gz}) "
                  f"threads in ({bx}, {by}, {bz}) args({', '.join(operands)})")
        for buf in k.buffers:
            if last_use.get(buf) == i and buf not in external:
                t = graph.type_of(buf)
                body.line(f"gpu.dealloc {live[buf]} : {memref_type(t.numel(), t.dtype)}")
    del one
    kernel_text = "\n".join(_indent(t, 2) for k in kernels for t in (k.globals, k.text) if t)
    mlir = "\n".join([
        "module attributes {gpu.container_module} {",
        f"  gpu.module @{MODULE} {{",
        kernel_text,
        "  }",
        f"  func.func @forward({', '.join(sig)}) {{",
        _indent(body.text(), 1),
        "    return",
        "  }",
        "}",
        "",
    ])
    return Program(mlir, inputs, weights, outputs, kernels)


def _indent(text: str, levels: int) -> str:
    pad = "  " * levels
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _slug(group: KernelGroup) -> str:
    ops = ([group.anchor.op] if group.anchor else []) + [n.op for n in group.nodes]
    slug = "_".join(o.lower() for o in ops[:4])
    return slug + ("_etc" if len(ops) > 4 else "")
