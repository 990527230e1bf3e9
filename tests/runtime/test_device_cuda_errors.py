"""CUDA-only error behaviour against the real driver (gpu): JIT logs, sticky faults in a fresh
process, stream handles."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import device_test_kernels as tk
import numpy as np
import pytest

from nova.errors import CudaError
from nova.runtime.device import ModuleImages

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent


def test_default_stream_is_not_the_legacy_stream(cuda_device):
    assert cuda_device.default_stream.handle not in (0, 1, 2)
    assert cuda_device.context_handle != 0 and not cuda_device.context_lost


def test_bad_ptx_reports_the_jit_log(cuda_device):
    bad = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(CudaError, match=r"(?s)cuModuleLoadDataEx.*PTX JIT of device module 'bad'"
                       ) as info:
        cuda_device.load_module(ModuleImages("bad", ptx=bad))
    log = str(info.value).split("failed:\n", 1)[1]
    assert "bogus" in log or "error" in log.lower(), log  # the driver's JIT log, not a stub


def test_cubin_path(cuda_device, tmp_path):
    ptxas = shutil.which("ptxas") or ("/usr/local/bin/ptxas"
                                      if Path("/usr/local/bin/ptxas").exists() else None)
    if ptxas is None:
        pytest.skip("ptxas not available")
    (tmp_path / "k.ptx").write_text(tk.PTX)
    arch = cuda_device.arch
    subprocess.run([ptxas, f"-arch={arch}", str(tmp_path / "k.ptx"), "-o",
                    str(tmp_path / "k.cubin")], check=True)
    images = ModuleImages("cubin-test", ptx=None, cubin=(tmp_path / "k.cubin").read_bytes(),
                          cubin_arch=arch)
    module = cuda_device.load_module(images)
    assert module.image_kind == "cubin"
    flag = cuda_device.allocate(4)
    cuda_device.memset(flag, 0)
    cuda_device.launch(module.get_function("set_flag", tk.KERNELS["set_flag"]), 1, 1, [flag])
    cuda_device.synchronize()
    assert flag.view(np.int32).numpy()[0] == 1


def test_sticky_fault_loses_the_context_cleanly(cuda_device):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        import device_test_kernels as tk
        from nova.errors import CudaError
        from nova.runtime.selection import get_device
        dev = get_device("cuda")
        buf = dev.allocate(1 << 20)
        stream = dev.create_stream()
        dev.launch(tk.load(dev).get_function("trap_kernel"), 1, 1, [], stream=stream)
        try:
            stream.synchronize()
        except CudaError as e:
            print("FIRST", e.context_lost, e.kernel, e.error_name)
        try:
            dev.mem_info()
        except CudaError as e:
            print("SECOND", e.context_lost, "not attempted" in str(e))
        del buf, stream
        import gc; gc.collect()
        print("DONE", dev.context_lost)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0].startswith("FIRST True trap_kernel CUDA_ERROR_"), proc.stdout
    assert lines[1] == "SECOND True True" and lines[2] == "DONE True", proc.stdout
    assert proc.stderr.strip() == "", proc.stderr
