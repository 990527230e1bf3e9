"""The native C++ peers of the benchmarks without a GPU (bench/native_peer.py, bench/peers/).

- The Python side (building with nvcc, running, reading the peer's exit status: a wrong result
  is a WrongResult, a failure a located error) against a fake nvcc whose "executable" is a shell
  script, and bench/memory_flat.py's native rows and ratios on top of it.
- Where nvcc and the CUDA headers are installed: the peer's PTX through ptxas, and the peer
  itself built and run against an emulated driver (tests/unit/fake_libcuda.cpp: host memory,
  the kernels run on the host), so its host code, chains and verification run end to end.
The real driver runs in the gpu tests of tests/unit/test_bench_checks.py.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
PEER_SOURCE = BENCH / "peers" / "launch_loop.cu"
FAKE_DRIVER = Path(__file__).resolve().parent / "fake_libcuda.cpp"

# The fake nvcc "builds" this script; the peer's behaviour is chosen by FAKE_PEER at run time
# and every run's arguments are appended to FAKE_PEER_ARGS. "modes" prints per chain mode.
FAKE_PEER = """#!/bin/sh
echo "$@" >> "$FAKE_PEER_ARGS"
case "$FAKE_PEER" in
  ok) echo 2.5; echo 1.5; echo 3.5 ;;
  wrong) echo "WRONG: x element 7 is 3, expected 9" >&2; exit 3 ;;
  fail) echo "cuInit(0) failed: CUDA_ERROR_NO_DEVICE" >&2; exit 1 ;;
  junk) echo hello ;;
  modes)
    case "$*" in
      *chain=alloc_step*graph*) echo 12; echo 12 ;;
      *chain=scratch_step*graph*) echo 11; echo 11 ;;
      *chain=alloc_only_step*) echo 11; echo 11 ;;
      *chain=alloc_step*) echo 25; echo 25 ;;
      *chain=scratch_step*)
        if [ -n "$FAKE_WRONG_SCRATCH" ]; then echo "WRONG: x element 0 is 0" >&2; exit 3; fi
        echo 24; echo 26 ;;
      *chain=step*) echo 9; echo 11 ;;
    esac ;;
esac
"""

FAKE_NVCC = """#!{python}
import os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_NVCC_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if os.environ.get("FAKE_NVCC_FAIL"):
    print("launch_loop.cu(3): error: expected a \\";\\"", file=sys.stderr)
    sys.exit(2)
out = Path(args[args.index("-o") + 1])
out.write_text({peer!r})
out.chmod(0o755)
"""


def _import(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    __import__(name)
    return sys.modules[name]


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """bench/native_peer.py with a fresh build cache and the fake nvcc first on PATH."""
    native_peer = _import("native_peer", monkeypatch)
    monkeypatch.setattr(native_peer, "_built", {})
    monkeypatch.setattr(native_peer, "_build_dir", None)
    tools = tmp_path / "tools"
    tools.mkdir()
    nvcc = tools / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(python=sys.executable, peer=FAKE_PEER))
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("FAKE_NVCC_LOG", str(tmp_path / "nvcc.log"))
    monkeypatch.setenv("FAKE_PEER_ARGS", str(tmp_path / "peer.args"))
    monkeypatch.setenv("FAKE_PEER", "ok")
    monkeypatch.delenv("NOVA_TEST_SABOTAGE", raising=False)
    return native_peer


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_run_builds_once_and_reads_the_numbers(peer: Any, tmp_path: Path) -> None:
    assert peer.run("launch_loop", "10", "3", "sync") == [2.5, 1.5, 3.5]
    assert peer.run("launch_loop", "5", "3") == [2.5, 1.5, 3.5]
    builds = _lines(tmp_path / "nvcc.log")
    assert len(builds) == 1, builds  # built once per process
    assert "-O2" in builds[0] and builds[0].endswith("-lcuda")
    assert str(PEER_SOURCE) in builds[0]
    assert _lines(tmp_path / "peer.args") == ["10 3 sync", "5 3"]


def test_missing_nvcc_is_unavailable(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(peer.PeerUnavailable, match="nvcc not found"):
        peer.run("launch_loop", "1", "1")


def test_a_failed_build_shows_nvcc_messages(peer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NVCC_FAIL", "1")
    with pytest.raises(RuntimeError, match=r"bench/peers/launch_loop.cu \(exit 2\): "
                                           r"launch_loop.cu\(3\): error: expected"):
        peer.run("launch_loop", "1", "1")


@pytest.mark.parametrize(("behaviour", "error", "message"), [
    ("wrong", "WrongResult", "WRONG: x element 7 is 3, expected 9"),
    ("fail", "RuntimeError", "launch_loop 1 1 exited 1: cuInit\\(0\\) failed: "
                             "CUDA_ERROR_NO_DEVICE"),
    ("junk", "RuntimeError", "printed something other than numbers: hello"),
])
def test_what_the_peer_reports(peer: Any, monkeypatch: pytest.MonkeyPatch, behaviour: str,
                               error: str, message: str) -> None:
    monkeypatch.setenv("FAKE_PEER", behaviour)
    exc = peer.WrongResult if error == "WrongResult" else RuntimeError
    with pytest.raises(exc, match=message) as info:
        peer.run("launch_loop", "1", "1")
    if error == "RuntimeError":
        assert not isinstance(info.value, peer.WrongResult)


def test_sabotage_skips_the_peers_kernels(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    """tests/unit/test_bench_checks.py's switch reaches the native peers too."""
    monkeypatch.setenv("NOVA_TEST_SABOTAGE", "1")
    peer.run("launch_loop", "4", "2", "chain=step")
    assert _lines(tmp_path / "peer.args") == ["4 2 chain=step noop"]


def test_launch_overhead_native_loop(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    launch_overhead = _import("launch_overhead", monkeypatch)
    times, note = launch_overhead.native_loop(10, 3, memref=True, sync=True)
    assert times == pytest.approx({"min": 1.5e-6, "median": 2.5e-6})
    assert note == "verified by the peer: 130 launches ran"
    assert _lines(tmp_path / "peer.args") == ["10 3 memref sync"]


def test_memory_flat_native_rows_and_ratios(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    memory_flat = _import("memory_flat", monkeypatch)
    monkeypatch.setenv("FAKE_PEER", "modes")
    rows, why = memory_flat.run_native(1005, 7, 64)
    assert why is None
    assert [r["mode"] for r in rows] == ["step", "alloc_step", "scratch_step", "alloc_only_step"]
    assert _lines(tmp_path / "peer.args") == [
        f"100 10 chain={mode} elements=64 warmup=7" for mode in memory_flat.NATIVE_CASES]
    us = {r["mode"]: r["us_per_call"] for r in rows}
    assert us == {"step": 10.0, "alloc_step": 25.0, "scratch_step": 25.0,
                  "alloc_only_step": 11.0}
    assert all(r["result_ok"] and r["calls"] == 1000 for r in rows)
    assert rows[0]["note"] == "verified by the peer: x counts 207 calls"  # 7 + 2 repeats x 100
    nova = {"step(device buffer)": 20.0, "alloc_step(device buffer)": 30.0,
            "scratch_step(device buffers)": 30.0, "alloc_only_step(device buffer)": 22.0}
    ratios = memory_flat.print_native(rows, nova)["one by one"]
    assert ratios["native"] == pytest.approx({"alloc_step / step": 2.5,
                                              "alloc_step / scratch_step": 1.0,
                                              "alloc_only_step / step": 1.1})
    assert ratios["nova"] == pytest.approx({"alloc_step / step": 1.5,
                                            "alloc_step / scratch_step": 1.0,
                                            "alloc_only_step / step": 1.1})
    assert ratios["nova_over_native"]["alloc_step / step"] == pytest.approx(0.6)
    out = capsys.readouterr().out
    assert "  native: alloc_step / step = 2.50x, alloc_step / scratch_step = 1.00x, " \
           "alloc_only_step / step = 1.10x" in out
    assert "  nova / native: alloc_step / step 0.60" in out
    assert "as graphs" not in out  # no graph rows: no graph ratios
    assert re.search(r"native C\+\+ step +10\.0 +9\.0 +10\.0 +20\.0 +2\.00x", out), out


def test_memory_flat_native_graph_rows(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """With Nova's automatic graphs: the direct native rows mirror Nova's `no automatic graphs`
    rows, and alloc_step/scratch_step run again as native graphs beside Nova's graph rows."""
    memory_flat = _import("memory_flat", monkeypatch)
    monkeypatch.setenv("FAKE_PEER", "modes")
    rows, why = memory_flat.run_native(1005, 7, 64, graphs=True)
    assert why is None
    assert [r["mode"] for r in rows] == ["step", "alloc_step", "scratch_step", "alloc_only_step",
                                         "alloc_step graph", "scratch_step graph"]
    assert _lines(tmp_path / "peer.args")[-2:] == [
        "100 10 chain=alloc_step elements=64 warmup=7 graph",
        "100 10 chain=scratch_step elements=64 warmup=7 graph"]
    direct = memory_flat.DIRECT
    assert [r["nova_case"] for r in rows] == [
        "step(device buffer)", f"alloc_step(device buffer), {direct}",
        f"scratch_step(device buffers), {direct}", "alloc_only_step(device buffer)",
        "alloc_step(device buffer)", "scratch_step(device buffers)"]
    nova = {"step(device buffer)": 20.0, "alloc_step(device buffer)": 22.0,
            "scratch_step(device buffers)": 21.0, "alloc_only_step(device buffer)": 22.0,
            f"alloc_step(device buffer), {direct}": 30.0,
            f"scratch_step(device buffers), {direct}": 30.0}
    report = memory_flat.print_native(rows, nova)
    assert report["one by one"]["native"]["alloc_step / step"] == pytest.approx(2.5)
    assert report["one by one"]["nova"]["alloc_step / step"] == pytest.approx(1.5)
    assert report["as graphs"]["native"]["alloc_step / step"] == pytest.approx(1.2)
    assert report["as graphs"]["nova"]["alloc_step / step"] == pytest.approx(1.1)
    assert report["as graphs"]["nova"]["alloc_step / scratch_step"] == pytest.approx(22 / 21)
    out = capsys.readouterr().out
    assert "as graphs: alloc_step and scratch_step each one CUDA graph" in out
    assert re.search(r"native C\+\+ alloc_step graph +12\.0 +12\.0 +12\.0 +22\.0 +1\.83x",
                     out), out


def test_memory_flat_native_wrong_and_missing(peer: Any, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    memory_flat = _import("memory_flat", monkeypatch)
    monkeypatch.setenv("FAKE_PEER", "modes")
    monkeypatch.setenv("FAKE_WRONG_SCRATCH", "1")
    rows, why = memory_flat.run_native(20, 1, 64)
    wrong = [r for r in rows if r["result_ok"] is False]
    assert [r["mode"] for r in wrong] == ["scratch_step"] and why is None
    assert wrong[0]["note"] == "WRONG: x element 0 is 0" and "us_per_call" not in wrong[0]
    assert memory_flat.print_native(rows, {}) == {}
    assert "native ratios (one by one): not all native rows ran" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_PEER", "fail")
    rows, why = memory_flat.run_native(20, 1, 64)
    assert all(r["result_ok"] is None and "CUDA_ERROR_NO_DEVICE" in r["note"] for r in rows)
    monkeypatch.setattr(peer, "_built", {})
    monkeypatch.setenv("PATH", "/nonexistent")
    assert memory_flat.run_native(20, 1, 64) == ([], "nvcc not found on PATH")


# --- the real peer, where nvcc is installed -----------------------------------------------------
def _cuda_include() -> Path | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    sys.path.insert(0, str(BENCH))
    try:
        from native_peer import toolkit_root
    finally:
        sys.path.remove(str(BENCH))
    include = toolkit_root(nvcc) / "include"
    return include if (include / "cuda.h").is_file() else None


needs_nvcc = pytest.mark.skipif(
    _cuda_include() is None or shutil.which("g++") is None or shutil.which("ptxas") is None,
    reason="nvcc, ptxas, the CUDA headers or g++ are not installed")


_LITERAL_OR_MACRO = re.compile(r'"((?:[^"\\]|\\.)*)"|\b(PTX_\w+)\b')


def _literals(text: str, macros: dict[str, str]) -> str:
    """The string literals of C++ `text` joined, its PTX_* macros expanded."""
    return "".join(ast.literal_eval(f'"{lit}"') if name is None else macros[name]
                   for lit, name in ((m.group(1), m.group(2))
                                     for m in _LITERAL_OR_MACRO.finditer(text)))


def _peer_ptx() -> str:
    """The PTX text launch_loop.cu loads: its kPtx string literals and the PTX_* macros (runs
    of literals) between them, joined."""
    source = re.sub(r"(?m)^\s*//.*$", "", PEER_SOURCE.read_text())  # comments
    macros: dict[str, str] = {}
    for name, body in re.findall(r"#define (PTX_\w+)((?:[^\n]*\\\n)*[^\n]*)", source):
        macros[name] = _literals(body, macros)
    start = source.index("kPtx =")
    return _literals(source[start:source.index('";\n', start) + 2], macros)


@needs_nvcc
def test_the_peer_ptx_assembles(tmp_path: Path) -> None:
    ptx = tmp_path / "peer.ptx"
    ptx.write_text(_peer_ptx())
    for entry in ("add1", "add1_memref", "chain_add1", "chain_add1_store2"):
        assert f".visible .entry {entry}(" in ptx.read_text()
    done = subprocess.run([shutil.which("ptxas") or "ptxas", "-arch=sm_90", str(ptx), "-o",
                           str(tmp_path / "p.cubin")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def emulated_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The emulated driver (lib/libcuda.so.1) and the real peer built against it by
    bench/native_peer.py; built once for this module."""
    lib = tmp_path_factory.mktemp("emulated") / "lib"
    lib.mkdir()
    # libcuda.so.1 as well: a toolkit's stub libcuda (which nvcc may link against) names it
    subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{_cuda_include()}",
                    "-Wl,-soname,libcuda.so.1", "-o", str(lib / "libcuda.so.1"),
                    str(FAKE_DRIVER)], check=True, timeout=300)
    (lib / "libcuda.so").symlink_to("libcuda.so.1")
    keep = lib.parent / "launch_loop"
    with pytest.MonkeyPatch.context() as patch:
        native_peer = _import("native_peer", patch)
        patch.setattr(native_peer, "_built", {})
        patch.setattr(native_peer, "_build_dir", None)  # (its own, removed when dropped)
        patch.setenv("LIBRARY_PATH", str(lib))  # the linker finds -lcuda here
        shutil.copy2(native_peer.build("launch_loop"), keep)
    return lib, keep


@pytest.fixture
def emulated(emulated_build: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench/native_peer.py whose launch_loop is the peer built against the emulated driver."""
    lib, exe = emulated_build
    native_peer = _import("native_peer", monkeypatch)
    monkeypatch.setattr(native_peer, "_built", {"launch_loop": exe})
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))
    monkeypatch.delenv("NOVA_TEST_SABOTAGE", raising=False)
    monkeypatch.delenv("FAKE_CUDA_FAIL", raising=False)
    return native_peer


@needs_nvcc
def test_the_peer_runs_against_an_emulated_driver(emulated: Any, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    memory_flat = _import("memory_flat", monkeypatch)
    rows, why = memory_flat.run_native(30, 4, 1000)  # 1000: the last block is partial
    assert why is None
    assert all(r["result_ok"] for r in rows), rows
    assert [len(emulated.run("launch_loop", "6", "2", *mode)) for mode in
            ([], ["memref"], ["sync"], ["memref", "enqueue"])] == [2, 2, 2, 2]
    graph_rows, why = memory_flat.run_native(30, 4, 1000, graphs=True)  # captured chains
    assert why is None and len(graph_rows) == 6
    assert all(r["result_ok"] for r in graph_rows), graph_rows
    monkeypatch.setenv("NOVA_TEST_SABOTAGE", "1")
    rows, _ = memory_flat.run_native(30, 4, 1000, graphs=True)
    assert [r["note"] for r in rows] == ["WRONG: x element 0 is 0, expected 34"] * 6
    with pytest.raises(emulated.WrongResult, match="counter 0 is 0, expected 112"):
        emulated.run("launch_loop", "6", "2")
    capsys.readouterr()


@needs_nvcc
def test_the_emulated_peer_frees_what_it_allocates(emulated: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CUDA_REPORT", "1")
    exe = emulated.build("launch_loop")
    for mode, allocations in (("alloc_step", 13), ("alloc_only_step", 13), ("scratch_step", 0)):
        done = subprocess.run([str(exe), "5", "2", f"chain={mode}", "warmup=3"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert f"fake driver: {allocations} pool allocations, 0 live" in done.stderr
        assert len(done.stdout.split()) == 2 and statistics.fmean(
            float(v) for v in done.stdout.split()) > 0


@needs_nvcc
@pytest.mark.parametrize(("args", "fail", "status", "message"), [
    (["0", "2"], "", 2, "usage:"),
    (["5", "2", "chain=foo"], "", 2, "bad argument 'chain=foo'"),
    (["5", "2", "chain=step", "sync"], "", 2, "chain=MODE takes no memref, sync or enqueue"),
    (["5", "2", "elements=7"], "", 2, "elements=K is for chain=MODE only"),
    (["5", "2", "graph"], "", 2, "graph is for chain=MODE only"),
    (["5", "2", "chain=alloc_step", "graph"], "cuStreamBeginCapture", 1,
     "cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_RELAXED) failed: "
     "CUDA_ERROR_NOT_SUPPORTED"),
    (["5", "2", "chain=step", "elements=0"], "", 2, "bad argument 'elements=0'"),
    (["100000", "200", "chain=step"], "", 2, "too many launches to count exactly"),
    (["5", "2", "chain=alloc_step"], "cuMemPoolCreate", 1,
     "cuMemPoolCreate(pool, &props) failed: CUDA_ERROR_NOT_SUPPORTED"),
    (["5", "2", "chain=alloc_only_step"], "pools", 1,
     "device 0 has no stream-ordered memory pools"),
    (["5", "2"], "cuInit", 1, "cuInit(0) failed: CUDA_ERROR_NOT_SUPPORTED"),
])
def test_the_peer_rejects_bad_runs(emulated: Any, monkeypatch: pytest.MonkeyPatch,
                                   args: list[str], fail: str, status: int,
                                   message: str) -> None:
    monkeypatch.setenv("FAKE_CUDA_FAIL", fail)
    done = subprocess.run([str(emulated.build("launch_loop")), *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == status and message in done.stderr, done.stderr
