#!/usr/bin/env bash
# Install Nova with its test tools and run the whole suite (unit, runtime on the CPU device,
# golden FileCheck tests through lit, lint). GPU tests skip cleanly without a usable GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh test
. .venv/bin/activate
ruff check src tests bench scripts
mypy
python -m pytest -q -n auto "$@"
scripts/check-wheel.sh python  # the built wheel installs and runs the README example
