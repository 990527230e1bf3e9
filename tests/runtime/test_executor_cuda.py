"""NovaExecutor on a CUDA GPU with the hand-made bundles (PTX kernels). Skipped without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from nova.errors import CudaError, RuntimeFailure
from nova.runtime.executor import NovaModule, load
from nova.runtime.selection import cuda_status, get_device

sys.path.insert(0, str(Path(__file__).parent))
from executor_bundles import build_bundle

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_status().usable, reason=f"no usable CUDA device: "
                       f"{cuda_status().reason}"),
]


@pytest.fixture(scope="module")
def bundle() -> bytes:
    return build_bundle()


@pytest.fixture(scope="module")
def mod(bundle: bytes) -> NovaModule:
    with load(bundle, "cuda") as module:
        yield module


def test_numpy_arrays_are_staged_and_copied_back(mod: NovaModule) -> None:
    a = np.full(8, -1, np.float32)
    mod.fill_async(a)
    assert a.tolist() == [0, 2, 4, 6, 8, 10, 12, 14]


def test_device_buffer_used_in_place(mod: NovaModule) -> None:
    buf = get_device("cuda").to_device(np.zeros(8, np.float32))
    mod.fill_async(buf)
    assert buf.numpy().tolist() == [0, 2, 4, 6, 8, 10, 12, 14]


def test_stream_ordered_memory_and_result_fetch(mod: NovaModule) -> None:
    result = mod.sevens(1000)
    assert result.dtype == np.int32 and result.shape == (1000,)
    assert (result == 7).all()


def test_scalars_and_host_assert(mod: NovaModule) -> None:
    assert mod.add(20, 22) == 42
    assert mod.scale(1.5) == 3.0
    with pytest.raises(RuntimeFailure, match="host assertion failed: x must be >0"):
        mod.scale(-1.0)


def test_failed_driver_call_names_the_call(mod: NovaModule) -> None:
    with pytest.raises(CudaError, match="cuPointerGetAttribute failed") as info:
        mod.bad_free()
    assert not info.value.context_lost
    assert mod.add(1, 1) == 2  # the module is still usable


def test_many_calls_on_device_buffers_stay_correct(mod: NovaModule) -> None:
    """The cached call plan is reused call after call (its cost is measured by
    bench/launch_overhead.py, not here)."""
    buf = get_device("cuda").to_device(np.full(8, -1.0, np.float32))
    for _ in range(500):
        mod.fill_async(buf)
    assert buf.numpy().tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
