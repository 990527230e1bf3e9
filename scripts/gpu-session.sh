#!/usr/bin/env bash
# One GPU-machine session (device tool), from the repo root with .wheelhouse carried: install what
# the machine lacks, run the gpu-marked tests (optionally only some paths), then optional extra
# commands given as arguments (each run with its output appended to the summary).
#   scripts/gpu-session.sh [TEST_PATHS (default: tests)] [-- extra commands...]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NOVA_CACHE_DIR=/tmp/nova-cache
tests=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do tests+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#tests[@]} -gt 0 ] || tests=(tests)
python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 filecheck==1.0.6 lit \
  pytest-xdist hypothesis lz4 xxhash nvidia-nvcomp-cu13 2>&1 | grep -v -i warning | tail -2
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | grep -v -i warning | tail -2
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nproc; uptime; date -u; git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 420 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider "${tests[@]}" > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests (${tests[*]}): $(tail -1 "$OUT/gpu-tests.log")" | tee "$OUT/summary.log"
grep -E "^(FAILED|ERROR)" "$OUT/gpu-tests.log" | head -40 | tee -a "$OUT/summary.log"
for cmd in "$@"; do
  echo "=== $cmd" | tee -a "$OUT/summary.log"
  bash -c "$cmd" 2>&1 | tee -a "$OUT/summary.log"
done
