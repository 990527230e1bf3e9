#!/usr/bin/env bash
# nova.models on a GPU machine (torch, onnx, onnxruntime installed), from the repo root:
#   scripts/models-gpu.sh [card-name]        e.g. scripts/models-gpu.sh h100
# (carry .wheelhouse, as for scripts/gpu-check.sh). Runs the gpu-marked nova.models tests, then bench/models.py (one process: Nova vs PyTorch eager
# and torch.compile default / reduce-overhead), writing bench/results/models-<card>.md; logs go
# to $OUT (or ./out).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
CARD=${1:-gpu}
export PYTHONUNBUFFERED=1 NOVA_DEVICE=cuda NOVA_CACHE_DIR=${NOVA_CACHE_DIR:-/tmp/nova-cache}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
# Nova's own dependencies, as scripts/gpu-check.sh installs them (from .wheelhouse when carried)
if [ -d .wheelhouse ]; then
  python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 2>&1 | tail -2
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -p no:cacheprovider -p no:xdist -m gpu tests/models 2>&1 \
  | tee "$OUT/models-gpu-tests.log"
echo "models gpu tests exit: ${PIPESTATUS[0]}" | tee -a "$OUT/models-gpu-tests.log"
python3 bench/models.py --device cuda --out "bench/results/models-$CARD.md" 2>&1 \
  | tee "$OUT/models-bench.log"
cp "bench/results/models-$CARD.md" "$OUT/" 2>/dev/null || true
