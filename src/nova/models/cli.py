"""`nova-run model.nova --input x.npy [--input y.npy] [--output out.npz]`: run a model saved by
`CompiledModel.save` from the shell (called by nova.cli.run when --input is given)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from nova.models.errors import InputError


def run_saved_model(path: str, inputs: list[str], device: str | None,
                    output: str | None) -> int:
    """Load `path`, feed the .npy `inputs` in order, print each output's name, dtype and shape
    (and its values when small), and save all outputs to `output` (.npz) when given."""
    from nova.models.compiled import load

    arrays = []
    for name in inputs:
        try:
            arrays.append(np.load(name, allow_pickle=False))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read input '{name}': {exc}") from exc
    model = load(path, device=device)
    result = model(*arrays)
    outs = result if isinstance(result, tuple) else (result,)
    for name, value in zip(model.outputs, outs, strict=True):
        sys.stdout.write(f"{name}: {value.dtype}{list(value.shape)}\n")
        if value.size <= 64:
            sys.stdout.write(np.array2string(value, precision=6, separator=", ") + "\n")
    if output:
        np.savez(Path(output), **dict(zip(model.outputs, outs, strict=True)))
    sys.stdout.flush()
    return 0
