"""Fixtures of the nova.lz4 tests: the real-data page corpus (small: CI runs the kernels on the
CPU device on 2 cores), the `device` parametrisation (cpu always, cuda marked `gpu` and skipped
without a usable GPU), and a per-session kernel cache so a stale user cache never hides a
change."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from device_params import DEVICE_PARAMS
from nova import config
from nova.lz4.corpus import build_corpus

# python-lz4, xxhash and tqdm come with the `test` (and `lz4`) extras; a machine without them
# (e.g. a GPU box installing only Nova's core) skips this directory instead of failing to
# collect the whole suite, and says so in the report header.
MISSING = [m for m in ("lz4", "xxhash", "tqdm") if importlib.util.find_spec(m) is None]
if MISSING:
    collect_ignore_glob = ["test_*.py"]


def pytest_report_header(config: pytest.Config) -> str | None:
    if MISSING:
        return f"tests/lz4 skipped: missing {', '.join(MISSING)} (pip install -e '.[lz4]')"
    return None


@pytest.fixture(scope="session")
def _kernel_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("nova-cache")


@pytest.fixture(autouse=True)
def _kernel_cache(_kernel_cache_dir):
    with config.scoped(cache_dir=_kernel_cache_dir):
        yield


@pytest.fixture(params=DEVICE_PARAMS)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def corpus() -> dict[str, np.ndarray]:
    """8 pages per class (48 in `mixed`), 4 KiB pages."""
    return build_corpus(4096, 8)
