"""The fake cuBLASLt and cuDNN libraries of the binding tests write only inside the ctypes buffers
the bindings hand them.

Why: the bindings pass ctypes buffers to those fakes (Python functions called through ctypes
pointers), and a fake that writes more results than the caller asked for overruns the buffer
into the Python heap: the pytest worker then crashed later in an unrelated test (a pymalloc
free list overwritten by TuningLt's three heuristic results in create_plan's one-result buffer).
The tests run here under PYTHONMALLOC=debug, which checks the guard bytes around every block
and aborts on such a write.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_fake_libraries_never_write_past_the_callers_buffers() -> None:
    files = [str(HERE / "test_cublaslt_binding.py"), str(HERE / "test_cudnn_binding.py")]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *files],
                          env={**os.environ, "PYTHONMALLOC": "debug"}, capture_output=True,
                          text=True, timeout=300, cwd=HERE.parent.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
