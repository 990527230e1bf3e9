#!/usr/bin/env bash
# nova.lz4 on the GPU machine (device tool), from the repo root, with .wheelhouse carried:
#   scripts/lz4-gpu-check.sh [pytest args...]
# Installs python-lz4, xxhash, tqdm and nvCOMP (nvidia-nvcomp-cu13) from .wheelhouse, runs the
# lz4 tests (cpu and the gpu-marked ones) and the language additions they use, then
# bench/lz4.py; logs and the bench JSON go to $OUT (or ./out).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NOVA_CACHE_DIR=/tmp/nova-cache
python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 pytest hypothesis \
  lz4 xxhash tqdm 2>&1 | tail -2
python3 -m pip install -q --no-index --find-links .wheelhouse nvidia-nvcomp-cu13 2>&1 | tail -2 \
  || echo "nvidia-nvcomp-cu13 not installed: the bench runs without nvCOMP"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -p no:cacheprovider -p no:xdist tests/lz4 tests/kernel/test_kernel_syncwarp.py \
  tests/kernel/test_kernel_match_any.py "tests/kernel/test_kernel_semantics.py::test_warp_operations" \
  "tests/kernel/test_kernel_semantics.py::test_votes_in_a_partial_warp" "$@" 2>&1 \
  | tee "$OUT/lz4-tests.log"
echo "lz4 tests exit: ${PIPESTATUS[0]}" | tee -a "$OUT/lz4-tests.log"
python3 bench/lz4.py --device cuda --timeline --json "$OUT/lz4-cuda.json" 2>&1 | tee "$OUT/lz4-bench.log"
echo "bench exit: ${PIPESTATUS[0]}" | tee -a "$OUT/lz4-bench.log"
