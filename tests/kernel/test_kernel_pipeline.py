"""Python kernels compile through the compile driver's stage table (nova.compiler.driver
.compile_module): NOVA_DUMP_DIR shows their stages, a hand-edited stage in NOVA_OVERRIDE_DIR
replaces the compiler's, and the result still runs on the device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nova
from nova import config
from nova.runtime.device import Device, DeviceKind


def _fresh_kernel() -> nova.kernel:  # a new function object: no in-memory specialisation
    @nova.kernel
    def add_one(out, x):
        i = nova.global_id(0)
        if i < len(x):
            out[i] = x[i] + 1

    return add_one


def _launch(kern, device: Device) -> np.ndarray:
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    kern.launch(out, x, grid=1, block=64, device=device)
    return out


def test_python_kernel_stages_are_dumped(device: Device, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    with config.scoped(dump_dir=dump, cache_enabled=False):
        out = _launch(_fresh_kernel(), device)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32) + 1)
    names = sorted(p.name for p in dump.iterdir())
    assert "02-outline.mlir" in names  # the kernel's gpu.module, as the stages it enters after
    text = (dump / "02-outline.mlir").read_text()
    assert "gpu.module" in text and "gpu.func @add_one" in text
    if device.kind is DeviceKind.CPU:
        assert any(n.startswith("06-cpu-llvm.") and n.endswith(".ll") for n in names)
        assert any(n.startswith("07-cpu-obj.") and n.endswith(".o") for n in names)
        assert not any("-ptx." in n for n in names)
    else:
        assert any(n.startswith("03-device-llvm.") for n in names)
        assert any(n.startswith("04-ptx.") and n.endswith(".ptx") for n in names)


def test_python_kernel_stage_override_is_used(tmp_path: Path) -> None:
    """An edited CPU-device LLVM module (x + 1 -> x + 2) replaces the compiler's."""
    cpu = nova.get_device("cpu")
    dump = tmp_path / "dump"
    with config.scoped(dump_dir=dump, cache_enabled=False):
        _launch(_fresh_kernel(), cpu)
    (ll,) = [p for p in dump.iterdir() if p.name.startswith("06-cpu-llvm.")]
    text = ll.read_text()
    edited = text.replace("0x3ff0000000000000", "0x4000000000000000")  # LLVM's 1.0 -> 2.0
    assert edited != text, "the kernel's constant 1.0 is expected in its LLVM IR"
    override = tmp_path / "override"
    override.mkdir()
    (override / ll.name).write_text(edited)
    with config.scoped(override_dir=override, cache_enabled=False):
        out = _launch(_fresh_kernel(), cpu)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32) + 2)


def test_python_kernel_after_must_name_an_ir_stage() -> None:
    from nova.compiler.stages import Compilation, CompileOptions, CompileOptionsError

    with pytest.raises(CompileOptionsError, match="after 'parse' or 'outline'"):
        Compilation.from_module(None, "k", CompileOptions(), after="ptx")  # type: ignore
