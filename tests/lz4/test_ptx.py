"""The LZ4 kernels' PTX assembles for sm_90 with ptxas (no GPU needed; skipped without ptxas):
valid PTX, the warp intrinsics they rely on are there, no register spills, and the register
counts docs/lz4.md's occupancy figures rest on."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import nova
from nova.lang.types import ArrayType
from nova.lz4 import kernels as K

PTXAS = shutil.which("ptxas")

KERNELS = {
    "compress": (K.compress_kernel(4096, K.hash_log(4096), K.IN_BATCH),
                 (nova.uint32[:], nova.uint8[:], nova.uint32[:], int, int, nova.uint32[:])),
    "decompress": (K.decompress_pages_kernel,
                   (nova.uint8[:], nova.uint64[:], nova.uint32[:], nova.uint32[:], nova.int32[:],
                    int, int, nova.uint32[:])),
    "scan": (K.scan_sizes_kernel,
             (nova.uint32[:], nova.uint64[:], int, nova.uint64[:], nova.uint32[:])),
    # the payload as a launch on a 16-byte aligned buffer sees it (launch.refine)
    "compact": (K.compact_kernel,
                (nova.uint32[:], nova.uint32[:], nova.uint64[:], ArrayType(nova.uint8, 1, align=16),
                 ArrayType(nova.uint32, 1, align=16), int, int, nova.uint32[:])),
}


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed")
@pytest.mark.parametrize("name", list(KERNELS))
def test_ptx_assembles_without_spills(tmp_path, name):
    kern, sig = KERNELS[name]
    ptx = kern.ptx(*sig, arch="sm_90")
    if name == "compress":
        assert "match.any.sync.b32" in ptx and "bar.warp.sync" in ptx
        assert "atom.global.add.u32" in ptx  # warps claim pages (resident grid)
        assert "prmt.b32.f4e" in ptx  # the unaligned 4-byte loads
        # one vote per ballot, and every collective with the immediate full mask (members=FULL:
        # ptxas then checks no computed mask before it)
        collectives = [ln for ln in ptx.splitlines() if re.search(r"\b(vote|shfl|match)\.", ln)]
        assert any("vote.sync.ballot.b32" in ln for ln in collectives)
        assert all(ln.rstrip().endswith("-1;") for ln in collectives), collectives
    if name == "decompress":
        assert "bar.warp.sync" in ptx
        assert "atom.global.add.u32" in ptx
    if name == "compact":  # whole 16-byte chunks of the payload (PCIe: full write packets)
        assert "st.global.v4.b32" in ptx
    src = tmp_path / f"{name}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([PTXAS, "-arch=sm_90", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    info = proc.stdout + proc.stderr
    assert "0 bytes spill stores" in info, info
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    assert regs <= 64, f"{name}: {regs} registers"  # 24+ resident warps per SM stays possible
