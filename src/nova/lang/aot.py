"""Ahead of time: several kernels (each for one or more signatures) saved as one `.nova` file.

`save_bundle(path, [(kern, sig), ...])` translates every (kernel, signature) into one gpu.module
and adds, for each, a host entry that launches it:

    func.func @<entry>(<kernel arguments>, %gx, %gy, %gz, %bx, %by, %bz : index) {
      gpu.launch_func @<module>::@<entry> blocks in (%gx, %gy, %gz) threads in (%bx, %by, %bz)
          args(...)
      return
    }

The text is compiled by the regular driver (`nova.compiler.driver.compile_to_bundle`), so the file
holds
the host object, the PTX/cubin and the CPU device object. Run it with `nova.load(path)`:
`mod.<entry>(*args, gx, gy, gz, bx, by, bz)`; NumPy arrays are staged to the device and back by
the executor. Entry names are the kernel names, suffixed `_<n>` when a kernel appears with
several signatures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nova.compiler.driver import compile_to_bundle, make_options
from nova.errors import ArgumentError
from nova.ir.gpu import GPUModuleOp
from nova.ir.parser import print_mlir
from nova.lang import types as T
from nova.lang.api import KernelFunction
from nova.lang.compiler import build_module, gpu_module_of

MODULE_NAME = "nova_kernels"


def bundle_source(kernels_with_signatures: Iterable[tuple[Any, Sequence[Any]]]) -> str:
    """The MLIR text of the bundle `save_bundle` writes (a gpu.module and host entries)."""

    items = list(kernels_with_signatures)
    if not items:
        raise ArgumentError("save_bundle needs at least one (kernel, signature) pair")
    counts: dict[str, int] = {}
    for kern, _ in items:
        if not isinstance(kern, KernelFunction):
            raise ArgumentError(f"save_bundle takes (@nova.kernel function, signature) pairs, "
                                f"got {kern!r}")
        counts[kern.__name__] = counts.get(kern.__name__, 0) + 1
    seen: dict[str, int] = {}
    funcs, hosts = [], []
    for kern, sig_spec in items:
        # a bundle's entries never check pointers: no launch-checked facts in saved code
        sig = tuple(T.ArrayType(t.dtype, t.ndim, t.shape, t.space) if type(t) is T.ArrayType
                    else t for t in kern.signature(*sig_spec))
        n = seen.get(kern.__name__, 0)
        seen[kern.__name__] = n + 1
        entry = kern.__name__ if counts[kern.__name__] == 1 else f"{kern.__name__}_{n}"
        module = build_module(kern.source, sig, entry, MODULE_NAME)
        gfunc = next(iter(gpu_module_of(module).body.block.ops))
        gfunc.detach()
        funcs.append(gfunc)
        hosts.append(_host_entry(entry, [t.mlir for t in sig]))
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region


    gm = GPUModuleOp(MODULE_NAME, Region(Block(funcs)))
    device_text = print_mlir(ModuleOp([gm]))
    inner = device_text.split("\n", 1)[1].rsplit("}", 1)[0]  # the body of the builtin module
    return ("module attributes {gpu.container_module} {\n" + inner + "\n".join(hosts) + "\n}\n")


def _host_entry(name: str, types: list[Any]) -> str:
    params = [f"%a{i}: {t}" for i, t in enumerate(types)]
    dims = ["gx", "gy", "gz", "bx", "by", "bz"]
    params += [f"%{d}: index" for d in dims]
    args = ", ".join(f"%a{i} : {t}" for i, t in enumerate(types))
    launch = (f"    gpu.launch_func @{MODULE_NAME}::@{name} blocks in (%gx, %gy, %gz) "
              f"threads in (%bx, %by, %bz)" + (f" args({args})" if types else ""))
    return (f"  func.func @{name}({', '.join(params)}) {{\n{launch}\n    return\n  }}")


def save_bundle(path: str | Path, kernels_with_signatures: Iterable[tuple[Any, Sequence[Any]]],
                **options: Any) -> Path:
    """Compile the kernels (each with its signature: types like `nova.float32[:]` or example
    arguments) and their launching host entries into one .nova file at `path`. `options` are
    CompileOptions fields (arch, ptx, cubin, cpu_image, opt_level)."""

    text = bundle_source(kernels_with_signatures)
    out = Path(path)
    data = compile_to_bundle(text, out.with_suffix(".mlir").name, make_options(**options))
    out.write_bytes(data)
    return out
