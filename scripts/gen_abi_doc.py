"""Regenerate docs/abi.md from the nova.abi package (the one source of truth for the ABI)."""

from __future__ import annotations

import inspect
from pathlib import Path

from nova import abi


def render() -> str:
    rules = abi.__doc__.split("Conventions (all C calling convention, x86-64 SysV):")[1].strip()
    lines = [
        f"# Nova runtime ABI (version {abi.ABI_VERSION})", "",
        "The contract between compiled host code and Nova's runtime. It is defined once, in",
        "the `nova.abi` package (`src/nova/abi/`); the host lowering declares these functions from",
        "its table and the runtime binds each symbol to the chosen device's implementation when",
        "it links a `.nova` file. This page is generated from that table",
        "(`python scripts/gen_abi_doc.py`).",
        "", "## Rules", "", rules.replace("\n- ", "\n\n- "), "", "## Functions", "",
        "| function | returns | parameters | meaning |", "|---|---|---|---|",
    ]
    for f in abi.ABI_FUNCTIONS:
        params = ", ".join(f"{t.value} {n}" for n, t in f.params) or "—"
        ret = f.result.value + (" (status)" if f.fallible else "")
        lines.append(f"| `{f.name}` | {ret} | {params} | {f.doc} |")
    lines += ["", "## Runner utilities", "",
              "MLIR programs declare these (e.g. "
              "`func.func private @printMemrefF32(memref<*xf32>)`) and the host lowering maps "
              "each call to the ABI function:", "",
              "| MLIR name | ABI function |", "|---|---|"]
    lines += [f"| `{k}` | `{v}` |" for k, v in abi.RUNNER_UTILS.items()]
    lines += ["", "## Structures", "",
              f"`DeviceModuleDescriptor` (`{abi.DEVICE_MODULE_DESCRIPTOR_LLVM}`):", "",
              "\n".join(f"- `{n}`" for n, _ in abi.DeviceModuleDescriptor._fields_), "",
              f"`CpuLaunch` (`{abi.CPU_LAUNCH_LLVM}`):", "",
              (abi.CpuLaunch.__doc__ or "").strip(), "",
              "\n".join(f"- `{n}`" for n, _ in abi.CpuLaunch._fields_), ""]
    lines += ["## Library plans", "",
              f"`nova_rt_library_plan` reads the manifest's `extra[\"{abi.LIBRARY_PLANS_KEY}\"]`, "
              "a JSON list of plan objects, each a `LibraryPlan` (`kind` 'gemm', the default) or "
              "a `ConvPlan` (`kind` 'conv2d') with the fields below; "
              f"`func.call @{abi.LIBRARY_CALL_PREFIX}<i>` in MLIR refers to plan `i`.", ""]
    for name, plan in (("LibraryPlan", abi.LibraryPlan), ("ConvPlan", abi.ConvPlan)):
        kind = _plan_fields(plan)["kind"].default
        lines += [f"### `{name}` (`kind` '{kind}')", "", (plan.__doc__ or "").strip(), "",
                  "\n".join(f"- `{n}`: {f.annotation} = `{f.default!r}`" if f.default is not
                            inspect.Parameter.empty else f"- `{n}`: {f.annotation}"
                            for n, f in _plan_fields(plan).items()), ""]
    return "\n".join(lines)


def _plan_fields(plan: type) -> dict[str, inspect.Parameter]:
    """A plan class's fields (a nova.records.Record: its constructor's parameters, in order)."""
    params = dict(inspect.signature(plan.__init__).parameters)  # type: ignore[misc]
    params.pop("self")
    assert tuple(params) == plan._fields  # type: ignore[attr-defined]
    return params


if __name__ == "__main__":
    Path(__file__).resolve().parents[1].joinpath("docs", "abi.md").write_text(render())
