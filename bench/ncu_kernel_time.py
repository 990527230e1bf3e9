"""GPU duration of the tiny kernel of bench/launch_overhead.py, measured by Nsight Compute (ncu).

Evidence for goal (a) of issue 4: if one kernel runs for far less time on the GPU than the
per-launch cost of the stream loop, the loop is bound by the host's launch calls, not the GPU.
`python bench/ncu_kernel_time.py` runs itself under `ncu --metrics gpu__time_duration.sum` with
`--child` (which launches the kernel through Nova's compiled entry, 50 times) and prints the
duration statistics from ncu's CSV. Needs ncu on PATH (or /usr/local/cuda/bin) and permission to
read GPU performance counters; otherwise it says which is missing.

The child checks that its launches ran (the kernel adds 1 to 32 counters: they must equal the
launches) and exits 1 with `CHECK FAILED` otherwise; a failed child fails the script (no
durations printed). `python bench/ncu_kernel_time.py --child --device cpu` runs the child alone
(tests/unit/test_bench_checks.py).
"""

from __future__ import annotations

import csv
import io
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

LAUNCHES = 50


def child(device: str) -> int:
    import numpy as np
    from checks import finish, record  # type: ignore[import-not-found]
    from launch_overhead import PROGRAM  # type: ignore[import-not-found]

    import nova

    mod = nova.compile(PROGRAM, device=device)
    x = mod.device.to_device(np.zeros(32, np.float32))
    mod["launches"](x, LAUNCHES)
    mod.synchronize()
    counters = x.numpy()
    mod.close()
    ok = bool(np.all(counters == LAUNCHES))
    record(f"counters {counters[:3].tolist()}... != {LAUNCHES} launches", ok)
    print(f"child: {LAUNCHES} launches {'verified' if ok else 'FAILED'}")
    return finish()


def main() -> int:
    ncu = shutil.which("ncu") or next(
        (str(p) for p in Path("/usr/local/cuda/bin").glob("ncu") if p.exists()), None)
    if ncu is None:
        print("ncu not found")
        return 1
    command = [ncu, "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
               sys.executable, __file__, "--child"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parent)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith('"')]
    if done.returncode != 0 or "launches verified" not in done.stdout:
        print(f"FAILED: the child's launches did not all run (rc {done.returncode}):")
        print((done.stdout + done.stderr)[-2000:])
        return 1
    if not lines:
        print(f"ncu gave no table (rc {done.returncode}):")
        print((done.stdout + done.stderr)[-2000:])
        return 1
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    ns = [float(r["Metric Value"].replace(",", "")) for r in rows
          if r.get("Metric Name") == "gpu__time_duration.sum"]
    names = sorted({r.get("Kernel Name", "?") for r in rows})
    print(f"ncu: {len(ns)} kernels ({', '.join(names)}); gpu__time_duration per kernel: "
          f"min {min(ns) / 1e3:.2f} us, median {statistics.median(ns) / 1e3:.2f} us, "
          f"max {max(ns) / 1e3:.2f} us")
    return 0


if __name__ == "__main__":
    if "--child" in sys.argv:
        sys.path.insert(0, str(Path(__file__).parent))
        device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
        sys.exit(child(device))
    sys.exit(main())
