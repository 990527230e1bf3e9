#!/usr/bin/env bash
# Mutation fuzzing of Nova's front doors at length (issue 12): MLIR text through the compiler,
# corrupted (and resealed) bundles through the reader, mutated Python kernels through
# nova.kernel. Each input runs in its own forked process with a time and memory limit.
#   scripts/fuzz.sh [N] [SEED] [--jobs J] [--timeout S]     (default: 10000 inputs, seed 0)
# Prints a summary line (inputs, internal errors, signals, hangs, time) and exits 1 on any
# finding; each finding's input is saved under tests/fuzz/findings/, where
# tests/fuzz/test_fuzz.py replays it as a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
if [ -x .venv/bin/python ] && [ -z "${VIRTUAL_ENV:-}" ]; then PYTHON=.venv/bin/python; fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NOVA_CACHE=0
exec "$PYTHON" -m tests.fuzz.runner "$@"
