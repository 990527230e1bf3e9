"""The table of Nova's passes and the pipeline runner that nova-opt and the driver share.

Each pass lives in `nova/passes/<snake_name>.py`, is registered here under its kebab-case name
(`outline-kernels` -> `outline_kernels.py`), and has a golden test of the same name in
`tests/filecheck/passes/`. Pipelines use MLIR's syntax: `"a,b{opt=1}"`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from nova.errors import PassError, VerifyError
from nova.ir.context import make_context
from nova.ir.verify import verify_located

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

# kebab-case pass name -> class name; the module is the name in snake case.
_PASS_CLASSES: dict[str, str] = {
    "outline-kernels": "OutlineKernelsPass",
    "sink-index-computations": "SinkIndexComputationsPass",
    "async-region": "AsyncRegionPass",
    "lower-affine": "LowerAffinePass",
    "async-to-sync": "AsyncToSyncPass",
}


# mlir-opt's names for the passes Nova mirrors (nova-opt accepts them as flags too).
UPSTREAM_NAMES: dict[str, str] = {
    "gpu-kernel-outlining": "outline-kernels",
    "gpu-launch-sink-index-computations": "sink-index-computations",
    "gpu-async-region": "async-region",
}


def module_for(name: str) -> str:
    """The module that defines pass `name`: kebab-case name -> `nova.passes.<snake_case>`."""
    return "nova.passes." + name.replace("-", "_")


class _Passes(Mapping[str, "type[ModulePass]"]):
    """Pass name -> class, importing a pass's module on first lookup, so a pipeline loads only
    the passes (and the dialects they use) it names: the driver's outline stage never imports
    lower-affine's affine dialect for a module without affine ops."""

    def __init__(self) -> None:
        self._loaded: dict[str, type[ModulePass]] = {}

    def __getitem__(self, name: str) -> type[ModulePass]:
        cls = self._loaded.get(name)
        if cls is None:
            class_name = _PASS_CLASSES[name]  # KeyError for an unknown pass, as a dict
            cls = getattr(importlib.import_module(module_for(name)), class_name)
            assert cls.name == name, f"{class_name}.name is {cls.name!r}, registered as {name!r}"
            self._loaded[name] = cls
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(_PASS_CLASSES)

    def __len__(self) -> int:
        return len(_PASS_CLASSES)


PASSES: Mapping[str, type[ModulePass]] = _Passes()


def parse_pipeline(pipeline: str) -> list[ModulePass]:
    """Instantiate the passes of a pipeline string such as `"outline-kernels,async-region"`.

    Raises PassError naming the unknown pass (and the known ones) or the malformed option.
    """
    from xdsl.utils.arg_spec import parse_pipeline as parse_specs
    from xdsl.utils.exceptions import ArgSpecParseError

    try:
        specs = list(parse_specs(pipeline))
    except ArgSpecParseError as exc:
        raise PassError(f"malformed pass pipeline {pipeline!r}: {exc}") from None
    passes: list[ModulePass] = []
    for spec in specs:
        cls = PASSES.get(spec.name)
        if cls is None:
            known = ", ".join(sorted(PASSES))
            raise PassError(f"unknown pass '{spec.name}' (known passes: {known})")
        try:
            passes.append(cls.from_spec(spec))
        except Exception as exc:  # xDSL reports bad options with several exception types
            raise PassError(f"bad options for pass '{spec.name}': {exc}") from None
    return passes


def run_pipeline(module: ModuleOp, pipeline: str, ctx: Context | None = None,
                 verify_each: bool = True) -> None:
    """Run the passes of `pipeline` in order on `module`, in place.

    A pass that finds input it cannot transform raises PassError located at the offending op.
    With `verify_each` (as mlir-opt's default) the module is verified after every pass, and IR
    that no longer verifies is reported as a PassError naming the pass.
    """
    passes = parse_pipeline(pipeline)
    if ctx is None:

        ctx = make_context()
    for module_pass in passes:
        module_pass.apply(ctx, module)
        if verify_each:
            _verify_after(module, module_pass.name)


def _verify_after(module: ModuleOp, pass_name: str) -> None:

    try:
        verify_located(module)
    except VerifyError as exc:
        raise PassError(f"pass '{pass_name}' produced IR that does not verify: {exc.message}",
                        exc.location) from exc
