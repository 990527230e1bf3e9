"""lit configuration for Nova's golden tests (tests/filecheck/**/*.mlir).

Each test's `// RUN:` lines call Nova's tools (nova-opt, nova-translate, nova-run, nova-objdump)
from the environment lit runs in, and `FileCheck` (the `filecheck` Python package). Tests write
only to `%t`, so the suite runs in parallel. Scratch output and the compile cache go to a temporary
directory, never into the source tree or ~/.cache.
"""

# ruff: noqa: F821  (lit injects `config` and `lit_config`)

import os
import shutil
import sys
import tempfile

import lit.formats

config.name = "nova"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["tools", "Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Scratch files (%t) go to NOVA_LIT_OUT, else to a fresh directory per run (concurrent runs on
# one machine never share %t); the compile cache is shared between runs (it is safe for that).
_out = os.environ.get("NOVA_LIT_OUT")
config.test_exec_root = _out or tempfile.mkdtemp(prefix="nova-lit-")
_cache = os.path.join(_out, "cache") if _out else os.path.join(
    tempfile.gettempdir(), f"nova-lit-cache-{os.getuid()}")

# Tools: the venv that runs lit (sys.executable's directory) comes first on PATH, then the
# directory of the active `nova-opt`, then our portable helpers (`not`).
bin_dirs = [os.path.dirname(sys.executable)]
found = shutil.which("nova-opt")
if found:
    bin_dirs.append(os.path.dirname(found))
tools_dir = os.path.join(config.test_source_root, "tools")
path = os.pathsep.join([*bin_dirs, os.environ.get("PATH", ""), tools_dir])
config.environment["PATH"] = path

filecheck = shutil.which("filecheck", path=path) or shutil.which("FileCheck", path=path)
if filecheck is None:
    lit_config.fatal("FileCheck not found: install the 'filecheck' Python package")
config.substitutions.append(("FileCheck", filecheck))

for name in ("NOVA_DEVICE", "NOVA_DEBUG", "NOVA_ARCH", "HOME", "CUDA_VISIBLE_DEVICES"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment["NOVA_CACHE_DIR"] = _cache

# Upstream's mlir-opt, the oracle some tests compare Nova's output with (`%mlir-opt`; such tests
# say `REQUIRES: mlir-opt`).
mlir_opt = shutil.which("mlir-opt", path=path + os.pathsep + "/usr/lib/llvm-22/bin")
if mlir_opt:
    config.available_features.add("mlir-opt")
    config.substitutions.append(("%mlir-opt", mlir_opt))
