"""Deterministic mutation fuzzing of Nova's front doors (issue 12, item 5).

`mutate` holds the text and byte mutations, `targets` the three targets (MLIR text through the
compiler, bundles through the reader, Python kernel source through `nova.kernel`), `runner` the
worker processes and the oracle. `python -m tests.fuzz.runner` (scripts/fuzz.sh) is the long
run; tests/fuzz/test_fuzz.py the CI slice and the replay of every saved finding.
"""
