#!/usr/bin/env bash
# Install Nova into ./.venv (created if missing). Usage: scripts/install.sh [test]
#   no argument: Nova + the CUDA driver bindings (harmless without a GPU)
#   test:        also the test tools (pytest, xdist, hypothesis, filecheck, lit, ruff, mypy), the
#                model tests' references (onnx, onnxruntime; PyTorch's CPU build where a local wheel
#                of it exists, else the torch tests skip) and, where apt-get works, upstream
#                mlir-opt (LLVM 22) used as an oracle by differential tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv >/dev/null 2>&1 || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if [ "${1:-}" = "test" ]; then
  python -m pip install -q -e '.[cuda,lz4,models,test]'
  # Optional: PyTorch (CPU build) for the torch.compile / ONNX-export model tests, only from a
  # local wheel (the index's default build is several GB of CUDA libraries).
  torch_wheel=$(ls /opt/wheels/torch-*+cpu-*.whl 2>/dev/null | head -1 || true)
  if [ -n "$torch_wheel" ] && ! python -c "import torch" >/dev/null 2>&1; then
    python -m pip install -q "$torch_wheel" >/dev/null 2>&1 \
      || echo "note: PyTorch not installed; the torch model tests will be skipped"
  fi
  if ! command -v /usr/lib/llvm-22/bin/mlir-opt >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    # Optional oracle: differential tests skip cleanly without it.
    # bounded: a machine without the network must not stall the test run
    (timeout 300 apt-get install -y -q mlir-22-tools >/dev/null 2>&1 \
      || (timeout 300 apt-get update -q >/dev/null 2>&1 \
          && timeout 300 apt-get install -y -q mlir-22-tools >/dev/null 2>&1)) \
      || echo "note: mlir-22-tools not installed; mlir-opt differential tests will be skipped"
  fi
else
  python -m pip install -q -e '.[cuda,lz4,models]'
fi
