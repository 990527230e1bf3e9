"""The pieces the cold-start paths use instead of heavier standard modules compute what those
would: nova.hashing's SHA-256 (CPython's built-in one) equals OpenSSL's, the cpu device's block
helper threads run every submitted call, and the compiler fingerprint (os.scandir) equals the
pathlib walk it replaced."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from nova import hashing
from nova.compiler import cache
from nova.runtime.cpu.helpers import HelperThreads


@pytest.mark.parametrize("size", [0, 1, 55, 64, 1000, 1 << 16])
def test_builtin_sha256_matches_openssl(size: int) -> None:
    data = os.urandom(size)
    builtin = hashing._load_builtin()
    assert builtin is not None  # CPython always has it
    assert builtin(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert hashing.sha256(data).digest() == hashlib.sha256(data).digest()
    incremental = hashing.sha256(size_hint=2 * size)
    incremental.update(data)
    incremental.update(memoryview(data))
    assert incremental.hexdigest() == hashlib.sha256(data + data).hexdigest()


@pytest.mark.parametrize("value", [
    None, True, False, 0, 1, -7, 2**70, 1.5, float("inf"), "", "a", "1", "é\n\"'", [], [[]], {},
    [1, "1", None], {"a": [1, 2], "b": {"c": None}}, {"b": 1, "a": 2},
])
def test_canonical_text_reads_back_as_the_json_value(value: object) -> None:
    """One text per value: it evaluates back to the value (dict keys sorted, tuples as lists)."""
    import ast

    text = hashing.canonical(value)
    back = ast.literal_eval(text.replace("inf", "1e999"))
    assert back == value and type(back) is type(value)
    if isinstance(value, dict):
        assert list(ast.literal_eval(text)) == sorted(value)


def test_canonical_text_separates_what_json_separates() -> None:
    from enum import StrEnum

    class Kind(StrEnum):
        CPU = "cpu"

    texts = [hashing.canonical(v) for v in (
        1, True, "1", 1.0, None, "None", [1, 2], [[1], 2], [1, [2]], {"a": 1}, {"a": "1"},
        {"a": 1, "b": 2}, {"ab": 1}, ["a", "b"], ["a,b"], "a,b", ["a', 'b"])]
    assert len(set(texts)) == len(texts)
    assert hashing.canonical({"b": [1, (2, 3)], "a": None}) == \
        hashing.canonical({"a": None, "b": [1, [2, 3]]})  # tuples read as lists, keys sorted
    assert hashing.canonical(Kind.CPU) == hashing.canonical("cpu")  # a StrEnum is its value
    for bad in ({1: 2}, {"a": {1}}, b"x", object(), [1j]):
        with pytest.raises(TypeError, match="canonical"):
            hashing.canonical(bad)


def test_large_inputs_go_to_openssl(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without hashlib loaded, small inputs use the built-in code and large ones OpenSSL's."""
    import sys

    monkeypatch.delitem(sys.modules, "hashlib")
    small = hashing.sha256(b"abc")
    assert type(small) is type(hashing._load_builtin()(b""))
    monkeypatch.setitem(sys.modules, "hashlib", hashlib)
    big = hashing.sha256(b"x", size_hint=hashing.LARGE + 1)
    assert big.hexdigest() == hashlib.sha256(b"x").hexdigest()


def test_helper_threads_run_every_call_on_at_most_count_threads() -> None:
    helpers = HelperThreads(3, thread_name_prefix="nova-test-helper")
    done: list[int] = []
    idents: set[int] = set()
    lock = threading.Lock()
    finished = threading.Event()

    def job(i: int) -> None:
        time.sleep(0.001)
        with lock:
            done.append(i)
            idents.add(threading.get_ident())
            if len(done) == 40:
                finished.set()

    for i in range(40):
        helpers.submit(lambda i=i: job(i))
    assert finished.wait(30)
    assert sorted(done) == list(range(40))
    assert 1 <= len(idents) <= 3 and threading.get_ident() not in idents
    assert "nova-test-helper" in repr(helpers) and len(idents) <= len(helpers._threads) <= 3
    helpers.close()  # every thread ends: the lock it held while running is free again
    assert all(not running.locked() for running in helpers._threads)
    assert not helpers._running


def test_a_failing_helper_call_does_not_stop_the_helpers() -> None:
    helpers = HelperThreads(1, thread_name_prefix="nova-test-helper")
    ran = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    helpers.submit(boom)
    helpers.submit(ran.set)
    assert ran.wait(30)
    with pytest.raises(ValueError):
        HelperThreads(0, thread_name_prefix="x")


def test_compiler_fingerprint_equals_the_pathlib_walk() -> None:
    root = Path(cache.__file__).parent.parent
    # a part that is gone (renamed: abi.py became a package) would silently leave the key
    assert [p for p in cache._COMPILER_PARTS if not (root / p).exists()] == []
    digest = hashlib.sha256()
    for part in cache._COMPILER_PARTS:
        path = root / part
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            stat = file.stat()
            digest.update(f"{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    cache._compiler_fingerprint.cache_clear()
    try:
        assert cache._compiler_fingerprint() == digest.hexdigest()
    finally:
        cache._compiler_fingerprint.cache_clear()


def test_dist_version_reads_the_dist_info_name() -> None:
    from importlib.metadata import version

    assert cache._dist_version("llvmlite") == version("llvmlite")
    assert cache._dist_version("nova_no_such_package") == "absent"


def test_config_paths_without_pathlib_read_as_before(tmp_path: Path) -> None:
    from nova import config

    default = config.Config.from_environ({})
    assert default == config.Config()
    assert default.cache_dir == Path.home() / ".cache" / "nova"
    assert isinstance(default.cache_dir, Path)
    assert default.cache_path("kernels", "ab") == str(Path.home() / ".cache/nova/kernels/ab")
    env = {"NOVA_CACHE_DIR": str(tmp_path / "c"), "NOVA_DUMP_DIR": "d", "NOVA_OVERRIDE_DIR": "o",
           "NOVA_TRUSTED_KEYS": os.pathsep.join(["k1.pem", " ", "k2.pem"])}
    cfg = config.Config.from_environ(env)
    assert cfg.cache_dir == tmp_path / "c" and cfg.cache_path("x") == str(tmp_path / "c" / "x")
    assert (cfg.dump_dir, cfg.override_dir) == (Path("d"), Path("o"))
    assert cfg.trusted_keys == (Path("k1.pem"), Path("k2.pem"))
    assert f"cache_dir={tmp_path / 'c'!r}" in repr(cfg)
    with config.scoped(cache_dir=tmp_path / "s") as scoped:
        assert config.get() is scoped and scoped.cache_dir == tmp_path / "s"
        assert scoped.cache_path("k") == str(tmp_path / "s" / "k")
    with pytest.raises(TypeError, match=r"unknown config fields: \['nope'\]"), \
            config.scoped(nope=1):
        pass


def test_idle_helpers_are_woken_one_call_each() -> None:
    """A woken helper counts as busy at once: with one helper idle, two calls submitted together
    wake it and start a second one, so both run at the same time."""
    helpers = HelperThreads(3, thread_name_prefix="nova-test-helper")
    first = threading.Event()
    helpers.submit(first.set)
    assert first.wait(30)
    deadline = time.monotonic() + 30
    while helpers._idle < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert helpers._idle == 1
    barrier = threading.Barrier(2, timeout=30)
    done = threading.Semaphore(0)

    def job() -> None:
        barrier.wait()  # breaks (and the test fails) unless both calls run at once
        done.release()

    helpers.submit(job)
    helpers.submit(job)
    assert done.acquire(timeout=30) and done.acquire(timeout=30)
    assert len(helpers._threads) == 2
