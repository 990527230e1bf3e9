"""Where an NVIDIA library (cuBLASLt, cuDNN) may be on this machine, in the order the bindings
try: the binding's environment variable, the `nvidia` wheels' lib folders, torch's lib folder,
the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda). One search for every binding."""

from __future__ import annotations

import os
from pathlib import Path


def candidate_paths(soname: str, env_var: str, wheel_dirs: tuple[str, ...]) -> list[Path]:
    """Every place `soname` may be: $env_var (a path), `<nvidia namespace root>/<dir>` for
    each of `wheel_dirs`, torch's lib folder, the toolkit's lib folders."""
    found: list[Path] = []
    env = os.environ.get(env_var)
    if env:
        found.append(Path(env))
    try:
        import nvidia  # type: ignore[import-not-found]  # NVIDIA's wheels' namespace

        found += [Path(root) / sub / soname for root in getattr(nvidia, "__path__", [])
                  for sub in wheel_dirs]
    except ImportError:
        pass
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.origin:
            found.append(Path(spec.origin).parent / "lib" / soname)
    except (ImportError, ValueError):
        pass
    toolkits = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for toolkit in dict.fromkeys(t for t in toolkits if t):
        for sub in ("lib64", "targets/x86_64-linux/lib"):
            found.append(Path(toolkit) / sub / soname)
    return found


def find_library(candidates: list[Path], soname: str) -> str:
    """The first existing candidate, else the bare soname (left to the dynamic loader)."""
    for path in candidates:
        if path.is_file():
            return str(path)
    return soname
