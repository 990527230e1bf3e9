"""The compile driver: MLIR text -> .nova bundle, as one ordered table of named stages.

One loop runs the stages a target needs (nova.compiler.stages), in table order, and is the single
place that times each stage, dumps each intermediate to NOVA_DUMP_DIR (`NN-<stage>.<ext>`, or
`NN-<stage>.<module>.<ext>` for per-device-module outputs), lets a hand-edited file of the same
name in NOVA_OVERRIDE_DIR replace a stage's output, and caches finished bundles
(nova.compiler.cache). Stages that run in the background (ptxas, see nova.compiler.stages) report
their own wall time, which overlaps the stages after them. Every heavy import (xDSL, llvmlite,
the backends) happens inside a stage, so a cache hit never pays for them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nova import config
from nova.compiler.stages import (
    DEFAULT_OPT_LEVEL,
    EMIT_ALIASES,
    OUTLINE_PIPELINE,
    STAGE_BY_NAME,
    STAGES,
    Artifact,
    Compilation,
    CompileOptions,
    CompileOptionsError,
    Stage,
    required,
    stage_number,
)
from nova.errors import ArgumentError, InputError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from nova.compiler.parallel import SplitSource
    from nova.runtime.executor import NovaModule

__all__ = [
    "DEFAULT_OPT_LEVEL", "EMIT_ALIASES", "OUTLINE_PIPELINE", "STAGES", "STAGE_BY_NAME",
    "CompileOptions", "CompileOptionsError", "CompileResult", "compile", "compile_module",
    "compile_source",
    "compile_to_bundle", "compile_until", "join_outputs", "make_options", "read_source",
]


@dataclass
class CompileResult:
    """The outcome of one compilation: the target stage's output and per-stage wall times (s)."""

    output: Artifact
    timings: dict[str, float]
    cache_hit: bool = False
    compilation: Compilation | None = None  # every stage's state (None for a cache hit)

    @property
    def bundle(self) -> bytes:
        """The .nova bytes (only for compilations that ran to the 'nova' stage)."""
        if not isinstance(self.output, bytes):
            raise CompileOptionsError("no bundle: this compilation stopped before 'nova'")
        return self.output


# ---- the loop ---------------------------------------------------------------------------------

def _dump(directory: Path, stage: Stage, output: Artifact) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    items = output.items() if isinstance(output, Mapping) else [("", output)]
    for module, data in items:
        path = directory / _file_name(stage, module)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")


def _file_name(stage: Stage, module: str = "") -> str:
    middle = f".{module}" if module else ""
    return f"{stage_number(stage):02d}-{stage.name}{middle}.{stage.ext}"


def _read(path: Path, binary: bool) -> str | bytes:
    return path.read_bytes() if binary else path.read_text(encoding="utf-8")


def _find_override(directory: Path, stage: Stage, c: Compilation) -> tuple[Artifact, str] | None:
    """A hand-edited output for `stage` in `directory` (named like its dump), with its path."""
    if stage.replace is None:
        return None
    if not stage.per_module:
        path = directory / _file_name(stage)
        return (_read(path, stage.binary), str(path)) if path.is_file() else None
    found = {name: directory / _file_name(stage, name) for name in c.device_modules}
    present = {name: _read(path, stage.binary) for name, path in found.items()
               if path.is_file()}
    return (present, str(directory)) if present else None


def _run_stage(stage: Stage, c: Compilation, override_dir: Path | None) -> None:
    """Run one stage, or install its hand-edited output instead (running it first when the
    override covers only some device modules or the stage must run anyway)."""
    override = _find_override(override_dir, stage, c) if override_dir is not None else None
    if override is None:
        stage.run(c)
        return
    output, path = override
    complete = not stage.per_module or (isinstance(output, Mapping)
                                         and set(output) == set(c.device_modules))
    if stage.run_anyway or not complete:
        stage.run(c)
    assert stage.replace is not None
    stage.replace(c, output, path)


def _run_stages(c: Compilation, target: str) -> CompileResult:
    cfg = config.get()
    timings: dict[str, float] = {}
    stages = required(target, c.options)
    c.early_cubin = cfg.override_dir is None and any(s.name == "cubin" for s in stages)
    try:
        for stage in stages:
            if stage.name not in c.done:
                start = time.perf_counter()
                _run_stage(stage, c, cfg.override_dir)
                timings[stage.name] = time.perf_counter() - start
            if cfg.dump_dir is not None:  # a given module is dumped as the stage it stands for
                _dump(cfg.dump_dir, stage, stage.render(c))
    except BaseException as exc:
        if c.pending is not None:  # device modules still in the workers: drop them
            from nova.compiler.parallel import abandon

            abandon(c.pending, exc)
        raise
    output = STAGE_BY_NAME[target].render(c)
    timings.update(c.background_timings)  # ptxas: its own wall time, not the submission's
    return CompileResult(output, timings, compilation=c)


def compile_module(module: ModuleOp, filename: str, options: CompileOptions,
                   after: str = "parse") -> CompileResult:
    """Run the stage table from a built module (see `Compilation.from_module`) up to
    `options.emit`, with the same dumps, overrides and timings as a compilation from text. How
    Python kernels (nova.lang) and other frontends that build IR directly compile; the caller
    caches what it keeps (nova.compiler.cache)."""
    target = options.target()
    return _run_stages(Compilation.from_module(module, filename, options, after), target)


def _compilation(text: str, filename: str, options: CompileOptions, target: str,
                 split: SplitSource | None) -> Compilation:
    """The state of one compilation; with `split`, its device modules go to worker processes
    when NOVA_COMPILE_JOBS allows and every stage's output is not asked for (dumps, overrides,
    an earlier --emit target)."""
    c = Compilation(text, filename, options)
    cfg = config.get()
    if split is None or target != "nova" or cfg.dump_dir is not None \
            or cfg.override_dir is not None:
        return c
    from nova.compiler.parallel import jobs

    workers = jobs(split)
    if workers > 1:
        c.split, c.workers = split, workers
    return c


def compile_source(text: str, filename: str = "<string>",
                   options: CompileOptions | None = None,
                   split: SplitSource | None = None) -> CompileResult:
    """Compile `text` up to `options.emit`, with timings. Finished bundles come from and go to
    the cache (unless NOVA_CACHE=0, NOVA_DUMP_DIR asks for every intermediate, or
    NOVA_OVERRIDE_DIR replaces some). `split`: the same text split by device module
    (nova.compiler.parallel), which lets the device modules compile in worker processes; the
    bundle is the same bytes either way."""
    options = options or CompileOptions()
    target = options.target()
    cfg = config.get()
    use_cache = (target == "nova" and cfg.cache_enabled and cfg.dump_dir is None
                 and cfg.override_dir is None)
    if not use_cache:
        return _run_stages(_compilation(text, filename, options, target, split), target)

    from nova.compiler.cache import BundleCache, cache_key

    start = time.perf_counter()
    cache = BundleCache(cfg.cache_dir)
    key = cache_key(text, filename, asdict(options))
    cached = cache.get(key)
    lookup = time.perf_counter() - start
    if cached is not None:
        return CompileResult(cached, {"cache": lookup}, cache_hit=True)
    result = _run_stages(_compilation(text, filename, options, target, split), target)
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
        options = replace(options, emit=stage)
    return join_outputs(compile_source(text, filename, options).output)


def join_outputs(output: Artifact) -> str | bytes:
    """One str/bytes for an artifact: a single device module's output as is; several modules'
    texts joined under `// ----- @name` lines (binary outputs of several modules cannot be)."""
    if not isinstance(output, Mapping):
        return output
    values = list(output.values())
    if len(values) == 1:
        return values[0]
    texts = [v for v in values if isinstance(v, str)]
    if len(texts) == len(values):
        return "".join(f"// ----- @{name}\n{text}\n" for name, text in zip(output, texts,
                                                                             strict=True))
    raise CompileOptionsError(f"{len(values)} device modules produce binary outputs "
                              f"({', '.join(output)}); use NOVA_DUMP_DIR to get each one")


def read_source(path_or_text: str | os.PathLike[str] | bytes) -> tuple[str, str]:
    """(text, filename) from a path (an os.PathLike, or a one-line str naming an existing file
    or ending in .mlir), from MLIR text itself (filename '<string>') or from UTF-8 bytes of it.
    Anything else is an ArgumentError naming what was passed."""
    if isinstance(path_or_text, bytes | bytearray):
        try:
            return bytes(path_or_text).decode("utf-8"), "<bytes>"
        except UnicodeDecodeError as exc:
            raise InputError(f"MLIR text given as bytes is not UTF-8: {exc}") from None
    if isinstance(path_or_text, os.PathLike):
        path_or_text = Path(path_or_text)
    if not isinstance(path_or_text, str | Path):
        raise ArgumentError(f"nova.compile: expected MLIR text, a path (str or os.PathLike) or "
                            f"bytes, got {type(path_or_text).__name__}")
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


def compile(path_or_text: str | os.PathLike[str] | bytes, device: Any = None,
            **options: Any) -> NovaModule:
    """Compile an MLIR file (a path), MLIR text or its UTF-8 bytes and load it on `device` ('cuda',
    'cpu', a Device, or None for NOVA_DEVICE / auto). `options` are CompileOptions fields."""
    text, filename = read_source(path_or_text)
    bundle = compile_to_bundle(text, filename, make_options(**options))
    from nova.runtime.executor import load

    return load(bundle, device=device, trusted_keys=())  # compiled here: no signature to ask
