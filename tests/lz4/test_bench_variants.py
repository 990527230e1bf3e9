"""bench/lz4.py's --variants parsing: each A/B option reaches the kernel's parameters, and an
unknown one is refused by name (the bench itself runs in tests/unit/test_bench_checks.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from nova.lz4 import kernels as K

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lz4.py"


@pytest.fixture(scope="module")
def bench():
    """bench/lz4.py as a module. It drops its own folder from sys.path when it starts (run as
    a script, `import lz4` would find it); other tests put that folder there, so the path is
    restored."""
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location("nova_bench_lz4", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def test_variants_reach_the_kernel_options(bench):
    assert bench.parse_variants("one,h11+shfl,w2,many+one, ,") == [
        ("one", None, None, None, False),
        ("h11+shfl", 11, K.IN_BATCH_SHUFFLE, None, True),
        ("w2", None, None, 2, True),
        ("many+one", None, K.IN_BATCH_MATCH_ANY, None, False),
    ]
    assert bench.parse_variants("") == []


@pytest.mark.parametrize("text", ["fast", "h", "w0", "w33", "one+hx"])
def test_unknown_variants_are_refused_by_name(bench, text):
    with pytest.raises(SystemExit, match="unknown variant part"):
        bench.parse_variants(text)
