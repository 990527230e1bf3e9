"""The source key of Python kernels (nova.lang.fingerprint): every input of the generated code
changes it, values it cannot describe disable it (the MLIR key then serves), and a warm cache
launches a kernel in a fresh process without importing xDSL or llvmlite."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import nova
from nova import config
from nova.compiler import cache
from nova.lang import compiler, fingerprint
from nova.lang.fingerprint import source_key

SIG = (nova.float32[:], nova.float32[:])
_names = itertools.count()
MakeModule = Callable[..., ModuleType]


@pytest.fixture
def make_module(tmp_path: Path, load_script: Callable[..., ModuleType]) -> MakeModule:
    """Imports a text as a fresh module from a file (kernels need their source in a file); the
    module stays in sys.modules, where other generated modules import it by name."""
    def make(text: str, name: str | None = None) -> ModuleType:
        name = name or f"nova_skey_{next(_names)}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        return load_script(path, name, keep=True)

    return make


def _key(kern: object, sig: tuple = SIG, target: str = "cpu", arch: str = "x86_64",
         check_bounds: bool = False) -> str | None:
    return source_key(kern, sig, target, arch, check_bounds)


KERNEL = """
import nova
{prelude}

@nova.kernel
def k(out, x):
    i = nova.global_id(0)
    if i < out.shape[0]:
        out[i] = {body}
"""


def _kernel(make_module: MakeModule, body: str = "x[i] * 2", prelude: str = "",
            name: str | None = None) -> object:
    text = KERNEL.format(body=body, prelude=prelude)
    return make_module(text, name).k  # type: ignore[attr-defined]


def test_the_same_source_gives_the_same_key(make_module):
    a = _kernel(make_module, name="same")
    key = _key(a)
    assert key is not None and len(key) == 64
    assert key == _key(a)  # deterministic
    assert _key(_kernel(make_module, name="same")) == key  # same text, file and line: same key
    assert _key(_kernel(make_module, name="other")) != key  # another file


def test_kernel_source_changes_the_key(make_module):
    assert _key(_kernel(make_module, "x[i] * 2")) != _key(_kernel(make_module, "x[i] * 3"))


def test_global_constant_value_and_type_change_the_key(make_module):
    keys = {_key(_kernel(make_module, "x[i] * F", f"F = {value}"))
            for value in ("2", "3", "2.0", "True", "(2, 3)", "nova.float32(2)",
                          "__import__('numpy').float64(2)")}
    assert None not in keys and len(keys) == 7


def test_closure_constants_change_the_key(make_module):
    mod = make_module("""
        import nova

        def make(factor):
            @nova.kernel
            def k(out, x):
                i = nova.global_id(0)
                if i < out.shape[0]:
                    out[i] = x[i] * factor
            return k
    """)
    assert _key(mod.make(2)) != _key(mod.make(5))  # type: ignore[attr-defined]
    assert _key(mod.make(2)) == _key(mod.make(2))  # type: ignore[attr-defined]


HELPER = """
import nova

@nova.func
def helper(v):
    return v {op} OFFSET

OFFSET = {offset}
"""


def test_called_device_functions_and_their_globals_change_the_key(make_module):
    def key(op: str, offset: str) -> str | None:
        helpers = make_module(HELPER.format(op=op, offset=offset))
        kern = _kernel(make_module, "helpers.helper(x[i])", f"import {helpers.__name__} as helpers")
        same_file = _kernel(make_module, "helper(x[i])", HELPER.format(op=op, offset=offset))
        return f"{_key(kern)}/{_key(same_file)}"

    keys = {key("+", "1"), key("-", "1"), key("+", "2")}
    assert len(keys) == 3 and all("None" not in k for k in keys)


def test_module_attributes_the_kernel_reads_change_the_key(make_module):
    def key(n: int) -> str | None:
        cfg = make_module(f"N = {n}\n")
        return _key(_kernel(make_module, "x[i] * cfg.N", f"import {cfg.__name__} as cfg"))

    assert key(2) != key(3)


def test_module_attributes_read_by_a_helper_change_the_key(make_module):
    # the kernel hands a module to a device function, which reads an attribute the kernel
    # never names
    helpers = make_module("import nova\n\n@nova.func\ndef get_n(m):\n    return m.N\n")

    def key(n: int) -> str | None:
        cfg = make_module(f"N = {n}\n", name="cfg_shared")
        return _key(_kernel(make_module, "x[i] * helpers.get_n(cfg)",
                            f"import {helpers.__name__} as helpers\nimport {cfg.__name__} as cfg",
                            name="kernel_shared"))

    assert None not in {key(2), key(3)}
    assert key(2) != key(3)


def test_annotations_are_fingerprinted(make_module):
    def key(ty: str) -> str | None:
        kern = make_module(f"""
            import nova
            T = nova.{ty}

            @nova.kernel
            def k(out, x):
                i = nova.global_id(0)
                acc: T = 0
                if i < out.shape[0]:
                    out[i] = x[i] + acc
        """).k  # type: ignore[attr-defined]
        return _key(kern)

    assert key("float32") != key("float64")


def test_signature_target_arch_and_bounds_option_change_the_key(make_module):
    kern = _kernel(make_module)
    keys = {
        _key(kern), _key(kern, (nova.float64[:], nova.float64[:])),
        _key(kern, kern.signature(np.zeros(4, np.float32), np.zeros(4, np.float32))),
        _key(kern, target="cuda", arch="sm_90"), _key(kern, target="cuda", arch="sm_80"),
        _key(kern, check_bounds=True),
    }
    assert None not in keys and len(keys) == 6


def test_the_cpu_fiber_stack_size_changes_the_key(make_module):
    kern = _kernel(make_module)
    with config.scoped(cpu_stack_kib=64):
        small = _key(kern)
    with config.scoped(cpu_stack_kib=128):
        assert _key(kern) != small


def test_nova_version_and_compiler_sources_change_the_key(make_module, monkeypatch):
    kern = _kernel(make_module)
    before = _key(kern)
    cache._tool_fingerprint.cache_clear()
    monkeypatch.setattr(nova, "__version__", nova.__version__ + ".post1")
    try:
        assert _key(kern) != before
    finally:
        cache._tool_fingerprint.cache_clear()
    monkeypatch.undo()
    assert _key(kern) == before
    real = cache.environment_fingerprint  # an edited compiler source changes its "compiler" part
    monkeypatch.setattr(fingerprint, "environment_fingerprint",
                        lambda: {**real(), "compiler": "edited"})
    assert _key(kern) != before


def test_parameters_shadowing_globals_are_not_fingerprinted(make_module):
    # a script's global arrays often share the kernel's parameter names
    kern = _kernel(make_module, "x[i] * 2", "import numpy\nx = numpy.zeros(3)\nout = object()")
    assert _key(kern) is not None


def test_values_it_cannot_describe_fall_back_to_the_mlir_key(tmp_path, make_module, cpu_device):
    mod = make_module(KERNEL.format(
        body="x[i] * cfg.N", prelude="class Cfg:\n    N = 3\ncfg = Cfg()"))
    kern = mod.k  # type: ignore[attr-defined]
    assert _key(kern) is None
    with config.scoped(cache_dir=tmp_path / "cache"):
        x = np.arange(6, dtype=np.float32)
        out = np.zeros_like(x)
        kern[1, 32](out, x)
        np.testing.assert_array_equal(out, x * 3)
        assert len(list((tmp_path / "cache" / "kernels").rglob("*.img"))) == 1  # MLIR key only
        mod.cfg.N = 4  # type: ignore[attr-defined]
        fresh = nova.kernel(kern.py_func)
        fresh[1, 32](out, x)
        np.testing.assert_array_equal(out, x * 4)


def test_a_changed_global_is_not_served_stale_from_disk(tmp_path, make_module, cpu_device,
                                                        monkeypatch):
    mod = make_module(KERNEL.format(body="x[i] * F", prelude="F = 2"))
    x = np.arange(6, dtype=np.float32)
    out = np.zeros_like(x)
    with config.scoped(cache_dir=tmp_path / "cache"):
        mod.k[1, 32](out, x)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(out, x * 2)
        monkeypatch.setattr(mod, "F", 5)
        nova.kernel(mod.k.py_func)[1, 32](out, x)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(out, x * 5)
        built = []
        real = compiler.build_module
        monkeypatch.setattr(compiler, "build_module", lambda *a: built.append(1) or real(*a))
        nova.kernel(mod.k.py_func)[1, 32](out, x)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(out, x * 5)
        assert built == []  # served by the source key


SCRIPT = """
import sys
import numpy as np
import nova
from helpers import scale

@nova.kernel(device="cpu")
def k(out, x):
    i = nova.global_id(0)
    if i < out.shape[0]:
        out[i] = scale(x[i])

x = np.arange(8, dtype=np.float32)
out = np.zeros_like(x)
k[1, 32](out, x)
print(" ".join(str(int(v)) for v in out))
print("xdsl" in sys.modules, "llvmlite" in sys.modules, "nova.compiler.driver" in sys.modules)
print(*sorted({m.split(".")[0] for m in sys.modules} & {AVOIDED!r}))
import tokenize
print(tokenize._compile.cache_info().currsize)  # 0: the kernel's source was never tokenized
print(*sorted(m for m in sys.modules if m in {LAZY!r}))
import re  # NumPy's import loads re; inspect.findsource's pattern must not have been compiled
print(sum("lambda" in str(key) for key in re._cache))
import threading
print(*sorted({t.name.rstrip("0123456789") for t in threading.enumerate()}))
"""
AVOIDED = {"hashlib", "concurrent", "logging", "dataclasses", "base64", "argparse", "tempfile",
           "shutil", "subprocess", "pathlib", "json", "threading"}
"""What a warm cached kernel's first call must not import (NumPy, the caller's, imports none;
`threading`: the runtime's Condition is nova.runtime.cpu.helpers', and a synchronous launch starts
no stream worker)."""
LAZY = {"nova.lang.intrinsics", "nova.lang.mma", "nova.lang.guard", "nova.runtime.linker",
        "binascii", "mmap", "_bisect", "importlib.util", "cuda", "nova.abi.functions",
        "nova.abi.plans", "nova.bundle.format", "nova.runtime.cpu.deferred_free",
        "nova.runtime.launch_params", "nova.runtime.cpu.fault_record",
        "nova.runtime.cpu.events", "nova.errors.rare",
        "nova.lang.kernel_errors", "nova.runtime.lazy_numpy"}
"""Modules the cached first call imports only where it needs them: the intrinsics and mma (no
kernel body runs on the host), the launch guard (a NumPy launch never runs it), the host-object
linker, the extension modules base64 decoding, page sizes and freeing need, importlib.util,
cuda-bindings on the cpu device, the ABI's function table and library plans (nova.abi's
submodules: a launch needs only its CpuLaunch record), the manifest schema (a launch reads one
kernel entry: nova.bundle.kernel_entry), the cpu device's deferred frees (nothing is handed
back to its arena), Device.launch's parameter packing (a launcher packs its own slots), the
fault guard's FaultRecord (read only when a fault is reported), cpu events (none is made), the
rarer error classes and the kernel language's errors (nothing is raised or translated) and the
NumPy proxy (the program imported NumPy itself)."""


def _run(folder: Path, cache_dir: Path) -> list[str]:
    env = {**os.environ, "NOVA_CACHE_DIR": str(cache_dir), "NOVA_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    env.pop("NOVA_CACHE", None)
    done = subprocess.run([sys.executable, str(folder / "script.py")], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


def test_a_warm_cache_launches_without_importing_the_compiler(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT.replace("{AVOIDED!r}", repr(AVOIDED))
                                        .replace("{LAZY!r}", repr(LAZY)))
    (tmp_path / "helpers.py").write_text("import nova\n\n@nova.func\ndef scale(v):\n"
                                         "    return v * 2\n")
    cold = _run(tmp_path, tmp_path / "cache")
    assert cold[0] == "0 2 4 6 8 10 12 14" and cold[1].startswith("True")
    warm = _run(tmp_path, tmp_path / "cache")
    assert warm[0] == "0 2 4 6 8 10 12 14"
    assert warm[1] == "False False False"  # no xDSL, no llvmlite, no compile driver
    assert warm[2] == ""  # no OpenSSL, concurrent.futures, logging, dataclasses, json, ...
    assert warm[3] == "0"  # nova.lang.source.source_lines: no tokenize regex compiled
    assert warm[4] == ""  # none of LAZY
    assert warm[5] == "0"  # nova.lang.source._find_source: no regular expression of inspect's
    # a synchronous launch: the caller runs it, no stream worker or grace timer thread starts
    assert set(warm[6].split()) <= {"MainThread", "nova-cpu-block_"}, warm[6]
    # an edit of the called helper (another file) is a miss, not a stale hit
    (tmp_path / "helpers.py").write_text("import nova\n\n@nova.func\ndef scale(v):\n"
                                         "    return v * 3\n")
    edited = _run(tmp_path, tmp_path / "cache")
    assert edited[0] == "0 3 6 9 12 15 18 21" and edited[1].startswith("True")


def test_sequences_are_fingerprinted_by_content_and_other_containers_are_not(make_module):
    def key(value: str) -> str | None:
        return _key(_kernel(make_module, "x[i] * F[0]", f"F = {value}"))

    assert None not in {key("[1, 2]"), key("[1, 3]"), key("(1, 2)")}
    assert len({key("[1, 2]"), key("[1, 3]"), key("(1, 2)")}) == 3
    assert key("{0: 1}") is None  # a dict: the MLIR key serves


def test_objects_failing_inspection_only_disable_the_source_key(make_module):
    mod = make_module(KERNEL.format(body="x[i] * N", prelude=(
        "class Hostile:\n    def __getattr__(self, name):\n        raise RuntimeError(name)\n"
        "N = 3\nH = Hostile()")))
    kern = mod.k  # type: ignore[attr-defined]
    mod.N = mod.H  # type: ignore[attr-defined]  # getattr(N, anything) raises RuntimeError
    assert _key(kern) is None
    mod.N = 3  # type: ignore[attr-defined]
    assert _key(kern) is not None


def test_unrelated_globals_are_not_fingerprinted(make_module):
    assert _key(_kernel(make_module, "x[i]", "F = {'a': 1}\nG = object()")) is not None
