#!/usr/bin/env bash
# Build Nova's wheel (distribution `nova-gpu`), install it into a fresh virtualenv and run the
# README's example there, from outside the source tree: proves the package ships everything the
# example needs (sources, entry points) and nothing resolves to the checkout.
# Usage: scripts/check-wheel.sh [python]   (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m pip wheel -q --no-deps --no-build-isolation -w "$work/dist" . >/dev/null
wheel=$(ls "$work"/dist/nova_gpu-*.whl)
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" >/dev/null 2>&1 \
  || "$work/venv/bin/python" -m pip install "$wheel"  # again, loudly, to show why it failed
cd "$work"
"$work/venv/bin/python" -c "import nova, sys; assert nova.__file__.startswith('$work'), nova.__file__"
out=$("$work/venv/bin/nova-run" "$root/examples/vecadd.mlir" --device cpu)
echo "$out"
grep -qF "[0,  3,  6,  9,  12,  15,  18,  21,  24,  27]" <<<"$out"
echo "wheel $(basename "$wheel"): installed in a fresh venv and ran examples/vecadd.mlir"
