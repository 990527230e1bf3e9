"""nova-objdump: summary, --sections, --ptx, --json, --manifest, and its error reporting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bundle_samples import SAMPLE_PTX, build_bundle, cpu_object

from nova.bundle.writer import DeviceImages
from nova.cli import objdump


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("objdump") / "prog.nova"
    path.write_bytes(build_bundle()[0])
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = objdump.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_default_summary(bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(bundle_path))
    assert code == 0 and err == ""
    assert f"{bundle_path}: nova-bundle format version 1, produced by nova 0.1.0" in out
    assert "arch:       sm_90" in out
    assert "source:     sample.mlir" in out
    assert "main(memref<?xf32>, index) -> (index)    [symbol __nova_entry_main]" in out
    assert "device modules (1):" in out
    assert "k(memref<?xf32>, index)" in out
    assert "static shared memory: 256 bytes, barriers: yes" in out
    assert "parameters (6, 48 bytes):" in out
    assert "#5   i64        8 bytes  from arg 1" in out
    ptx_line = next(line for line in out.splitlines() if line.strip().startswith("ptx "))
    assert ".nova.ptx.m" in ptx_line and f"{len(SAMPLE_PTX)} bytes" in ptx_line
    assert "cpuobj" in out and "x86_64" in out
    # --manifest alone is the same summary
    assert run(capsys, str(bundle_path), "--manifest")[1] == out


def test_sections(bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(bundle_path), "--sections")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sections (")
    for name in (".nova.ptx.m", ".nova.cubin.m", ".nova.cpuobj.m", ".nova.manifest",
                 ".nova.seal"):
        line = next(ln for ln in lines if f" {name} " in ln)
        assert "PROGBITS" in line and " A " in line
    assert "entry points" not in out  # only what was asked for


def test_ptx(bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(bundle_path), "--ptx", "m")
    assert code == 0 and out == SAMPLE_PTX
    code, out, _ = run(capsys, str(bundle_path), "--ptx")
    assert code == 0
    assert out.startswith("// ---- device module 'm' (ptx) ----\n") and SAMPLE_PTX in out


def test_ptx_errors(tmp_path: Path, bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(bundle_path), "--ptx", "nope")
    assert code == 1 and out == ""
    assert err == f"nova-objdump: error: {bundle_path}: no device module 'nope' (modules: m)\n"
    path = tmp_path / "cpu_only.nova"
    path.write_bytes(build_bundle((DeviceImages("c", (), None, None, cpu_object()),))[0])
    code, _, err = run(capsys, str(path), "--ptx", "c")
    assert code == 1
    assert "nova-objdump: error: device module 'c' has no PTX image (it has: cpuobj)" in err
    code, _, err = run(capsys, str(path), "--ptx")
    assert code == 1 and "holds no PTX image" in err


def test_json(bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(bundle_path), "--json")
    assert code == 0
    raw = json.loads(out)
    assert raw["format"] == "nova-bundle" and raw["format_version"] == 1
    assert raw["modules"][0]["kernels"][0]["name"] == "k"


def test_combined_parts_in_order(bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(bundle_path), "--json", "--sections", "--manifest")
    assert code == 0
    assert out.index("sections (") < out.index("entry points") < out.index('"abi_version"')


def test_errors(tmp_path: Path, bundle_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing.nova"))
    assert code == 1
    assert err.startswith("nova-objdump: error: cannot read bundle") and "missing.nova" in err
    broken = tmp_path / "broken.nova"
    data = bytearray(bundle_path.read_bytes())
    data[len(data) // 2] ^= 0x10
    broken.write_bytes(bytes(data))
    code, out, err = run(capsys, str(broken))
    assert code == 1 and out == ""
    assert err.startswith(f"nova-objdump: error: {broken}: the bundle is corrupt")
    text = tmp_path / "prog.mlir"
    text.write_text("module {\n}\n")
    code, _, err = run(capsys, str(text))
    assert code == 1 and "perhaps MLIR source" in err
    code, _, err = run(capsys, str(bundle_path), "--arch", "sm_100")
    assert code == 1 and "built for sm_90" in err and "--arch sm_100" in err


def test_python_dash_m_nova_objdump(bundle_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "nova", "objdump", str(bundle_path), "--ptx",
                             "m"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == SAMPLE_PTX
    result = subprocess.run([sys.executable, "-m", "nova", "objdump", "/nonexistent.nova"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("nova-objdump: error: cannot read bundle")
