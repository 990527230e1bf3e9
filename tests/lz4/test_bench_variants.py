"""bench/lz4.py's --variants parsing: each A/B option reaches the kernel's parameters, and an
unknown one is refused by name (the bench itself runs in tests/unit/test_bench_checks.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from nova.lz4 import kernels as K

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lz4.py"


@pytest.fixture(scope="module")
def bench(load_script: Callable[..., ModuleType]) -> ModuleType:
    """bench/lz4.py as a module. It drops its own folder from sys.path when it starts (run as
    a script, `import lz4` would find it); load_script restores the path."""
    return load_script(BENCH, "nova_bench_lz4")


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
