#!/usr/bin/env bash
# Run on the GPU test machine (device tool), from the repo root, with .wheelhouse carried:
# installs what the machine lacks, runs the gpu-marked tests and every GPU benchmark, and leaves
# the logs and JSON results in $OUT as one tarball plus the summary log (the device tool returns
# at most 8 files).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT/r"
export PYTHONUNBUFFERED=1 NOVA_CACHE_DIR=/tmp/nova-cache
python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 filecheck==1.0.6 lit \
  pytest-xdist hypothesis 2>&1 | tail -2
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nproc; uptime
} > "$OUT/r/machine.txt" 2>&1
timeout 300 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests > "$OUT/r/gpu-tests.log" 2>&1
echo "gpu tests: $(tail -1 "$OUT/r/gpu-tests.log")" | tee "$OUT/summary.log"
grep -E "^(FAILED|ERROR)" "$OUT/r/gpu-tests.log" | tee -a "$OUT/summary.log"
for bench in "launch_overhead --device cuda" "overlap --device cuda" "python_kernels --device cuda" \
             "module_load --device cuda" "memory_flat --device cuda"; do
  name=${bench%% *}
  timeout 240 python3 "bench/$name.py" ${bench#* } > "$OUT/r/$name.log" 2>&1
  echo "=== $name (rc=$?)" >> "$OUT/summary.log"
  tail -60 "$OUT/r/$name.log" | grep -v Warning >> "$OUT/summary.log"
done
cp bench/results/*.json "$OUT/r/" 2>/dev/null
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
cat "$OUT/summary.log"
