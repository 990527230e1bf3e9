"""Helpers shared by every test directory: `load_script` runs a Python file that is not part of
an importable package (a bench/ or scripts/ program, a module a test writes) as a module; the
`cpu_device` and `cuda_device` fixtures (cuda skipped, with the reason, where none is usable).
The directories' `device` parametrisation is tests/device_params.py.

Test modules reach it through the `load_script` fixture (a conftest's module name is shared by
every conftest, so importing from it is unreliable); tests/fuzz/runner.py, which runs outside
pytest too, imports it as `tests.conftest`. This file must stay free of side effects: it is
imported under both names."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nova.runtime.device import Device


def load_script(path: Path, name: str, *, keep: bool = False) -> ModuleType:
    """Execute the file `path` as a fresh module called `name` and return it.

    The module stands in sys.modules[name] while its body runs (a dataclass looks its module up
    there); with `keep` it stays there afterwards, as an imported module would (kernels that
    import it by name, source lookups), otherwise the entry it replaced comes back. sys.path is
    restored either way: bench programs edit it when they start, and one test's loading must not
    change what another test imports."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    saved_path, replaced = list(sys.path), sys.modules.get(name)
    sys.modules[name] = module
    loaded = False
    try:
        spec.loader.exec_module(module)
        loaded = True
    finally:
        sys.path[:] = saved_path
        if not (keep and loaded):  # a failed import leaves no module behind, as `import` does
            if replaced is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = replaced
    return module


@pytest.fixture(name="load_script", scope="session")
def _load_script() -> Callable[..., ModuleType]:
    """The `load_script` helper above, for test modules."""
    return load_script


@pytest.fixture
def cpu_device() -> Device:
    """The cpu device."""
    from nova.runtime.selection import get_device

    return get_device("cpu")


@pytest.fixture
def cuda_device() -> Device:
    """The cuda device; the test is skipped, with the reason, where none is usable."""
    from nova.runtime.selection import cuda_status, get_device

    status = cuda_status()
    if not status.usable:
        pytest.skip(f"no usable CUDA device: {status.reason}")
    return get_device("cuda")
