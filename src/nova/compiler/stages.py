"""The compile pipeline's table of named stages, their options and the state they share.

Each `Stage` says how to run (fill `Compilation`), how to render its output (for dumps and
`--emit`), which stages it reads, whether the options enable it, and how a hand-edited output
replaces it (NOVA_OVERRIDE_DIR). `nova.compiler.driver` owns the one loop that runs this table.
Heavy
imports (xDSL, llvmlite, the backends) happen inside the stage functions.

ptxas runs in the background: one ptxas per device module (in a worker thread; ptxas is a
separate process, so it overlaps the later modules' PTX emission and the CPU-object and host
stages), started by the `ptx` stage as soon as the module's PTX exists when the driver will run
`cubin` and no override can replace the PTX (`Compilation.early_cubin`), else by the `cubin`
stage; `finish_cubins` collects the results where they are first read (embed, the cubin stage's
own output, an override). A ptxas error is therefore raised when the cubins are collected.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nova import config
from nova.errors import NovaError

TYPE_CHECKING = False  # not `from typing`: a cache hit of nova-translate never imports typing
if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor
    from typing import Any

    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from nova.compiler.parallel import Pending, SplitSource

Artifact = str | bytes | Mapping[str, str | bytes]

# Upstream's order: `mlir-opt --lower-affine --gpu-kernel-outlining`, so affine ops in host code
# and in gpu.launch bodies both reach the backends as scf/arith/memref; `async-to-sync` first, so
# the ops of execute regions are lowered and outlined like any other host code.
OUTLINE_PIPELINE = "async-to-sync,lower-affine,outline-kernels"
DEFAULT_OPT_LEVEL = 3
EMIT_ALIASES = {"outlined": "outline", "mlir": "parse", "bundle": "nova"}


class CompileOptionsError(NovaError):
    """Compile options that name an unknown stage or ask for a disabled one."""


def _default_arch() -> str:
    return config.get().arch


def _default_check_bounds() -> bool:
    return config.get().check_bounds


@dataclass(frozen=True)
class CompileOptions:
    """What to build. `emit` names the last stage to run (see `STAGES`; 'outlined' = 'outline').

    `ptx` (and with it `cubin`, assembled from the PTX when ptxas exists) builds the GPU images;
    `cpu_image` the CPU device's object of the same kernels; at least one of them is needed.
    `check_bounds` (default: NOVA_CHECK_BOUNDS) checks every memref load/store/atomic index
    against its memref's sizes in kernels and host code (docs/debugging.md).
    """

    arch: str = field(default_factory=_default_arch)
    emit: str = "nova"
    ptx: bool = True
    cubin: bool = True
    cpu_image: bool = True
    opt_level: int = DEFAULT_OPT_LEVEL
    check_bounds: bool = field(default_factory=_default_check_bounds)
    allow_unregistered: bool = False  # parse ops of unknown dialects (compiling one is an error)
    manifest_extra: tuple[tuple[str, str], ...] = ()
    """(key, value) notes written into the manifest's `extra` (e.g. a model's signature)."""

    def target(self) -> str:
        """The stage name `emit` refers to, validated."""
        name = EMIT_ALIASES.get(self.emit, self.emit)
        stage = STAGE_BY_NAME.get(name)
        if stage is None:
            known = ", ".join([*STAGE_BY_NAME, *EMIT_ALIASES])
            raise CompileOptionsError(f"unknown emit stage '{self.emit}' (known: {known})")
        if not stage.enabled(self):
            raise CompileOptionsError(f"stage '{name}' is disabled by the compile options")
        if not (self.ptx or self.cpu_image):
            raise CompileOptionsError("no kernel image to build: enable ptx or cpu_image")
        if self.opt_level not in range(4):
            raise CompileOptionsError(f"opt_level must be 0, 1, 2 or 3 (LLVM's -O levels), got "
                                      f"{self.opt_level!r}")
        return name


@dataclass
class Compilation:
    """The state stages read and write; one instance per compilation."""

    text: str
    filename: str
    options: CompileOptions
    module: ModuleOp | None = None
    device_modules: dict[str, Operation] = field(default_factory=dict)
    binaries: dict[str, Operation] = field(default_factory=dict)  # gpu.binary ops by name
    kernels: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # name -> Kernel records
    device_llvm: dict[str, str] = field(default_factory=dict)
    ptx: dict[str, str] = field(default_factory=dict)
    cubin: dict[str, bytes | None] = field(default_factory=dict)
    pending_cubin: dict[str, Future[tuple[bytes | None, float]]] = field(default_factory=dict)
    background_timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    cpu_llvm: dict[str, str] = field(default_factory=dict)
    cpu_objects: dict[str, bytes] = field(default_factory=dict)
    host: Any = None  # HostLowering
    manifest: Any = None
    host_object: bytes = b""
    bundle: bytes = b""
    done: frozenset[str] = frozenset()  # stages whose output was given, not run
    early_cubin: bool = False
    """The `ptx` stage starts ptxas on each module as soon as its PTX exists (set by the driver
    when the `cubin` stage will run and no override can replace the PTX)."""
    split: SplitSource | None = None
    """Set by the driver to compile the device modules in worker processes
    (nova.compiler.parallel): `parse` sends them off and parses `split.host`, `embed` collects
    them; the device stages then have no module of their own to run on."""
    workers: int = 1
    pending: Pending | None = None

    @classmethod
    def from_module(cls, module: ModuleOp, filename: str, options: CompileOptions,
                    after: str = "parse") -> Compilation:
        """A compilation that starts from a built module instead of text: the stages up to and
        including `after` ('parse', or 'outline' for a module that is already outlined, such as
        a Python kernel's gpu.module) count as done, their output being `module`."""
        if after not in ("parse", "outline"):
            raise CompileOptionsError(f"a built module enters the pipeline after 'parse' or "
                                      f"'outline', not after '{after}'")
        done = frozenset(s.name for s in STAGES[: STAGES.index(STAGE_BY_NAME[after]) + 1])
        c = cls("", filename, options, module=module, done=done)
        _find_device_modules(c)
        return c


# ---- the stages -------------------------------------------------------------------------------

def _parse(c: Compilation) -> None:
    from nova.ir.parser import parse_mlir

    if c.split is not None:
        _parse_split(c)
        return
    c.module = parse_mlir(c.text, c.filename,
                          allow_unregistered=c.options.allow_unregistered)


def _parse_split(c: Compilation) -> None:
    """Send the device modules to the workers, then parse the host part (its stub modules give
    the launches' kernel signatures to the verifier). A host part that is not what a split source
    promises (module stubs other than the split's, in another order, or launches to outline) is
    compiled serially from the whole text instead."""
    from nova.compiler import parallel
    from nova.ir.parser import parse_mlir

    assert c.split is not None
    c.pending = parallel.submit(c.split, c.filename, c.options, c.workers)
    if c.pending is None:  # no workers to be had: serially
        c.split = None
        _parse(c)
        return
    try:
        c.module = parse_mlir(c.split.host, c.filename,
                              allow_unregistered=c.options.allow_unregistered)
    except NovaError:
        parallel.collect(c, c.pending)  # a module's error comes first, as in the text
        raise
    _find_device_modules(c)
    names = [m.name for m in c.split.modules]
    if list(c.device_modules) != names or _outline_pipeline(c.module):
        parallel.cancel(c.pending)
        c.split = c.pending = None
        _parse(c)
        return
    c.device_modules = {}  # stubs: the workers compile the modules


def finish_modules(c: Compilation) -> None:
    """Collect the workers' device images (nova.compiler.parallel), if any are pending."""
    if c.pending is not None:
        from nova.compiler import parallel

        pending, c.pending = c.pending, None
        parallel.collect(c, pending)


def _print_module(c: Compilation) -> str:
    from nova.ir.parser import print_mlir

    assert c.module is not None
    return print_mlir(c.module)


def _find_device_modules(c: Compilation) -> None:
    assert c.module is not None
    c.device_modules = {
        _symbol_name(op): op for op in c.module.body.block.ops if op.name == "gpu.module"
    }
    c.binaries = {
        _symbol_name(op): op for op in c.module.body.block.ops if op.name == "gpu.binary"
    }


def _outline(c: Compilation) -> None:
    from nova.passes.registry import run_pipeline

    assert c.module is not None
    if c.split is not None:
        return  # checked by _parse_split: nothing to outline
    pipeline = _outline_pipeline(c.module)
    if pipeline:  # nothing to outline (e.g. nova.models' already outlined programs): no passes,
        run_pipeline(c.module, pipeline)  # and no re-verification of an unchanged module
    _find_device_modules(c)


def _outline_pipeline(module: ModuleOp) -> str:
    """OUTLINE_PIPELINE, without the passes that would change nothing: async-to-sync /
    lower-affine for a module that has no op of their dialect, outline-kernels for one without
    a `gpu.launch` (each verification after a pass costs ~1 ms per compile of a small program,
    ~0.2 s for the 2,700 ops of an encoder layer)."""
    names = {op.name for op in module.walk()}
    dialects = {name.partition(".")[0] for name in names}
    needs = {"async-to-sync": "async" in dialects, "lower-affine": "affine" in dialects,
             "outline-kernels": "gpu.launch" in names}
    return ",".join(name for name in OUTLINE_PIPELINE.split(",") if needs.get(name, True))


def _symbol_name(op: Operation) -> str:
    attr = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return str(getattr(attr, "data", attr))


def _device_llvm(c: Compilation) -> None:
    if not c.device_modules:  # nothing here (the workers' modules): no imports either
        return
    from nova.backends.device import DeviceTarget, lower_device_module

    for name, op in c.device_modules.items():
        lowering = lower_device_module(op, DeviceTarget.NVPTX, c.options.arch,
                                       c.options.check_bounds)
        c.kernels[name] = tuple(lowering.kernels)
        c.device_llvm[name] = str(lowering.llvm_module)


def _ptx(c: Compilation) -> None:
    if not c.device_llvm:  # nothing here (the workers' modules): no imports either
        return
    from nova.backends.nvptx.ptx import emit_ptx

    for name, llvm_ir in c.device_llvm.items():
        c.ptx[name] = emit_ptx(llvm_ir, c.options.arch, opt_level=c.options.opt_level)
        if c.early_cubin:  # ptxas (another process) overlaps the next module's PTX emission
            _submit_cubin(c, name)


_ptxas_pool: ThreadPoolExecutor | None = None
_ptxas_pool_pid = 0
_ptxas_pool_lock = threading.Lock()


def _timed_assemble(ptx: str, arch: str, opt_level: int) -> tuple[bytes | None, float]:
    from nova.backends.nvptx.ptx import assemble_cubin

    start = time.perf_counter()
    return assemble_cubin(ptx, arch, opt_level), time.perf_counter() - start


def _cubin(c: Compilation) -> None:
    """Start ptxas for every device module not started yet; `finish_cubins` collects them."""
    for name in c.ptx:
        if name not in c.pending_cubin and name not in c.cubin:
            _submit_cubin(c, name)


def _submit_cubin(c: Compilation, name: str) -> None:
    global _ptxas_pool, _ptxas_pool_pid
    from concurrent.futures import ThreadPoolExecutor

    with _ptxas_pool_lock:
        if _ptxas_pool is None or _ptxas_pool_pid != os.getpid():  # a forked child: new threads
            workers = max(2, min(8, os.cpu_count() or 2))
            _ptxas_pool = ThreadPoolExecutor(max_workers=workers,
                                             thread_name_prefix="nova-ptxas")
            _ptxas_pool_pid = os.getpid()
        pool = _ptxas_pool
    c.pending_cubin[name] = pool.submit(_timed_assemble, c.ptx[name], c.options.arch,
                                        c.options.opt_level)


def finish_cubins(c: Compilation) -> dict[str, bytes | None]:
    """Wait for the background ptxas runs and store their cubins in `c.cubin` (raising the
    first module's error, in module order); their wall time becomes the `cubin` timing."""
    while c.pending_cubin:
        name = next(iter(c.pending_cubin))
        future = c.pending_cubin.pop(name)
        cubin, seconds = future.result()
        c.cubin[name] = cubin
        c.background_timings["cubin"] = c.background_timings.get("cubin", 0.0) + seconds
    return c.cubin


def _replace_cubin(c: Compilation, outputs: Artifact, path: str) -> None:
    finish_cubins(c)
    _updater("cubin")(c, outputs, path)


def _cpu_llvm(c: Compilation) -> None:
    if not c.device_modules:  # nothing here (the workers' modules): no imports either
        return
    from nova.backends.device import DeviceTarget, lower_device_module

    for name, op in c.device_modules.items():
        lowering = lower_device_module(op, DeviceTarget.CPU, c.options.arch,
                                       c.options.check_bounds)
        c.kernels.setdefault(name, tuple(lowering.kernels))  # GPU records win when both exist
        c.cpu_llvm[name] = str(lowering.llvm_module)


def _cpu_obj(c: Compilation) -> None:
    if not c.cpu_llvm:  # nothing here (the workers' modules): no imports either
        return
    from nova.backends.x86 import emit_object

    for name, llvm_ir in c.cpu_llvm.items():
        c.cpu_objects[name] = emit_object(llvm_ir, opt_level=c.options.opt_level)


def _host_llvm(c: Compilation) -> None:
    from nova.backends.host.lower import lower_host

    assert c.module is not None
    c.host = lower_host(c.module, check_bounds=c.options.check_bounds)


def _embed(c: Compilation) -> None:
    from nova.bundle.writer import DeviceImages, embed_device_images

    finish_modules(c)
    finish_cubins(c)
    images = [
        DeviceImages(name=name, kernels=kernels, ptx=c.ptx.get(name), cubin=c.cubin.get(name),
                     cpu_object=c.cpu_objects.get(name))
        for name, kernels in c.kernels.items()
    ]
    images += _binary_images(c)
    c.manifest = embed_device_images(
        c.host.llvm_module, images, c.host.entries, c.options.arch, Path(c.filename).name,
        dict(c.options.manifest_extra),
    )


def _binary_images(c: Compilation) -> list[Any]:
    """The device images of the module's gpu.binary ops (nova.backends.gpu_binary)."""
    if not c.binaries:
        return []  # and no import of the gpu.binary support (it loads the CPU-device target)
    from nova.backends.gpu_binary import binary_images
    from nova.bundle.writer import DeviceImages

    images = []
    for op in c.binaries.values():
        assert c.module is not None
        found = binary_images(c.module, op, c.options.cpu_image,  # type: ignore[arg-type]
                              c.options.opt_level)
        gpu = c.options.ptx
        images.append(DeviceImages(name=found.name, kernels=found.kernels,
                                   ptx=found.ptx if gpu else None,
                                   cubin=found.cubin if gpu else None,
                                   cpu_object=found.cpu_object))
    return images


def _obj(c: Compilation) -> None:
    from nova.backends.x86 import emit_object

    c.host_object = emit_object(str(c.host.llvm_module), opt_level=c.options.opt_level)


def _nova(c: Compilation) -> None:
    from nova.bundle.writer import seal_bundle

    c.bundle = seal_bundle(c.host_object)


# ---- replacing a stage's output by a hand-edited file -------------------------------------------

def _replace_module(c: Compilation, text: Artifact, path: str) -> None:
    from nova.ir.parser import parse_mlir

    assert isinstance(text, str)
    c.module = parse_mlir(text, path, allow_unregistered=c.options.allow_unregistered)
    _find_device_modules(c)


def _updater(attribute: str) -> Callable[[Compilation, Artifact, str], None]:
    def update(c: Compilation, outputs: Artifact, path: str) -> None:
        assert isinstance(outputs, Mapping)
        getattr(c, attribute).update(outputs)

    return update


def _setter(attribute: str) -> Callable[[Compilation, Artifact, str], None]:
    def set_value(c: Compilation, output: Artifact, path: str) -> None:
        setattr(c, attribute, output)

    return set_value


# ---- the table ----------------------------------------------------------------------------------

def _always(options: CompileOptions) -> bool:
    return True


def _gpu(options: CompileOptions) -> bool:
    return options.ptx


def _gpu_cubin(options: CompileOptions) -> bool:
    return options.ptx and options.cubin


def _cpu(options: CompileOptions) -> bool:
    return options.cpu_image


@dataclass(frozen=True)
class Stage:
    """One named step of the pipeline.

    `run` fills the compilation state; `render` gives its output (for dumps and --emit); `needs`
    names the stages whose results it reads; `per_module` outputs are keyed by gpu.module name;
    `replace` installs a hand-edited output (None: not replaceable); `run_anyway` stages still
    run when replaced (device-llvm, cpu-llvm: the kernel records come from the lowering).
    """

    name: str
    ext: str
    run: Callable[[Compilation], None]
    render: Callable[[Compilation], Artifact]
    needs: tuple[str, ...] = ()
    enabled: Callable[[CompileOptions], bool] = _always
    per_module: bool = False
    replace: Callable[[Compilation, Artifact, str], None] | None = None
    run_anyway: bool = False

    @property
    def binary(self) -> bool:
        return self.ext in ("cubin", "o", "nova")


STAGES: tuple[Stage, ...] = (
    Stage("parse", "mlir", _parse, _print_module, replace=_replace_module),
    Stage("outline", "mlir", _outline, _print_module, ("parse",), replace=_replace_module),
    Stage("device-llvm", "ll", _device_llvm, lambda c: dict(c.device_llvm), ("outline",), _gpu,
          per_module=True, replace=_updater("device_llvm"), run_anyway=True),
    Stage("ptx", "ptx", _ptx, lambda c: dict(c.ptx), ("device-llvm",), _gpu, per_module=True,
          replace=_updater("ptx")),
    Stage("cubin", "cubin", _cubin, lambda c: {n: b for n, b in finish_cubins(c).items() if b},
          ("ptx",), _gpu_cubin, per_module=True, replace=_replace_cubin),
    Stage("cpu-llvm", "ll", _cpu_llvm, lambda c: dict(c.cpu_llvm), ("outline",), _cpu,
          per_module=True, replace=_updater("cpu_llvm"), run_anyway=True),
    Stage("cpu-obj", "o", _cpu_obj, lambda c: dict(c.cpu_objects), ("cpu-llvm",), _cpu,
          per_module=True, replace=_updater("cpu_objects")),
    Stage("host-llvm", "ll", _host_llvm, lambda c: str(c.host.llvm_module), ("outline",)),
    Stage("embed", "json", _embed, lambda c: c.manifest.to_json(),
          ("host-llvm", "device-llvm", "ptx", "cubin", "cpu-llvm", "cpu-obj")),
    Stage("obj", "o", _obj, lambda c: c.host_object, ("embed",),
          replace=_setter("host_object")),
    Stage("nova", "nova", _nova, lambda c: c.bundle, ("obj",), replace=_setter("bundle")),
)
STAGE_BY_NAME: dict[str, Stage] = {stage.name: stage for stage in STAGES}


def stage_number(stage: Stage) -> int:
    """The stage's fixed 1-based position, used in dump and override file names."""
    return STAGES.index(stage) + 1


def required(target: str, options: CompileOptions) -> list[Stage]:
    """The enabled stages `target` depends on (itself included), in table order."""
    wanted: set[str] = set()
    pending = [target]
    while pending:
        name = pending.pop()
        if name in wanted or not STAGE_BY_NAME[name].enabled(options):
            continue
        wanted.add(name)
        pending.extend(STAGE_BY_NAME[name].needs)
    return [stage for stage in STAGES if stage.name in wanted]
