"""Per-kernel generation state: the body text, the buffers the kernel takes as parameters, and
loads/stores that convert between a tensor's storage type and its compute type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nova.models.codegen.text import COMPUTE, Body, Index, memref_type, storage_type
from nova.models.graph import Graph, TensorType
from nova.models.passes.fusion import FusionPlan

VECTOR_BYTES = 16
"""Widest access generated kernels make (ld/st.global.v4.b32 on the GPU)."""


def vector_lanes(dtypes: list[str], extent: int) -> int:
    """Elements per vector access of tensors of `dtypes` along a contiguous run of `extent`
    elements: 16 bytes of the widest storage type, halved until it divides `extent` (so every
    vector starts at a multiple of its size and stays inside the run); 1 for bool (i1 vectors
    are bit-packed in LLVM) or when nothing divides."""
    sizes = [_STORAGE_BYTES.get(storage_type(d), 0) for d in dtypes]
    if not sizes or 0 in sizes:
        return 1
    lanes = VECTOR_BYTES // max(sizes)
    while lanes > 1 and extent % lanes:
        lanes //= 2
    return max(lanes, 1)


_STORAGE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8, "i32": 4, "i8": 1}


def _alignment(lanes: int, storage: str) -> str:
    """The `{alignment = N}` of a vector access of `lanes` elements starting at a multiple of
    `lanes` in a 16-byte aligned buffer. Said explicitly because index math through div/rem
    by dims that are not powers of two hides it from LLVM, which would then split the access
    into scalar ones."""
    return f"{{alignment = {min(VECTOR_BYTES, lanes * _STORAGE_BYTES[storage])} : i64}} "


@dataclass
class GeneratedKernel:
    """One gpu.func's text and how the host launches it."""

    name: str
    text: str
    buffers: list[str]
    """Buffer tensors passed as the kernel's arguments, in order."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    globals: str = ""
    """Module-level declarations the kernel uses (aligned workgroup tiles), text."""
    scalars: tuple[int, ...] = ()
    """Values of the trailing `index` parameters (see KernelContext.opaque)."""


class KernelContext:
    """Builds one kernel: `body`, and `buffer(t)` to make tensor t's buffer a parameter."""

    def __init__(self, graph: Graph, plan: FusionPlan, name: str) -> None:
        self.graph = graph
        self.plan = plan
        self.name = name
        self.body = Body()
        self.params: dict[str, str] = {}
        self.workgroup: list[str] = []
        self.globals: list[str] = []
        self.tensor_cores = True
        self.scalars: list[int] = []
        self.written: set[str] = set()

    def type_of(self, tensor: str) -> TensorType:
        return self.graph.type_of(tensor)

    def shape(self, tensor: str) -> tuple[int, ...]:
        return tuple(int(d) for d in self.type_of(tensor).shape)

    def ctype(self, tensor: str) -> str:
        return COMPUTE[self.type_of(tensor).dtype]

    def buffer(self, tensor: str) -> tuple[str, str]:
        """(SSA name, memref type) of the buffer holding `tensor`, added as a parameter."""
        base = self.plan.buffer_of(tensor)
        t = self.type_of(base)
        ty = memref_type(t.numel(), t.dtype)
        name = self.params.get(base)
        if name is None:
            name = f"%a{len(self.params)}"
            self.params[base] = name
        return name, ty

    def load(self, tensor: str, linear: Index) -> str:
        """Element `linear` of `tensor`, converted to its compute type."""
        ref, ty = self.buffer(tensor)
        dtype = self.type_of(tensor).dtype
        raw = self.body.op(f"memref.load {ref}[{self.body.ix(linear)}] : {ty}")
        return convert_storage_to_compute(self.body, raw, dtype)

    def store(self, tensor: str, linear: Index, value: str) -> None:
        """Store compute-typed `value` at element `linear` of `tensor`."""
        ref, ty = self.buffer(tensor)
        self.written.add(self.plan.buffer_of(tensor))
        dtype = self.type_of(tensor).dtype
        stored = convert_compute_to_storage(self.body, value, dtype)
        self.body.line(f"memref.store {stored}, {ref}[{self.body.ix(linear)}] : {ty}")

    def load_vector(self, tensor: str, linear: Index, lanes: int) -> str:
        """Elements linear..linear+lanes-1 of `tensor` as one storage-typed vector; `linear`
        must be a multiple of `lanes` (the access is declared aligned to its size, up to 16
        bytes: every buffer is 16-byte aligned, see _facts)."""
        ref, ty = self.buffer(tensor)
        st = storage_type(self.type_of(tensor).dtype)
        vty = f"vector<{lanes}x{st}>"
        return self.body.op(f"vector.load {ref}[{self.body.ix(linear)}] "
                            f"{_alignment(lanes, st)}: {ty}, {vty}")

    def extract(self, tensor: str, vector: str, lane: int, lanes: int) -> str:
        """Lane `lane` of a vector from `load_vector(tensor, ...)`, converted to compute type."""
        dtype = self.type_of(tensor).dtype
        st = storage_type(dtype)
        n = self.body.op(f"vector.extract {vector}[{lane}] : {st} from "
                         f"vector<{lanes}x{st}>")
        return convert_storage_to_compute(self.body, n, dtype)

    def store_lanes(self, tensor: str, linear: Index, values: list[str]) -> None:
        """Store compute-typed `values` at elements linear.. of `tensor`: one vector store
        (`linear` a multiple of the lane count, as for load_vector)."""
        if len(values) == 1:
            self.store(tensor, linear, values[0])
            return
        ref, ty = self.buffer(tensor)
        self.written.add(self.plan.buffer_of(tensor))
        dtype = self.type_of(tensor).dtype
        st = storage_type(dtype)
        stored = [convert_compute_to_storage(self.body, v, dtype) for v in values]
        vty = f"vector<{len(values)}x{st}>"
        vec = self.body.op(f"vector.from_elements {', '.join(stored)} : {vty}")
        self.body.line(f"vector.store {vec}, {ref}[{self.body.ix(linear)}] "
                       f"{_alignment(len(values), st)}: {ty}, {vty}")

    def scalar_weight(self, tensor: str) -> float | int | bool | None:
        """The value of a one-element weight (inlined as a constant), else None."""
        w = self.graph.weights.get(tensor)
        if w is None or w.size != 1:
            return None
        v = np.asarray(w).reshape(-1)[0]
        return bool(v) if w.dtype == np.bool_ else (int(v) if np.issubdtype(
            w.dtype, np.integer) else float(v))

    def shared(self, name: str, count: int, ty: str = "f32") -> str:
        """A workgroup (shared memory) buffer of `count` elements; returns its SSA name."""
        self.workgroup.append(f"%{name} : memref<{count}x{ty}, #gpu.address_space<workgroup>>")
        return f"%{name}"

    def opaque(self, value: int) -> str:
        """`value` as an `index` kernel parameter rather than a constant: a loop bounded by it
        keeps its loop form (LLVM fully unrolls constant-trip loops such as a GEMM's K loop,
        which bloats the code and the compile time for no gain)."""
        self.scalars.append(value)
        return f"%s{len(self.scalars) - 1}"

    def shared_global(self, name: str, shape: tuple[int, ...], ty: str, align: int = 64) \
            -> tuple[str, str]:
        """A workgroup buffer declared as an aligned module-level `memref.global` (WMMA tiles
        need 32-byte alignment, which attributions do not promise); (SSA name, type)."""
        symbol = f"{self.name}_{name}"
        dims = "x".join(str(d) for d in shape)
        mem = f"memref<{dims}x{ty}, #gpu.address_space<workgroup>>"
        self.globals.append(f'memref.global "private" @{symbol} : {mem} '
                            f"{{alignment = {align} : i64}}")
        ref = self.body.op(f"memref.get_global @{symbol} : {mem}")
        return ref, mem

    def finish(self, grid: tuple[int, int, int], block: tuple[int, int, int]) -> GeneratedKernel:
        """The gpu.func text (parameters are the buffers used, in first-use order)."""
        args = ", ".join([f"{name}: {self._param_type(base)} {self._facts(base)}"
                          for base, name in self.params.items()]
                         + [f"%s{i}: index" for i in range(len(self.scalars))])
        wg = f" workgroup({', '.join(self.workgroup)})" if self.workgroup else ""
        head = (f"gpu.func @{self.name}({args}){wg} kernel attributes "
                f"{{known_block_size = array<i32: {block[0]}, {block[1]}, {block[2]}>}} {{")
        text = "\n".join([head, self.body.text(), "  gpu.return", "}"])
        return GeneratedKernel(self.name, text, list(self.params), grid, block,
                               "\n".join(self.globals), tuple(self.scalars))

    def _facts(self, base: str) -> str:
        """Argument attributes the host guarantees: every buffer is 16-byte aligned (device
        allocations, and CompiledModel copies misaligned inputs), and buffers this kernel only
        reads alias none it writes (each kernel writes one fresh or output buffer). LLVM then
        emits 16-byte vector loads and the read-only path (ld.global.nc) on the GPU."""
        if base in self.written:
            return "{llvm.align = 16 : i64}"
        return "{llvm.align = 16 : i64, llvm.noalias, llvm.readonly}"

    def _param_type(self, base: str) -> str:
        t = self.type_of(base)
        return memref_type(t.numel(), t.dtype)


def convert_storage_to_compute(body: Body, raw: str, dtype: str) -> str:
    st, ct = storage_type(dtype), COMPUTE[dtype]
    if st == ct:
        return raw
    if ct == "f32":
        return body.op(f"arith.extf {raw} : {st} to f32")
    if dtype == "uint8":
        return body.op(f"arith.extui {raw} : {st} to {ct}")
    return body.op(f"arith.extsi {raw} : {st} to {ct}")


def convert_compute_to_storage(body: Body, value: str, dtype: str) -> str:
    st, ct = storage_type(dtype), COMPUTE[dtype]
    if st == ct:
        return value
    if ct == "f32":
        return body.op(f"arith.truncf {value} : f32 to {st}")
    return body.op(f"arith.trunci {value} : {ct} to {st}")


def to_f32(ctx: KernelContext, tensor: str, value: str) -> str:
    """`value` (compute type of `tensor`) as f32."""
    ty = ctx.ctype(tensor)
    if ty == "f32":
        return value
    if ty == "f64":
        return ctx.body.op(f"arith.truncf {value} : f64 to f32")
    return ctx.body.op(f"arith.sitofp {value} : {ty} to f32")


def from_f32(ctx: KernelContext, tensor: str, value: str) -> str:
    """f32 `value` in the compute type of `tensor`."""
    ty = ctx.ctype(tensor)
    if ty == "f32":
        return value
    if ty == "f64":
        return ctx.body.op(f"arith.extf {value} : f32 to f64")
    return ctx.body.op(f"arith.fptosi {value} : f32 to {ty}")
