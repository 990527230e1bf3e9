#!/usr/bin/env bash
# Run on the GPU test machine (device tool), from the repo root, with .wheelhouse carried:
#   scripts/gpu-check.sh [pytest args...]
# Installs what the machine lacks from .wheelhouse, runs the gpu-marked tests, the corpus on
# --device cuda, and the GPU benchmarks; logs go to $OUT (or ./out).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NOVA_DEVICE=cuda NOVA_CACHE_DIR=/tmp/nova-cache
python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 filecheck==1.0.6 lit \
  pytest-xdist hypothesis 2>&1 | tail -2
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider "$@" 2>&1 | tee "$OUT/gpu-tests.log"
echo "gpu tests exit: ${PIPESTATUS[0]}" | tee -a "$OUT/gpu-tests.log"
