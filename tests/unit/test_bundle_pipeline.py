"""Bundles the real compiler builds (examples/vecadd.mlir) satisfy the format's invariants."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova import config
from nova.bundle.elf import ET_REL, parse_elf
from nova.bundle.format import PayloadKind
from nova.bundle.reader import read_bundle
from nova.cli import objdump
from nova.compiler import driver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vecadd.mlir"
EM_CUDA = 190
ET_EXEC = 2


def _compile(**options: object) -> bytes:
    with config.scoped(cache_enabled=False):
        return driver.compile_to_bundle(EXAMPLE.read_text(), EXAMPLE.name,
                                        driver.CompileOptions(**options))


def test_compiled_bundle_without_cubin() -> None:
    data = _compile(arch="sm_80", cubin=False)
    bundle = read_bundle(data, expected_arch="sm_80", name="vecadd.nova")
    manifest = bundle.manifest
    assert manifest.source_name == "vecadd.mlir"
    assert manifest.entries and all(e.symbol.startswith("__nova_entry_") for e in manifest.entries)
    assert manifest.modules
    for module in manifest.modules:
        assert bundle.payload(module.name, PayloadKind.CUBIN) is None
        ptx = bundle.ptx(module.name)
        assert ptx is not None and ".target sm_80" in ptx
        cpu = bundle.payload(module.name, PayloadKind.CPU_OBJECT)
        assert cpu is not None
        cpu_elf = parse_elf(cpu, elf_type=ET_REL)
        exported = {s.name for s in cpu_elf.symbols() if s.defined and s.is_global}
        for kernel in module.kernels:
            assert f".entry {kernel.name}(" in ptx
            assert kernel.name in exported
            assert all(p.arg_index < len(kernel.args) for p in kernel.params)
    assert any(name.startswith("nova_rt_") for name in bundle.undefined_symbols)


def test_compiled_bundle_with_cubin(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = _compile(arch="sm_90", cubin=True)
    bundle = read_bundle(data, expected_arch="sm_90")
    module = bundle.manifest.modules[0]
    cubin = bundle.payload(module.name, PayloadKind.CUBIN)
    if cubin is None:
        pytest.skip("no ptxas: the bundle carries no cubin")
    parse_elf(cubin, machine=EM_CUDA, elf_type=ET_EXEC)
    path = tmp_path / "vecadd.nova"
    path.write_bytes(data)
    assert objdump.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f".nova.cubin.{module.name}" in out and f"{len(cubin)} bytes" in out
