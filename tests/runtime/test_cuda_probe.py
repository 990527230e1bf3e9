"""The CUDA probe behind the 'auto' device: where the driver library cannot be opened it answers
"no CUDA" without importing cuda-bindings (about 50 ms of every cold start on a machine without
a GPU), naming the reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nova.runtime.cuda import driver_api, probe
from nova.runtime.selection import CudaStatus


def test_a_missing_driver_library_skips_the_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_import() -> None:
        raise AssertionError("cuda-bindings imported although libcuda is missing")

    monkeypatch.setattr(probe, "DRIVER_LIBRARY", "libnova-no-such-driver.so.1")
    monkeypatch.setattr(driver_api, "load_bindings", no_import)
    status = probe.CudaStatusProbe._probe(CudaStatus)
    assert not status.usable and status.device_count == 0
    assert "cannot be loaded" in status.reason and "libnova-no-such-driver" in status.reason


def test_a_present_driver_library_reaches_the_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "DRIVER_LIBRARY", "libc.so.6")  # any library that opens

    def missing() -> None:
        raise ImportError("no cuda-bindings here")

    monkeypatch.setattr(driver_api, "load_bindings", missing)
    status = probe.CudaStatusProbe._probe(CudaStatus)
    assert not status.usable and "cuda-bindings is not installed" in status.reason


@pytest.mark.skipif(probe.driver_library_missing() is None,
                    reason="the CUDA driver library is present: cuda-bindings is needed")
def test_auto_on_a_machine_without_the_driver_imports_no_bindings() -> None:
    code = ("import sys, nova\n"
            "d = nova.get_device()\n"
            "print(d.kind, 'cuda' in sys.modules, 'nova.runtime.cuda.driver_api' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("NOVA_DEVICE", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cpu False False"  # nor the driver wrapper (cold start)
