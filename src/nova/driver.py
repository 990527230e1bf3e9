"""The compile driver: MLIR text -> .nova bundle, as one ordered table of named stages.

One loop runs the stages a target needs, in table order, and is the single place that times each
stage, dumps each intermediate to NOVA_DUMP_DIR (`NN-<stage>.<ext>`, or `NN-<stage>.<module>.<ext>`
for per-device-module outputs) and caches finished bundles (nova.driver_cache). Every heavy import
(xDSL, llvmlite, the backends) happens inside a stage, so a cache hit never pays for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nova import config
from nova.errors import NovaError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from nova.runtime.executor import NovaModule

Artifact = str | bytes | Mapping[str, str | bytes]

OUTLINE_PIPELINE = "outline-kernels"
DEFAULT_OPT_LEVEL = 3
EMIT_ALIASES = {"outlined": "outline", "mlir": "parse", "bundle": "nova"}


class CompileOptionsError(NovaError):
    """Compile options that name an unknown stage or ask for a disabled one."""


def _default_arch() -> str:
    return config.get().arch


@dataclass(frozen=True)
class CompileOptions:
    """What to build. `emit` names the last stage to run (see `STAGES`; 'outlined' = 'outline')."""

    arch: str = field(default_factory=_default_arch)
    emit: str = "nova"
    cubin: bool = True
    cpu_image: bool = True
    opt_level: int = DEFAULT_OPT_LEVEL

    def target(self) -> str:
        """The stage name `emit` refers to, validated."""
        name = EMIT_ALIASES.get(self.emit, self.emit)
        stage = STAGE_BY_NAME.get(name)
        if stage is None:
            known = ", ".join([*STAGE_BY_NAME, *EMIT_ALIASES])
            raise CompileOptionsError(f"unknown emit stage '{self.emit}' (known: {known})")
        if not stage.enabled(self):
            raise CompileOptionsError(f"stage '{name}' is disabled by the compile options")
        return name


@dataclass
class CompileResult:
    """The outcome of one compilation: the target stage's output and per-stage wall times (s)."""

    output: Artifact
    timings: dict[str, float]
    cache_hit: bool = False

    @property
    def bundle(self) -> bytes:
        """The .nova bytes (only for compilations that ran to the 'nova' stage)."""
        if not isinstance(self.output, bytes):
            raise CompileOptionsError("no bundle: this compilation stopped before 'nova'")
        return self.output


@dataclass
class _Compilation:
    """The state stages read and write; one instance per compilation."""

    text: str
    filename: str
    options: CompileOptions
    module: ModuleOp | None = None
    device_modules: dict[str, Operation] = field(default_factory=dict)
    device_lowerings: dict[str, Any] = field(default_factory=dict)  # name -> DeviceLowering
    ptx: dict[str, str] = field(default_factory=dict)
    cubin: dict[str, bytes | None] = field(default_factory=dict)
    cpu_llvm: dict[str, str] = field(default_factory=dict)
    cpu_objects: dict[str, bytes] = field(default_factory=dict)
    host: Any = None  # HostLowering
    manifest: Any = None
    host_object: bytes = b""
    bundle: bytes = b""


# ---- the stages -----------------------------------------------------------------------------

def _parse(c: _Compilation) -> None:
    from nova.frontend.mlir_text import parse_mlir

    c.module = parse_mlir(c.text, c.filename)


def _print_module(c: _Compilation) -> str:
    from nova.frontend.mlir_text import print_mlir

    assert c.module is not None
    return print_mlir(c.module)


def _outline(c: _Compilation) -> None:
    from nova.passes.registry import run_pipeline

    assert c.module is not None
    run_pipeline(c.module, OUTLINE_PIPELINE)
    c.device_modules = {
        _symbol_name(op): op for op in c.module.body.block.ops if op.name == "gpu.module"
    }


def _symbol_name(op: Operation) -> str:
    attr = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return str(getattr(attr, "data", attr))


def _device_llvm(c: _Compilation) -> None:
    from nova.backends.device import DeviceTarget, lower_device_module

    for name, op in c.device_modules.items():
        c.device_lowerings[name] = lower_device_module(op, DeviceTarget.NVPTX, c.options.arch)


def _opt_kwargs(function: Callable[..., Any], options: CompileOptions) -> dict[str, int]:
    """`opt_level=` for a backend entry point that takes it; a non-default level that the backend
    cannot honour is an error rather than silently ignored."""
    import inspect

    if "opt_level" in inspect.signature(function).parameters:
        return {"opt_level": options.opt_level}
    if options.opt_level != DEFAULT_OPT_LEVEL:
        raise CompileOptionsError(f"{function.__module__}.{function.__name__} has a fixed "
                                  f"optimisation level; -O{options.opt_level} is not supported")
    return {}


def _ptx(c: _Compilation) -> None:
    from nova.backends.nvptx import emit_ptx

    opt = _opt_kwargs(emit_ptx, c.options)
    for name, lowering in c.device_lowerings.items():
        c.ptx[name] = emit_ptx(str(lowering.llvm_module), c.options.arch, **opt)


def _cubin(c: _Compilation) -> None:
    from nova.backends.nvptx import assemble_cubin

    for name, ptx in c.ptx.items():
        c.cubin[name] = assemble_cubin(ptx, c.options.arch)


def _cpu_llvm(c: _Compilation) -> None:
    from nova.backends.device import DeviceTarget, lower_device_module

    for name, op in c.device_modules.items():
        lowering = lower_device_module(op, DeviceTarget.CPU, c.options.arch)
        c.cpu_llvm[name] = str(lowering.llvm_module)


def _cpu_obj(c: _Compilation) -> None:
    from nova.backends.x86 import emit_object

    opt = _opt_kwargs(emit_object, c.options)
    for name, llvm_ir in c.cpu_llvm.items():
        c.cpu_objects[name] = emit_object(llvm_ir, **opt)


def _host_llvm(c: _Compilation) -> None:
    from nova.backends.host import lower_host

    assert c.module is not None
    c.host = lower_host(c.module)


def _embed(c: _Compilation) -> None:
    from nova.bundle.writer import DeviceImages, embed_device_images

    images = [
        DeviceImages(
            name=name,
            kernels=tuple(lowering.kernels),
            ptx=c.ptx.get(name),
            cubin=c.cubin.get(name),
            cpu_object=c.cpu_objects.get(name),
        )
        for name, lowering in c.device_lowerings.items()
    ]
    c.manifest = embed_device_images(
        c.host.llvm_module, images, c.host.entries, c.options.arch, Path(c.filename).name
    )


def _obj(c: _Compilation) -> None:
    from nova.backends.x86 import emit_object

    c.host_object = emit_object(str(c.host.llvm_module), **_opt_kwargs(emit_object, c.options))


def _nova(c: _Compilation) -> None:
    from nova.bundle.writer import seal_bundle

    c.bundle = seal_bundle(c.host_object)


def _always(options: CompileOptions) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """One named step: `run` fills the compilation state, `render` gives its output (for dumps
    and --emit), `needs` names the stages whose results it reads."""

    name: str
    ext: str
    run: Callable[[_Compilation], None]
    render: Callable[[_Compilation], Artifact]
    needs: tuple[str, ...] = ()
    enabled: Callable[[CompileOptions], bool] = _always


STAGES: tuple[Stage, ...] = (
    Stage("parse", "mlir", _parse, _print_module),
    Stage("outline", "mlir", _outline, _print_module, ("parse",)),
    Stage("device-llvm", "ll", _device_llvm,
          lambda c: {n: str(low.llvm_module) for n, low in c.device_lowerings.items()},
          ("outline",)),
    Stage("ptx", "ptx", _ptx, lambda c: dict(c.ptx), ("device-llvm",)),
    Stage("cubin", "cubin", _cubin, lambda c: {n: b for n, b in c.cubin.items() if b},
          ("ptx",), lambda o: o.cubin),
    Stage("cpu-llvm", "ll", _cpu_llvm, lambda c: dict(c.cpu_llvm), ("outline",),
          lambda o: o.cpu_image),
    Stage("cpu-obj", "o", _cpu_obj, lambda c: dict(c.cpu_objects), ("cpu-llvm",),
          lambda o: o.cpu_image),
    Stage("host-llvm", "ll", _host_llvm, lambda c: str(c.host.llvm_module), ("outline",)),
    Stage("embed", "json", _embed, lambda c: c.manifest.to_json(),
          ("host-llvm", "device-llvm", "ptx", "cubin", "cpu-obj")),
    Stage("obj", "o", _obj, lambda c: c.host_object, ("embed",)),
    Stage("nova", "nova", _nova, lambda c: c.bundle, ("obj",)),
)
STAGE_BY_NAME: dict[str, Stage] = {stage.name: stage for stage in STAGES}


def _required(target: str, options: CompileOptions) -> list[Stage]:
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


# ---- the loop ---------------------------------------------------------------------------------

def _dump(directory: Path, index: int, stage: Stage, output: Artifact) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    prefix = f"{index:02d}-{stage.name}"
    items = output.items() if isinstance(output, Mapping) else [("", output)]
    for module, data in items:
        name = f"{prefix}.{module}.{stage.ext}" if module else f"{prefix}.{stage.ext}"
        path = directory / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")


def _run_stages(c: _Compilation, target: str) -> CompileResult:
    dump_dir = config.get().dump_dir
    timings: dict[str, float] = {}
    for stage in _required(target, c.options):
        start = time.perf_counter()
        stage.run(c)
        timings[stage.name] = time.perf_counter() - start
        if dump_dir is not None:
            _dump(dump_dir, STAGES.index(stage) + 1, stage, stage.render(c))
    return CompileResult(STAGE_BY_NAME[target].render(c), timings)


def compile_source(text: str, filename: str = "<string>",
                   options: CompileOptions | None = None) -> CompileResult:
    """Compile `text` up to `options.emit`, with timings. Finished bundles come from and go to
    the cache (unless NOVA_CACHE=0, or NOVA_DUMP_DIR asks for every intermediate)."""
    options = options or CompileOptions()
    target = options.target()
    cfg = config.get()
    use_cache = target == "nova" and cfg.cache_enabled and cfg.dump_dir is None
    if not use_cache:
        return _run_stages(_Compilation(text, filename, options), target)

    from nova.driver_cache import BundleCache, cache_key

    start = time.perf_counter()
    cache = BundleCache(cfg.cache_dir)
    key = cache_key(text, filename, asdict(options))
    cached = cache.get(key)
    lookup = time.perf_counter() - start
    if cached is not None:
        return CompileResult(cached, {"cache": lookup}, cache_hit=True)
    result = _run_stages(_Compilation(text, filename, options), target)
    start = time.perf_counter()
    assert isinstance(result.output, bytes)
    cache.put(key, result.output)
    result.timings = {"cache": lookup + time.perf_counter() - start, **result.timings}
    return result


def compile_to_bundle(text: str, filename: str = "<string>",
                      options: CompileOptions | None = None) -> bytes:
    """MLIR text -> the bytes of a sealed .nova bundle."""
    options = options or CompileOptions()
    if options.emit != "nova":
        raise CompileOptionsError("compile_to_bundle builds bundles; use compile_until for "
                                  f"emit='{options.emit}'")
    return compile_source(text, filename, options).bundle


def compile_until(text: str, filename: str, options: CompileOptions,
                  stage: str | None = None) -> str | bytes:
    """The output of one stage (default `options.emit`) as text or bytes; outputs of several
    device modules are joined (text) or must be single (bytes)."""
    if stage is not None:
        options = CompileOptions(**{**asdict(options), "emit": stage})
    return join_outputs(compile_source(text, filename, options).output)


def join_outputs(output: Artifact) -> str | bytes:
    """One str/bytes for an artifact: a single device module's output as is; several modules'
    texts joined under `// ----- @name` lines (binary outputs of several modules cannot be)."""
    if not isinstance(output, Mapping):
        return output
    values = list(output.values())
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, str) for v in values):
        return "".join(f"// ----- @{name}\n{text}\n" for name, text in output.items())
    raise CompileOptionsError(f"{len(values)} device modules produce binary outputs "
                              f"({', '.join(output)}); use NOVA_DUMP_DIR to get each one")


def read_source(path_or_text: str | Path) -> tuple[str, str]:
    """(text, filename) from a path (a Path, or a one-line str naming an existing file or
    ending in .mlir) or from MLIR text itself (filename '<string>')."""
    from nova.cli.toolmain import InputError

    is_path = isinstance(path_or_text, Path) or (
        "\n" not in path_or_text and len(path_or_text) < 4096
        and (path_or_text.endswith(".mlir") or Path(path_or_text).is_file()))
    if not is_path:
        return str(path_or_text), "<string>"
    try:
        return Path(path_or_text).read_text(encoding="utf-8"), str(path_or_text)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read '{path_or_text}': {exc}") from None


def make_options(**options: Any) -> CompileOptions:
    """CompileOptions from keyword arguments, naming the valid fields on a mistake."""
    valid = {f.name for f in fields(CompileOptions)}
    unknown = sorted(set(options) - valid)
    if unknown:
        raise CompileOptionsError(f"unknown compile option(s) {', '.join(unknown)} "
                                  f"(valid: {', '.join(sorted(valid))})")
    return CompileOptions(**options)


def compile(path_or_text: str | Path, device: Any = None, **options: Any) -> NovaModule:
    """Compile an MLIR file (a path) or MLIR text and load it on `device` ('cuda', 'cpu', a
    Device, or None for NOVA_DEVICE / auto). `options` are CompileOptions fields."""
    text, filename = read_source(path_or_text)
    bundle = compile_to_bundle(text, filename, make_options(**options))
    from nova.runtime.executor import load

    return load(bundle, device=device)
