"""The compile driver: stage table, --emit targets, dumps, timings and the bundle cache."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from driver_programs import PROGRAM

from nova import config
from nova.compiler import driver
from nova.compiler import stages as driver_stages
from nova.compiler.cache import BundleCache, cache_key
from nova.compiler.driver import (
    STAGES,
    CompileOptions,
    CompileOptionsError,
    CompileResult,
    compile_source,
    compile_until,
)
from nova.errors import ParseError


def test_stage_table_order_and_names() -> None:
    names = [stage.name for stage in STAGES]
    assert names == ["parse", "outline", "device-llvm", "ptx", "cubin", "cpu-llvm", "cpu-obj",
                     "host-llvm", "embed", "obj", "nova"]
    for stage in STAGES:  # a stage only needs stages that come before it
        assert all(names.index(need) < names.index(stage.name) for need in stage.needs)


def test_required_stages_follow_dependencies() -> None:
    options = CompileOptions(cubin=False)
    host = [s.name for s in driver_stages.required("host-llvm", options)]
    assert host == ["parse", "outline", "host-llvm"]
    full = [s.name for s in driver_stages.required("nova", options)]
    assert "cubin" not in full and full[-1] == "nova" and "cpu-obj" in full
    no_cpu = [s.name for s in driver_stages.required("nova", CompileOptions(cpu_image=False))]
    assert "cpu-llvm" not in no_cpu and "cubin" in no_cpu
    cpu_only = [s.name for s in driver_stages.required("nova", CompileOptions(ptx=False))]
    assert cpu_only == ["parse", "outline", "cpu-llvm", "cpu-obj", "host-llvm", "embed", "obj",
                        "nova"]


def test_emit_names_are_validated() -> None:
    assert CompileOptions(emit="outlined").target() == "outline"
    with pytest.raises(CompileOptionsError, match="unknown emit stage 'bogus'"):
        CompileOptions(emit="bogus").target()
    with pytest.raises(CompileOptionsError, match="disabled"):
        CompileOptions(emit="cubin", cubin=False).target()
    with pytest.raises(CompileOptionsError, match="disabled"):
        CompileOptions(emit="cubin", ptx=False).target()
    with pytest.raises(CompileOptionsError, match="no kernel image to build"):
        CompileOptions(ptx=False, cpu_image=False).target()


def test_arch_defaults_to_config() -> None:
    with config.scoped(arch="sm_80"):
        assert CompileOptions().arch == "sm_80"


def test_emit_outlined_gives_outlined_mlir() -> None:
    text = compile_until(PROGRAM, "scale.mlir", CompileOptions(), "outlined")
    assert isinstance(text, str)
    assert "gpu.container_module" in text
    assert "gpu.launch_func  @scale_kernel::@scale_kernel" in text
    assert "gpu.module @scale_kernel" in text
    assert "gpu.launch blocks" not in text


def test_timings_cover_the_stages_that_ran() -> None:
    result = compile_source(PROGRAM, "scale.mlir", CompileOptions(emit="outline"))
    assert list(result.timings) == ["parse", "outline"]
    assert all(t >= 0 for t in result.timings.values())
    assert not result.cache_hit


def test_dump_dir_receives_numbered_intermediates(tmp_path: Path) -> None:
    with config.scoped(dump_dir=tmp_path):
        compile_source(PROGRAM, "scale.mlir", CompileOptions(emit="outline"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01-parse.mlir", "02-outline.mlir"]
    assert "gpu.launch blocks" in (tmp_path / "01-parse.mlir").read_text()
    assert "gpu.launch_func" in (tmp_path / "02-outline.mlir").read_text()


def test_dump_of_per_module_outputs_names_the_module(tmp_path: Path) -> None:
    stage = driver.STAGE_BY_NAME["ptx"]
    driver._dump(tmp_path, stage, {"a_kernel": "ptx a", "b_kernel": "ptx b"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["04-ptx.a_kernel.ptx",
                                                          "04-ptx.b_kernel.ptx"]


def test_parse_errors_propagate_located() -> None:
    with pytest.raises(ParseError) as info:
        compile_until("func.func @f() {\n  %0 = arith.constant : i32\n  return\n}\n",
                      "bad.mlir", CompileOptions(), "outline")
    assert info.value.location is not None
    assert (info.value.location.filename, info.value.location.line) == ("bad.mlir", 2)


def test_join_outputs() -> None:
    assert driver.join_outputs("x") == "x"
    assert driver.join_outputs({"m": "ptx"}) == "ptx"
    assert driver.join_outputs({}) == ""
    joined = driver.join_outputs({"m1": "a", "m2": "b"})
    assert joined == "// ----- @m1\na\n// ----- @m2\nb\n"
    assert driver.join_outputs({"m": b"\x7fELF"}) == b"\x7fELF"
    with pytest.raises(CompileOptionsError, match="2 device modules"):
        driver.join_outputs({"m1": b"a", "m2": b"b"})


# ---- the cache ------------------------------------------------------------------------------

def test_bundle_cache_roundtrip_and_corruption(tmp_path: Path) -> None:
    cache = BundleCache(tmp_path)
    key = cache_key("text", "f.mlir", {"arch": "sm_90"})
    assert cache.get(key) is None
    cache.put(key, b"bundle bytes")
    assert cache.get(key) == b"bundle bytes"
    entry = next((tmp_path / "bundles").rglob("*.nova"))
    entry.write_bytes(entry.read_bytes()[:-1] + b"X")
    assert cache.get(key) is None  # a corrupt entry reads as a miss and is removed
    assert not entry.exists()


def test_cache_key_depends_on_every_input() -> None:
    base = cache_key("text", "f.mlir", {"arch": "sm_90"})
    assert base == cache_key("text", "f.mlir", {"arch": "sm_90"})
    assert base != cache_key("text2", "f.mlir", {"arch": "sm_90"})
    assert base != cache_key("text", "g.mlir", {"arch": "sm_90"})
    assert base != cache_key("text", "f.mlir", {"arch": "sm_80"})
    with config.scoped(cpu_stack_kib=config.get().cpu_stack_kib * 2):  # compiled into CPU code
        assert base != cache_key("text", "f.mlir", {"arch": "sm_90"})


@pytest.fixture
def fake_pipeline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the stage loop by a recorder that 'builds' a bundle from the source text."""
    calls: list[str] = []

    def fake_run(c: driver_stages.Compilation, target: str) -> CompileResult:
        calls.append(c.text)
        return CompileResult(f"bundle:{c.text}".encode(), {"parse": 0.0})

    monkeypatch.setattr(driver, "_run_stages", fake_run)
    return calls


def test_second_compile_hits_the_cache(tmp_path: Path, fake_pipeline: list[str]) -> None:
    with config.scoped(cache_dir=tmp_path, cache_enabled=True, dump_dir=None):
        first = compile_source("prog", "p.mlir")
        second = compile_source("prog", "p.mlir")
        other = compile_source("prog2", "p.mlir")
    assert first.output == second.output == b"bundle:prog"
    assert (first.cache_hit, second.cache_hit, other.cache_hit) == (False, True, False)
    assert fake_pipeline == ["prog", "prog2"]
    assert list(second.timings) == ["cache"]


def test_cache_can_be_disabled(tmp_path: Path, fake_pipeline: list[str]) -> None:
    with config.scoped(cache_dir=tmp_path, cache_enabled=False, dump_dir=None):
        compile_source("prog", "p.mlir")
        again = compile_source("prog", "p.mlir")
    assert not again.cache_hit and fake_pipeline == ["prog", "prog"]


def test_dumping_bypasses_the_cache(tmp_path: Path, fake_pipeline: list[str]) -> None:
    with config.scoped(cache_dir=tmp_path / "c", cache_enabled=True, dump_dir=None):
        compile_source("prog", "p.mlir")
    with config.scoped(cache_dir=tmp_path / "c", cache_enabled=True, dump_dir=tmp_path / "d"):
        again = compile_source("prog", "p.mlir")
    assert not again.cache_hit and fake_pipeline == ["prog", "prog"]


def test_compile_to_bundle_rejects_other_emits() -> None:
    with pytest.raises(CompileOptionsError, match="compile_until"):
        driver.compile_to_bundle(PROGRAM, "scale.mlir", CompileOptions(emit="ptx"))


# ---- end to end (needs the backends, bundle writer and runtime) ----------------------------

_BACKENDS = ("nova.backends.device", "nova.backends.nvptx.ptx", "nova.backends.x86",
             "nova.backends.host.lower", "nova.bundle.writer", "nova.bundle.reader",
             "nova.runtime.executor")


def test_the_end_to_end_pieces_exist() -> None:
    """The modules the tests below go through are imported, not probed: a renamed one fails
    here instead of skipping the end-to-end tests."""
    for name in _BACKENDS:
        importlib.import_module(name)


def test_compile_to_bundle_end_to_end(tmp_path: Path) -> None:
    from nova.bundle.reader import read_bundle

    with config.scoped(cache_dir=tmp_path, cache_enabled=True, dump_dir=None):
        result = compile_source(PROGRAM, "scale.mlir", CompileOptions(cubin=False))
        again = compile_source(PROGRAM, "scale.mlir", CompileOptions(cubin=False))
    assert again.cache_hit and again.output == result.output
    bundle = read_bundle(result.bundle, name="scale.nova")
    assert [m.name for m in bundle.manifest.modules] == ["scale_kernel"]
    assert [e.name for e in bundle.manifest.entries] == ["scale"]
    assert list(result.timings)[:3] == ["cache", "parse", "outline"]


def test_cpu_only_bundle_has_only_the_cpu_image(tmp_path: Path) -> None:
    from nova.bundle.format import PayloadKind
    from nova.bundle.reader import read_bundle

    with config.scoped(cache_dir=tmp_path, dump_dir=None):
        bundle = driver.compile_to_bundle(PROGRAM, "scale.mlir", CompileOptions(ptx=False))
    (module,) = read_bundle(bundle, name="scale.nova").manifest.modules
    assert [p.kind for p in module.payloads] == [PayloadKind.CPU_OBJECT]
    assert [k.name for k in module.kernels] == ["scale_kernel"]


def test_nova_compile_runs_on_the_cpu_device(tmp_path: Path) -> None:
    import numpy as np

    import nova

    with config.scoped(cache_dir=tmp_path, dump_dir=None):
        module = nova.compile(PROGRAM, device="cpu", cubin=False)
    data = np.arange(16, dtype=np.float32)
    module.scale(data, np.float32(2.0))
    np.testing.assert_array_equal(data, np.arange(16, dtype=np.float32) * 2)


def test_read_source_tells_paths_from_text(tmp_path: Path) -> None:
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    assert driver.read_source(path) == (PROGRAM, str(path))
    assert driver.read_source(str(path)) == (PROGRAM, str(path))
    assert driver.read_source(PROGRAM) == (PROGRAM, "<string>")
    one_line = "func.func @f() { return }"
    assert driver.read_source(one_line) == (one_line, "<string>")
    from nova.cli.toolmain import InputError

    with pytest.raises(InputError, match="cannot read"):
        driver.read_source(str(tmp_path / "missing.mlir"))


def test_make_options_names_valid_fields() -> None:
    assert driver.make_options(arch="sm_80", cubin=False) == CompileOptions(arch="sm_80",
                                                                            cubin=False)
    with pytest.raises(CompileOptionsError, match=r"unknown compile option\(s\) arh .*arch"):
        driver.make_options(arh="sm_80")


def test_bundle_property_needs_a_bundle() -> None:
    result = compile_source(PROGRAM, "scale.mlir", CompileOptions(emit="outline"))
    with pytest.raises(CompileOptionsError, match="stopped before 'nova'"):
        _ = result.bundle


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_every_opt_level_builds_a_program_that_runs(level: int, tmp_path: Path) -> None:
    import numpy as np

    import nova

    with config.scoped(cache_dir=tmp_path, dump_dir=None):
        module = nova.compile(PROGRAM, device="cpu", cubin=False, opt_level=level)
    data = np.arange(16, dtype=np.float32)
    module.scale(data, np.float32(3.0))
    np.testing.assert_array_equal(data, np.arange(16, dtype=np.float32) * 3)


def test_opt_level_reaches_llvm() -> None:
    """-O0 keeps the kernel's allocas/loads that O3 folds away: the PTX and the objects differ."""
    def outputs(level: int) -> tuple[str | bytes, ...]:
        options = CompileOptions(opt_level=level, cubin=False)
        ptx = compile_until(PROGRAM, "scale.mlir", options, "ptx")
        cpu_obj = compile_until(PROGRAM, "scale.mlir", options, "cpu-obj")
        return ptx, cpu_obj

    o0, o3 = outputs(0), outputs(3)
    assert o0[0] != o3[0] and o0[1] != o3[1]
    assert len(o0[0]) > len(o3[0])  # unoptimised PTX is longer


@pytest.mark.parametrize("level", [-1, 4, "3"])
def test_opt_level_out_of_range_is_refused(level: object) -> None:
    with pytest.raises(CompileOptionsError, match="opt_level must be 0, 1, 2 or 3"):
        compile_source(PROGRAM, "scale.mlir", CompileOptions(opt_level=level))  # type: ignore


# ---- hand-edited intermediates (NOVA_OVERRIDE_DIR) -------------------------------------------

TWO_KERNELS = PROGRAM.replace("  return\n}", """\
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    memref.store %factor, %buf[%tx] : memref<16xf32>
    gpu.terminator
  }
  return
}""")


def test_override_replaces_an_mlir_stage(tmp_path: Path) -> None:
    (tmp_path / "02-outline.mlir").write_text("func.func @hand_edited() {\n  return\n}\n")
    with config.scoped(override_dir=tmp_path, dump_dir=None):
        text = compile_until(PROGRAM, "scale.mlir", CompileOptions(), "outline")
    assert "@hand_edited" in text and "@scale" not in text


def test_complete_override_skips_the_stage(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import nova.backends.nvptx.ptx

    def fail(*args: object, **kwargs: object) -> str:
        raise AssertionError("emit_ptx must not run when every module's PTX is overridden")

    monkeypatch.setattr(nova.backends.nvptx.ptx, "emit_ptx", fail)
    (tmp_path / "04-ptx.scale_kernel.ptx").write_text("// hand-edited PTX\n")
    with config.scoped(override_dir=tmp_path, dump_dir=None):
        ptx = compile_until(PROGRAM, "scale.mlir", CompileOptions(), "ptx")
    assert ptx == "// hand-edited PTX\n"


def test_partial_override_runs_the_stage_for_the_other_modules(tmp_path: Path) -> None:
    (tmp_path / "04-ptx.scale_kernel_0.ptx").write_text("// hand-edited PTX\n")
    with config.scoped(override_dir=tmp_path, dump_dir=None):
        result = compile_source(TWO_KERNELS, "scale.mlir", CompileOptions(emit="ptx"))
    assert isinstance(result.output, dict)
    assert result.output["scale_kernel_0"] == "// hand-edited PTX\n"
    assert ".entry scale_kernel" in result.output["scale_kernel"]


def test_override_bypasses_the_cache(tmp_path: Path, fake_pipeline: list[str]) -> None:
    with config.scoped(cache_dir=tmp_path / "c", cache_enabled=True, dump_dir=None,
                       override_dir=None):
        compile_source("prog", "p.mlir")
    with config.scoped(cache_dir=tmp_path / "c", cache_enabled=True, dump_dir=None,
                       override_dir=tmp_path / "o"):
        again = compile_source("prog", "p.mlir")
    assert not again.cache_hit and fake_pipeline == ["prog", "prog"]


def test_driver_import_and_cache_hits_stay_light(tmp_path: Path) -> None:
    """A fresh process that imports the driver and hits the cache loads no xDSL/llvmlite."""
    import subprocess
    import sys

    child = """
import sys
from dataclasses import asdict
from pathlib import Path
from nova import config
from nova.compiler.driver import CompileOptions, compile_source
from nova.compiler.cache import BundleCache, cache_key
heavy = [m for m in ("xdsl", "llvmlite", "numpy") if m in sys.modules]
assert not heavy, f"importing the driver loaded {heavy}"
options = CompileOptions()
with config.scoped(cache_dir=Path(sys.argv[1]), cache_enabled=True, dump_dir=None,
                   override_dir=None):
    BundleCache(Path(sys.argv[1])).put(cache_key("text", "t.mlir", asdict(options)), b"B")
    result = compile_source("text", "t.mlir", options)
assert result.cache_hit and result.output == b"B"
heavy = [m for m in ("xdsl", "llvmlite", "numpy") if m in sys.modules]
assert not heavy, f"a cache hit loaded {heavy}"
"""
    proc = subprocess.run([sys.executable, "-c", child, str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_bundle_cache_keeps_at_most_max_entries(tmp_path: Path) -> None:
    import os

    cache = BundleCache(tmp_path, max_entries=3)
    keys = [cache_key(f"text{i}", "f.mlir", {}) for i in range(5)]
    for age, key in enumerate(keys):
        cache.put(key, key.encode())
        path = next((tmp_path / "bundles").rglob(f"{key}.nova"))
        os.utime(path, ns=(age * 10**9, age * 10**9))  # distinct, increasing write times
    assert [cache.get(k) is not None for k in keys] == [False, False, True, True, True]


_CACHE_WRITER = """
import sys
from nova.compiler.cache import BundleCache
cache = BundleCache(sys.argv[1], max_entries=8)  # small: prunes (deletes) while others read
bad = 0
for round in range(60):
    key = f"{round % 12:064x}"
    data = (key.encode() * 5000)[: 20000 + round % 12]
    cache.put(key, data)
    for other in range(12):
        k = f"{other:064x}"
        got = cache.get(k)
        if got is not None and got != (k.encode() * 5000)[: 20000 + other]:
            bad += 1
print("bad", bad, flush=True)
"""


def test_bundle_cache_concurrent_writers_never_expose_a_torn_entry(tmp_path: Path) -> None:
    """Two processes putting, reading and pruning the same keys at once (as two pytest-xdist
    workers compiling the same source): every read is a miss or the whole entry, and nothing
    raises (writes are atomic renames of unique temporary files)."""
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", _CACHE_WRITER, str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.split() == ["bad", "0"], (out, err)
    assert not list(tmp_path.glob("bundles/*/.tmp-*"))  # no temporary file left behind
